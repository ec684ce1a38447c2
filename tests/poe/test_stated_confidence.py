"""A judge's stated confidence: read from its answer, stored, never taken at face value — it becomes a
probability only through a calibration on the judge's own repeated verdicts (orchestrator/poe/stated.py).
Real HTTP (the test server), real run files."""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import dataclass

import numpy as np
import pytest
from pydantic import ValidationError

from judgekit import QUALITY, STOP_AT_BUDGET, run_cli, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.judging.extract import stated_confidence
from orchestrator.judging.testserver import FakeOpenAIServer, completion
from orchestrator.poe.stated import MIN_CALIBRATION, apply_calibration, calibrate_stated, fit_calibration, scored_verdicts
from orchestrator.records.log import LogRecord
from orchestrator.records.templates import get_template


@pytest.mark.parametrize(
    "text, value",
    [
        ("Verdict: A\nConfidence: 80", 0.8),
        ("Verdict: B\nConfidence: 65%", 0.65),
        ("Confidence: **9/10**", 0.9),
        ("Confidence: 0.7", 0.7),
        ("Confidence: 85 / 100", 0.85),
        ("confidence: 100", 1.0),
        ("Confidence: 40\n...\nConfidence: 90", 0.9),  # the last one, as the verdict
        ("Confidence: high", None),
        ("Confidence: 1e5", None),  # not a plain number: not read as 1
        ("Confidence: 85.5.5", None),
        ("Confidence: 99.5%", 0.995),
        ("Confidence: 150", None),
        ("Verdict: A", None),
    ],
)
def test_a_stated_confidence_is_read_from_the_answer_or_said_missing(text, value):
    got, note = stated_confidence(text, "Confidence:")
    assert got == pytest.approx(value) if value is not None else got is None and note


def test_a_stated_confidence_belongs_to_one_verdict_in_a_log():
    base = {"kind": "pairwise", "judge": "j", "prompt_id": "p", "candidates": ["a", "b"], "probs": {"A": 1.0, "B": 0.0}}
    assert LogRecord.model_validate({**base, "method": "verdict", "stated": 0.8}).stated == 0.8
    with pytest.raises(ValidationError, match="needs method 'verdict'"):
        LogRecord.model_validate({**base, "probs": {"A": 0.7, "B": 0.3}, "method": "logprobs", "stated": 0.8})
    with pytest.raises(ValidationError):
        LogRecord.model_validate({**base, "method": "verdict", "stated": 1.5})


def test_a_confidence_marker_needs_a_parsed_verdict():
    template = get_template("generic-pairwise-confidence")
    assert template.confidence_marker == "Confidence:" and template.read == "verdict"
    with pytest.raises(ValidationError, match="confidence_marker needs"):
        template.model_validate({**template.model_dump(), "read": "first_token", "markers": []})


@dataclass(frozen=True)
class Row:
    judge: str
    kind: str
    prompt_id: str
    candidates: list
    probs: list
    stated: float | None
    method: str | None = "verdict"
    p_first: float | None = None


def _overconfident_judge(units: int, asks: int, seed: int) -> tuple[list[Row], dict]:
    """Each unit has a probability q of option A; every verdict is a draw from it, and the judge
    states 0.5 + 0.5·q_v^0.3 (always sure, monotone in its own probability of the verdict)."""
    rng = np.random.default_rng(seed)
    rows, truth = [], {}
    for u in range(units):
        q = float(rng.uniform(0.05, 0.95))
        truth[u] = q
        for _ in range(asks):
            pick = "A" if rng.random() < q else "B"
            qv = q if pick == "A" else 1 - q
            rows.append(
                Row("j", "pairwise", f"p{u}", ["x", "y"], [{"A": float(pick == "A"), "B": float(pick == "B")}], 0.5 + 0.5 * qv**0.3)
            )
    return rows, truth


def test_the_calibration_reads_an_overconfident_judge_as_its_own_probability():
    rows, _ = _overconfident_judge(400, 3, seed=1)
    calibration = fit_calibration(*scored_verdicts(rows))
    assert calibration is not None and calibration.n == len(rows)
    assert calibration.stated_mean > calibration.agreement + 0.15  # it says far more than its verdicts repeat
    # π(c) against the truth: a stated c = 0.5 + 0.5 q^0.3 means the judge's probability of its verdict is q
    for q in (0.3, 0.6, 0.9):
        c = 0.5 + 0.5 * q**0.3
        assert calibration.probability(c) == pytest.approx(q, abs=0.12)
    assert calibration.b >= 0


def test_too_few_repeated_verdicts_leave_the_verdicts_as_they_are():
    rows, _ = _overconfident_judge(MIN_CALIBRATION - 1, 1, seed=2)  # no unit asked twice: nothing to score
    assert scored_verdicts(rows)[0].size == 0 and fit_calibration(*scored_verdicts(rows)) is None
    out, calibrations = calibrate_stated(rows)
    assert out == rows and calibrations == {"j": None}


def test_calibrated_verdicts_carry_the_calibrated_probability():
    rows, _ = _overconfident_judge(100, 2, seed=3)
    out, calibrations = calibrate_stated(rows)
    calibration = calibrations["j"]
    assert calibration is not None
    for before, after in zip(rows, out):
        pick = max(before.probs[0], key=before.probs[0].get)
        assert after.method == "stated"
        assert after.probs[0][pick] == pytest.approx(calibration.probability(before.stated))
        assert sum(after.probs[0].values()) == pytest.approx(1.0)
        assert after.p_first == pytest.approx(after.probs[0]["A"])
    again = apply_calibration(out, calibration)  # calibrating twice is the same
    assert [r.probs for r in again] == [r.probs for r in out]


def _confident_judge(seen: list):
    """Picks the better summary with probability σ(4·Δq) and always says it is 95% sure."""
    rng = random.Random(7)

    def behaviour(body: dict):
        seen.append(body.get("logprobs"))
        text = " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "user")
        qs = [float(x) for x in QUALITY.findall(text)]
        first = 1 / (1 + np.exp(-4 * (qs[0] - qs[1]))) if len(qs) >= 2 else 0.5
        pick = "A" if rng.random() < first else "B"
        return 200, {}, completion(f"<think>compare</think>\nVerdict: {pick}\nConfidence: 95")

    return behaviour


def test_a_run_stores_the_stated_confidence_and_says_what_it_was_worth(tmp_path, monkeypatch, capsys):
    folder = write_judge(tmp_path / "judges", "sure", logprobs=False, samples=3, prefill=False)
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(folder))
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=4, seed=1)
    seen: list = []
    with FakeOpenAIServer(_confident_judge(seen)) as server:
        config = write_config(
            tmp_path,
            server.url,
            name="sure",
            prompts=prompts,
            responses=responses,
            judges='["sure"]',
            max_calls=60,
            budget_extra=STOP_AT_BUDGET,
            scope="global",
        )
        extra = 'pairwise_template = "generic-pairwise-confidence"\ntask = "summarise the article"\ncriterion = "coherence"\n'
        config.write_text(config.read_text().replace('judges = ["sure"]', 'judges = ["sure"]\n' + extra))
        path, _ = api.start(config)
    db = sqlite3.connect(path)
    rows = db.execute("select method, stated, probs, repeat from judgments where status = 'ok'").fetchall()
    assert rows and all(r[0] == "verdict" and r[1] == pytest.approx(0.95) for r in rows)
    assert all(sorted(json.loads(r[2])[0].values()) == [0.0, 1.0] for r in rows)  # stored as the one verdict it is
    assert not any(seen)  # no log-probabilities asked of it
    read = api.ranking(path).as_dict()["groups"][0]["judges"][0]["read_as"]
    assert read["method"] == "verdict" and read["stated"]["judgments"] == len(rows)
    assert read["stated"]["mean"] == pytest.approx(0.95)
    assert capsys.readouterr() is not None
    code = run_cli(["rank", str(path)])
    out = capsys.readouterr().out
    assert code == 0 and "stated confidence 95% on average" in out
    assert read["stated"]["calibrated_on"] == "its own repeated verdicts"
    assert read["stated"]["at_mean"] < 0.9 and "calibrated on" in out and "its 95% reads as" in out
    # the agreement it prints, by hand from the run file: each verdict against the others of its request
    units: dict = {}
    for prompt, shown, probs in db.execute("select prompt_id, candidates, probs from judgments where status = 'ok'"):
        first = json.loads(probs)[0]
        units.setdefault((prompt, shown), []).append(max(first, key=first.get))
    agreeing = sum(sum(c == v for c in u) - 1 for u in units.values() if len(u) > 1 for v in u)
    pairs = sum(len(u) * (len(u) - 1) for u in units.values() if len(u) > 1)
    assert read["stated"]["agreement"] == pytest.approx(agreeing / pairs, abs=1e-4)
    assert read["stated"]["scored"] == sum(len(u) for u in units.values() if len(u) > 1)
    exported = tmp_path / "log.jsonl"
    assert api.export(path, out=exported) == len(rows)
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert all(line["stated"] == pytest.approx(0.95) and line["method"] == "verdict" for line in lines)
    again = [LogRecord.model_validate(line) for line in lines]  # the export reads back as a log
    assert all(r.stated == pytest.approx(0.95) for r in again)
