"""Batch mode against the test server's files and batches endpoints: a round's
requests go out as one batch at half price; failed lines, expired and failed batches are asked
again in the next batch; a kill -9 campaign during submission, polling and commit never submits a
request twice, and the final judgments equal a non-batch run's."""

import json
import os
import signal
import sqlite3

import childkit
import pytest

from judgekit import quality_behaviour, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.errors import OrchestratorError
from orchestrator.judging.testserver import BatchFaults, FakeOpenAIServer

BATCH = {"batch": True, "batch_poll_s": 0.02, "batch_poll_max_s": 0.1, "price_input_per_mtok": 10.0, "price_output_per_mtok": 10.0}


@pytest.fixture
def judges(tmp_path, monkeypatch):
    folder = write_judge(tmp_path / "judges", "live-openai", model="openai/local", price_input_per_mtok=10.0, price_output_per_mtok=10.0)
    write_judge(folder, "batch-openai", model="openai/local", **BATCH)
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(folder))
    return folder


@pytest.fixture
def data(tmp_path):
    return write_dataset(tmp_path / "d", prompts=2, candidates=5, seed=6)


def _config(tmp_path, server, data, name, judge, **kw):
    return write_config(tmp_path, server.url, name=name, judges=f'["{judge}"]', prompts=data[0], responses=data[1], max_calls=24, **kw)


def _judgments(path):
    rows = sqlite3.connect(path).execute("select round, prompt_id, candidates, probs from judgments where status = 'ok' order by key")
    return sorted((r, p, c, json.dumps(json.loads(pr), sort_keys=True)) for r, p, c, pr in rows)


def test_rounds_go_out_as_batches_at_half_price_and_equal_a_live_run(tmp_path, judges, data):
    with FakeOpenAIServer(quality_behaviour) as server:
        live, _ = api.start(_config(tmp_path, server, data, "live", "live-openai"))
        live_calls = len(server.requests)
        batched, reason = api.start(_config(tmp_path, server, data, "batched", "batch-openai"))
        assert len(server.requests) == live_calls  # not one live chat call
        assert server.batch.created == 6 and set(server.batch.lines.values()) == {1} and len(server.batch.lines) == 24
    assert reason.startswith("budget: max_calls")
    assert _judgments(batched) == _judgments(live)
    spent_live, spent_batch = api.status(live).as_dict()["spent"], api.status(batched).as_dict()["spent"]
    assert spent_batch["usd"] == pytest.approx(spent_live["usd"] / 2)
    db = sqlite3.connect(batched)
    assert db.execute("select count(*), min(status), max(status) from batches").fetchone() == (6, "completed", "completed")


def test_a_lost_create_answer_and_failing_status_calls_never_submit_twice(tmp_path, judges, data):
    faults = BatchFaults(lost_creates=2, status_errors=3)
    with FakeOpenAIServer(quality_behaviour, batch_faults=faults) as server:
        live, _ = api.start(_config(tmp_path, server, data, "live", "live-openai"))
        batched, _ = api.start(_config(tmp_path, server, data, "batched", "batch-openai"))
        assert set(server.batch.lines.values()) == {1} and server.batch.created == 6  # found by its tag, not resubmitted
    assert _judgments(batched) == _judgments(live)


@pytest.mark.parametrize(
    "faults, ended",
    [
        (BatchFaults(line_error_rate=0.3, seed=1), "completed"),
        (BatchFaults(expire_after=2), "expired"),
        (BatchFaults(fail_batches=1), "failed"),
    ],
    ids=["failed-lines", "expired", "failed-batch"],
)
def test_what_a_batch_did_not_answer_goes_into_the_next_batch(tmp_path, judges, data, faults, ended):
    with FakeOpenAIServer(quality_behaviour, batch_faults=faults) as server:
        live, _ = api.start(_config(tmp_path, server, data, "live", "live-openai"))
        batched, _ = api.start(_config(tmp_path, server, data, "batched", "batch-openai"))
        assert server.batch.created > 6
    assert _judgments(batched) == _judgments(live)
    db = sqlite3.connect(batched)
    assert db.execute("select count(*) from judgments where status = 'failed'").fetchone()[0] == 0
    statuses = {s for (s,) in db.execute("select status from batches")}
    assert ended in statuses and statuses <= {"completed", "expired", "failed"}


def test_a_provider_without_a_batch_api_is_refused(tmp_path, judges, data):
    write_judge(judges, "claude-batch", model="anthropic/claude-3-5-haiku", batch=True)
    with pytest.raises(OrchestratorError, match="batch = true needs a provider with a batch API"):
        api.start(_config(tmp_path, type("S", (), {"url": "http://127.0.0.1:9/v1"})(), data, "x", "claude-batch"))
    assert not (tmp_path / "runs" / "x.sqlite").exists()


@pytest.mark.slow
def test_kill_9_during_submission_polling_and_commit_never_submits_twice(tmp_path, judges, data):
    plan = [
        "batch_recorded:1",
        "batch_created:1",
        "batch_poll:1",
        "batch_commit:2",
        "batch_created:2",
        "batch_commit:5",
        "batch_poll:3",
        "batch_recorded:3",
    ]
    with FakeOpenAIServer(quality_behaviour, batch_delay_s=0.2) as server:
        live, _ = api.start(_config(tmp_path, server, data, "live", "live-openai"))
        config = _config(tmp_path, server, data, "victim", "batch-openai")
        victim = tmp_path / "runs" / "victim.sqlite"
        command = ["run", str(config), "--no-report"]
        kills = []
        for point in plan:
            env = {**os.environ, "ORCHESTRATOR_FAILPOINTS": point}
            proc = childkit.run(command, capture_output=True, text=True, env=env, timeout=120)
            if proc.returncode == -signal.SIGKILL:
                kills.append(point)
            if victim.exists():
                command = ["resume", str(victim), "--no-report"]
        env = {k: v for k, v in os.environ.items() if k != "ORCHESTRATOR_FAILPOINTS"}
        final = childkit.run(command, capture_output=True, text=True, env=env, timeout=120)
        assert final.returncode == 0, final.stderr
        lines = dict(server.batch.lines)
    print(f"kills: {len(kills)} {kills}; batches created {len(lines) and max(lines.values())}× per request at most")
    assert len(kills) >= 6, kills
    assert set(lines.values()) == {1} and len(lines) == 24  # no request submitted twice
    assert _judgments(victim) == _judgments(live)
    db = sqlite3.connect(victim)
    assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
    assert db.execute("select count(*) from requests where status != 'done'").fetchone()[0] == 0
