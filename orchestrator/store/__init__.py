"""The run file: one SQLite database (WAL) per run, written through sqlite-utils.

Tables (``SCHEMA_VERSION`` 5; ``PRAGMA user_version`` holds the version; an older file gains the
``repeat`` (version 2), ``cached`` (version 3), ``samples``, ``completions`` and
``requests.reserved_calls`` (version 4), ``stated`` (version 5) columns when it is opened for writing; read-only, it reads
as before — a missing count is 1):

- ``runs``: one row: name, config (JSON), seed, dataset fingerprint, status, stop reason, times.
- ``prompts``: the dataset snapshot's prompts (``id``, ``position``, ``text``, ``reference``,
  ``category``, ``messages``: a conversation's turns as JSON — a column that files written before
  conversations lack, and read as none).
- ``responses``: the snapshot's responses (``prompt_id``, ``candidate``, ``text``, ``human`` JSON).
- ``requests``: every planned judge call: idempotency ``key``, ``round``, ``judge``, ``template``,
  ``kind``, ``prompt_id``, ``candidates`` (JSON, first = option A; for ``reference`` requests the
  anchor), ``repeat`` (index of a repeated run of the same item), rendered ``messages``, ``status``
  (``pending`` → ``done`` | ``failed``) and the worst-case ``reserved_tokens`` / ``reserved_usd``.
- ``judgments``: one row per finished request (same ``key``): ``status`` (``ok``/``failed``), option
  ``probs`` at every read position, ``p_first`` (pairwise), ``method``, ``capped``, ``unresolved``,
  every ``top_logprobs`` list, ``text``, ``raw`` response, tokens, ``cost_usd``, ``latency_s``,
  ``attempts``, ``error``/``error_type``, ``cached`` (1: answered from the judgment cache, tokens
  and USD 0: :mod:`orchestrator.store.cache`), ``samples`` (how many verdicts a ``verdict`` /
  ``samples`` judgment's shares count; NULL for log-probabilities), ``completions`` (paid completions
  behind it: what ``max_calls`` counts; NULL: 1), ``stated`` (the confidence a judge stated in its
  verdict, 0–1; NULL: none asked).
- ``rounds``: one row per selection round: selected comparisons with their metric, entropy,
  largest adjacent reorder probability, the top of the ranking, timings, spend after the round.
- ``answers``: the answers of candidates that are models, generated on demand, with their
  provenance (:mod:`orchestrator.store.answers`; created with a run that has such candidates —
  no schema version change).
- ``human_labels``: people's labels (``orchestrator label``; :mod:`orchestrator.store.labels`), created
  by the first label — no schema version change, older files and versions read as before.

Each judgment is committed in its own transaction as it arrives; a process killed at any moment
leaves a consistent file (SQLite's journal) that :func:`open_run` resumes.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import sqlite_utils

from ..errors import OrchestratorError
from ..records.dataset import Dataset, turns_json
from ..records.templates import Template
from .answers import create_answers_table
from .attachments import write_attachments
from .integrity import fill_request_status, inconsistencies
from .locks import RunLock, creation_lock, readonly, snapshot_reader
from .rows import JudgmentRecord, PlannedRequest
from .run_store import RunStore, Spend, connect
from .schema import create_schema

__all__ = [
    "SCHEMA_VERSION",
    "JudgmentRecord",
    "PlannedRequest",
    "RunStore",
    "Spend",
    "check_run_file",
    "create_run",
    "open_run",
    "refuse_existing",
]

SCHEMA_VERSION = 6


def create_run(
    path: str | Path,
    *,
    name: str,
    config: dict,
    seed: int,
    dataset: Dataset,
    templates: dict[str, Template],
    attachments: dict[str, dict] | None = None,
) -> RunStore:
    """Create a new run file with the dataset snapshot and ``attachments``: other inputs the run
    reads again later, kept whole (``name → {"source", "digest", "payload"}``: a ``[reference]
    board``'s judgments, so that moving or editing the board file never changes or breaks the run;
    the ``attachments`` table, created only when there are some — no schema version change).

    Raises:
        OrchestratorError: the file exists already (resume it instead) or cannot be written.
    """
    path = Path(path)
    refuse_existing(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OrchestratorError(f"{path.parent}: cannot create the runs directory ({exc.strerror})") from None
    creating = creation_lock(path)
    if path.exists():
        creating.release()
        refuse_existing(path)
    partial = path.with_name(path.name + ".creating")
    try:
        partial.unlink(missing_ok=True)
        db = connect(partial, wal=False)
    except BaseException:
        creating.release()
        raise
    lock: RunLock | None = None
    try:
        lock = RunLock(partial)  # the lock follows the file through the rename below
        now = time.time()
        # Written to a side file (rollback journal) and renamed below, so no transaction is needed
        # for atomicity; the run switches to WAL when it is opened for writing.
        create_schema(db, SCHEMA_VERSION)
        if config.get("candidates"):  # candidates that are models: their answers' table from the start
            create_answers_table(db)
        _write_inputs(db, name=name, config=config, seed=seed, dataset=dataset, templates=templates, now=now)
        if attachments:
            write_attachments(db, attachments)
        db.conn.close()
        # The run file appears complete or not at all.
        partial.replace(path)
        for suffix in ("-wal", "-shm"):
            Path(str(partial) + suffix).unlink(missing_ok=True)
    except BaseException:
        db.conn.close()
        partial.unlink(missing_ok=True)
        if lock is not None:
            lock.release()
        raise
    finally:
        creating.release()
        Path(str(path) + ".lock").unlink(missing_ok=True)
    return RunStore(path, connect(path), lock)


def _write_inputs(
    db: sqlite_utils.Database, *, name: str, config: dict, seed: int, dataset: Dataset, templates: dict[str, Template], now: float
) -> None:
    """A new run file's first rows: the run (config, seed, templates, the dataset's fingerprint) and
    the dataset snapshot (prompts in order, responses)."""
    db.table("runs").insert(
        {
            "id": 1,
            "name": name,
            "config": json.dumps(config),
            "seed": seed,
            "dataset_fingerprint": dataset.fingerprint(),
            "schema_version": SCHEMA_VERSION,
            "status": "created",
            "stop_reason": "",
            "created_at": now,
            "updated_at": now,
            "templates": json.dumps({role: t.model_dump(mode="json") for role, t in templates.items()}),
        }
    )
    db.table("prompts").insert_all(
        [
            {"id": p.id, "position": k, "text": p.text, "reference": p.reference, "category": p.category, "messages": turns_json(p)}
            for k, p in enumerate(dataset.prompts.values())
        ]
    )
    db.table("responses").insert_all(
        [
            {"prompt_id": r.prompt_id, "candidate": r.candidate, "text": r.text, "human": json.dumps(r.human)}
            for r in dataset.snapshot_responses()
        ]
    )


def refuse_existing(path: str | Path) -> None:
    """A new run's file must not exist (a file, a folder or a link): one line naming ``resume``."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        raise OrchestratorError(f"{path} already exists; continue it with `orchestrator resume {path}` or give the run another name")


def check_run_file(path: Path) -> None:
    """Refuse anything that is not a run file this version can read, without writing to it."""
    if not path.is_file():
        raise OrchestratorError(f"{path}: no such run file")
    with path.open("rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            raise OrchestratorError(f"{path}: not a run file (not an SQLite database)")
    try:
        conn = readonly(path)
    except sqlite3.DatabaseError as exc:
        raise OrchestratorError(f"{path}: cannot open the run file ({exc})") from None
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise OrchestratorError(f"{path}: not a run file ({exc})") from None
    try:  # (the scan reads every row: a damaged page shows here)
        wrong = inconsistencies(conn, tables) if version <= SCHEMA_VERSION else []
    except sqlite3.DatabaseError as exc:
        raise OrchestratorError(
            f"{path}: the run file is damaged ({exc}); check it with `sqlite3 RUN 'PRAGMA integrity_check'` and restore it from a copy"
        ) from None
    finally:
        conn.close()
    if version > SCHEMA_VERSION:
        raise OrchestratorError(
            f"{path}: written by a newer orchestrator (schema {version}, this one reads "
            f"up to {SCHEMA_VERSION}); upgrade llm-judge-orchestrator"
        )
    missing = {"runs", "prompts", "responses", "requests", "judgments", "rounds"} - tables
    if version < 1 or missing:
        raise OrchestratorError(f"{path}: not a run file (missing tables: {', '.join(sorted(missing)) or 'none'})")
    if wrong:
        raise OrchestratorError(
            f"{path}: an inconsistent run file, which no version of the orchestrator writes: {'; '.join(wrong)}; "
            "nothing was read or changed (restore it from a copy)"
        )


def _migrate(store: RunStore) -> None:
    """Bring an older run file to this version: version 2 adds ``repeat`` (0 for every existing
    row), version 3 ``judgments.cached`` (0: nothing was cached before the cache existed), version 4
    ``judgments.samples``, ``judgments.completions`` and ``requests.reserved_calls`` (NULL: 1),
    version 5 ``judgments.stated`` (NULL: no stated confidence), version 6 ``runs.stop_kind`` (NULL:
    the kind was not stored). A request whose status is NULL (a file another tool wrote or a person
    edited) gets the one its judgment implies, at any version (:mod:`.integrity`)."""
    version = next(store.db.query("PRAGMA user_version"))["user_version"]
    if version >= SCHEMA_VERSION:
        if store.db.conn.execute("select 1 from requests where status is null limit 1").fetchone():
            with store._transaction():
                fill_request_status(store.db.conn)
        return
    with store._transaction():
        fill_request_status(store.db.conn)
        if version < 2:
            for table in ("requests", "judgments"):
                store.db.execute(f"ALTER TABLE [{table}] ADD COLUMN [repeat] INTEGER NOT NULL DEFAULT 0")
        if version < 3:
            store.db.execute("ALTER TABLE [judgments] ADD COLUMN [cached] INTEGER NOT NULL DEFAULT 0")
        if version < 4:
            for table, column in (("judgments", "samples"), ("judgments", "completions"), ("requests", "reserved_calls")):
                if column not in store.db[table].columns_dict:
                    store.db.execute(f"ALTER TABLE [{table}] ADD COLUMN [{column}] INTEGER")
        if version < 5 and "stated" not in store.db["judgments"].columns_dict:
            store.db.execute("ALTER TABLE [judgments] ADD COLUMN [stated] FLOAT")
        if version < 6 and "stop_kind" not in store.db["runs"].columns_dict:
            store.db.execute("ALTER TABLE [runs] ADD COLUMN [stop_kind] TEXT")
        store.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        store.db.execute("update runs set schema_version = ?", [SCHEMA_VERSION])


def open_run(path: str | Path, *, write: bool = True) -> RunStore:
    """Open an existing run file; ``write`` takes the run's lock (one writer at a time). A reader
    (``write=False``) sees one snapshot of the file for as long as it is open (one read
    transaction, :func:`~orchestrator.store.locks.snapshot_reader`): a run committing judgments
    beside it can never make it fail or mix two states; close it to see newer commits.

    Raises:
        OrchestratorError: missing file, not a run file, a newer schema, another process holds it,
            or the dataset snapshot no longer matches its fingerprint. Nothing is written then.
    """
    path = Path(path)
    check_run_file(path)
    lock = RunLock(path) if write else None
    try:
        store = RunStore(path, connect(path) if write else sqlite_utils.Database(snapshot_reader(path)), lock)
        if write:
            _migrate(store)
        if store.dataset().fingerprint() != store.run["dataset_fingerprint"]:
            store.db.conn.close()
            raise OrchestratorError(f"{path}: the dataset snapshot does not match its fingerprint (file modified?)")
        return store
    except BaseException:
        if lock is not None:
            lock.release()
        raise
