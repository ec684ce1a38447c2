"""RAEE on the log: reference-anchored campaigns in the loop, `orchestrator fit raee` on runs and logs,
screening, pooling, anchor diagnostics, abstention, bad input (real HTTP test server, real SQLite)."""

import json
import math
import sqlite3

import numpy as np
import pytest
from scipy.special import stdtrit
from scipy.stats import spearmanr

from conftest import DATA
from judgekit import reference_run, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.errors import OrchestratorError
from orchestrator.offline.raee.fit import RaeeSettings, fit_raee
from orchestrator.raee import ReferenceJudgments, icc3k, pooled_variance, raee_report
from orchestrator.store import SCHEMA_VERSION, open_run


def test_reference_campaign_asks_every_item_once_and_fit_raee_reports_it(tmp_path, two_judges, capsys):
    path, reason = reference_run(
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

    report = fit_raee(path, RaeeSettings(soft=True))
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
    from_log = fit_raee(log, RaeeSettings(soft=True, population=4), log=True)
    assert [(r.judge, r.candidate, round(r.p_bar, 12)) for r in from_log.rows] == [
        (r["judge"], r["candidate"], round(r["p_bar"], 12)) for r in data["rows"]
    ]
    # the run's ranking and status use RAEE for a reference campaign
    ranking = api.ranking(path).as_dict()
    order = [r["candidate"] for r in ranking["groups"][0]["ranking"]]
    assert set(order[:3]) == {"M3", "M4", "M5"} and set(order[-2:]) == {"M0", "M1"}  # hard outcomes saturate
    # every prompt judged: the win rate is the plain mean over prompts (the official AlpacaEval
    # figure), a point interval (nothing left to sample), the prompts counted
    for row in ranking["groups"][0]["ranking"]:
        rates = [r.p_hat for r in hard.rows if r.candidate == row["candidate"] and r.judge != "pooled"]
        assert row["win_rate"] == pytest.approx(100 * np.mean(rates), abs=1e-3)
        assert row["win_rate_low"] == row["win_rate"] == row["win_rate_high"] and row["prompts"] == 4
    assert api.status(path).as_dict()["mean_entropy"] is None


def test_gains_allocation_spends_prompts_where_intervals_overlap(tmp_path, two_judges, capsys):
    # the gains rule (the default before the lockstep rule): M1 is far above the anchor M0; M2, M3, M4 are
    # close to each other: they get more prompts on average, and nobody is starved (every candidate
    # goes beyond its warm-up prompts)
    path, reason = reference_run(
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
    ranking = api.ranking(path).as_dict()["groups"][0]["ranking"]
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
    report = fit_raee(path, RaeeSettings(soft=True))
    assert report.population == 16
    assert all(r.se_p_fpc < r.se_p_raw for r in report.rows if r.judge != "pooled")


def test_adaptive_allocation_walks_the_open_candidates_at_one_depth(tmp_path, two_judges):
    # the default adaptive rule (lockstep): M1 far above the crowd is settled beyond
    # doubt and stops; M2, M3, M4 (within a point, noisy) walk the shared order at one depth until the budget ends
    path, reason = reference_run(
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
    path, reason = reference_run(
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
    path, reason = reference_run(
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
    assert "population (--population) must be at least 1" in capsys.readouterr().err

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
    assert len(list(api.ranking(path).as_dict()["groups"])) == 2  # read-only use of a version-1 file works
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
