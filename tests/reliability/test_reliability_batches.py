"""Reliability, classes 2 and 5: a batch is found again however many
batches the provider lists before it, a damaged output line costs only its own request, and every
place that stores provider text redacts secrets (deployment keys, keys quoted in batch errors).
Real run files, the test server's real files and batches endpoints on 127.0.0.1."""

import json
import sqlite3

import pytest

from judgekit import quality_behaviour, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.judging.testserver import BatchFaults, FakeOpenAIServer

BATCH = {"batch": True, "batch_poll_s": 0.02, "batch_poll_max_s": 0.1}


@pytest.fixture
def judges(tmp_path, monkeypatch):
    folder = write_judge(tmp_path / "judges", "live-openai", model="openai/local")
    write_judge(folder, "batch-openai", model="openai/local", **BATCH)
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(folder))
    return folder


@pytest.fixture
def data(tmp_path):
    return write_dataset(tmp_path / "d", prompts=2, candidates=4, seed=3)


def _config(tmp_path, server, data, name, judge, max_calls=12):
    return write_config(tmp_path, server.url, name=name, judges=f'["{judge}"]', prompts=data[0], responses=data[1], max_calls=max_calls)


def _judgments(path):
    rows = sqlite3.connect(path).execute("select round, prompt_id, candidates, probs from judgments where status = 'ok' order by key")
    return sorted((r, p, c, json.dumps(json.loads(pr), sort_keys=True)) for r, p, c, pr in rows)


@pytest.mark.parametrize("foreign", [0, 150, 450])
def test_a_batch_whose_create_answer_was_lost_is_found_behind_any_number_of_newer_batches(tmp_path, judges, data, foreign):
    faults = BatchFaults(lost_creates=1, foreign_after_lost_create=foreign)
    with FakeOpenAIServer(quality_behaviour, batch_faults=faults) as server:
        live, _ = api.start(_config(tmp_path, server, data, "live", "live-openai"))
        batched, reason = api.start(_config(tmp_path, server, data, "batched", "batch-openai"))
        ours = [b for b in server.batch.batches.values() if not b["id"].startswith("batch_other")]
        assert len(server.batch.batches) - len(ours) == foreign
        assert set(server.batch.lines.values()) == {1}  # every request submitted once: found, never created again
    assert reason.startswith("budget: max_calls")
    assert _judgments(batched) == _judgments(live)


@pytest.mark.parametrize("damaged", [1, 3])
def test_a_damaged_output_line_commits_every_other_answer_and_asks_only_its_own_again(tmp_path, judges, data, damaged):
    faults = BatchFaults(malformed_lines=damaged)
    with FakeOpenAIServer(quality_behaviour, batch_faults=faults) as server:
        live, _ = api.start(_config(tmp_path, server, data, "live", "live-openai"))
        batched, reason = api.start(_config(tmp_path, server, data, "batched", "batch-openai"))
        lines = server.batch.lines
    assert reason.startswith("budget: max_calls")
    assert sorted(lines.values()).count(2) == damaged and max(lines.values()) == 2  # only the damaged ones again
    assert _judgments(batched) == _judgments(live)
    assert api.status(batched).as_dict()["failures"] == {}


def test_keys_of_deployments_and_keys_quoted_in_batch_errors_are_never_stored(tmp_path, data, monkeypatch):
    secret_a, secret_b = "dep-key-4f9a2c7e11", "zz-batch-quoted-88d1e0"
    monkeypatch.setenv("POOL_A", secret_a)  # names that do not look secret: only the profile says they are
    monkeypatch.setenv("BATCH_ACCESS", secret_b)
    echoing = {"n": 0}

    def echo(body):  # a sloppy provider that quotes the key it was sent in its answer
        status, headers, payload = quality_behaviour(body)
        echoing["n"] += 1
        payload["choices"][0]["message"]["content"] += f" (your key {secret_a} was used)"
        payload["system_fingerprint"] = f"fp {secret_a}"
        return status, headers, payload

    folder = tmp_path / "judges"
    folder.mkdir()
    faults = BatchFaults(line_error_rate=0.4, fail_batches=1, seed=2, error_message=f"Incorrect API key provided: {secret_b}")
    with FakeOpenAIServer(echo) as pool, FakeOpenAIServer(quality_behaviour, batch_faults=faults) as batch_server:
        (folder / "pool-openai.toml").write_text(
            'name = "pool-openai"\nmodel = "openai/local"\nprefill = true\nlogprobs = true\ntop_logprobs = 20\n'
            f'[[deployments]]\napi_base = "{pool.url}"\napi_key_env = "POOL_A"\n'
        )
        write_judge(folder, "batch-openai", model="openai/local", api_key_env="BATCH_ACCESS", **BATCH)
        monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(folder))
        cache = tmp_path / "cache.sqlite"
        pooled, _ = api.start(
            write_config(tmp_path, None, name="pooled", judges='["pool-openai"]', prompts=data[0], responses=data[1], max_calls=8),
            cache=cache,
        )
        batched, _ = api.start(_config(tmp_path, batch_server, data, "batched", "batch-openai", max_calls=8), cache=cache)
    assert echoing["n"] >= 8
    for path in (pooled, batched, cache):
        blob = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
        assert secret_a.encode() not in blob and secret_b.encode() not in blob, path
    errors = [e for (e,) in sqlite3.connect(batched).execute("select error from batches where error is not null")]
    assert errors and all("[REDACTED BATCH_ACCESS]" in e for e in errors)
    texts = [t for (t,) in sqlite3.connect(pooled).execute("select text from judgments")]
    assert texts and all("[REDACTED POOL_A]" in t for t in texts)
