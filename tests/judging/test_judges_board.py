"""`orchestrator judges`: judges against people's labels, checked against a hand
computation; the labels format validated like every input."""

import json

import pytest

from judgekit import quality_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def board_files(tmp_path):
    labels = _write(
        tmp_path / "labels.jsonl",
        [{"prompt_id": "p1", "candidate": c, "score": s, "annotator": "x"} for c, s in (("A", 3), ("B", 2), ("C", 1))]
        + [
            {"prompt_id": "p2", "first": "A", "second": "B", "winner": w, "annotator": who}
            for who, w in (("x", "B"), ("y", "B"), ("w", "B"), ("z", "A"))
        ],
    )

    def pair(judge, prompt, a, b, p, cost=0.0):
        return {
            "kind": "pairwise",
            "judge": judge,
            "prompt_id": prompt,
            "candidates": [a, b],
            "probs": {"A": p, "B": 1 - p},
            "cost_usd": cost,
        }

    def score(judge, prompt, c, level, cost=0.0):
        return {"kind": "absolute", "judge": judge, "prompt_id": prompt, "candidates": [c], "probs": {str(level): 1.0}, "cost_usd": cost}

    log = _write(
        tmp_path / "log.jsonl",
        [
            pair("good", "p1", "A", "B", 0.9, 0.01),
            pair("good", "p1", "B", "C", 0.8, 0.01),
            pair("good", "p2", "A", "B", 0.3, 0.01),
            pair("bad", "p1", "A", "B", 0.2),
            pair("bad", "p1", "B", "C", 0.5),
            pair("bad", "p2", "A", "B", 0.6),
            score("abs", "p1", "A", 5, 0.001),
            score("abs", "p1", "B", 4, 0.001),
            score("abs", "p1", "C", 4, 0.001),
        ],
    )
    return log, labels


def test_the_leaderboard_matches_a_hand_computation(board_files, capsys):
    log, labels = board_files
    assert run_cli(["judges", "--log", str(log), "--human", str(labels), "--margin", "0.2", "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    rows = {r["judge"]: r for r in board["judges"]}
    # good: agrees on p1 A>B, p1 B>C and p2 B>A (the majority of x, y, w against z)
    assert rows["good"]["agreement"] == 1.0 and rows["good"]["compared"] == 3
    # bad: wrong, a tie (½), wrong
    assert rows["bad"]["agreement"] == pytest.approx(0.5 / 3, abs=1e-4)
    # abs: from its scores A > B = C on p1: right, right, tie
    assert rows["abs"]["agreement"] == pytest.approx(2.5 / 3, abs=1e-4)
    assert [r["judge"] for r in board["judges"]] == ["good", "abs", "bad"]
    assert rows["good"]["first_shown_wins"] == pytest.approx(2 / 3, abs=1e-4)
    assert rows["good"]["usd_per_1000"] == pytest.approx(10.0) and rows["abs"]["usd_per_1000"] == pytest.approx(1.0)
    # x, y and w each side with the others' majority, z does not
    assert board["human_ceiling"] == pytest.approx(0.75)
    assert board["recommended"]["judge"] == "abs"  # within 0.2 of the best, and cheaper
    assert board["annotators"] == ["w", "x", "y", "z"]
    assert rows["good"]["agreement_low"] <= rows["good"]["agreement"] <= rows["good"]["agreement_high"]
    assert run_cli(["judges", "--log", str(log), "--human", str(labels), "--margin", "0.2"]) == 0
    text = capsys.readouterr().out
    assert "recommended: abs" in text and "human ceiling (an annotator vs the majority of the others): 0.750" in text


@pytest.mark.parametrize(
    "row, message",
    [
        ({"prompt_id": "p1", "first": "A", "second": "B", "winner": "C"}, "winner must be 'A', 'B' or 'tie'"),
        ({"prompt_id": "p1", "candidate": "A", "score": "high"}, "score"),
        ({"prompt_id": "p1", "text": "hello"}, "a label is {prompt_id, candidate, score} (absolute)"),
        ({"prompt_id": "p1", "candidate": "A", "score": 3, "annotator": "x"}, "'x' labelled this item already (line 1)"),
    ],
)
def test_bad_labels_are_one_line_naming_file_and_line(board_files, tmp_path, capsys, row, message):
    log, _ = board_files
    labels = _write(tmp_path / "bad.jsonl", [{"prompt_id": "p1", "candidate": "A", "score": 2, "annotator": "x"}, row])
    assert run_cli(["judges", "--log", str(log), "--human", str(labels)]) == 2
    err = capsys.readouterr().err.strip()
    assert "bad.jsonl:2: " in err and message in err and len(err.splitlines()) == 1


def test_judges_of_a_run_file(tmp_path, capsys):
    prompts, responses = write_dataset(tmp_path / "data", prompts=3, candidates=4, seed=2)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, name="board", prompts=prompts, responses=responses, max_calls=12)
        path, _ = api.start(config)
    labels = [json.loads(line) for line in responses.read_text().splitlines()]
    human = _write(
        tmp_path / "people.jsonl",
        [{"prompt_id": r["prompt_id"], "candidate": r["candidate"], "score": r["human"]["coherence"]} for r in labels],
    )
    capsys.readouterr()
    assert run_cli(["judges", str(path), "--human", str(human), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["judges"]
    # the test judge prefers the higher hidden quality, which the labels are: it agrees with people
    assert row["judge"] == "local-openai" and row["agreement"] > 0.9 and row["compared"] > 0
    assert run_cli(["judges", "--human", str(human)]) == 2


def test_random_label_rows_never_give_a_traceback(tmp_path):
    """Type swaps, missing and extra keys, nesting: a label file is read or refused in one line."""
    import random

    from orchestrator.errors import OrchestratorError
    from orchestrator.offline.judges.human_labels import load_human_labels

    values = [None, 1, -2.5, "x", "", "tie", [], {}, {"a": [1]}, True, "A", "B", "p1", "a b", "\u0000", 10**400]
    keys = ["prompt_id", "candidate", "score", "annotator", "first", "second", "winner", "kind", "extra"]
    rng = random.Random(34)
    read = refused = 0
    for k in range(400):
        row = {key: rng.choice(values) for key in rng.sample(keys, rng.randint(0, 6))}
        path = tmp_path / f"labels{k}.jsonl"
        path.write_text(json.dumps(row) + "\n")
        try:
            load_human_labels(path)
            read += 1
        except OrchestratorError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(str(path))
            refused += 1
    assert read + refused == 400 and refused > 300
