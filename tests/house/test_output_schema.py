"""What `rank --json`, `status --json` and `compare --json` print conforms to the published JSON Schema
(docs/schema/, generated from orchestrator/records/reports.py), on every campaign kind: pairwise (per
prompt and global), absolute, a reference campaign, one placed on a board, a comparison. Through the CLI, real
runs against a real HTTP judge on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from judgekit import board_run, placed_config, quality_behaviour, reference_behaviour, run_cli, write_config, write_dataset
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.records.reports import SCHEMA_VERSION, json_schemas

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schema"


def _validator(name: str) -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMAS / f"{name}-v{SCHEMA_VERSION}.schema.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _without_defaults(schema):
    """``additionalProperties: true`` is JSON Schema's default: newer pydantic releases write it for
    an open record, older ones leave it out; the same schema either way."""
    if isinstance(schema, dict):
        return {k: _without_defaults(v) for k, v in schema.items() if not (k == "additionalProperties" and v is True)}
    if isinstance(schema, list):
        return [_without_defaults(v) for v in schema]
    return schema


def test_the_published_schemas_are_the_ones_the_records_generate():
    for name, schema in json_schemas().items():
        published = SCHEMAS / name
        assert published.exists(), f"{published} missing: python -m orchestrator.records.reports docs/schema"
        assert _without_defaults(json.loads(published.read_text())) == _without_defaults(schema), (
            f"{name} is stale: python -m orchestrator.records.reports docs/schema"
        )


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("kinds")
    out: dict[str, Path] = {}
    with FakeOpenAIServer(quality_behaviour) as server:
        prompts, responses = write_dataset(tmp / "d1", prompts=3, candidates=5, seed=1)
        for name, scope in (("per-prompt", "per_prompt"), ("global", "global")):
            config = write_config(tmp, server.url, name=name, prompts=prompts, responses=responses, max_calls=30, scope=scope)
            assert run_cli(["run", str(config), "--no-cache"]) == 0
            out[name] = tmp / "runs" / f"{name}.sqlite"
        config = write_config(
            tmp, server.url, name="absolute", prompts=prompts, responses=responses, max_calls=30, scope="global", absolute=""
        )
        assert run_cli(["run", str(config), "--no-cache"]) == 0
        out["absolute"] = tmp / "runs" / "absolute.sqlite"
        many = write_dataset(tmp / "d3", prompts=30, candidates=2, seed=1)  # enough prompts that a decision is within reach
        config = write_config(tmp, server.url, name="compare", prompts=many[0], responses=many[1], max_calls=60)
        config.write_text(config.read_text() + '\n[compare]\ncandidate = "M1"\nbaseline = "M0"\n')
        assert run_cli(["compare", str(config), "--no-cache"]) in (0, 10, 11, 12, 13)
        out["compare"] = tmp / "runs" / "compare.sqlite"
    with FakeOpenAIServer(reference_behaviour()) as server:
        prompts, responses = write_dataset(tmp / "d2", prompts=6, candidates=4, seed=2, reference=0.5)
        config = write_config(
            tmp, server.url, name="reference", prompts=prompts, responses=responses, max_calls=None, reference="soft = true\n"
        )
        assert run_cli(["run", str(config), "--no-cache"]) == 0
        out["reference"] = tmp / "runs" / "reference.sqlite"
        (tmp / "b").mkdir()
        prompts, new, board = board_run(tmp / "b", server)
        assert run_cli(["run", str(placed_config(tmp / "b", server.url, prompts, new, str(board))), "--no-cache"]) == 0
        out["placed"] = tmp / "b" / "runs" / "placed.sqlite"
    return out


def _printed(args: list[str], capsys) -> dict:
    capsys.readouterr()
    code = run_cli(args)
    assert code in (0, 10, 11, 12), args
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("kind", ["per-prompt", "global", "absolute", "compare", "reference", "placed"])
def test_rank_and_status_json_conform_to_the_schema(runs, kind, capsys):
    rank = _printed(["rank", str(runs[kind]), "--json"], capsys)
    status = _printed(["status", str(runs[kind]), "--json"], capsys)
    _validator("rank").validate(rank)
    _validator("status").validate(status)
    if kind == "placed":  # the board's figures are their own record, the row's own win rate kept
        (row,) = rank["groups"][0]["ranking"]
        assert row["placement"]["prompts"] == 24 and row["win_rate"] is not None
    if kind == "compare":
        _validator("compare").validate(rank["comparison"])


def test_compare_json_conforms_to_the_schema(runs, capsys, tmp_path):
    with FakeOpenAIServer(quality_behaviour) as server:
        prompts, responses = write_dataset(tmp_path / "d", prompts=20, candidates=3, seed=5, base=[0.2, 0.8, 0.8], spread=0.3)
        config = write_config(tmp_path, server.url, name="gate", prompts=prompts, responses=responses, max_calls=60)
        config.write_text(config.read_text() + '\n[compare]\ncandidate = "M1"\nbaseline = "M0"\n')
        result = _printed(["compare", str(config), "--json", "--no-cache"], capsys)
    _validator("compare").validate(result)


def test_the_schema_refuses_what_the_product_never_prints():
    """The schema is closed where the product's fields live: a renamed or misspelt field fails."""
    rank = {"run": "r", "scope": "global", "level": 0.95, "groups": [{"group": "g", "comparisons": 1, "ranking": []}]}
    _validator("rank").validate(rank)
    bad_row = {"rank": 1, "candidate": "a", "score": 0.0, "sd": 1.0, "rank_low": 1, "rank_high": 1, "placed_on_board": True}
    with pytest.raises(jsonschema.ValidationError, match="placed_on_board"):
        _validator("rank").validate({**rank, "groups": [{"group": "g", "comparisons": 1, "ranking": [bad_row]}]})
    with pytest.raises(jsonschema.ValidationError):
        _validator("compare").validate({"decision": "maybe"})
