"""RAEE on the log: reference-anchored campaigns in the loop, `orchestrator fit raee` on runs and logs,
screening, pooling, anchor diagnostics, abstention, bad input (real HTTP test server, real SQLite)."""

import json
import math
import sqlite3
import subprocess
import sys

import numpy as np
import pytest
from scipy.special import stdtrit
from scipy.stats import spearmanr

from conftest import DATA
from judgekit import board_and_newcomer, board_run, placed_config, reference_behaviour, run_cli, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.errors import OrchestratorError
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.offline.raee.fit import RaeeOptions, fit_raee
from orchestrator.raee import ReferenceJudgments, icc3k, pooled_variance, raee_report
from orchestrator.run.preparation import dry_run, prepare
from orchestrator.store import SCHEMA_VERSION, open_run


@pytest.fixture
def two_judges(tmp_path, monkeypatch):
    """A precise judge (local-openai) and a noisy one, both served by the test server."""
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(write_judge(tmp_path / "judges", "noisy-openai")))
    with FakeOpenAIServer(reference_behaviour({"my-model": 0.05, "noisy": 3.0})) as server:
        yield server


def _reference_run(
    tmp_path,
    server,
    *,
    prompts=4,
    candidates=6,
    reference_toml,
    max_calls=None,
    name="ref",
    judges='["local-openai", "noisy-openai"]',
    batch=1,
    **data_kwargs,
):
    data = write_dataset(tmp_path / f"data-{name}", prompts=prompts, candidates=candidates, **data_kwargs)
    config = write_config(
        tmp_path,
        server.url,
        name=name,
        prompts=data[0],
        responses=data[1],
        judges=judges,
        batch=batch,
        max_calls=max_calls,
        reference=reference_toml,
    )
    return api.start(config)


def test_reference_campaign_asks_every_item_once_and_fit_raee_reports_it(tmp_path, two_judges, capsys):
    path, reason = _reference_run(
        tmp_path,
        two_judges,
        reference=0.5,
        base=[0.1, 0.3, 0.5, 0.6, 0.8, 0.95],
        spread=0.1,
        reference_toml='template = "raee-pairwise-summary"\nrepeats = 3\n',
    )
    assert reason == "every candidate has been judged on every prompt"
    db = sqlite3.connect(path)
    rows = db.execute("select judge, prompt_id, candidates, repeat, kind from judgments where status = 'ok'").fetchall()
    assert len(rows) == 4 * 6 * 2 * 3  # prompts × candidates × judges × repeats
    assert {json.loads(c)[0] for _, _, c, _, _ in rows} == {"reference"} and {k for *_, k in rows} == {"reference"}
    assert sorted({r for _, _, _, r, _ in rows}) == [0, 1, 2]
    assert set(two_judges.key_counts().values()) == {1}  # every request paid once
    # rounds go prompt by prompt (batch = 1 prompt): every round holds all candidates of one prompt
    assert [n for (n,) in db.execute("select n_requests from rounds order by round")] == [36] * 4

    report = fit_raee(path, RaeeOptions(soft=True))
    by = {(r.judge, r.candidate): r for r in report.rows}
    assert report.population == 4 and {r.n for r in report.rows if r.judge != "pooled"} == {4}
    precise = [by[("local-openai", f"M{c}")].elo for c in range(6)]
    assert spearmanr(precise, range(6)).statistic == pytest.approx(1.0)  # the hidden order
    screens = {s.judge: s for s in report.judges}
    assert screens["local-openai"].runs == 3 and screens["local-openai"].icc > 0.9 and screens["local-openai"].strong
    assert screens["noisy-openai"].icc < screens["local-openai"].icc
    pooled = [r for r in report.rows if r.judge == "pooled"]
    assert len(pooled) == 6
    strong = [s.judge for s in report.judges if s.strong]
    # pooled = mean Elo of the strong judges, variance by Eq. (9)
    for r in pooled:
        members = [by[(j, r.candidate)] for j in strong]
        assert r.elo == pytest.approx(np.mean([m.elo for m in members]))
    assert report.kappa_factor["reference"] is not None and 0 <= report.kappa_factor["reference"] <= 1
    # hard outcomes: W + T + L = judgments, ties counted
    hard = fit_raee(path)
    assert hard.outcome == "hard"
    assert all(r.wins + r.ties + r.losses == r.judgments for r in hard.rows)

    # the CLI: table, JSON, plot; the exported log fits to the same numbers
    assert run_cli(["fit", "raee", str(path), "--soft"]) == 0
    out = capsys.readouterr().out
    assert "soft outcomes" in out and "ICC(3,3)" in out and "pooled" in out
    assert run_cli(["fit", "raee", str(path), "--soft", "--json", "--plot", str(tmp_path / "plots")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (tmp_path / "plots" / "raee-leaderboard-reference.png").stat().st_size > 1000
    # a plot that cannot be written comes after the results, never instead of them (exit 2)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert run_cli(["fit", "raee", str(path), "--soft", "--plot", str(blocker / "plots")]) == 2
    captured = capsys.readouterr()
    assert "soft outcomes" in captured.out and "pooled" in captured.out and "cannot create" in captured.err
    assert run_cli(["fit", "raee", str(path), "--soft", "--json", "--plot", str(blocker / "plots")]) == 2
    failed = json.loads(capsys.readouterr().out)
    assert failed["rows"] and failed["plots"] == [] and "cannot create" in failed["plot_error"]
    log = tmp_path / "export.jsonl"
    assert run_cli(["export", str(path), "--format", "jsonl", "--out", str(log)]) == 0
    from_log = fit_raee(log, RaeeOptions(soft=True, population=4), log=True)
    assert [(r.judge, r.candidate, round(r.p_bar, 12)) for r in from_log.rows] == [
        (r["judge"], r["candidate"], round(r["p_bar"], 12)) for r in data["rows"]
    ]
    # the run's ranking and status use RAEE for a reference campaign
    ranking = api.ranking(path)
    order = [r["candidate"] for r in ranking["groups"][0]["ranking"]]
    assert set(order[:3]) == {"M3", "M4", "M5"} and set(order[-2:]) == {"M0", "M1"}  # hard outcomes saturate
    # every prompt judged: the win rate is the plain mean over prompts (the official AlpacaEval
    # figure), a point interval (nothing left to sample), the prompts counted
    for row in ranking["groups"][0]["ranking"]:
        rates = [r.p_hat for r in hard.rows if r.candidate == row["candidate"] and r.judge != "pooled"]
        assert row["win_rate"] == pytest.approx(100 * np.mean(rates), abs=1e-3)
        assert row["win_rate_low"] == row["win_rate"] == row["win_rate_high"] and row["prompts"] == 4
    assert api.status(path)["mean_entropy"] is None


def test_gains_allocation_spends_prompts_where_intervals_overlap(tmp_path, two_judges, capsys):
    # the gains rule (the default before issue #52): M1 is far above the anchor M0; M2, M3, M4 are
    # close to each other: they get more prompts on average, and nobody is starved (every candidate
    # goes beyond its warm-up prompts)
    path, reason = _reference_run(
        tmp_path,
        two_judges,
        prompts=16,
        candidates=5,
        base=[0.5, 0.98, 0.45, 0.5, 0.55],
        spread=0.05,
        judges='["local-openai"]',
        batch=2,
        max_calls=40,
        reference_toml='anchor = "M0"\nallocation = "gains"\nwarmup_prompts = 3\nsoft = true\n',
    )
    assert reason.startswith("budget: max_calls (40 of 40")
    db = sqlite3.connect(path)
    per = dict(db.execute("select json_extract(candidates, '$[1]'), count(*) from judgments group by 1").fetchall())
    assert set(per) == {"M1", "M2", "M3", "M4"} and json.loads(db.execute("select candidates from judgments").fetchone()[0])[0] == "M0"
    crowd = [per["M2"], per["M3"], per["M4"]]
    assert per["M1"] < sum(crowd) / 3 and per["M1"] < max(crowd)
    assert min(per.values()) > 3
    assert sum(per.values()) == 40
    ranking = api.ranking(path)["groups"][0]["ranking"]
    for row in ranking:  # a budget cut: intervals around every win rate, the prompts each got
        assert row["win_rate_low"] < row["win_rate"] < row["win_rate_high"] or row["win_rate"] in (0.0, 100.0)
        assert row["prompts"] == per[row["candidate"]]
        # and intervals that hold all at once: wider, around the same win rate
        assert row["win_rate_low_together"] <= row["win_rate_low"] and row["win_rate_high"] <= row["win_rate_high_together"]
        assert row["win_rate_high_together"] - row["win_rate_low_together"] > row["win_rate_high"] - row["win_rate_low"] or (
            row["win_rate"] in (0.0, 100.0)
        )
    # checked against Bonferroni by hand: K partly judged candidates, each at 5% / K, Student's t on n − 1
    partly = sum(row["prompts"] < 16 for row in ranking)
    checked = 0
    for row in ranking:
        if 0 < row["win_rate_low_together"] and row["win_rate_high_together"] < 100:
            checked += 1
            ratio = (row["win_rate_high_together"] - row["win_rate_low_together"]) / (row["win_rate_high"] - row["win_rate_low"])
            expected = stdtrit(row["prompts"] - 1, 1 - 0.025 / partly) / stdtrit(row["prompts"] - 1, 0.975)
            assert abs(ratio - expected) < 0.01, (row, ratio, expected)
    assert checked >= 2
    assert run_cli(["rank", str(path)]) == 0
    table = capsys.readouterr().out
    assert "intervals that hold all at once" in table
    assert f"{ranking[0]['win_rate']:.1f} ({ranking[0]['win_rate_low']:.1f}–{ranking[0]['win_rate_high']:.1f})" in table
    assert "rows in Elo order; win rate: against the anchor on the prompts judged in this pool" in table
    report = fit_raee(path, RaeeOptions(soft=True))
    assert report.population == 16
    assert all(r.se_p_fpc < r.se_p_raw for r in report.rows if r.judge != "pooled")


def test_adaptive_allocation_walks_the_open_candidates_at_one_depth(tmp_path, two_judges):
    # the default adaptive rule since issue #52 (lockstep): M1 far above the crowd is settled beyond
    # doubt and stops; M2, M3, M4 (within a point, noisy) walk the shared order at one depth until the budget ends
    path, reason = _reference_run(
        tmp_path,
        two_judges,
        prompts=16,
        candidates=5,
        base=[0.5, 0.98, 0.49, 0.5, 0.51],
        spread=0.3,
        judges='["local-openai"]',
        batch=2,
        max_calls=52,
        reference_toml='anchor = "M0"\nallocation = "adaptive"\nwarmup_prompts = 3\nsoft = true\n',
    )
    assert reason.startswith("budget: max_calls (52 of 52"), reason
    db = sqlite3.connect(path)
    per = dict(db.execute("select json_extract(candidates, '$[1]'), count(*) from judgments group by 1").fetchall())
    crowd = [per["M2"], per["M3"], per["M4"]]
    assert max(crowd) - min(crowd) <= 1  # one depth (a round of batch 2 may leave one ahead)
    assert 3 <= per["M1"] < min(crowd)  # settled: it stopped while the crowd went on
    assert sum(per.values()) == 52


def test_adaptive_leaderboard_stops_at_the_resolution_and_names_the_ties(tmp_path, two_judges):
    # M2, M3, M4 are 1 point apart: with a 20-point resolution they are ties, M1 is far above
    path, reason = _reference_run(
        tmp_path,
        two_judges,
        prompts=16,
        candidates=5,
        base=[0.5, 0.98, 0.50, 0.51, 0.52],
        spread=0.05,
        judges='["local-openai"]',
        batch=2,
        reference_toml='anchor = "M0"\nallocation = "adaptive"\nwarmup_prompts = 3\nsoft = true\nresolution = 20\n',
    )
    assert reason.startswith("every neighbour is ordered or within 20 win-rate points (treated as tied: "), reason
    assert "M4 ≈ M3" in reason and "M3 ≈ M2" in reason and "M1" not in reason
    asked = sqlite3.connect(path).execute("select count(*) from judgments").fetchone()[0]
    assert asked < 4 * 16  # stopped before judging everything


def test_fit_raee_bad_input_is_a_clear_message(tmp_path, two_judges, capsys):
    # a PoE run (pairwise judgments only): no reference judgments
    data = write_dataset(tmp_path / "d", prompts=2, candidates=4)
    config = write_config(tmp_path, two_judges.url, name="poe", prompts=data[0], responses=data[1], max_calls=6)
    path, _ = api.start(config)
    assert run_cli(["fit", "raee", str(path)]) == 2
    assert "no reference-anchored judgments" in capsys.readouterr().err
    log = tmp_path / "poe.jsonl"
    api.export(path, out=log, fmt="jsonl")
    assert run_cli(["fit", "raee", "--log", str(log)]) == 2
    assert "no reference-anchored judgments" in capsys.readouterr().err
    assert run_cli(["fit", "raee"]) == 2
    assert "exactly one" in capsys.readouterr().err

    # a budget too small for every candidate; a judge without repeats; an unknown judge
    path, reason = _reference_run(
        tmp_path,
        two_judges,
        name="small",
        prompts=2,
        candidates=6,
        reference=0.5,
        judges='["local-openai"]',
        max_calls=4,
        reference_toml="repeats = 1",
    )
    assert run_cli(["fit", "raee", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 candidate(s) have no judgments against anchor reference" in out
    assert "(no judgments)" in out and "no repeated runs" in out
    assert run_cli(["fit", "raee", str(path), "--judge", "gpt-9"]) == 2
    assert "judge 'gpt-9' has no reference-anchored judgments here (judges: local-openai)" in capsys.readouterr().err
    assert run_cli(["fit", "raee", str(path), "--population", "0"]) == 2
    assert "--population must be at least 1" in capsys.readouterr().err

    # configs: a non-reference template, an anchor that is not a candidate, no reference texts
    for toml, message in (
        ('template = "poe-pairwise"', "is a pairwise template, not a reference-anchored one"),
        ('anchor = "M99"', "'M99' is neither"),
        ('anchor = "dataset"', 'no prompt has a "reference" text'),
    ):
        data = write_dataset(tmp_path / "e", prompts=2, candidates=3)
        config = write_config(tmp_path, two_judges.url, name="bad", prompts=data[0], responses=data[1], reference=toml)
        assert run_cli(["run", str(config)]) == 2
        assert message in capsys.readouterr().err
        assert not (tmp_path / "runs" / "bad.sqlite").exists()


def test_alpacaeval_log_through_the_cli_reproduces_win_rates(tmp_path, capsys):
    """The bundled AlpacaEval subset as a soft reference log: `fit raee --log --soft` gives p̂ = win_rate/100."""
    models = json.loads((DATA / "alpacaeval_subset.json").read_text())["models"]
    log = tmp_path / "alpaca.jsonl"
    with log.open("w") as fh:
        for name, entry in models.items():
            seen: dict[str, int] = {}
            for instruction, pref in entry["annotations"]:
                repeat = seen.get(instruction, 0)
                seen[instruction] = repeat + 1
                fh.write(
                    json.dumps(
                        {
                            "kind": "reference",
                            "judge": "gpt4_turbo",
                            "prompt_id": instruction,
                            "candidates": ["gpt4_1106_preview", name],
                            "repeat": repeat,
                            "probs": {"A": 2 - pref, "B": pref - 1},
                        }
                    )
                    + "\n"
                )
    assert run_cli(["fit", "raee", "--log", str(log), "--soft", "--json", "--population", "805"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = {r["candidate"]: r for r in report["rows"] if r["judge"] == "gpt4_turbo"}
    for name, entry in models.items():
        assert rows[name]["p_hat"] * 100 == pytest.approx(entry["win_rate"], abs=1e-6)
    assert sorted(rows, key=lambda m: -rows[m]["elo"]) == sorted(models, key=lambda m: -models[m]["win_rate"])
    assert all(r["se_p_fpc"] < r["se_p_raw"] for r in rows.values())


def _judgments(rows):
    return ReferenceJudgments.from_rows(rows)


def test_icc_from_repeats_equals_the_anova_on_the_run_matrix():
    rng = np.random.default_rng(0)
    true = rng.uniform(0.1, 0.9, size=30)
    matrix = np.clip(true[:, None] + rng.normal(0, 0.05, size=(30, 3)), 0, 1)
    rows = [("ref", "j", f"c{i % 5}", f"p{i}", r, matrix[i, r], 0.0, 1 - matrix[i, r]) for i in range(30) for r in range(3)]
    report = raee_report(_judgments(rows), soft=True)
    assert report.judges[0].runs == 3
    assert report.judges[0].icc == pytest.approx(icc3k(matrix))


def test_pooled_row_follows_equation_9_and_abstention_reports_coverage():
    rng = np.random.default_rng(1)
    rows = []
    for judge, sd in (("j1", 0.02), ("j2", 0.02), ("j3", 0.4)):
        for c, q in (("good", 0.8), ("bad", 0.3)):
            for p in range(40):
                base = np.clip(q + rng.normal(0, 0.15), 0.01, 0.99)
                for r in range(2):
                    s = float(np.clip(base + rng.normal(0, sd), 0, 1))
                    rows.append(("ref", judge, c, f"p{p}", r, s, 0.0, 1 - s))
    report = raee_report(_judgments(rows), soft=True, abstain_sd=0.3)
    screens = {s.judge: s for s in report.judges}
    assert screens["j1"].strong and screens["j2"].strong and not screens["j3"].strong
    assert screens["j1"].coverage == 1.0 and screens["j3"].coverage < 0.9
    assert any("abstention" in w and "j3" in w for w in report.warnings)
    by = {(r.judge, r.candidate): r for r in report.rows}
    rho = np.mean([screens["j1"].icc, screens["j2"].icc])
    for c in ("good", "bad"):
        members = [by[("j1", c)], by[("j2", c)]]
        sigma2 = np.mean([m.se_elo**2 for m in members])  # no population, no κ on σ²: raw delta-method SE
        sigma2 = np.mean([(400 / math.log(10) * m.se_p_raw / (m.p_bar * (1 - m.p_bar))) ** 2 for m in members])
        assert by[("pooled", c)].se_elo == pytest.approx(math.sqrt(pooled_variance(sigma2, rho, 2)))
        assert by[("pooled", c)].elo_low < by[("pooled", c)].elo < by[("pooled", c)].elo_high
    # pooling only strong judges: j3's items are not in the pooled N
    assert by[("pooled", "good")].n == by[("j1", "good")].n + by[("j2", "good")].n


def test_anchor_diagnostics_mid_region_and_anchor_swap():
    rows = []
    quality = {"a": 0.2, "b": 0.4, "c": 0.6, "d": 0.8}
    for anchor, level in (("weak", 0.0), ("mid", 0.5)):
        for c, q in quality.items():
            for p in range(50):
                s = 1 / (1 + math.exp(-3 * (q - level)))
                rows.append((anchor, "j", c, f"p{p}", 0, s, 0.0, 1 - s))
    report = raee_report(_judgments(rows), soft=True)
    assert report.mid_region_coverage["mid"] == 1.0
    assert report.mid_region_coverage["weak"] < 0.95
    assert any("anchor weak" in w and "[0.2, 0.8]" in w for w in report.warnings)
    (swap,) = report.anchor_swaps
    assert swap.kendall_tau == pytest.approx(1.0) and swap.candidates == 4


def test_a_version_1_run_file_is_migrated_when_opened_for_writing(tmp_path, two_judges):
    data = write_dataset(tmp_path / "d", prompts=2, candidates=3)
    config = write_config(tmp_path, two_judges.url, name="old", prompts=data[0], responses=data[1], max_calls=4)
    path, _ = api.start(config)
    db = sqlite3.connect(path)
    for table in ("requests", "judgments"):
        db.execute(f"alter table {table} drop column repeat")
    db.execute("alter table judgments drop column cached")
    db.execute("alter table judgments drop column samples")
    db.execute("pragma user_version = 1")
    db.commit()
    db.close()
    assert len(list(api.ranking(path)["groups"])) == 2  # read-only use of a version-1 file works
    with open_run(path) as store:
        assert {r.repeat for r in store.judgments()} == {0}
        assert {r.samples for r in store.judgments()} == {None}
    db = sqlite3.connect(path)
    assert db.execute("pragma user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("pragma integrity_check").fetchone()[0] == "ok"


def test_report_refuses_empty_and_unknown():
    with pytest.raises(OrchestratorError, match="no reference-anchored judgments"):
        raee_report(_judgments([]))
    with pytest.raises(OrchestratorError, match="judge 'x'"):
        raee_report(_judgments([("r", "j", "c", "p", 0, 1.0, 0.0, 0.0)]), judges=["x"])
    two_prompts = [("r", "j", "c", p, 0, 1.0, 0.0, 0.0) for p in ("p1", "p2")]
    with pytest.raises(OrchestratorError, match="population M = 1 is smaller than the n = 2"):
        raee_report(_judgments(two_prompts), population=1)


def test_both_orders_cancels_a_position_bias(tmp_path, monkeypatch):
    """A judge that prefers whatever is shown first: anchor-first only, every candidate loses; with
    both orders the soft outcomes are symmetric again and the order swap is the ICC's second run."""
    base = [0.2, 0.35, 0.5, 0.65, 0.8]
    with FakeOpenAIServer(reference_behaviour(first_bias=2.0)) as server:
        one, _ = _reference_run(
            tmp_path,
            server,
            name="one",
            prompts=3,
            candidates=5,
            reference=0.5,
            base=base,
            spread=0.0,
            judges='["local-openai"]',
            reference_toml="soft = true",
        )
        both, reason = _reference_run(
            tmp_path,
            server,
            name="both",
            prompts=3,
            candidates=5,
            reference=0.5,
            base=base,
            spread=0.0,
            judges='["local-openai"]',
            reference_toml="soft = true\nboth_orders = true",
        )
        assert reason == "every candidate has been judged on every prompt"
        assert set(server.key_counts().values()) == {1}
    db = sqlite3.connect(both)
    shown = [json.loads(c) for (c,) in db.execute("select candidates from judgments")]
    assert len(shown) == 3 * 5 * 2
    assert sum(c[0] == "reference" for c in shown) == sum(c[1] == "reference" for c in shown) == 15
    biased = {r.candidate: r for r in fit_raee(one, RaeeOptions(soft=True)).rows}
    fair = {r.candidate: r for r in fit_raee(both, RaeeOptions(soft=True)).rows}
    assert all(biased[c].p_hat < 0.5 for c in ("M2", "M3", "M4"))  # even the better ones lose to the anchor
    # the middle candidate equals the anchor: both orders bring it back to ½; order preserved
    assert fair["M2"].p_hat == pytest.approx(0.5, abs=1e-3)
    assert fair["M0"].p_hat + fair["M4"].p_hat == pytest.approx(1.0, abs=1e-3)
    assert [fair[f"M{k}"].elo for k in range(5)] == sorted(fair[f"M{k}"].elo for k in range(5))
    (screen,) = fit_raee(both, RaeeOptions(soft=True)).judges
    assert screen.runs == 2 and screen.icc is not None  # runs = (anchor first, anchor second)
    # the export names the anchor whichever side it was shown on, and fits to the same numbers
    log = tmp_path / "both.jsonl"
    api.export(both, out=log, fmt="jsonl")
    assert {json.loads(line)["reference"] for line in log.open()} == {"reference"}
    from_log = {r.candidate: r.p_bar for r in fit_raee(log, RaeeOptions(soft=True), log=True).rows}
    assert from_log == pytest.approx({c: r.p_bar for c, r in fair.items()})
    # the run exists (api.dry_run would refuse its name): what it could ask, from the checked config
    assert dry_run(prepare(api.load_config(tmp_path / "both.toml")))["possible_requests"] == 30


def test_ranking_keeps_uncertainty_when_every_prompt_is_judged(tmp_path, two_judges):
    """n = M makes the FPC SE 0; the ranking must still use the superpopulation SE."""
    path, _ = _reference_run(
        tmp_path, two_judges, prompts=2, candidates=6, reference=0.5, judges='["local-openai"]', reference_toml="soft = true"
    )
    report = fit_raee(path, RaeeOptions(soft=True))
    assert all(r.se_p_fpc == 0.0 and r.se_elo_raw > 0 for r in report.rows)
    ranking = api.ranking(path)["groups"][0]["ranking"]
    assert all(r["sd"] > 0 for r in ranking)
    assert any(r["rank_high"] - r["rank_low"] >= 2 for r in ranking)  # two prompts cannot order six candidates
    # soft outcomes: the ranking's SE is the spread one (delta method), not the Beta one
    by = {r.candidate: r for r in report.rows}
    for r in ranking:
        row = by[r["candidate"]]
        assert row.se_p_spread < row.se_p_raw
        assert r["sd"] == pytest.approx(400 / math.log(10) * row.se_p_spread / (row.p_bar * (1 - row.p_bar)), abs=1e-3)


def test_se_curve_on_alpacaeval_matches_the_paper(tmp_path, capsys):
    """`fit raee --se-curve` on real AlpacaEval judgments: with hard outcomes the FPC-corrected analytic
    SE matches the subsampling SD (RAEE §4: within ±12%), the raw SE over-states it at n = 256."""
    from orchestrator.offline.raee.fit import se_curve

    models = json.loads((DATA / "alpacaeval_subset.json").read_text())["models"]
    log = tmp_path / "alpaca.jsonl"
    with log.open("w") as fh:
        for name, entry in models.items():
            for k, (instruction, pref) in enumerate(entry["annotations"]):
                fh.write(
                    json.dumps(
                        {
                            "kind": "reference",
                            "judge": "gpt4_turbo",
                            "prompt_id": instruction,
                            "candidates": ["gpt4_1106_preview", name],
                            "repeat": k // 805,
                            "probs": {"A": 2 - pref, "B": pref - 1},
                        }
                    )
                    + "\n"
                )
    curves = se_curve(log, log=True, draws=400)
    hard = curves["hard"]
    for n in (64, 128, 256):
        assert 0.88 <= float(np.median(hard["FPC"][n])) <= 1.12
    assert float(np.median(hard["raw"][256])) > 1.12 > float(np.median(hard["FPC"][256]))
    assert float(np.median(curves["soft"]["FPC"][64])) >= 1.0  # Beta variance is conservative for soft outcomes
    png = tmp_path / "se.png"
    assert run_cli(["fit", "raee", "--log", str(log), "--se-curve", str(png)]) == 0
    assert png.stat().st_size > 1000
    # too few prompts for any subsample size: a clear message
    short = tmp_path / "short.jsonl"
    short.write_text("".join(line for k, line in enumerate(log.open()) if k < 10))
    assert run_cli(["fit", "raee", "--log", str(short), "--se-curve", str(png)]) == 2
    assert "more than 16 judged prompts" in capsys.readouterr().err


def test_a_leaderboard_per_prompt_category_from_one_run(tmp_path, two_judges, capsys):
    # M1 is good at maths and poor at writing, M2 the other way round: the overall leaderboard has
    # them close, each category's has them far apart in opposite orders (issue #30 item 5)
    prompts, responses = write_dataset(tmp_path / "data", prompts=6, candidates=4, seed=2)
    rows = [json.loads(line) for line in prompts.read_text().splitlines()]
    category = {f"p{k}": "maths" if k < 3 else "writing" for k in range(6)}
    prompts.write_text("".join(json.dumps({**row, "category": category[row["id"]]}) + "\n" for row in rows))
    quality = {"M0": (0.5, 0.5), "M1": (0.9, 0.1), "M2": (0.1, 0.9), "M3": (0.6, 0.6)}
    answers = [json.loads(line) for line in responses.read_text().splitlines()]
    for row in answers:
        q = quality[row["candidate"]][category[row["prompt_id"]] == "writing"]
        row["text"] = f"Summary <<q={q:.4f}>>"
    responses.write_text("".join(json.dumps(r) + "\n" for r in answers))
    config = write_config(
        tmp_path,
        two_judges.url,
        name="slices",
        prompts=prompts,
        responses=responses,
        judges='["local-openai"]',
        max_calls=None,
        reference='anchor = "M0"\nsoft = true\n',
    )
    path, _ = api.start(config)
    (group,) = api.ranking(path)["groups"]
    slices = {part["slice"]: part for part in group["slices"]}
    assert set(slices) == {"maths", "writing"} and all(part["prompts"] == 3 for part in slices.values())
    order = {name: [r["candidate"] for r in part["ranking"]] for name, part in slices.items()}
    assert order["maths"][0] == "M1" and order["maths"][-1] == "M2" and order["writing"][0] == "M2" and order["writing"][-1] == "M1"
    # every prompt of a category judged: its win rate is the plain mean of the soft outcomes there (by hand)
    db = sqlite3.connect(path)
    outcome: dict[tuple[str, str], list[float]] = {}
    for prompt, candidates, probs in db.execute("select prompt_id, candidates, probs from judgments where status = 'ok'"):
        (p,) = json.loads(probs)
        outcome.setdefault((category[prompt], json.loads(candidates)[1]), []).append(p["B"] + 0.5 * p.get("C", 0.0))
    db.close()
    for name, part in slices.items():
        for row in part["ranking"]:
            assert row["win_rate"] == pytest.approx(100 * np.mean(outcome[(name, row["candidate"])]), abs=1e-3)
            # a category's prompts are a sample of it: never a point interval (issue #54), even with every prompt judged
            assert row["prompts"] == 3 and row["win_rate_low"] <= row["win_rate"] <= row["win_rate_high"]
            assert row["win_rate_high"] - row["win_rate_low"] > 5
        assert part["small"] and not all(r["rank_low"] == r["rank_high"] for r in part["ranking"])
    assert run_cli(["rank", str(path)]) == 0
    out = capsys.readouterr().out
    assert "category maths · 3 prompts judged — too few prompts" in out and "category writing · 3 prompts judged" in out
    from orchestrator.report import write_report

    html = write_report(path, tmp_path / "slices.html").read_text()  # type: ignore[union-attr]
    assert "category maths" in html and "category writing" in html
    # a data set without categories: no slices
    plain, _ = _reference_run(tmp_path, two_judges, name="plain", judges='["local-openai"]', reference_toml='anchor = "M0"\n')
    assert "slices" not in api.ranking(plain)["groups"][0]


def _categories_log(tmp_path, quality: dict[str, tuple[float, float]], prompts: int = 40) -> tuple[dict[str, str], dict]:
    """A replayable soft log of ``quality`` (candidate → its mean outcome in maths, in writing) on
    ``prompts`` prompts alternating between the two categories, with its data files; returns the
    categories and every outcome by (candidate, prompt)."""
    rng = np.random.default_rng(5)
    category = {f"p{k:03d}": "maths" if k % 2 else "writing" for k in range(prompts)}
    (tmp_path / "prompts.jsonl").write_text(
        "".join(json.dumps({"id": p, "text": p, "reference": "the reference", "category": c}) + "\n" for p, c in category.items())
    )
    outcome = {}
    with (tmp_path / "responses.jsonl").open("w") as responses, (tmp_path / "log.jsonl").open("w") as log:
        for p, c in category.items():
            for cand, q in quality.items():
                responses.write(json.dumps({"prompt_id": p, "candidate": cand, "text": "an answer"}) + "\n")
                outcome[(cand, p)] = won = float(np.clip(q[c == "writing"] + rng.normal(0, 0.3), 0.0, 1.0))
                record = {"kind": "reference", "judge": "local-openai", "prompt_id": p, "candidates": ["reference", cand]}
                log.write(json.dumps({**record, "repeat": 0, "probs": {"A": 1 - won, "B": won}}) + "\n")
    return category, outcome


def _categories_run(tmp_path, name: str, reference_toml: str, max_calls: int, batch: int = 4) -> tuple:
    config = tmp_path / f"{name}.toml"
    config.write_text(
        f'name = "{name}"\nruns_dir = "{tmp_path}"\n\n[data]\nprompts = "prompts.jsonl"\nresponses = "responses.jsonl"\n\n'
        '[judging]\njudges = ["local-openai"]\n\n'
        f'[reference]\nanchor = "dataset"\nsoft = true\n{reference_toml}\n'
        f"[selection]\nbatch = {batch}\n\n[budget]\nmax_calls = {max_calls}\n"
    )
    return api.start(config, from_log=tmp_path / "log.jsonl")


def test_the_adaptive_allocation_adds_the_gains_of_each_category(tmp_path):
    # a replayed soft log, 4 candidates × 40 prompts in two categories where C and D are tied in
    # maths only: the gains of the first adaptive round planned on the warm-up's judgments (the
    # second adaptive round: the engine plans one round ahead) with slice_weight = 1 (the default)
    # are those with 0 plus the per-category gains of each candidate's next prompt, computed here
    # from the warm-up's judgments (issue #30 item 5)
    from orchestrator.raee.allocation import slice_gains

    quality = {"A": (0.85, 0.15), "B": (0.95, 0.95), "C": (0.5, 0.2), "D": (0.5, 0.8)}
    category, outcome = _categories_log(tmp_path, quality)
    first_adaptive = {}
    for weight in (0, 1):
        settings = f'allocation = "gains"\nwarmup_prompts = 6\nslice_weight = {weight}\n'
        path, reason = _categories_run(tmp_path, f"w{weight}", settings, max_calls=40)
        assert reason.startswith("budget: max_calls (40 of 40"), reason
        db = sqlite3.connect(path)
        rounds = [json.loads(selected) for (selected,) in db.execute("select selected from rounds order by round")]
        db.close()
        warm, ahead, adaptive = rounds[0], rounds[1], rounds[2]
        assert len(warm) == 24 and all(gain is None for *_, gain in warm) and len(ahead) == len(adaptive) == 4
        first_adaptive[weight] = {cand: gain for _, _, cand, gain in adaptive}
        warmed = {p for _, p, _, _ in warm}
        (next_prompt,) = {p for _, p, _, _ in adaptive}
    assert set(first_adaptive[0]) == set(first_adaptive[1]) == set(quality)
    names = sorted(quality)
    table = np.array([[outcome[(c, p)] if p in warmed else np.nan for p in category] for c in names])
    slices = np.array([category[p] == "maths" for p in category], dtype=int)
    population = np.full((4, 2), 20.0)
    expected = slice_gains(table, slices, np.full(4, int(category[next_prompt] == "maths")), population)
    for k, cand in enumerate(names):
        assert first_adaptive[1][cand] == pytest.approx(first_adaptive[0][cand] + expected[k], abs=2e-6)
    assert np.ptp(expected) > 1e-3  # the categories' gains differ between candidates: the check has teeth


def test_reading_a_leaderboard_imports_neither_torch_nor_scipy_stats(tmp_path):
    # `rank` of a reference campaign: 2.0 s on a 57 × 805 run instead of 4.8 s, most of it the
    # imports (issue #30 item 6); a fresh interpreter, as a user's `orchestrator rank` is
    _categories_log(tmp_path, {"A": (0.6, 0.4), "B": (0.3, 0.7)}, prompts=10)
    path, _ = _categories_run(tmp_path, "read", 'allocation = "all"\n', max_calls=20)
    code = (
        "import json, sys; from orchestrator import api; ranking = api.ranking(sys.argv[1]);"
        "print(json.dumps([len(ranking['groups'][0]['slices']), 'torch' in sys.modules, 'scipy.stats' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [2, False, False]


def test_a_reference_campaign_of_one_candidate_against_the_prompts_references(tmp_path, capsys):
    """The everyday "evaluate my model against the anchor" (issue #52): one response per prompt and
    the prompts' reference texts as the anchor is a campaign, not "no prompt has 2 or more responses"."""
    prompts, responses = write_dataset(tmp_path / "data", prompts=12, candidates=1, seed=1, reference=0.5)
    with FakeOpenAIServer(reference_behaviour()) as server:
        config = write_config(
            tmp_path, server.url, name="one", prompts=prompts, responses=responses, max_calls=None, reference="soft = true\n"
        )
        path, _ = api.start(config)
    (group,) = api.ranking(path)["groups"]
    (row,) = group["ranking"]
    assert row["candidate"] == "M0" and row["prompts"] == 12 and 0 < row["win_rate"] < 100
    # by hand: the plain mean of the soft outcomes against the anchor (every prompt judged)
    db = sqlite3.connect(path)
    outcomes = [json.loads(p)[0] for (p,) in db.execute("select probs from judgments where status = 'ok'")]
    db.close()
    assert len(outcomes) == 12
    assert row["win_rate"] == pytest.approx(100 * np.mean([o["B"] + 0.5 * o.get("C", 0.0) for o in outcomes]), abs=1e-3)
    # a candidate as the anchor still needs a second response to compare
    config.write_text(config.read_text().replace("soft = true", 'anchor = "M0"\nsoft = true').replace('name = "one"', 'name = "two"'))
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
    assert "no prompt has 2 or more responses to compare" in capsys.readouterr().err


def test_a_new_model_is_placed_on_an_existing_board_from_few_prompts(tmp_path, capsys):
    """``[reference] board``: a board of 8 models judged on 40 prompts (a run file); a new model judged
    on 24 of the prompts is placed on it — its win rate over the board's 40 prompts with an interval
    that holds its full-data win rate (measured by judging it on all 40), and its rank among the
    board's models (issue #52)."""
    with FakeOpenAIServer(reference_behaviour(slope=4.0)) as server:
        prompts, new_responses, board = board_run(tmp_path, server)
        full_config = write_config(
            tmp_path, server.url, name="full", prompts=prompts, responses=new_responses, max_calls=None, reference="soft = true\n"
        )
        full, _ = api.start(full_config)
        config = placed_config(tmp_path, server.url, prompts, new_responses, board.name)
        config.write_text(config.read_text().replace(f'board = "{board.name}"', f'board = "runs/{board.name}"'))
        placed, _ = api.start(config)
    (truth,) = api.ranking(full)["groups"][0]["ranking"]
    (group,) = api.ranking(placed)["groups"]
    (own,) = group["ranking"]
    row = own["placement"]  # the board's figures: a sub-record, the run's own win rate left as it is
    assert own["prompts"] == 24 and own["win_rate"] != row["win_rate"]
    assert group["board"]["models"] == 8 and group["board"]["prompts"] == 40
    assert row["prompts"] == 24
    assert row["win_rate_low"] <= truth["win_rate"] <= row["win_rate_high"], json.dumps(row) + f" truth {truth['win_rate']}"
    board_rates = sorted(group["board"]["leaderboard"].values(), reverse=True)
    true_rank = 1 + sum(rate > truth["win_rate"] for rate in board_rates)
    assert row["board_rank_low"] <= true_rank <= row["board_rank_high"]
    assert run_cli(["rank", str(placed)]) == 0
    out = capsys.readouterr().out
    assert "placed on the board" in out and f"M8: {row['win_rate']:.1f}%" in out
    # a board that is not one: one line before anything is written
    config.write_text(config.read_text().replace(f'board = "runs/{board.name}"', 'board = "nowhere.sqlite"').replace('"placed"', '"again"'))
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
    assert "reference.board" in capsys.readouterr().err and not (tmp_path / "runs" / "again.sqlite").exists()


def test_extend_of_a_reference_run_places_the_newcomer_on_the_run_itself(tmp_path, capsys):
    """``extend`` of a reference run uses the run as the board (issue #52): the 8 candidates judged on
    all 40 prompts are the board, the newcomer added with a budget of 24 calls is placed on it — its
    win rate over the 40 prompts with an interval that holds its full-data win rate (a run that judged
    it on all 40), and its rank among the 8."""
    prompts, board_responses, new_responses = board_and_newcomer(tmp_path)
    with FakeOpenAIServer(reference_behaviour(slope=4.0)) as server:
        full_config = write_config(
            tmp_path, server.url, name="full", prompts=prompts, responses=new_responses, max_calls=None, reference="soft = true\n"
        )
        full, _ = api.start(full_config)
        config = write_config(
            tmp_path, server.url, name="grown", prompts=prompts, responses=board_responses, max_calls=None, reference="soft = true\n"
        )
        grown, _ = api.start(config)
        before = api.ranking(grown)["groups"][0]
        assert "board" not in before  # a run that was never extended has no board of its own
        added, _ = api.extend(grown, responses=new_responses, add_calls=24)
    assert added == ["M8"]
    (truth,) = api.ranking(full)["groups"][0]["ranking"]
    (group,) = api.ranking(grown)["groups"]
    row = next(r for r in group["ranking"] if r["candidate"] == "M8")["placement"]
    assert group["board"]["models"] == 8 and group["board"]["prompts"] == 40 and "this run" in group["board"]["path"]
    assert row["prompts"] == 24
    assert row["win_rate_low"] <= truth["win_rate"] <= row["win_rate_high"], json.dumps(row) + f" truth {truth['win_rate']}"
    true_rank = 1 + sum(rate > truth["win_rate"] for rate in group["board"]["leaderboard"].values())
    assert row["board_rank_low"] <= true_rank <= row["board_rank_high"]
    assert not any(r.get("placement") for r in group["ranking"] if r["candidate"] != "M8")  # the board's own stay as they were
    assert run_cli(["rank", str(grown)]) == 0
    assert "placed on the board this run" in capsys.readouterr().out
