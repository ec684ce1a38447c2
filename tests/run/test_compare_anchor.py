"""Is mine better, through an anchor: both systems judged against it, or only the candidate against the
baseline's judgments in an earlier reference run (`compare --baseline RUN`). Real runs against a real
HTTP judge on 127.0.0.1; every printed number recomputed from the run files."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from judgekit import reference_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.gate.sequence import confidence_sequence, decide
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.run.planners.compare_anchor import AnchorJudgment, anchored_outcomes, shares

# M0 weak, M1 strong, M2 as strong as M1; every prompt has a reference text of middling quality
BASE = [0.2, 0.8, 0.8, 0.5]


def _data(tmp_path):
    return write_dataset(tmp_path / "data", prompts=40, candidates=4, seed=5, base=BASE, spread=0.3, reference=0.5)


def _config(tmp_path, url, prompts, responses, *, name, compare, max_calls=200):
    config = write_config(tmp_path, url, name=name, prompts=prompts, responses=responses, max_calls=max_calls, batch=4)
    config.write_text(config.read_text() + f"\n[compare]\n{compare}")
    return config


def _board(tmp_path, url, prompts, responses):
    """A reference campaign: every system against the prompts' references on every prompt (one order each)."""
    config = write_config(tmp_path, url, name="board", prompts=prompts, responses=responses, max_calls=None, reference="soft = true\n")
    board, _ = api.start(config)
    return board


def test_through_the_anchor_both_judged_decides_and_the_numbers_are_the_run_files(tmp_path, capsys):
    prompts, responses = _data(tmp_path)
    with FakeOpenAIServer(reference_behaviour()) as server:
        config = _config(
            tmp_path, server.url, prompts, responses, name="both", compare='candidate = "M1"\nbaseline = "M0"\nanchor = "dataset"\n'
        )
        assert run_cli(["compare", str(config), "--json", "--no-cache"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["decision"] == "better" and result["anchor"] == "reference" and result["baseline_run"] is None
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "schema" / "compare-v3.schema.json").read_text())
    jsonschema.validate(result, schema)
    db = sqlite3.connect(result["run"])
    rows = db.execute("select kind, candidates, probs, judge, prompt_id from judgments where status = 'ok'").fetchall()
    assert {r[0] for r in rows} == {"reference"}
    per_prompt: dict = {}
    for _, shown, probs, _, prompt in rows:
        shown, p = json.loads(shown), json.loads(probs)[0]
        system = shown[1] if shown[0] == "reference" else shown[0]
        share = (p["B"] if shown[0] == "reference" else p["A"]) + 0.5 * p["C"]
        per_prompt.setdefault(prompt, {}).setdefault(system, []).append(share)
    both = {k: v for k, v in per_prompt.items() if len(v.get("M1", [])) == 2 and len(v.get("M0", [])) == 2}
    assert len(both) == result["prompts_judged"] < 40  # stopped as soon as it knew
    at = result["decided_after"]
    order = [p for p in _seeded(result["run"]) if p in both][:at]
    both = {p: both[p] for p in order}  # the figures are those the decision read
    wc = np.mean([np.mean(v["M1"]) for v in both.values()])
    wb = np.mean([np.mean(v["M0"]) for v in both.values()])
    assert result["candidate_win_rate"] == pytest.approx(100 * wc, abs=1e-3)
    assert result["baseline_win_rate"] == pytest.approx(100 * wb, abs=1e-3)
    assert result["difference"] == pytest.approx(100 * (wc - wb), abs=1e-3)
    assert result["difference_low"] <= result["difference"] <= result["difference_high"] and result["difference_low"] > 0
    # the outcomes by the product's function on the rows read here: the same prompts, X in [0, 1]
    judged, x, _, _ = anchored_outcomes(sorted(both), _shares(rows, "M1"), _shares(rows, "M0"))
    assert sorted(judged) == sorted(both) and np.all((0 <= x) & (x <= 1))
    assert np.mean(2 * x - 1) == pytest.approx(wc - wb)


def _shares(rows, system):
    return shares([AnchorJudgment(r[3], r[4], tuple(json.loads(r[1])), json.loads(r[2])[0]) for r in rows], system, "reference")


def test_with_the_baseline_from_an_earlier_run_only_the_candidate_is_judged(tmp_path, capsys):
    prompts, responses = _data(tmp_path)
    with FakeOpenAIServer(reference_behaviour()) as server:
        board = _board(tmp_path, server.url, prompts, responses)
        config = _config(tmp_path, server.url, prompts, responses, name="gate", compare='candidate = "M1"\nbaseline = "M0"\n')
        before = len(server.requests)
        code = run_cli(["compare", str(config), "--baseline", str(board), "--json", "--no-cache"])
        asked = server.requests[before:]
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["decision"] == "better" and result["baseline_run"] == str(board)
    assert asked and not any("Summary 0 <<q=" in json.dumps(body) for body in asked)  # M0's answer never shown
    db = sqlite3.connect(result["run"])
    shown = [json.loads(c) for (c,) in db.execute("select candidates from judgments")]
    assert shown and all("M0" not in s and "M1" in s for s in shown)  # the baseline was never asked again
    # the candidate was asked in the orders the board asked the baseline, prompt by prompt
    board_db = sqlite3.connect(board)
    board_orders = {
        (p, json.loads(c)[0] == "reference") for p, c in board_db.execute("select prompt_id, candidates from judgments") if "M0" in c
    }
    mine = {(p, json.loads(c)[0] == "reference") for p, c in db.execute("select prompt_id, candidates from judgments")}
    assert mine <= board_orders
    # the difference from both files by hand
    board_rows = board_db.execute("select kind, candidates, probs, judge, prompt_id from judgments where status = 'ok'").fetchall()
    rows = db.execute("select kind, candidates, probs, judge, prompt_id from judgments where status = 'ok'").fetchall()
    mine_shares, base_shares = _shares(rows, "M1"), _shares(board_rows, "M0")
    assert result["prompts_judged"] == len(mine_shares) > 0
    judged = [p for p in _seeded_with_baseline(result["run"]) if (p, "local-openai") in mine_shares][: result["decided_after"]]
    assert result["candidate_win_rate"] == pytest.approx(
        100 * np.mean([np.mean(list(mine_shares[(p, "local-openai")].values())) for p in judged]), abs=1e-3
    )
    assert result["baseline_win_rate"] == pytest.approx(
        100 * np.mean([np.mean(list(base_shares[(p, "local-openai")].values())) for p in judged]), abs=1e-3
    )
    # the baseline's judgments are kept in the run file: moving the board changes nothing
    shutil.move(board, tmp_path / "moved.sqlite")
    assert api.ranking(result["run"]).as_dict()["comparison"] == {k: v for k, v in result.items() if k != "run"}


def test_a_baseline_run_judged_with_another_template_or_judge_is_one_line_before_any_call(tmp_path, capsys):
    prompts, responses = _data(tmp_path)
    with FakeOpenAIServer(reference_behaviour()) as server:
        board = _board(tmp_path, server.url, prompts, responses)
        config = _config(
            tmp_path,
            server.url,
            prompts,
            responses,
            name="other",
            compare='candidate = "M1"\nbaseline = "M0"\ntemplate = "generic-reference"\n',
        )
        config.write_text(config.read_text().replace("[judging]", '[judging]\ntask = "summarise"\ncriterion = "coherence"'))
        before = len(server.requests)
        code = run_cli(["compare", str(config), "--baseline", str(board)])
        err = capsys.readouterr().err
        assert code == 2 and "not comparable" in err and "Traceback" not in err
        assert len(server.requests) == before and not (tmp_path / "runs" / "other.sqlite").exists()
        code = run_cli(["compare", str(config), "--baseline", str(tmp_path / "nowhere.sqlite")])
        assert code == 2 and "no such run file" in capsys.readouterr().err


def test_an_anchor_that_is_one_of_the_systems_is_refused():
    from pydantic import ValidationError

    from orchestrator.records.compare_config import CompareConfig

    with pytest.raises(ValidationError, match="is one of the two systems"):
        CompareConfig(candidate="a", baseline="b", anchor="a")
    with pytest.raises(ValidationError, match="baseline_run needs compare.anchor"):
        CompareConfig(candidate="a", baseline="b", baseline_run="x.sqlite")


def test_the_anchored_decision_is_the_sequence_on_half_the_difference():
    rng = np.random.default_rng(0)
    wc, wb = rng.uniform(0.5, 1, 300), rng.uniform(0, 0.5, 300)
    x = (1 + wc - wb) / 2
    from orchestrator.records.compare_config import CompareConfig
    from orchestrator.run.planners.compare_anchor import anchored_decision

    section = CompareConfig(candidate="c", baseline="b", anchor="dataset", margin=10.0, alpha=0.05, max_prompts=300, design="anytime")
    found = anchored_decision(x, section)
    plain = decide(confidence_sequence(x, 0.05, horizon=300), 5.0)
    assert found.decision == plain.decision == "better"
    assert found.difference == pytest.approx(2 * plain.difference) and found.low == pytest.approx(2 * plain.low)
    assert found.difference == pytest.approx(100 * np.mean(wc[: found.at] - wb[: found.at]))


def _seeded(run) -> list[str]:
    """The run's prompt order, as its planner has it."""
    from orchestrator.records.config import RunConfig
    from orchestrator.run.planners.compare_anchor import anchored_order
    from orchestrator.store import open_run

    with open_run(run, write=False) as store:
        return anchored_order(RunConfig.from_stored(store.config), store.dataset(), None)


def _seeded_with_baseline(run) -> list[str]:
    from orchestrator.records.config import RunConfig
    from orchestrator.run.planners.compare_anchor import anchored_order, kept_judgments
    from orchestrator.store import open_run

    with open_run(run, write=False) as store:
        kept = store.attachment("baseline")
        return anchored_order(RunConfig.from_stored(store.config), store.dataset(), kept_judgments(kept))
