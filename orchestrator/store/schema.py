"""The run file's tables (see the package docstring): created once, when the run file is built."""

from __future__ import annotations

import sqlite_utils

__all__ = ["TABLES", "create_schema"]


def _columns(spec: str) -> dict[str, type]:
    """``"name:type …"`` (types ``int``, ``float``, ``str``) as sqlite-utils' column mapping."""
    kinds = {"int": int, "float": float, "str": str}
    return {name: kinds[kind] for name, _, kind in (item.partition(":") for item in spec.split())}


TABLES: dict[str, dict] = {
    "runs": {
        "columns": _columns(
            "id:int name:str config:str seed:int dataset_fingerprint:str schema_version:int status:str stop_reason:str "
            "templates:str created_at:float updated_at:float stop_kind:str"
        ),
        "pk": "id",
    },
    "prompts": {"columns": _columns("id:str position:int text:str reference:str category:str messages:str"), "pk": "id"},
    "responses": {
        "columns": _columns("prompt_id:str candidate:str text:str human:str"),
        "pk": ("prompt_id", "candidate"),
        "foreign_keys": [("prompt_id", "prompts", "id")],
    },
    "requests": {
        "columns": _columns(
            "key:str round:int judge:str template:str kind:str prompt_id:str candidates:str repeat:int messages:str status:str "
            "reserved_tokens:int reserved_usd:float reserved_calls:int created_at:float"
        ),
        "pk": "key",
        "indexes": [["status"], ["round"]],
    },
    "judgments": {
        "columns": _columns(
            "key:str judge:str template:str kind:str prompt_id:str candidates:str repeat:int status:str probs:str p_first:float "
            "method:str capped:str unresolved:str top_logprobs:str text:str raw:str prompt_tokens:int completion_tokens:int "
            "cost_usd:float latency_s:float attempts:int error:str error_type:str note:str round:int created_at:float cached:int "
            "samples:int completions:int stated:float"
        ),
        "pk": "key",
        "foreign_keys": [("key", "requests", "key")],
    },
    "rounds": {
        "columns": _columns(
            "round:int kind:str selected:str n_requests:int entropy:float max_adjacent_reorder:float top:str fit_s:float "
            "select_s:float dispatch_s:float calls:int tokens:int usd:float started_at:float finished_at:float"
        ),
        "pk": "round",
    },
}
"""Every table of a new run file: its columns in order, primary key, foreign keys and indexes."""


def create_schema(db: sqlite_utils.Database, schema_version: int) -> None:
    for name, table in TABLES.items():
        db.table(name).create(table["columns"], pk=table["pk"], foreign_keys=table.get("foreign_keys"))
        for index in table.get("indexes", []):
            db.table(name).create_index(index)
    db.execute(f"PRAGMA user_version={schema_version}")
