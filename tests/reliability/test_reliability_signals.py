"""Reliability, class 4: a signal while calls wait out a provider's
``Retry-After`` (or a batch's polling interval) stops at once and sends nothing new. The real
``orchestrator run`` in a child process against a real HTTP judge on 127.0.0.1."""

import signal
import sqlite3
import subprocess
import time

import childkit
import pytest

from judgekit import quality_behaviour, write_config, write_dataset, write_judge
from orchestrator.judging.testserver import FakeOpenAIServer

pytestmark = pytest.mark.slow


def _always_slow_down(body):
    return 429, {"Retry-After": "30"}, {"error": {"message": "slow down"}}


def _start(tmp_path, server, judge="local-openai"):
    data = write_dataset(tmp_path / "d", prompts=2, candidates=4)
    config = write_config(
        tmp_path, server.url, name="wait", judges=f'["{judge}"]', prompts=data[0], responses=data[1], max_calls=12, batch=4
    )
    config.write_text(config.read_text().replace("backoff_max_s = 0.2", "backoff_max_s = 60"))
    proc = childkit.popen(
        ["run", str(config), "--no-cache"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**__import__("os").environ, "ORCHESTRATOR_JUDGES": str(tmp_path / "judges")},
    )
    return proc, tmp_path / "runs" / "wait.sqlite"


def _wait_for(condition, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert condition()


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_during_retry_after_stops_at_once_and_sends_nothing_new(tmp_path, sig):
    write_judge(tmp_path / "judges", "local-openai")
    with FakeOpenAIServer(_always_slow_down) as server:
        proc, run = _start(tmp_path, server)
        try:
            _wait_for(lambda: len(server.requests) >= 4)  # the first round's calls, all told to wait 30 s
            time.sleep(0.5)
            sent = len(server.requests)
            signalled = time.monotonic()
            proc.send_signal(getattr(signal, sig))
            code = proc.wait(timeout=20)
            took = time.monotonic() - signalled
            stderr = proc.stderr.read()
        finally:
            proc.kill()
            proc.wait()
            proc.stderr.close()
        after = len(server.requests)
    assert took < 8, f"took {took:.1f} s after the signal"  # not the 30 s Retry-After
    assert after == sent  # nothing new after the signal
    assert code == 130 and "orchestrator resume" in stderr, stderr
    db = sqlite3.connect(run)
    status, pending = db.execute("select status, (select count(*) from requests where status = 'pending') from runs").fetchone()
    db.close()
    assert status == "interrupted" and pending >= 4  # asked again on resume, never lost


def test_a_signal_while_a_batch_is_polled_stops_at_once(tmp_path):
    write_judge(tmp_path / "judges", "batch-openai", model="openai/local", batch=True, batch_poll_s=30.0, batch_poll_max_s=60.0)
    with FakeOpenAIServer(quality_behaviour, batch_delay_s=45.0) as server:
        proc, run = _start(tmp_path, server, judge="batch-openai")
        try:
            _wait_for(lambda: server.batch.created >= 1)
            time.sleep(1.0)  # the first status polls: in_progress, then a 30 s wait
            before = server.batch.created  # (the next round's batch may be out too: pipelining)
            signalled = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=25)
            took = time.monotonic() - signalled
        finally:
            proc.kill()
            proc.wait()
            proc.stderr.close()
        created = server.batch.created
    assert took < 8, f"took {took:.1f} s after the signal"
    assert code == 130 and created == before  # no batch created after the signal
    db = sqlite3.connect(run)
    assert db.execute("select status from runs").fetchone()[0] == "interrupted"
    assert db.execute("select count(*) from batches where provider_id is not null").fetchone()[0] == created  # collected on resume
    db.close()
