"""What a run file must hold for any reader, and what a NULL stands for where it may be NULL.

Every column of the run file's tables is nullable in SQLite (sqlite-utils creates them so), and
files written by earlier versions, by other tools or edited by hand can hold NULL where the current
writer never puts one. Two kinds of column:

- **Identity columns** (:data:`REQUIRED`): what a row *is* (a judgment's judge, prompt and
  candidates, the run's config). No version writes NULL there; a file that has one is inconsistent
  and every command refuses it in one line naming the table, the column and how many rows, before
  anything is read or written (:func:`inconsistencies`). So is a successful judgment without its
  option probabilities, and a file without the run's row.
- **Everything else** reads as a documented default where the store hands out its records: the
  run's row (:data:`RUN_DEFAULTS`), a response's human scores (none), a request's status (from its
  judgment: done, failed, or pending without one), a judgment's counts
  (:data:`~orchestrator.store.rows.STORED_DEFAULTS`). A writer fills the request statuses in when
  it opens the file (:func:`fill_request_status`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

__all__ = ["REQUEST_COUNTS", "REQUIRED", "RUN_DEFAULTS", "fill_request_status", "inconsistencies", "request_status", "run_row"]

REQUIRED: dict[str, tuple[str, ...]] = {
    "runs": ("config", "templates", "dataset_fingerprint"),
    "prompts": ("id",),
    "responses": ("prompt_id", "candidate"),
    "requests": ("key", "judge", "template", "kind", "prompt_id", "candidates"),
    "judgments": ("key", "judge", "kind", "prompt_id", "candidates"),
}
"""Per table, the columns no version of the writer leaves NULL."""

OK_WITHOUT_PROBABILITIES = "status = 'ok' and probs is null"
"""A successful judgment without its option probabilities: no version writes one."""

RUN_DEFAULTS: dict[str, Any] = {"seed": 0, "status": "unknown", "stop_reason": "", "stop_kind": None, "created_at": 0.0, "updated_at": 0.0}
"""What a NULL in the ``runs`` row reads as (its ``name``: the file's stem)."""


def request_status(table: str) -> str:
    """A request's status in SQL (``table``: the ``requests`` table's name or alias in the query):
    a NULL reads from its judgment."""
    return (
        f"coalesce({table}.status, (select case j.status when 'ok' then 'done' when 'failed' then 'failed' else 'pending' end "
        f"from judgments j where j.key = {table}.key), 'pending')"
    )


REQUEST_COUNTS = f"select {request_status('r')} as status, count(*) as n from requests r group by 1"
"""Planned requests by status, a NULL read from the judgment."""


def inconsistencies(conn: sqlite3.Connection, tables: set[str]) -> list[str]:
    """What makes the file unreadable, one phrase each (empty: nothing): the run's row missing,
    NULLs in identity columns, successful judgments without probabilities."""
    found = []
    if "runs" in tables and not conn.execute("select 1 from runs where id = 1").fetchone():
        found.append("the runs table has no row for the run (id 1)")
    for table, columns in REQUIRED.items():
        if table not in tables:
            continue
        present = {row[1] for row in conn.execute(f"pragma table_info([{table}])")}
        tests = {f"{table}.{c}": f"[{c}] is null" for c in columns if c in present}
        if table == "judgments" and {"status", "probs"} <= present:
            tests["ok without probs"] = OK_WITHOUT_PROBABILITIES
        # a consistent file (nearly every file) costs one scan that finds nothing; the counts for
        # the message are read only when something was found
        if not tests or not conn.execute(f"select 1 from [{table}] where {' or '.join(tests.values())} limit 1").fetchone():
            continue
        counts = conn.execute(f"select {', '.join(f'coalesce(sum({t}), 0)' for t in tests.values())} from [{table}]").fetchone()
        for name, n in zip(tests, counts):
            if not n:
                continue
            if name == "ok without probs":
                found.append(f"{n} successful judgment(s) have no option probabilities (judgments.probs is NULL)")
            else:
                found.append(f"{n} row(s) of {table} have no {name.split('.')[1]} ({name} is NULL)")
    return found


def run_row(row: dict[str, Any], path: Path) -> dict[str, Any]:
    """The ``runs`` row with each NULL read as its default (:data:`RUN_DEFAULTS`; ``name``: the file's stem)."""
    out = dict(row)
    for name, default in RUN_DEFAULTS.items():
        if out.get(name) is None:
            out[name] = default
    if out.get("name") is None:
        out["name"] = path.stem
    return out


def fill_request_status(conn: sqlite3.Connection) -> None:
    """A writer's migration: every request whose status is NULL gets the one its judgment implies
    (inside the caller's transaction)."""
    conn.execute(f"update requests set status = {request_status('requests')} where status is null")
