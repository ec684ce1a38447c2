"""The reliability catalog, classes 16–23: the judges board, label
files, family maps, category boards, the labelling server, names, and readers beside a live run —
attacked with inputs nobody here wrote. Each case runs the real command (in this process, on real
files; the server cases against the real labelling server on 127.0.0.1, the signal cases against
the real ``orchestrator label`` process) and checks what a user sees: the exit code, one clear
line, nothing stored changed, and every printed number against an independent computation.

Classes: 16 readers beside a writer, 17 every verdict
kind everywhere (and a price of $0), 18 labels as data with identity, 19 family maps, 20 honest
small slices, 21 the labelling page as a server that can be attacked, 22 names that display as
others, 23 hostile values of the new options.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from judgekit import reference_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer

GRADES = ("A>>B", "A>B", "A=B", "B>A", "B>>A")


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def _err(capsys) -> str:
    return capsys.readouterr().err.strip()


# -- 17: every verdict kind everywhere; a price of $0 --------------------------------------------------

PEOPLE_PREFER = {("p%d" % k): ("m1" if k % 3 else "m2") for k in range(12)}
"""The people's verdict per prompt between m1 and m2 (m1 on two prompts of three)."""


def _labels(path: Path, prompts=PEOPLE_PREFER, prefix: str = "") -> Path:
    return _write(
        path, [{"prompt_id": prefix + p, "first": "m1", "second": "m2", "winner": w, "annotator": "ana"} for p, w in prompts.items()]
    )


def _graded_log(path: Path) -> Path:
    """Three judges on the same 12 prompts, the better answer shown first on even prompts: a perfect
    graded judge, an always-tie graded judge, and a plain A/B judge that always picks the first shown."""
    rows = []
    for k, (prompt, winner) in enumerate(PEOPLE_PREFER.items()):
        first, second = ("m1", "m2") if k % 2 == 0 else ("m2", "m1")
        strong = "A>>B" if winner == first else "B>>A"
        perfect = {g: 0.96 if g == strong else 0.01 for g in GRADES}
        tie = {g: 0.96 if g == "A=B" else 0.01 for g in GRADES}
        rows.append({"kind": "pairwise", "judge": "graded-perfect", "prompt_id": prompt, "candidates": [first, second], "probs": perfect})
        rows.append({"kind": "pairwise", "judge": "graded-tie", "prompt_id": prompt, "candidates": [first, second], "probs": tie})
        rows.append(
            {"kind": "pairwise", "judge": "first-shown", "prompt_id": prompt, "candidates": [first, second], "probs": {"A": 0.9, "B": 0.1}}
        )
    return _write(path, rows)


def test_graded_verdicts_are_read_as_graded_on_the_judges_board(tmp_path, capsys):
    log, labels = _graded_log(tmp_path / "log.jsonl"), _labels(tmp_path / "labels.jsonl")
    assert run_cli(["judges", "--log", str(log), "--human", str(labels), "--json"]) == 0
    rows = {r["judge"]: r for r in json.loads(capsys.readouterr().out)["judges"]}
    # by hand: the perfect judge sides with people on all 12, the tie judge counts ½ on each
    assert rows["graded-perfect"]["agreement"] == 1.0 and rows["graded-tie"]["agreement"] == 0.5
    # first shown: the better answer is first on the 6 even prompts → 6 of 12
    assert rows["first-shown"]["agreement"] == 0.5 and rows["first-shown"]["first_shown_wins"] == 1.0
    # ECE of P(first better) = P(A≫B) + P(A>B) + ½P(A=B): the perfect judge says 0.975 or 0.025
    # and is always right: 0.025; the tie judge says 0.5, the first shown better on 6 of 12: 0
    assert rows["graded-perfect"]["ece"] == 0.025 and rows["graded-tie"]["ece"] == 0.0
    assert rows["graded-perfect"]["first_shown_wins"] == 0.5 and rows["graded-tie"]["first_shown_wins"] is None


def test_a_verdict_kind_the_board_does_not_know_fails_loudly(tmp_path, capsys):
    rows = [
        {"kind": "pairwise", "judge": "j", "prompt_id": p, "candidates": ["m1", "m2"], "probs": {"A": 0.5, "B": 0.3, "Z": 0.2}}
        for p in PEOPLE_PREFER
    ]
    log, labels = _write(tmp_path / "log.jsonl", rows), _labels(tmp_path / "labels.jsonl")
    assert run_cli(["judges", "--log", str(log), "--human", str(labels)]) == 2
    err = _err(capsys)
    assert "neither A/B (C a tie) nor graded" in err and "'Z'" in err and len(err.splitlines()) == 1


def test_a_judge_that_cost_nothing_is_the_cheapest(tmp_path, capsys):
    rows = []
    for prompt, winner in PEOPLE_PREFER.items():
        p = 0.9 if winner == "m1" else 0.1
        for judge, cost in (("local", {"cost_usd": 0.0}), ("paid", {"cost_usd": 0.002}), ("unpriced", {})):
            rows.append(
                {"kind": "pairwise", "judge": judge, "prompt_id": prompt, "candidates": ["m1", "m2"], "probs": {"A": p, "B": 1 - p}, **cost}
            )
    log, labels = _write(tmp_path / "log.jsonl", rows), _labels(tmp_path / "labels.jsonl")
    assert run_cli(["judges", "--log", str(log), "--human", str(labels), "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    prices = {r["judge"]: r["usd_per_1000"] for r in board["judges"]}
    assert prices == {"local": 0.0, "paid": 2.0, "unpriced": None}
    assert board["recommended"]["judge"] == "local"
    assert run_cli(["judges", "--log", str(log), "--human", str(labels)]) == 0
    assert "recommended: local" in capsys.readouterr().out


# -- 18: labels as data with identity -----------------------------------------------------------------


@pytest.mark.parametrize(
    "labels, message", [("typo", "prompt 'xp0' is not judged in"), ("candidate", "candidate 'm9' has no answer to prompt 'p0' judged in")]
)
def test_labels_that_match_no_judged_answer_are_refused_by_the_judges_board(tmp_path, capsys, labels, message):
    log = _graded_log(tmp_path / "log.jsonl")
    if labels == "typo":
        path = _labels(tmp_path / "labels.jsonl", prefix="x")
    else:
        path = _write(tmp_path / "labels.jsonl", [{"prompt_id": "p0", "first": "m1", "second": "m9", "winner": "m1"}])
    assert run_cli(["judges", "--log", str(log), "--human", str(path)]) == 2
    err = _err(capsys)
    assert message in err and "none of its" in err and len(err.splitlines()) == 1


def test_labels_partly_unmatched_are_counted_not_silently_dropped(tmp_path, capsys):
    log = _graded_log(tmp_path / "log.jsonl")
    rows = [json.loads(x) for x in _labels(tmp_path / "a.jsonl").read_text().splitlines()]
    rows.append({"prompt_id": "nowhere", "candidate": "m1", "score": 3, "annotator": "ana"})
    labels = _write(tmp_path / "labels.jsonl", rows)
    assert run_cli(["judges", "--log", str(log), "--human", str(labels), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unmatched_labels"] == 1
    assert run_cli(["judges", "--log", str(log), "--human", str(labels)]) == 0
    assert "1 label(s) are of answers no judge here judged" in capsys.readouterr().out


def _reference_log(path: Path, prompts: int = 20, judges: tuple[str, ...] = ("judge-a",)) -> Path:
    rng = np.random.default_rng(0)
    rows = []
    for judge in judges:
        for k in range(prompts):
            for cand, q in (("c1", 0.7), ("c2", 0.4), ("c3", 0.55)):
                p = float(np.clip(q + rng.normal(0, 0.2), 0.02, 0.98))
                rows.append(
                    {"kind": "reference", "judge": judge, "prompt_id": f"p{k}", "candidates": ["base", cand], "probs": {"A": 1 - p, "B": p}}
                )
    return _write(path, rows)


def test_fit_raee_refuses_labels_of_no_judged_answer(tmp_path, capsys):
    log = _reference_log(tmp_path / "ref.jsonl")
    typo = _write(tmp_path / "labels.jsonl", [{"prompt_id": f"P{k}", "first": "base", "second": "c1", "winner": "c1"} for k in range(5)])
    assert run_cli(["fit", "raee", "--log", str(log), "--human", str(typo)]) == 2
    err = _err(capsys)
    assert "none of its 5 labels is of answers judged in" in err and "prompt 'P0'" in err and len(err.splitlines()) == 1


# -- 19: family maps ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags, message",
    [
        (["judge-a=x", "judge-b=z", "c1=x", "c9=y"], "--family: 'c9' is neither a judge nor a candidate here"),
        (["judge-a=x", "judge-b=z", "c1=x", "c1=y"], "--family: 'c1' is given two families ('x' and 'y')"),
        (["judge-a=x", "judge-b=x", "c1=x"], "a judge of a candidate's family and a judge of none"),
        (["judge-a=x", "c1=x"], "no family for judge 'judge-b'"),
        (["judge-a=x", "judge-b=z"], "no candidate has a family"),
        (["judge-a=x", "judge-b=z", "c1=x", "=y"], "--family '=y': expected NAME=FAMILY"),
    ],
)
def test_family_maps_are_checked_in_fit_raee(tmp_path, capsys, flags, message):
    log = _reference_log(tmp_path / "ref.jsonl", judges=("judge-a", "judge-b"))
    args = ["fit", "raee", "--log", str(log), "--soft", "--control", "self"]
    assert run_cli([*args, *[x for f in flags for x in ("--family", f)]]) == 2
    err = _err(capsys)
    assert message in err and len(err.splitlines()) == 1, err


def test_family_maps_are_checked_in_replay(tmp_path, capsys):
    rows = []
    for k in range(6):
        for judge in ("judge-a", "judge-b"):
            rows.append(
                {"kind": "pairwise", "judge": judge, "prompt_id": f"p{k}", "candidates": ["c1", "c2"], "probs": {"A": 0.6, "B": 0.4}}
            )
    log = _write(tmp_path / "log.jsonl", rows)
    args = ["replay", str(log), "--scope", "global", "--control", "self"]
    assert run_cli([*args, "--family", "judge-a=x", "--family", "judge-b=z", "--family", "c1=x", "--family", "gpt-5=x"]) == 2
    err = _err(capsys)
    assert "--family: 'gpt-5' is neither a judge nor a candidate here" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "families, control, message",
    [
        ('{ "local-openai" = "x", "M0" = "x", "M7" = "y" }', '["self"]', "model.families: 'M7' is neither a judge nor a candidate"),
        ('{ "local-openai" = "x", "M0" = "x" }', "[]", 'model.families is for model.control = ["self"]'),
        ('{ "local-openai" = "x", "other-openai" = "x", "M0" = "x" }', '["self"]', "a judge of a candidate's family and a judge of none"),
        (
            '{ "local-opnai" = "x", "other-openai" = "y", "M0" = "x", "M1" = "y" }',
            '["self"]',
            "'local-opnai' is neither a judge nor a candidate",
        ),
    ],
)
def test_a_runs_family_map_is_checked_before_the_run_exists(tmp_path, monkeypatch, capsys, families, control, message):
    from judgekit import write_judge

    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(write_judge(tmp_path / "judges", "other-openai")))
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3, seed=1)
    judges = '["local-openai", "other-openai"]'
    config = write_config(tmp_path, "http://127.0.0.1:9", name="fam", prompts=prompts, responses=responses, judges=judges)
    config.write_text(config.read_text().replace("[model]\n", f"[model]\ncontrol = {control}\nfamilies = {families}\n"))
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
    err = _err(capsys)
    assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "runs" / "fam.sqlite").exists()


# -- 20: honest small slices ----------------------------------------------------------------------------


def test_a_category_of_one_or_two_prompts_never_gets_point_ranks(tmp_path):
    prompts, responses = write_dataset(tmp_path / "data", prompts=8, candidates=4, seed=3, reference=0.5)
    rows = [json.loads(line) for line in prompts.read_text().splitlines()]
    category = {f"p{k}": "tiny" if k == 0 else "pair" if k in (1, 2) else "rest" for k in range(8)}
    prompts.write_text("".join(json.dumps({**row, "category": category[row["id"]]}) + "\n" for row in rows))
    with FakeOpenAIServer(reference_behaviour()) as server:
        config = write_config(
            tmp_path, server.url, name="slices", prompts=prompts, responses=responses, max_calls=None, reference="soft = true\n"
        )
        path, _ = api.start(config)
    (group,) = api.ranking(path).as_dict()["groups"]
    slices = {part["slice"]: part for part in group["slices"]}
    overall_widths = [r["rank_high"] - r["rank_low"] for r in group["ranking"]]
    for name, size in (("tiny", 1), ("pair", 2)):
        part = slices[name]
        assert part["prompts"] == size and part["small"]
        # never narrower than the whole board's, which has 4 to 8 times the prompts
        widths = [r["rank_high"] - r["rank_low"] for r in part["ranking"]]
        assert sum(widths) >= sum(overall_widths) and all(w >= 1 for w in widths), (name, part["ranking"])
        assert all(r["win_rate_high"] - r["win_rate_low"] > 10 for r in part["ranking"])
    assert not slices["rest"]["small"]
