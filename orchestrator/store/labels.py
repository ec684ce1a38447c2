"""People's labels in the run file: the ``human_labels`` table, and the items a run
asked people for (``label_requests``).

One row per (item, annotator): ``item`` is :func:`orchestrator.records.labels.label_item` (the
answer, or the pair of answers to one prompt, whichever order it was shown in), then the label's
fields, ``created_at`` and ``source`` (provenance: ``page`` for the labelling page, ``import:FILE``).
The table is created by the first label, so run files written before it existed, and orchestrators
that do not know it, read the file as before (no schema version change).

``label_requests`` holds one row per item a run with ``judging.people`` asked people to label:
``item``, the round after whose planning it was asked, its position in that round, ``requested_at``.
An item is asked once (primary key); the labelling page offers these first, in this order.

A label is committed in its own transaction, ``INSERT OR IGNORE`` on the key: a verdict sent twice
(a double click, a page reloaded after the server restarted) is stored once, and a label written
before a kill -9 is in the file when the server comes back. An imported label is data with an
identity: a file's label for an item and annotator already stored with another verdict
replaces it, and the replaced row is kept in ``human_labels_history`` (its columns, then
``replaced_at`` and ``replaced_by``, the new row's source).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from ..errors import OrchestratorError
from ..records.labels import AbsoluteLabel, PairwiseLabel, label_item
from .run_store import connect

__all__ = ["LabelStore", "label_progress", "stored_labels"]

TABLE = "human_labels"

_CREATE = f"""create table if not exists [{TABLE}] (
    item text not null, annotator text not null, kind text not null, prompt_id text not null,
    candidate text, first text, second text, score real, winner text, created_at real not null,
    source text not null, primary key (item, annotator))"""

HISTORY = "human_labels_history"

_CREATE_HISTORY = f"""create table if not exists [{HISTORY}] (
    item text not null, annotator text not null, kind text not null, prompt_id text not null,
    candidate text, first text, second text, score real, winner text, created_at real not null,
    source text not null, replaced_at real not null, replaced_by text not null)"""

_COLUMNS = "item, annotator, kind, prompt_id, candidate, first, second, score, winner, created_at, source"
_INSERT = f"insert or {{}} into [{TABLE}] ({_COLUMNS}) values ({', '.join('?' * 11)})"
"""``.format("ignore")``: a label kept as it was; ``.format("replace")``: the new one (primary key item, annotator)."""

REQUESTS = "label_requests"

_CREATE_REQUESTS = f"""create table if not exists [{REQUESTS}] (
    item text primary key, round integer not null, position integer not null, requested_at real not null)"""

Label = AbsoluteLabel | PairwiseLabel


def _rows_to_labels(rows) -> list[Label]:
    labels: list[Label] = []
    for kind, prompt_id, candidate, first, second, score, winner, annotator in rows:
        if kind == "absolute":
            labels.append(AbsoluteLabel(prompt_id=prompt_id, candidate=candidate, score=score, annotator=annotator))
        else:
            labels.append(PairwiseLabel(prompt_id=prompt_id, first=first, second=second, winner=winner, annotator=annotator))
    return labels


_SELECT = f"select kind, prompt_id, candidate, first, second, score, winner, annotator from [{TABLE}] order by created_at, rowid"


def stored_labels(conn: sqlite3.Connection) -> list[Label]:
    """Every label in a run file (any connection, read-only ones included), oldest first; none
    when the table was never created."""
    exists = conn.execute("select 1 from sqlite_master where type = 'table' and name = ?", [TABLE]).fetchone()
    return _rows_to_labels(conn.execute(_SELECT).fetchall()) if exists else []


def label_progress(conn: sqlite3.Connection) -> dict | None:
    """``{"asked", "asked_labelled", "labels"}``: items the run asked people for, how many of them
    someone labelled, labels in all; None when the file holds neither (any connection)."""
    tables = {name for (name,) in conn.execute("select name from sqlite_master where type = 'table' and name in (?, ?)", [TABLE, REQUESTS])}
    if not tables:
        return None
    asked = conn.execute(f"select count(*) from [{REQUESTS}]").fetchone()[0] if REQUESTS in tables else 0
    labels = conn.execute(f"select count(*) from [{TABLE}]").fetchone()[0] if TABLE in tables else 0
    done = (
        conn.execute(f"select count(*) from [{REQUESTS}] where item in (select item from [{TABLE}])").fetchone()[0]
        if tables == {TABLE, REQUESTS}
        else 0
    )
    return {"asked": asked, "asked_labelled": done, "labels": labels}


class LabelStore:
    """A writer of the ``human_labels`` table only. It does not take the run's lock: labels may be
    added while the run itself is judging (SQLite's WAL lets both write, one transaction at a time)."""

    def __init__(self, path: Path):
        self.path = path
        self.db = connect(path, threads=True)  # the labelling server's handler threads, one at a time
        try:
            self.db.execute(_CREATE)
            self.db.execute(_CREATE_REQUESTS)
        except sqlite3.DatabaseError as exc:
            self.db.conn.close()
            raise OrchestratorError(f"{path}: cannot store labels in the run file ({exc})") from None

    def add_many(self, labels: list[Label], source: str) -> dict[str, int]:
        """Store a file's labels in one transaction (all or none): a label for an item and annotator
        already stored with another verdict replaces it (the old row goes to the history table).
        ``{"added", "replaced", "unchanged"}``."""
        counts = {"added": 0, "replaced": 0, "unchanged": 0}
        self.db.conn.execute("begin immediate")
        try:
            self.db.conn.execute(_CREATE_HISTORY)
            for label in labels:
                counts[self._put(label, source)] += 1
        except BaseException:
            self.db.conn.execute("rollback")
            raise
        self.db.conn.execute("commit")
        return counts

    @staticmethod
    def _row(label: Label, source: str) -> list:
        if isinstance(label, AbsoluteLabel):
            fields = ["absolute", label.prompt_id, label.candidate, None, None, label.score, None]
        else:
            fields = ["pairwise", label.prompt_id, None, label.first, label.second, None, label.winner]
        return [label_item(label), label.annotator, *fields, time.time(), source]

    def _put(self, label: Label, source: str) -> str:
        """Insert, or replace a different verdict (inside the caller's transaction)."""
        row = self._row(label, source)
        item, annotator = row[0], row[1]
        old = self.db.conn.execute(f"select score, winner from [{TABLE}] where item = ? and annotator = ?", [item, annotator]).fetchone()
        if old is not None and tuple(old) == (row[7], row[8]):  # the item names the prompt and the answers; the order shown is no verdict
            return "unchanged"
        if old is not None:
            self.db.conn.execute(
                f"insert into [{HISTORY}] ({_COLUMNS}, replaced_at, replaced_by) select {_COLUMNS}, ?, ? from [{TABLE}] "
                "where item = ? and annotator = ?",
                [row[9], source, item, annotator],
            )
        self.db.conn.execute(_INSERT.format("replace"), row)
        return "added" if old is None else "replaced"

    def add(self, label: Label, source: str = "page") -> bool:
        """Store one label; False when this annotator labelled the item already (nothing changes:
        the page never offers an item twice, and a verdict sent twice is stored once)."""
        cursor = self.db.conn.execute(_INSERT.format("ignore"), self._row(label, source))
        return cursor.rowcount == 1

    def request(self, items: list[str], round_no: int) -> int:
        """Record that the run asks people to label ``items`` (keys) after planning ``round_no``, in
        one transaction; an item asked before keeps its first request. The number new."""
        now = time.time()
        self.db.conn.execute("begin immediate")
        try:
            added = sum(
                self.db.conn.execute(
                    f"insert or ignore into [{REQUESTS}] (item, round, position, requested_at) values (?, ?, ?, ?)",
                    [item, round_no, i, now],
                ).rowcount
                for i, item in enumerate(items)
            )
        except BaseException:
            self.db.conn.execute("rollback")
            raise
        self.db.conn.execute("commit")
        return added

    def requested(self) -> list[str]:
        """The items the run asked people for, in the order it asked."""
        return [item for (item,) in self.db.conn.execute(f"select item from [{REQUESTS}] order by round, position")]

    def labelled_by_anyone(self) -> set[str]:
        return {item for (item,) in self.db.conn.execute(f"select distinct item from [{TABLE}]")}

    def labelled_items(self, annotator: str) -> set[str]:
        return {item for (item,) in self.db.conn.execute(f"select item from [{TABLE}] where annotator = ?", [annotator])}

    def count(self, annotator: str | None = None) -> int:
        if annotator is None:
            return self.db.conn.execute(f"select count(*) from [{TABLE}]").fetchone()[0]
        return self.db.conn.execute(f"select count(*) from [{TABLE}] where annotator = ?", [annotator]).fetchone()[0]

    def close(self) -> None:
        self.db.conn.close()
