"""Reliability, fourth campaign (issue #54): the surfaces added last — the judges board, label
files, family maps, category boards, the labelling server, names, and readers beside a live run —
attacked with inputs nobody here wrote. Each case runs the real command (in this process, on real
files; the server cases against the real labelling server on 127.0.0.1, the signal cases against
the real ``orchestrator label`` process) and checks what a user sees: the exit code, one clear
line, nothing stored changed, and every printed number against an independent computation.

Classes (numbered after the third campaign's fifteen): 16 readers beside a writer, 17 every verdict
kind everywhere (and a price of $0), 18 labels as data with identity, 19 family maps, 20 honest
small slices, 21 the labelling page as a server that can be attacked, 22 names that display as
others, 23 hostile values of the new options.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from test_labelling import _call

from judgekit import quality_behaviour, reference_behaviour, run_cli, write_config, write_dataset
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
    (group,) = api.ranking(path)["groups"]
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


# -- 21: the labelling page as a server that can be attacked ----------------------------------------------


@pytest.fixture(scope="module")
def labelled_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("label")
    prompts, responses = write_dataset(tmp / "data", prompts=3, candidates=3, seed=2)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp, server.url, name="people", prompts=prompts, responses=responses, max_calls=8)
        path, _ = api.start(config)
    return path


def _labels_stored(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        exists = db.execute("select 1 from sqlite_master where name = 'human_labels'").fetchone()
        return db.execute("select count(*) from human_labels").fetchone()[0] if exists else 0
    finally:
        db.close()


HOSTILE_BODIES = {
    "verdict a list": lambda item: json.dumps({"item": item, "verdict": ["A"]}).encode(),
    "verdict an object": lambda item: json.dumps({"item": item, "verdict": {"A": 1}}).encode(),
    "verdict a number": lambda item: json.dumps({"item": item, "verdict": 1}).encode(),
    "verdict true": lambda item: json.dumps({"item": item, "verdict": True}).encode(),
    "verdict null": lambda item: json.dumps({"item": item, "verdict": None}).encode(),
    "item a list": lambda item: json.dumps({"item": [item], "verdict": "A"}).encode(),
    "item an object": lambda item: json.dumps({"item": {"id": item}, "verdict": "A"}).encode(),
    "deeply nested": lambda item: b'{"item": "' + item.encode() + b'", "verdict": ' + b"[" * 100_00 + b"]" * 100_00 + b"}",
    "nested 5 deep": lambda item: json.dumps({"item": item, "verdict": [[[["A"]]]]}).encode(),
    "NaN": lambda item: b'{"item": "' + item.encode() + b'", "verdict": NaN}',
    "not UTF-8": lambda item: b'{"item": "\xff\xfe", "verdict": "A"}',
    "a bare string": lambda item: b'"A"',
    "an array": lambda item: json.dumps([item, "A"]).encode(),
    "truncated JSON": lambda item: b'{"item": "' + item.encode() + b'", "verd',
    "empty object": lambda item: b"{}",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_BODIES))
def test_any_json_shape_is_a_400_and_nothing_is_stored(labelled_run, name):
    before = _labels_stored(labelled_run)
    with api.label_server(labelled_run, annotator=f"fuzz-{abs(hash(name)) % 10_000}") as server:
        item_id = json.loads(urllib.request.urlopen(server.url + "api/next", timeout=10).read())["item"]["id"]
        body = HOSTILE_BODIES[name](item_id)
        status, payload = _call(server.url + "api/label", body)
        assert status == 400 and isinstance(payload.get("error"), str) and "\n" not in payload["error"], (status, payload)
        # the server still answers, and a good label is stored
        assert _call(server.url + "api/label", json.dumps({"item": item_id, "verdict": "A"}).encode())[0] == 200
    assert _labels_stored(labelled_run) == before + 1


def test_a_body_over_the_limit_or_a_lying_length_is_refused(labelled_run):
    with api.label_server(labelled_run, annotator="sizes") as server:
        host, port = server.url.split("//")[1].rstrip("/").split(":")
        for head, body in ((f"Content-Length: {10**9}", b"{}"), ("Content-Length: -5", b"{}"), ("Content-Length: abc", b"{}")):
            with socket.create_connection((host, int(port)), timeout=10) as conn:
                conn.sendall(
                    f"POST /api/label HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n{head}\r\n\r\n".encode()
                    + body
                )
                reply = conn.recv(4096).decode(errors="replace")
            assert reply.startswith("HTTP/1.0 400"), (head, reply[:80])


def test_an_idle_connection_does_not_keep_the_server_alive(labelled_run):
    server = api.label_server(labelled_run, annotator="idle")
    with server:
        host, port = server.url.split("//")[1].rstrip("/").split(":")
        idle = socket.create_connection((host, int(port)), timeout=10)  # a browser's pre-opened socket: sends nothing
        half = socket.create_connection((host, int(port)), timeout=10)
        half.sendall(
            f"POST /api/label HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{{".encode()
        )
        time.sleep(0.3)
        started = time.monotonic()
    elapsed = time.monotonic() - started  # the context's close: drops both connections
    idle.close()
    half.close()
    assert elapsed < 2.0, elapsed


def _label_process(path: Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "label", str(path), "--annotator", "sig"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("labelling page: "), line
    return process, line.split(": ", 1)[1].strip()


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_label_server_within_two_seconds_whatever_clients_hold(labelled_run, signum):
    process, url = _label_process(labelled_run)
    try:
        host, port = url.split("//")[1].rstrip("/").split(":")
        held = [socket.create_connection((host, int(port)), timeout=10) for _ in range(3)]
        held[1].sendall(b"GET /api/next HTTP/1.1\r\n")  # half a request
        time.sleep(0.5)
        started = time.monotonic()
        process.send_signal(signum)
        _, err = process.communicate(timeout=10)
        elapsed = time.monotonic() - started
        for conn in held:
            conn.close()
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0 and "stopped:" in err and "Traceback" not in err, err
    assert elapsed < 2.0, elapsed


# -- 22: names that display as others ---------------------------------------------------------------------

RLO = "\u202e"


@pytest.mark.parametrize("where", ["candidate", "prompt id"])
def test_bidi_controls_in_dataset_names_are_refused(tmp_path, capsys, where):
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3, seed=1)
    if where == "candidate":
        responses.write_text(responses.read_text().replace('"M2"', f'"M{RLO}2"'))
    else:
        prompts.write_text(prompts.read_text().replace('"p1"', f'"p{RLO}1"'))
        responses.write_text(responses.read_text().replace('"p1"', f'"p{RLO}1"'))
    config = write_config(tmp_path, "http://127.0.0.1:9", name="bidi", prompts=prompts, responses=responses)
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
    err = _err(capsys)
    assert "bidirectional control U+202E" in err and len(err.splitlines()) == 1


def test_bidi_controls_in_a_judge_name_an_annotator_and_a_label_file_are_refused(tmp_path, capsys, labelled_run):
    log = _write(
        tmp_path / "log.jsonl",
        [{"kind": "pairwise", "judge": f"gpt{RLO}4", "prompt_id": "p0", "candidates": ["m1", "m2"], "probs": {"A": 0.6, "B": 0.4}}],
    )
    assert run_cli(["replay", str(log)]) == 2
    assert "U+202E" in _err(capsys)
    assert run_cli(["label", str(labelled_run), "--annotator", f"ana{RLO}"]) == 2
    assert "U+202E" in _err(capsys)
    labels = _write(tmp_path / "labels.jsonl", [{"prompt_id": "p0", "candidate": "M0", "score": 3, "annotator": f"b{RLO}en"}])
    assert run_cli(["label", str(labelled_run), "--import", str(labels)]) == 2
    assert "U+202E" in (err := _err(capsys)) and len(err.splitlines()) == 1
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3, seed=1)
    config = write_config(tmp_path, "http://127.0.0.1:9", name="j", prompts=prompts, responses=responses, judges=f'["local{RLO}-openai"]')
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
    assert "U+202E" in _err(capsys)


# -- 23: hostile values of the new options ----------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["judges", "--log", "{log}", "--human", "{labels}", "--margin", "-0.1"], "--margin must be in [0, 1)"),
        (["judges", "--log", "{log}", "--human", "{labels}", "--margin", "1"], "--margin must be in [0, 1)"),
        (["judges", "--log", "{log}"], "--human LABELS.jsonl is needed with --log"),
        (["judges", "--log", "{log}", "--human", "{empty}"], "the file has no labels"),
        (["judges", "--log", "{log}", "--human", "{twice}"], "labelled this item already"),
        (["label", "{run}", "--port", "-1"], "--port must be in 0..65535"),
        (["label", "{run}", "--order", "best"], "--order must be 'random' or 'disagreement'"),
        (["label", "{run}", "--import", "{labels}", "--export", "-"], "--import and --export go one at a time"),
        (["label", "{run}", "--import", "{log}"], "a label is {prompt_id, candidate, score}"),
    ],
)
def test_hostile_values_of_the_new_options_are_one_line_and_exit_2(tmp_path, capsys, labelled_run, args, message):
    files = {
        "log": _graded_log(tmp_path / "log.jsonl"),
        "labels": _labels(tmp_path / "labels.jsonl"),
        "empty": _write(tmp_path / "empty.jsonl", []),
        "twice": _write(tmp_path / "twice.jsonl", [{"prompt_id": "p0", "candidate": "m1", "score": 1}] * 2),
        "run": labelled_run,
    }
    before = _labels_stored(labelled_run)
    assert run_cli([a.format(**{k: str(v) for k, v in files.items()}) for a in args]) == 2
    err = _err(capsys)
    assert message in err and len(err.splitlines()) == 1, err
    assert _labels_stored(labelled_run) == before


# -- 16: readers beside a writer -----------------------------------------------------------------------


def _replaying_copy(source: Path, target: Path) -> list[str]:
    """A copy of a finished run with its judgments taken out (kept in table ``saved``) and its
    requests pending again: a writer puts them back one transaction each, as the engine commits."""
    shutil.copy(source, target)
    db = sqlite3.connect(target, isolation_level=None)
    db.execute("create table saved as select * from judgments")
    db.execute("delete from judgments")
    db.execute("update requests set status = 'pending'")
    keys = [k for (k,) in db.execute("select key from saved order by round, rowid")]
    db.close()
    return keys


def test_readers_beside_a_writer_always_see_one_commit(labelled_run, tmp_path):
    """Hundreds of reads (``status`` with its fits and forecast, ``export``, the store's own typed
    reads) while a writer commits judgments one transaction each, as the engine does (a judgment
    row and its request's status): zero failures, and each answer is the run at one commit — as many
    judgments as requests done, never a mix of two commits."""
    from orchestrator.store import open_run

    path = tmp_path / "live.sqlite"
    keys = _replaying_copy(labelled_run, path)
    stop = threading.Event()
    failures: list[str] = []
    answers: list[tuple[str, int, int]] = []

    def writer() -> None:
        db = sqlite3.connect(path, isolation_level=None, timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        try:
            while not stop.is_set():
                for key in keys:
                    db.execute("BEGIN IMMEDIATE")
                    db.execute("insert into judgments select * from saved where key = ?", [key])
                    db.execute("update requests set status = 'done' where key = ?", [key])
                    db.execute("COMMIT")
                    time.sleep(0.001)
                db.execute("BEGIN IMMEDIATE")
                db.execute("delete from judgments")
                db.execute("update requests set status = 'pending'")
                db.execute("COMMIT")
        finally:
            db.close()

    def read(kind: str) -> tuple[int, int]:
        if kind == "status":
            status = api.status(path)
            return status["spent"]["calls"], status["requests"].get("done", 0)
        if kind == "export":
            with open_run(path, write=False) as store:
                done = store.request_counts().get("done", 0)
                from orchestrator.offline.runs.export import log_records

                return len(log_records(store)), done
        with open_run(path, write=False) as store:
            return len(list(store.judgments())), store.request_counts().get("done", 0)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for kind in ["status"] * 40 + ["export"] * 150 + ["store"] * 300:
            try:
                calls, done = read(kind)
            except Exception as exc:  # noqa: BLE001 - any failure of a reader is what this test counts
                failures.append(f"{kind}: {exc!r}")
                continue
            answers.append((kind, calls, done))
    finally:
        stop.set()
        thread.join()
    assert failures == [], failures[:3]
    mixed = [a for a in answers if a[1] != a[2]]
    assert mixed == [], mixed[:5]
    assert len(answers) == 490 and len({calls for _, calls, _ in answers}) > 3  # the readers did see the writer move


def test_a_reader_holds_its_snapshot_until_closed(labelled_run, tmp_path):
    from orchestrator.store import open_run

    path = tmp_path / "snap.sqlite"
    keys = _replaying_copy(labelled_run, path)
    with open_run(path, write=False) as reader:
        before = reader.spend().calls
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("insert into judgments select * from saved where key = ?", [keys[0]])
        db.close()
        assert reader.spend().calls == before == 0 and len(list(reader.judgments())) == 0
    with open_run(path, write=False) as reader:
        assert reader.spend().calls == 1
