"""Reliability, class 1: the judgment cache never answers for someone
else and never blames the judge for its own damage. Real run files, a real cache file, a real HTTP
judge on 127.0.0.1."""

import sqlite3

import pytest

from judgekit import quality_behaviour, run_cli, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.errors import OrchestratorError
from orchestrator.judging.testserver import FakeOpenAIServer


@pytest.fixture
def data(tmp_path):
    return write_dataset(tmp_path / "data", prompts=3, candidates=4)


@pytest.fixture
def server():
    with FakeOpenAIServer(quality_behaviour) as s:
        yield s


def _config(tmp_path, server, data, name, max_calls=12):
    return write_config(tmp_path, server.url, name=name, prompts=data[0], responses=data[1], max_calls=max_calls)


def test_an_edited_profile_is_not_answered_from_the_old_models_judgments(tmp_path, server, data, monkeypatch):
    judges = write_judge(tmp_path / "judges", "local-openai")
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(judges))
    old, _ = api.start(_config(tmp_path, server, data, "old"), cache=False)
    assert {body["model"] for _, body in server.requests} == {"local"}
    # the profile now names another model; the old run's judgments are still the old model's
    write_judge(judges, "local-openai", model="openai/other")
    cache = tmp_path / "cache.sqlite"
    assert run_cli(["cache", "import", str(old), "--cache", str(cache)]) == 0
    sent = len(server.requests)
    api.start(_config(tmp_path, server, data, "new"), cache=cache)
    asked = [body["model"] for _, body in server.requests[sent:]]
    assert len(asked) == 12 and set(asked) == {"other"}  # the new model was asked everything
    assert api.status(tmp_path / "runs" / "new.sqlite").as_dict()["spent"]["cached"] == 0
    # the same model again (the profile edited back) is answered from the import
    write_judge(judges, "local-openai")
    sent = len(server.requests)
    api.start(_config(tmp_path, server, data, "again"), cache=cache)
    assert len(server.requests) == sent


def test_a_profile_edited_between_start_and_resume_keys_each_judgment_by_who_answered(tmp_path, server, data, monkeypatch):
    judges = write_judge(tmp_path / "judges", "local-openai")
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(judges))
    path, _ = api.start(_config(tmp_path, server, data, "half", max_calls=8), cache=False, pilot=4)
    write_judge(judges, "local-openai", model="openai/other")
    api.resume(path, cache=False)
    models = [body["model"] for _, body in server.requests]
    assert models.count("local") == 4 and models.count("other") == 4
    cache = tmp_path / "cache.sqlite"
    assert run_cli(["cache", "import", str(path), "--cache", str(cache)]) == 0
    from orchestrator.store.cache import JudgmentCache

    with JudgmentCache(cache) as opened:
        per_model = {m["model"]: m["entries"] for m in opened.stats()["models"]}
    assert per_model == {"openai/local": 4, "openai/other": 4}


def test_a_run_file_without_recorded_identities_is_refused_by_the_import(tmp_path, server, data, monkeypatch, capsys):
    judges = write_judge(tmp_path / "judges", "local-openai")
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(judges))
    old, _ = api.start(_config(tmp_path, server, data, "old"), cache=False)
    db = sqlite3.connect(old)
    db.execute("drop table judge_identities")  # as a run file made before identities were recorded
    db.commit()
    db.close()
    assert run_cli(["cache", "import", str(old), "--cache", str(tmp_path / "c.sqlite")]) == 2
    assert "does not record which model answered" in capsys.readouterr().err


def _damage(path):
    """Garbage over every page but the first (the header and schema stay readable)."""
    size = path.stat().st_size
    page = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    assert size > page
    with path.open("r+b") as fh:
        fh.seek(page)
        fh.write(b"\xa5" * (size - page))


@pytest.mark.parametrize("named", [True, False])
def test_a_damaged_cache_is_bypassed_with_one_line_and_never_charged_to_the_judge(tmp_path, server, data, monkeypatch, named):
    judges = write_judge(tmp_path / "judges", "local-openai")
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(judges))
    cache = tmp_path / "cache.sqlite"
    api.start(_config(tmp_path, server, data, "fill"), cache=cache)
    _damage(cache)
    lines = []
    if not named:
        monkeypatch.setenv("ORCHESTRATOR_JUDGMENT_CACHE", str(cache))
    sent = len(server.requests)
    path, reason = api.start(
        _config(tmp_path, server, data, "after"), cache=cache if named else None, progress=lambda e: lines.append(e.reason)
    )
    assert reason.startswith("budget: max_calls (12 of 12")
    status = api.status(path).as_dict()
    assert status["failures"] == {} and status["spent"]["calls"] == 12 and status["spent"]["cached"] == 0
    assert len(server.requests) == sent + 12  # asked the judge, as without a cache
    warnings = [line for line in lines if line and "judgment cache cannot be read" in line]
    assert len(warnings) == 1 and str(cache) in warnings[0]


def test_a_cache_that_is_not_one_refuses_the_run_when_named_and_is_skipped_when_default(tmp_path, server, data, monkeypatch):
    judges = write_judge(tmp_path / "judges", "local-openai")
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(judges))
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(OrchestratorError, match="not a judgment cache"):
        api.start(_config(tmp_path, server, data, "named"), cache=garbage)
    assert not (tmp_path / "runs" / "named.sqlite").exists() and len(server.requests) == 0
    monkeypatch.setenv("ORCHESTRATOR_JUDGMENT_CACHE", str(garbage))
    lines = []
    path, reason = api.start(_config(tmp_path, server, data, "default"), progress=lambda e: lines.append(e.reason))
    assert reason.startswith("budget: max_calls (12 of 12") and len(server.requests) == 12
    assert any("going on without the judgment cache" in (line or "") for line in lines)
    assert garbage.read_bytes() == b"this is not a database" * 100  # untouched
