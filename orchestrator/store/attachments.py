"""Inputs a run reads again later, kept whole in its file (the ``attachments`` table): a
``[reference] board``'s judgments, so that moving or editing the board file never changes or
breaks the run. Created with the run, only when there are some (no schema version change)."""

from __future__ import annotations

import json

import sqlite_utils

__all__ = ["TABLE", "read_attachment", "write_attachments"]

TABLE = "attachments"


def write_attachments(db: sqlite_utils.Database, attachments: dict[str, dict]) -> None:
    """``name → {"source", "digest", "payload"}`` (payload: plain JSON)."""
    rows = [{"name": k, "source": v["source"], "digest": v["digest"], "payload": json.dumps(v["payload"])} for k, v in attachments.items()]
    db.table(TABLE).insert_all(rows, pk="name")


def read_attachment(db: sqlite_utils.Database, name: str) -> dict | None:
    """``{"source", "digest", "payload"}`` of one attachment, or None (none kept, or an older run file)."""
    if TABLE not in db.table_names():
        return None
    row = db.conn.execute(f"select source, digest, payload from {TABLE} where name = ?", [name]).fetchone()
    return None if row is None else {"source": row[0], "digest": row[1], "payload": json.loads(row[2])}
