"""RAEE leaderboards as people read them: both shown orders, uncertainty when every prompt is judged, the SE curve,
per-category boards, a light `rank`, one candidate, a new model placed on a board and `extend` (real HTTP
test server, real SQLite)."""

import json
import math
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from conftest import DATA
from judgekit import board_and_newcomer, board_run, placed_config, reference_behaviour, reference_run, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.offline.raee.fit import RaeeSettings, fit_raee
from orchestrator.run.preparation import dry_run, prepare


def test_both_orders_cancels_a_position_bias(tmp_path, monkeypatch):
    """A judge that prefers whatever is shown first: anchor-first only, every candidate loses; with
    both orders the soft outcomes are symmetric again and the order swap is the ICC's second run."""
    base = [0.2, 0.35, 0.5, 0.65, 0.8]
    with FakeOpenAIServer(reference_behaviour(first_bias=2.0)) as server:
        one, _ = reference_run(
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
        both, reason = reference_run(
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
    biased = {r.candidate: r for r in fit_raee(one, RaeeSettings(soft=True)).rows}
    fair = {r.candidate: r for r in fit_raee(both, RaeeSettings(soft=True)).rows}
    assert all(biased[c].p_hat < 0.5 for c in ("M2", "M3", "M4"))  # even the better ones lose to the anchor
    # the middle candidate equals the anchor: both orders bring it back to ½; order preserved
    assert fair["M2"].p_hat == pytest.approx(0.5, abs=1e-3)
    assert fair["M0"].p_hat + fair["M4"].p_hat == pytest.approx(1.0, abs=1e-3)
    assert [fair[f"M{k}"].elo for k in range(5)] == sorted(fair[f"M{k}"].elo for k in range(5))
    (screen,) = fit_raee(both, RaeeSettings(soft=True)).judges
    assert screen.runs == 2 and screen.icc is not None  # runs = (anchor first, anchor second)
    # the export names the anchor whichever side it was shown on, and fits to the same numbers
    log = tmp_path / "both.jsonl"
    api.export(both, out=log, fmt="jsonl")
    assert {json.loads(line)["reference"] for line in log.open()} == {"reference"}
    from_log = {r.candidate: r.p_bar for r in fit_raee(log, RaeeSettings(soft=True), log=True).rows}
    assert from_log == pytest.approx({c: r.p_bar for c, r in fair.items()})
    # the run exists (api.dry_run would refuse its name): what it could ask, from the checked config
    assert dry_run(prepare(api.load_config(tmp_path / "both.toml")))["possible_requests"] == 30


def test_ranking_keeps_uncertainty_when_every_prompt_is_judged(tmp_path, two_judges):
    """n = M makes the FPC SE 0; the ranking must still use the superpopulation SE."""
    path, _ = reference_run(
        tmp_path, two_judges, prompts=2, candidates=6, reference=0.5, judges='["local-openai"]', reference_toml="soft = true"
    )
    report = fit_raee(path, RaeeSettings(soft=True))
    assert all(r.se_p_fpc == 0.0 and r.se_elo_raw > 0 for r in report.rows)
    ranking = api.ranking(path).as_dict()["groups"][0]["ranking"]
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
    # them close, each category's has them far apart in opposite orders
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
    (group,) = api.ranking(path).as_dict()["groups"]
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
            # a category's prompts are a sample of it: never a point interval, even with every prompt judged
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
    plain, _ = reference_run(tmp_path, two_judges, name="plain", judges='["local-openai"]', reference_toml='anchor = "M0"\n')
    assert "slices" not in api.ranking(plain).as_dict()["groups"][0]


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
    # from the warm-up's judgments
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
    # imports; a fresh interpreter, as a user's `orchestrator rank` is
    _categories_log(tmp_path, {"A": (0.6, 0.4), "B": (0.3, 0.7)}, prompts=10)
    path, _ = _categories_run(tmp_path, "read", 'allocation = "all"\n', max_calls=20)
    code = (
        "import json, sys; from orchestrator import api; ranking = api.ranking(sys.argv[1]);"
        "print(json.dumps([len(ranking.groups[0].slices), 'torch' in sys.modules, 'scipy.stats' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [2, False, False]


def test_a_reference_campaign_of_one_candidate_against_the_prompts_references(tmp_path, capsys):
    """The everyday "evaluate my model against the anchor": one response per prompt and
    the prompts' reference texts as the anchor is a campaign, not "no prompt has 2 or more responses"."""
    prompts, responses = write_dataset(tmp_path / "data", prompts=12, candidates=1, seed=1, reference=0.5)
    with FakeOpenAIServer(reference_behaviour()) as server:
        config = write_config(
            tmp_path, server.url, name="one", prompts=prompts, responses=responses, max_calls=None, reference="soft = true\n"
        )
        path, _ = api.start(config)
    (group,) = api.ranking(path).as_dict()["groups"]
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
    board's models."""
    with FakeOpenAIServer(reference_behaviour(slope=4.0)) as server:
        prompts, new_responses, board = board_run(tmp_path, server)
        full_config = write_config(
            tmp_path, server.url, name="full", prompts=prompts, responses=new_responses, max_calls=None, reference="soft = true\n"
        )
        full, _ = api.start(full_config)
        config = placed_config(tmp_path, server.url, prompts, new_responses, board.name)
        config.write_text(config.read_text().replace(f'board = "{board.name}"', f'board = "runs/{board.name}"'))
        placed, _ = api.start(config)
    (truth,) = api.ranking(full).as_dict()["groups"][0]["ranking"]
    (group,) = api.ranking(placed).as_dict()["groups"]
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
    """``extend`` of a reference run uses the run as the board: the 8 candidates judged on
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
        before = api.ranking(grown).as_dict()["groups"][0]
        assert "board" not in before  # a run that was never extended has no board of its own
        added, _ = api.extend(grown, responses=new_responses, add_calls=24)
    assert added == ["M8"]
    (truth,) = api.ranking(full).as_dict()["groups"][0]["ranking"]
    (group,) = api.ranking(grown).as_dict()["groups"]
    row = next(r for r in group["ranking"] if r["candidate"] == "M8")["placement"]
    assert group["board"]["models"] == 8 and group["board"]["prompts"] == 40 and "this run" in group["board"]["path"]
    assert row["prompts"] == 24
    assert row["win_rate_low"] <= truth["win_rate"] <= row["win_rate_high"], json.dumps(row) + f" truth {truth['win_rate']}"
    true_rank = 1 + sum(rate > truth["win_rate"] for rate in group["board"]["leaderboard"].values())
    assert row["board_rank_low"] <= true_rank <= row["board_rank_high"]
    assert not any(r.get("placement") for r in group["ranking"] if r["candidate"] != "M8")  # the board's own stay as they were
    assert run_cli(["rank", str(grown)]) == 0
    assert "placed on the board this run" in capsys.readouterr().out
