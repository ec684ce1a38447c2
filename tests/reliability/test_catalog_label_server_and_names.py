"""The reliability catalog, classes 21–23: the labelling page as a server that can be attacked, names that display as others, hostile values of the new options, readers beside a writer."""

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

import pytest
from test_catalog_labels_and_boards import _err, _graded_log, _labels, _write

from judgekit import call_label_server, quality_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer

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
        status, payload = call_label_server(server.url + "api/label", body)
        assert status == 400 and isinstance(payload.get("error"), str) and "\n" not in payload["error"], (status, payload)
        # the server still answers, and a good label is stored
        assert call_label_server(server.url + "api/label", json.dumps({"item": item_id, "verdict": "A"}).encode())[0] == 200
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
            status = api.status(path).as_dict()
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
