"""Why a run stopped, as a code: stored in the run file with the words, published in ``status --json``
(validated against the published schema), kept by a run file from before the code was stored."""

from __future__ import annotations

import json
import sqlite3

import jsonschema
import pytest

from judgekit import quality_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.records.reports import SCHEMA_VERSION, json_schemas
from orchestrator.store import open_run


def _status_json(path, capsys) -> dict:
    capsys.readouterr()
    assert run_cli(["status", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _validate(status: dict) -> None:
    schema = json_schemas()[f"status-v{SCHEMA_VERSION}.schema.json"]
    jsonschema.validate(status, schema)


def test_a_budget_stop_a_pilot_and_an_old_run_file_say_their_kind(tmp_path, capsys):
    prompts, responses = write_dataset(tmp_path / "d", prompts=3, candidates=4, seed=1)
    with FakeOpenAIServer(quality_behaviour) as server:
        budget = write_config(tmp_path, server.url, name="budget", prompts=prompts, responses=responses, max_calls=12)
        assert run_cli(["run", str(budget), "--no-cache"]) == 0
        path = tmp_path / "runs" / "budget.sqlite"
        status = _status_json(path, capsys)
        _validate(status)
        assert status["stop_kind"] == "budget" and status["state"] == "finished"
        stored = sqlite3.connect(path).execute("select stop_kind, stop_reason from runs").fetchone()
        assert stored[0] == "budget" and stored[1] == status["stop_reason"]
        # the typed record carries the same value
        assert api.status(path).stop_kind == "budget"

        pilot = write_config(tmp_path, server.url, name="pilot", prompts=prompts, responses=responses, max_calls=40)
        assert run_cli(["run", str(pilot), "--pilot", "8", "--no-cache"]) == 0
        status = _status_json(tmp_path / "runs" / "pilot.sqlite", capsys)
        _validate(status)
        assert status["stop_kind"] == "pilot" and status["state"] == "interrupted"

    # a run file of schema 5 has no stop_kind column: read as null, then stored when resumed
    old = tmp_path / "runs" / "pilot.sqlite"
    db = sqlite3.connect(old)
    db.execute("alter table runs drop column stop_kind")
    db.execute("pragma user_version = 5")
    db.commit()
    db.close()
    status = _status_json(old, capsys)
    _validate(status)
    assert status["stop_kind"] is None and status["stop_reason"].startswith("pilot of 8 calls done")
    with open_run(old):  # opened for writing (what resume does first): the file gains the column
        pass
    columns = [r[1] for r in sqlite3.connect(old).execute("pragma table_info(runs)")]
    assert "stop_kind" in columns and _status_json(old, capsys)["stop_kind"] is None


@pytest.mark.parametrize(
    "kind", ["campaign", "budget", "pilot", "fail_fast", "judges_stopped", "no_success", "done", "interrupted", "extended"]
)
def test_every_stop_kind_is_in_the_published_schema(kind):
    schema = json_schemas()[f"status-v{SCHEMA_VERSION}.schema.json"]
    (listed,) = [option["enum"] for option in schema["properties"]["stop_kind"]["anyOf"] if "enum" in option]
    assert kind in listed
