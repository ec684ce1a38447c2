"""Issue #34 item 3, the simplex part: people's absolute labels as the true levels of the answers
they label — the arrays the model takes, the likelihood with a label, and `fit simplex --human`."""

import json

import numpy as np
import pytest

from conftest import ROOT
from judgekit import run_cli
from orchestrator.errors import OrchestratorError
from orchestrator.simplex import build_score_data, label_grid
from orchestrator.simplex.data import labelled_arrays

LIKERT = ROOT / "examples" / "summeval-likert" / "coherence.log.jsonl"
LABELS = ROOT / "examples" / "summeval-gpt35" / "coherence.labels.jsonl"


def _small():
    records = [
        (judge, cand, q, {str(score): 1.0})
        for judge, offset in (("j1", 0), ("j2", 1))
        for cand, base in (("a", 2), ("b", 4))
        for q, score in (("q1", base), ("q2", base - 1), ("q3", base + offset))
    ]
    return build_score_data(records, levels=5)


def test_labels_round_to_levels_and_refuse_scores_off_the_scale():
    data = _small()
    grid, missing = label_grid(data, {("q1", "a"): 2.4, ("q2", "b"): 3.5, ("q9", "a"): 3.0, ("q3", "zz"): 1.0})
    assert grid.tolist() == [[2, 0, 0], [0, 4, 0]]  # 3.5 rounds up; unlabelled answers are 0
    assert sorted(missing) == ["a on q9", "zz on q3"]
    with pytest.raises(OrchestratorError, match="outside the judges' scale 1..5"):
        label_grid(data, {("q1", "a"): 5.6})
    with pytest.raises(OrchestratorError, match="outside"):
        label_grid(data, {("q1", "a"): 0.2})


def test_labelled_answers_move_from_the_marginal_counts_to_their_known_level():
    data = _small()
    items = data.item_counts()
    grid, _ = label_grid(data, {("q1", "a"): 2, ("q2", "b"): 4})
    unlabelled, labelled, labels = labelled_arrays(items, grid, "counts")
    # every judge score is counted once: in the marginal counts or under its answer's label
    assert unlabelled.sum() + labelled.sum() == items.sum()
    assert labels.tolist() == [[0, 1, 0, 0, 0], [0, 0, 0, 1, 0]]
    # judge j2 scored a's answer q1 (labelled 2) as 2, and b's q2 (labelled 4) as 3
    j2, a, b = data.judges.index("j2"), data.candidates.index("a"), data.candidates.index("b")
    assert labelled[j2, a, 1].tolist() == [0, 1, 0, 0, 0] and labelled[j2, b, 3].tolist() == [0, 0, 1, 0, 0]
    none = labelled_arrays(items, None, "counts")
    assert np.array_equal(none[0], data.counts()) and not none[1].any() and not none[2].any()
    answers = labelled_arrays(items, grid, "answers")[2]
    assert answers[a, 0].tolist() == [0, 1, 0, 0, 0] and answers[a, 1].tolist() == [1, 1, 1, 1, 1]


def test_a_labelled_answer_keeps_only_its_known_level_in_the_answers_likelihood():
    import jax.numpy as jnp

    from orchestrator.simplex.model import answer_log_likelihood

    rng = np.random.default_rng(4)
    J, M = 2, 3
    theta = rng.dirichlet(np.ones(M), size=(J, M))
    pi_bar = rng.dirichlet(np.ones(M), size=1)
    counts = np.zeros((J, 1, 1, M))
    counts[0, 0, 0, 2] = counts[1, 0, 0, 1] = 1.0  # judge 0 said 3, judge 1 said 2
    seen = jnp.log(jnp.asarray(np.broadcast_to(theta[:, None], (J, 1, M, M))))
    label = np.zeros((1, 1, M))
    label[0, 0, 1] = 1.0  # a person: true level 2
    got = float(answer_log_likelihood(jnp.asarray(counts), jnp.log(jnp.asarray(pi_bar)), seen, jnp.asarray(label)))
    assert got == pytest.approx(np.log(pi_bar[0, 1] * theta[0, 1, 2] * theta[1, 1, 1]), rel=1e-5)
    unlabelled = float(answer_log_likelihood(jnp.asarray(counts), jnp.log(jnp.asarray(pi_bar)), seen, jnp.ones((1, 1, M))))
    assert unlabelled == pytest.approx(np.log(sum(pi_bar[0, m] * theta[0, m, 2] * theta[1, m, 1] for m in range(M))), rel=1e-5)


def test_fit_simplex_human_labels_bad_input_is_one_line(tmp_path, capsys):
    off_scale = tmp_path / "off.jsonl"
    off_scale.write_text(json.dumps({"prompt_id": "p", "candidate": "M8", "score": 9}) + "\n")
    pairwise = tmp_path / "pairs.jsonl"
    pairwise.write_text(json.dumps({"prompt_id": "p", "first": "M8", "second": "M9", "winner": "M8"}) + "\n")
    first = json.loads(LIKERT.read_text().splitlines()[0])
    stranger = tmp_path / "stranger.jsonl"
    stranger.write_text(json.dumps({"prompt_id": "nowhere", "candidate": "M8", "score": 3}) + "\n")
    base = ["fit", "simplex", "--log", str(LIKERT), "--levels", "5", "--human"]
    for path, message in (
        (off_scale, "outside the judges' scale 1..5"),
        (pairwise, "no absolute score ({prompt_id, candidate, score}) and no pairwise verdict"),
        (stranger, "no label is of an answer in the fitted data"),
        (tmp_path / "missing.jsonl", "no such file"),
    ):
        assert run_cli(base + [str(path)]) == 2, path
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    assert first["kind"] == "absolute"
    off_known = tmp_path / "off-known.jsonl"
    off_known.write_text(json.dumps({"prompt_id": first["prompt_id"], "candidate": first["candidates"][0], "score": 9}) + "\n")
    assert run_cli(base + [str(off_known)]) == 2
    assert "outside the judges' scale 1..5" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.isolated
def test_fit_simplex_with_human_labels_through_the_cli(tmp_path, capsys):
    rows = [json.loads(line) for line in LABELS.read_text().splitlines()]
    some = tmp_path / "some.jsonl"
    some.write_text("".join(json.dumps(r) + "\n" for r in rows[::20]))  # 60 of 1,200 answers (5%)
    args = ["fit", "simplex", "--log", str(LIKERT), "--levels", "5", "--chains", "2", "--warmup", "300", "--draws", "300"]
    assert run_cli(args + ["--human", str(some), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["labelled"] == 60 and report["converged"]
    # people's ranking beside the fit's: every candidate once, ranks 1..K, intervals around them
    people = report["people"]
    assert people["labels"] == 60 and people["tau"] >= 0
    assert sorted(r["candidate"] for r in people["ranking"]) == sorted(r["candidate"] for r in report["candidates"])
    assert [r["rank"] for r in people["ranking"]] == list(range(1, 13))
    assert all(1 <= r["rank_low"] <= r["rank_high"] <= 12 for r in people["ranking"])
    # a person's pairwise verdicts count too (people's ranking only: the fit reads true levels)
    verdicts = [
        {"prompt_id": r["prompt_id"], "first": r["candidate"], "second": other["candidate"], "winner": r["candidate"]}
        for r, other in zip(rows[::20], rows[1::20])
        if r["prompt_id"] == other["prompt_id"] and r["score"] > other["score"]
    ]
    assert verdicts
    some.write_text(some.read_text() + "".join(json.dumps(v) + "\n" for v in verdicts))
    assert run_cli(args + ["--human", str(some)]) == 0
    out = capsys.readouterr().out
    assert "60 answers labelled by people" in out
    assert f"people's ranking — the fit moved by {60 + len(verdicts)} people's labels" in out
