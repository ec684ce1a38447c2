"""The judge's own repeatability: the ``judge_repeats`` table of a run file.

At the end of a live run with a local judge (the embedded llama.cpp model) a few committed requests
are asked again, exactly as sent (:mod:`orchestrator.run.repeatability`); each row holds the
request's ``key``, the ``judge``, ``p_first`` of the committed judgment and ``p_again`` of the
repeat, ``asked_at``. The table is created by the first check, so older files read as before (no
schema version change); the repeats are diagnostics, never judgments: no fit reads them.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .run_store import RunStore

__all__ = ["TABLE", "record_repeats", "stored_repeats"]

TABLE = "judge_repeats"

_CREATE = f"""create table if not exists [{TABLE}] (
    key text not null, judge text not null, p_first real not null, p_again real not null, asked_at real not null)"""


def record_repeats(store: "RunStore", rows: list[tuple[str, str, float, float]]) -> None:
    """Store ``(key, judge, p_first, p_again)`` rows in one transaction."""
    now = time.time()
    with store._transaction():
        store.db.execute(_CREATE)
        store.db.conn.executemany(
            f"insert into [{TABLE}] (key, judge, p_first, p_again, asked_at) values (?, ?, ?, ?, ?)", [(*r, now) for r in rows]
        )


def stored_repeats(conn: sqlite3.Connection) -> list[tuple[str, str, float, float]]:
    """Every repeat check of a run file (any connection, read-only ones included); none when the
    table was never created."""
    exists = conn.execute("select 1 from sqlite_master where type = 'table' and name = ?", [TABLE]).fetchone()
    if not exists:
        return []
    return [tuple(r) for r in conn.execute(f"select key, judge, p_first, p_again from [{TABLE}] order by rowid")]  # type: ignore[misc]
