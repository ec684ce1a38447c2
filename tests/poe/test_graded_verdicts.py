"""Graded five-way verdicts: arena-hard's A≫B … B≫A read from a judge's option
log-probabilities or its text, stored under their verdict names, and fitted by the ordered-logit
expert with each judge's cut-points (ties modelled, not counted as half a win)."""

import json
import math
import sqlite3

import numpy as np
import pytest
import torch
from pydantic import ValidationError
from scipy.special import expit
from scipy.stats import spearmanr

from judgekit import QUALITY, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.cli.common import out_console
from orchestrator.judging.extract import extract_options
from orchestrator.judging.testserver import FakeOpenAIServer, completion, logprob_entry
from orchestrator.poe import Observations, PoEConfig, fit_with_reliability
from orchestrator.poe.graded import graded_derivatives, graded_log_density
from orchestrator.records.log import GRADES, LogRecord
from orchestrator.records.templates import Template, get_template

CUTS = (0.6, 1.8)
SLOPE = 4.0


def graded_probabilities(d: float, c1: float = CUTS[0], c2: float = CUTS[1]) -> list[float]:
    """The ordered-logit verdict distribution at difference d, by hand (GRADES order)."""
    at_least = [expit(d - c2), expit(d - c1), expit(d + c1), expit(d + c2), 1.0]
    return [at_least[0]] + [at_least[k] - at_least[k - 1] for k in range(1, 5)]


def test_a_graded_judgment_is_a_pairwise_record_with_a_win_share():
    record = LogRecord.model_validate(
        {
            "kind": "pairwise",
            "judge": "j",
            "prompt_id": "p",
            "candidates": ["x", "y"],
            "probs": {"A>>B": 0.1, "A>B": 0.3, "A=B": 0.2, "B>A": 0.4},
        }
    )
    assert record.prob_first() == pytest.approx(0.1 + 0.3 + 0.1)
    with pytest.raises(ValidationError, match="graded verdicts"):
        LogRecord.model_validate(
            {"kind": "pairwise", "judge": "j", "prompt_id": "p", "candidates": ["x", "y"], "probs": {"A>>B": 1.0, "Q": 0.0}}
        )
    with pytest.raises(ValidationError, match="grades must name"):
        Template.model_validate(
            {**get_template("generic-graded").model_dump(exclude={"digest"}), "grades": ["A>>B", "A>B", "A=B", "B>A", "A>B"]}
        )


def test_the_graded_expert_is_the_ordered_logit_model():
    d = torch.tensor([-2.5, -0.3, 0.0, 0.4, 3.0], dtype=torch.float64)
    c1, c2 = (torch.full_like(d, c) for c in CUTS)
    for k in range(5):
        q = torch.zeros(5, 5, dtype=torch.float64)
        q[:, k] = 1.0
        by_hand = [math.log(graded_probabilities(float(x))[k]) for x in d]
        assert graded_log_density(d, q, c1, c2).tolist() == pytest.approx(by_hand, rel=1e-9)
    # a tie is most likely at d = 0 and says the difference is small: its density peaks there
    tie = torch.zeros(5, 5, dtype=torch.float64)
    tie[:, 2] = 1.0
    value, first, second = graded_derivatives(d, tie, c1, c2)
    assert float(first[2]) == pytest.approx(0.0, abs=1e-12) and bool((second < 0).all())
    h = 1e-5
    numeric = (graded_log_density(d + h, tie, c1, c2) - graded_log_density(d - h, tie, c1, c2)) / (2 * h)
    assert first.tolist() == pytest.approx(numeric.tolist(), rel=1e-6, abs=1e-9)


def test_a_verdict_template_reads_the_last_verdict_of_the_text():
    template = get_template("arena-hard-graded")
    answer = "Assistant A claims [[A>>B]] somewhere, which is wrong.\nMy final verdict is: [[B>A]]"
    response = completion(answer, [logprob_entry("My", [("My", 0.9)])])
    found = extract_options(response, read=template.read, markers=template.markers, option_sets=template.option_sets())
    (reading,) = found.readings
    assert reading.method == "verdict" and reading.probs == {g: float(g == "B>A") for g in GRADES}
    missing = extract_options(
        completion("I cannot decide."), read=template.read, markers=template.markers, option_sets=template.option_sets()
    )
    assert not missing.readings and "no verdict after '[['" in (missing.error or "")


def _graded_judge(body: dict):
    """Answers generic-graded from the ordered-logit model of the texts' hidden qualities."""
    text = " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "user")
    qa, qb = (float(x) for x in QUALITY.findall(text)[:2])
    probs = graded_probabilities(SLOPE * (qa - qb))
    top = str(1 + int(np.argmax(probs)))
    return 200, {}, completion(top, [logprob_entry(top, [(str(k + 1), p) for k, p in enumerate(probs)])])


def test_a_judge_answering_from_a_graded_model_is_read_back(tmp_path, capsys, monkeypatch):
    prompts, responses = write_dataset(
        tmp_path / "data", prompts=6, candidates=6, seed=4, base=[0.1, 0.25, 0.4, 0.55, 0.7, 0.85], spread=0.2
    )
    graded = '["local-openai"]\npairwise_template = "generic-graded"\ntask = "summarise the article"\ncriterion = "coherence"'
    with FakeOpenAIServer(_graded_judge) as server:
        config = write_config(
            tmp_path,
            server.url,
            name="graded",
            prompts=prompts,
            responses=responses,
            judges=graded,
            scope="global",
            max_calls=120,
            extra='[stopping]\nrule = "budget"',
        )
        path, _ = api.start(config)
    db = sqlite3.connect(path)
    rows = db.execute("select prompt_id, candidates, probs from judgments where status = 'ok'").fetchall()
    db.close()
    texts = {(r["prompt_id"], r["candidate"]): r["text"] for r in map(json.loads, responses.read_text().splitlines())}
    assert len(rows) == 120
    rows_checked = 0
    for prompt, candidates, probs in rows:
        (probs,) = json.loads(probs)
        assert list(probs) == list(GRADES)  # stored under the verdicts' names, not the digits
        pairs = json.loads(candidates)
        qa, qb = (float(QUALITY.findall(texts[(prompt, c)])[0]) for c in pairs)
        assert [probs[g] for g in GRADES] == pytest.approx(graded_probabilities(SLOPE * (qa - qb)), rel=1e-6)
        rows_checked += 1
    assert rows_checked == 120
    capsys.readouterr()
    assert run_cli(["rank", str(path), "--json"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    (judge,) = group["judges"]
    # the judge's habits, read back: how readily it calls a tie and a strong preference
    assert judge["tie_cut"] == pytest.approx(CUTS[0], rel=0.2) and judge["strong_cut"] == pytest.approx(CUTS[1], rel=0.2)
    scores = {row["candidate"]: row["score"] for row in group["ranking"]}
    assert spearmanr([scores[f"M{c}"] for c in range(6)], range(6)).statistic == 1.0
    monkeypatch.setattr(out_console, "width", 200)  # (the console's width was fixed at import)
    assert run_cli(["rank", str(path), "--details"]) == 0
    assert f"{judge['tie_cut']:.2f} / {judge['strong_cut']:.2f}" in capsys.readouterr().out


def test_graded_verdicts_fit_the_cut_points_and_collapse_to_ab_without_them():
    rng = np.random.default_rng(3)
    n, scores = 10, np.linspace(-1.5, 1.5, 10)
    comparisons, grades = [], {}
    for k in range(900):
        i, j = rng.choice(n, 2, replace=False)
        verdict = np.eye(5)[rng.choice(5, p=graded_probabilities(scores[i] - scores[j]))]
        comparisons.append((int(i), int(j), float(verdict[0] + verdict[1] + 0.5 * verdict[2])))
        grades[k] = verdict.tolist()
    post = fit_with_reliability(Observations.from_lists(n, comparisons, grades=grades), PoEConfig(prior_precision=0.1))
    assert float(post.judges["tie_cut"][0]) == pytest.approx(CUTS[0], rel=0.15)
    assert float(post.judges["strong_cut"][0]) == pytest.approx(CUTS[1], rel=0.15)
    assert np.polyfit(scores, post.mean.numpy(), 1)[0] == pytest.approx(1.0, rel=0.15)  # the scores' scale too
    plain = fit_with_reliability(Observations.from_lists(n, comparisons), PoEConfig(prior_precision=0.1))
    assert "tie_cut" not in plain.judges
    # a judge that follows the graded model is worth one verdict per verdict: precision κ ≈ 1 (read as
    # coin flips around σ(d) it came out 1.4, intervals too narrow by a sixth)
    weighed = fit_with_reliability(
        Observations.from_lists(n, comparisons, grades=grades), PoEConfig(prior_precision=0.1, judge_precision=True)
    )
    assert 0.85 <= float(weighed.judges["precision"][0]) <= 1.2
