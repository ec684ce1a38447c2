"""The judgment cache: one SQLite file shared by every run on a machine (default: the user cache
directory), so a re-run (a new run name, another strategy, a fixed typo) never pays twice for a
request it has already asked.

Content-addressed: the key is a digest of what determines the judge's answer — the judge's model,
address and sampling parameters, the template digest, the rendered messages and the repeat index
(:func:`orchestrator.judging.cache.cache_key`) — never the run's name. The value is the judgment as
a run stores it. Only successful judgments are kept; a failure is asked again.

Table ``judgments``: ``key`` (primary), ``model``, ``template_digest``, ``repeat``, ``judgment``
(JSON), what it cost when it was paid (``paid_usd``, ``paid_tokens``), ``created_at``,
``last_used`` and ``hits``. Concurrent runs share the file (WAL, a busy timeout; inserts never
replace an existing entry, so the first answer to a request stays the answer).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterator

import sqlite_utils

from ..errors import OrchestratorError

__all__ = ["CACHE_SCHEMA_VERSION", "JudgmentCache"]

CACHE_SCHEMA_VERSION = 1
_APPLICATION_ID = 0x4C4A4331  # "LJC1": refuse to treat some other SQLite file as the cache


class JudgmentCache:
    """The cache file. ``JudgmentCache(path)`` creates it (and its folder) when missing.

    Raises:
        OrchestratorError: the path is not a judgment cache (another SQLite file, not SQLite at
            all, a newer version, or it cannot be created).
    """

    def __init__(self, path: str | Path, *, readonly: bool = False):
        self.path = Path(path).expanduser()
        try:
            if readonly:
                if not self.path.is_file():
                    raise OrchestratorError(f"{self.path}: no judgment cache here")
                conn = sqlite3.connect(f"file:{self.path.resolve()}?mode=ro", uri=True, timeout=30)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self.db = sqlite_utils.Database(conn)
            self._check_or_create(readonly)
        except sqlite3.DatabaseError as exc:
            raise OrchestratorError(f"{self.path}: not a judgment cache ({exc})") from None
        except OSError as exc:
            raise OrchestratorError(f"{self.path}: cannot open the judgment cache ({exc.strerror or exc})") from None

    def _check_or_create(self, readonly: bool) -> None:
        conn = self.db.conn
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
        if app_id == 0 and not tables and not readonly:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=30000")
            self.db.table("judgments").create(
                {
                    "key": str,
                    "model": str,
                    "template_digest": str,
                    "repeat": int,
                    "judgment": str,
                    "paid_usd": float,
                    "paid_tokens": int,
                    "created_at": float,
                    "last_used": float,
                    "hits": int,
                },
                pk="key",
                if_not_exists=True,
            )
            conn.execute(f"PRAGMA application_id={_APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version={CACHE_SCHEMA_VERSION}")
            return
        if app_id != _APPLICATION_ID:
            raise OrchestratorError(f"{self.path}: not a judgment cache (another SQLite file); choose another --cache path")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > CACHE_SCHEMA_VERSION:
            raise OrchestratorError(f"{self.path}: written by a newer orchestrator (cache schema {version}); upgrade or use --no-cache")
        if not readonly:
            conn.execute("PRAGMA busy_timeout=30000")

    def close(self) -> None:
        self.db.conn.close()

    @contextlib.contextmanager
    def _readable(self) -> Iterator[None]:
        """A damaged or unwritable cache file is one line naming the cache, never "the run file"."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise OrchestratorError(
                f"{self.path}: the judgment cache cannot be used ({exc}); remove it (runs then start a new one) or choose another --cache"
            ) from None

    def __enter__(self) -> "JudgmentCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached judgment (as :class:`~orchestrator.judging.client.Judgment` fields) or None;
        a hit is counted."""
        row = self.db.conn.execute("select judgment from judgments where key = ?", [key]).fetchone()
        if row is None:
            return None
        try:
            self.db.conn.execute("update judgments set hits = hits + 1, last_used = ? where key = ?", [time.time(), key])
        except sqlite3.OperationalError:  # read-only or busy: a hit that is not counted is still a hit
            pass
        return json.loads(row[0])

    def put(self, key: str, *, model: str, template_digest: str, repeat: int, judgment: dict[str, Any]) -> bool:
        """Keep a judgment unless the key is there already; True when it was added.

        Raises:
            OrchestratorError: the cache file cannot be written (damaged, full, read-only).
        """
        now = time.time()
        with self._readable():
            cursor = self._insert(key, model, template_digest, repeat, judgment, now)
        return cursor.rowcount == 1

    def _insert(self, key: str, model: str, template_digest: str, repeat: int, judgment: dict[str, Any], now: float) -> sqlite3.Cursor:
        return self.db.conn.execute(
            "insert or ignore into judgments (key, model, template_digest, repeat, judgment, paid_usd, paid_tokens, "
            "created_at, last_used, hits) values (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            [
                key,
                model,
                template_digest,
                repeat,
                json.dumps(judgment),
                float(judgment.get("cost_usd") or 0.0),
                int((judgment.get("prompt_tokens") or 0) + (judgment.get("completion_tokens") or 0)),
                now,
                now,
            ],
        )

    # -- generated answers: their own table, created by the first one (older caches read as before)
    _GENERATIONS = (
        "create table if not exists generations (key text primary key, model text not null, answer text not null, "
        "paid_usd real not null, paid_tokens integer not null, created_at real not null, last_used real not null, hits integer not null)"
    )

    def get_generation(self, key: str) -> dict[str, Any] | None:
        """A cached generated answer (:class:`~orchestrator.records.answers.GeneratedAnswer` fields) or None."""
        if self.db.conn.execute("select 1 from sqlite_master where type = 'table' and name = 'generations'").fetchone() is None:
            return None
        row = self.db.conn.execute("select answer from generations where key = ?", [key]).fetchone()
        if row is None:
            return None
        try:
            self.db.conn.execute("update generations set hits = hits + 1, last_used = ? where key = ?", [time.time(), key])
        except sqlite3.OperationalError:
            pass
        return json.loads(row[0])

    def put_generation(self, key: str, *, model: str, answer: dict[str, Any]) -> bool:
        """Keep a generated answer unless the key is there already; True when it was added.

        Raises:
            OrchestratorError: the cache file cannot be written.
        """
        now = time.time()
        with self._readable():
            self.db.conn.execute(self._GENERATIONS)
            cursor = self.db.conn.execute(
                "insert or ignore into generations (key, model, answer, paid_usd, paid_tokens, created_at, last_used, hits) "
                "values (?, ?, ?, ?, ?, ?, ?, 0)",
                [
                    key,
                    model,
                    json.dumps(answer),
                    float(answer.get("cost_usd") or 0.0),
                    int((answer.get("prompt_tokens") or 0) + (answer.get("completion_tokens") or 0)),
                    now,
                    now,
                ],
            )
        return cursor.rowcount == 1

    def stats(self) -> dict[str, Any]:
        """Entries, hits and what they were paid, in total and per model."""
        with self._readable():
            return self._stats()

    def _stats(self) -> dict[str, Any]:
        conn = self.db.conn
        per_model = [
            {"model": m, "entries": n, "hits": h or 0, "paid_usd": round(u or 0.0, 6), "saved_usd": round(s or 0.0, 6)}
            for m, n, h, u, s in conn.execute(
                "select model, count(*), sum(hits), sum(paid_usd), sum(paid_usd * hits) from judgments group by model order by model"
            )
        ]
        size = sum(Path(f"{self.path}{suffix}").stat().st_size for suffix in ("", "-wal") if Path(f"{self.path}{suffix}").exists())
        return {
            "path": str(self.path),
            "entries": sum(m["entries"] for m in per_model),
            "hits": sum(m["hits"] for m in per_model),
            "paid_usd": round(sum(m["paid_usd"] for m in per_model), 6),
            "saved_usd": round(sum(m["saved_usd"] for m in per_model), 6),
            "bytes": size,
            "models": per_model,
        }

    def prune(self, *, older_than_days: float | None = None, model: str | None = None) -> int:
        """Remove entries unused for ``older_than_days`` and/or of ``model`` (both None: every
        entry); returns how many, and gives the space back."""
        with self._readable():
            return self._prune(older_than_days, model)

    def _prune(self, older_than_days: float | None, model: str | None) -> int:
        where: list[str] = []
        args: list[Any] = []
        if older_than_days is not None:
            where.append("last_used < ?")
            args.append(time.time() - older_than_days * 86400.0)
        if model is not None:
            where.append("model = ?")
            args.append(model)
        clause = f"where {' and '.join(where)}" if where else ""
        removed = self.db.conn.execute(f"delete from judgments {clause}", args).rowcount
        self.db.conn.execute("VACUUM")
        return int(removed)
