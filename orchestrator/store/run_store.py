"""The open run file's reads and writes (:class:`RunStore`): typed records in, typed records out,
each write its own transaction; the spend so far (:class:`Spend`). Creating and opening a run file
(checks, migration, locks) is :mod:`orchestrator.store`."""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import sqlite_utils

from ..errors import OrchestratorError
from ..failpoints import failpoint
from ..records.dataset import Dataset, PromptRow, ResponseText, turns_from_json
from ..records.judgments import Judgment
from ..records.log import GRADES, prob_first
from ..records.templates import Template
from ..secrets import redact
from .attachments import read_attachment
from .integrity import REQUEST_COUNTS, run_row
from .locks import RunLock
from .rows import JudgmentRecord, PlannedRequest, judgment_row, light_columns, parse_candidates

__all__ = ["FREEZE_AFTER", "RunStore", "Spend", "connect", "p_first"]


@dataclass(frozen=True)
class Spend:
    calls: int = 0
    """Paid completions, cache hits included (``max_calls`` counts them): ``k`` per judgment of ``k`` samples."""
    tokens: int = 0
    """Tokens paid for (a cache hit counts 0)."""
    usd: float = 0.0
    """USD paid (a cache hit counts 0)."""
    cached: int = 0
    """Judgments answered from the judgment cache."""


def connect(path: Path, *, wal: bool = True, threads: bool = False) -> sqlite_utils.Database:
    """A writer's connection. ``wal=False`` (a new file being built) uses a rollback journal: every
    write then reaches the file itself or fails loudly, where a WAL checkpoint that cannot write
    (a full disk) would fail quietly and leave the data in a side file. ``threads``: usable from
    any thread (the caller serialises its use)."""
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=30.0, check_same_thread=not threads)
    db = sqlite_utils.Database(conn)
    try:
        db.execute("PRAGMA journal_mode=WAL" if wal else "PRAGMA journal_mode=DELETE")
        db.execute("PRAGMA synchronous=NORMAL")  # durable across process crashes in WAL mode
        db.execute("PRAGMA foreign_keys=ON")
    except sqlite3.DatabaseError as exc:
        conn.close()
        if (
            "readonly" in str(exc)
            or "read-only" in str(exc)
            or not os.access(path, os.W_OK)
            or not os.access(path.resolve().parent, os.W_OK)
        ):
            raise OrchestratorError(
                f"{path}: the run file is on read-only storage ({exc}); status, rank and export "
                "read it there, and a copy on writable storage can be resumed"
            ) from None
        raise OrchestratorError(f"{path}: not a run file ({exc})") from None
    return db


FREEZE_AFTER = 20_000
"""Judgment loads at least this large are frozen out of the cyclic garbage collector."""


def p_first(judgment: Judgment) -> float | None:
    """P(first-shown better) of a pairwise/reference judgment (a tie ``C`` counts half)."""
    if not judgment.probs or judgment.kind not in ("pairwise", "reference"):
        return None
    probs = judgment.probs[0]
    return prob_first(probs) if sum(probs.get(o, 0.0) for o in ("A", "B", "C", *GRADES)) > 0 else None


class RunStore:
    """An open run file. Use :func:`create_run` / :func:`open_run`; close with :meth:`close`."""

    def __init__(self, path: Path, db: sqlite_utils.Database, lock: "RunLock | None"):
        self.path = path
        self.db = db
        self._lock = lock
        self._columns: set[str] | None = None
        self._dataset: Dataset | None = None

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One atomic write (raw SQL inside: sqlite-utils' helpers commit on their own)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _insert(self, table: str, rows: list[dict], *, on_conflict: str = "REPLACE") -> None:
        if not rows:
            return
        columns = list(rows[0])
        sql = f"INSERT OR {on_conflict} INTO [{table}] ({', '.join(f'[{c}]' for c in columns)}) VALUES ({', '.join('?' for _ in columns)})"
        self.db.conn.executemany(sql, [[r[c] for c in columns] for r in rows])

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        self.db.conn.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- run row -----------------------------------------------------------------------------
    @property
    def run(self) -> dict[str, Any]:
        """The run's row, a NULL read as its default (:func:`.integrity.run_row`)."""
        return run_row(next(self.db.query("select * from runs where id = 1")), self.path)

    @property
    def config(self) -> dict[str, Any]:
        return json.loads(self.run["config"])

    def templates(self) -> dict[str, Template]:
        """The templates the run was created with (role → template), so a resume asks the same."""
        return {role: Template.model_validate(t) for role, t in json.loads(self.run["templates"]).items()}

    def set_status(self, status: str, reason: str = "", kind: str | None = None) -> None:
        """The run's state, why it stopped in words and as a code (``kind``: :data:`~orchestrator.records.reports.StopKind`)."""
        with self._transaction():
            self.db.execute(
                "update runs set status = ?, stop_reason = ?, stop_kind = ?, updated_at = ? where id = 1",
                [status, redact(reason) or "", kind, time.time()],
            )

    # -- dataset snapshot --------------------------------------------------------------------
    def dataset(self) -> Dataset:
        """The snapshot, read once per open store (a 40 × 805 snapshot takes about a second to
        build). Its rows were validated when they were written and :func:`open_run` checks them
        against the stored fingerprint, so they are not validated field by field again."""
        if self._dataset is None:
            columns = self.prompt_columns()
            category = "category" if "category" in columns else "null as category"
            turns = "messages" if "messages" in columns else "null as messages"
            prompts = {
                r["id"]: PromptRow.model_construct(
                    id=r["id"], text=r["text"], reference=r["reference"], category=r["category"], messages=turns_from_json(r["messages"])
                )
                for r in self.db.query(f"select id, text, reference, {category}, {turns} from prompts order by position")
            }
            responses: dict[str, dict[str, ResponseText]] = {p: {} for p in prompts}
            for r in self.db.query("select prompt_id, candidate, text, human from responses order by rowid"):
                responses[r["prompt_id"]][r["candidate"]] = ResponseText.model_construct(
                    prompt_id=r["prompt_id"], candidate=r["candidate"], text=r["text"], human=json.loads(r["human"]) if r["human"] else {}
                )
            from .answers import with_answers

            self._dataset = with_answers(self, Dataset(prompts, responses))
        return self._dataset

    def prompt_categories_stored(self) -> bool:
        """Whether the snapshot has a column for prompt categories (run files from before them do not)."""
        return "category" in self.prompt_columns()

    def prompt_columns(self) -> set[str]:
        """The snapshot's prompt columns (run files from before categories or conversations lack those)."""
        return {row["name"] for row in self.db.query("pragma table_info(prompts)")}

    # -- requests and judgments --------------------------------------------------------------
    def add_round(
        self, round_no: int, kind: str, selected: list, requests: list[PlannedRequest], info: dict, answers: list[dict] | None = None
    ) -> None:
        """Write a round's selection, its planned (pending) requests and the answers they need
        that no earlier round planned (:func:`.answers.plan_answers`) in one transaction."""
        now = time.time()
        with self._transaction():
            self._insert(
                "rounds",
                [
                    {
                        "round": round_no,
                        "kind": kind,
                        "selected": json.dumps(selected),
                        "n_requests": len(requests),
                        "started_at": now,
                        **info,
                    }
                ],
            )
            failpoint("add_round")
            self._insert(
                "requests", [{**r.row(), "round": round_no, "status": "pending", "created_at": now} for r in requests], on_conflict="IGNORE"
            )
            if answers:
                from .answers import plan_answers

                plan_answers(self, [{**a, "round": round_no} for a in answers])

    def set_request_messages(self, key: str, messages: list[dict[str, str]]) -> None:
        """A pending request's messages as they are sent (rendered again once the answers they
        show were generated): the run file keeps what the judge was shown."""
        with self._transaction():
            self.db.execute("update requests set messages = ? where key = ? and status = 'pending'", [json.dumps(messages), key])

    def finish_round(self, round_no: int, info: dict) -> None:
        info = {**info, "finished_at": time.time()}
        with self._transaction():
            self.db.execute(f"update rounds set {', '.join(f'[{k}] = ?' for k in info)} where round = ?", [*info.values(), round_no])

    def pending_requests(self) -> list[PlannedRequest]:
        """Planned requests without a committed judgment, in planning order."""
        return [
            PlannedRequest.from_row(r)
            for r in self.db.query(
                "select r.* from requests r left join judgments j on j.key = r.key "
                "where r.status = 'pending' and j.key is null order by r.round, r.key"
            )
        ]

    def commit_judgment(self, judgment: Judgment, attempts: int, round_no: int, repeat: int = 0) -> JudgmentRecord:
        """Store one finished request (its judgment or permanent failure) atomically."""
        row = judgment_row(judgment, attempts, round_no, repeat, p_first(judgment) if judgment.status == "ok" else None)
        status = "done" if judgment.status == "ok" else "failed"
        with self._transaction():
            self._insert("judgments", [row])
            failpoint("commit_judgment")
            self.db.execute("update requests set status = ? where key = ?", [status, judgment.key])
        return JudgmentRecord.from_row(row)

    def judgments(self, *, ok_only: bool = True, kind: str | None = None, full: bool = False) -> Iterator[JudgmentRecord]:
        """Committed judgments (only ``ok`` ones unless told), of one ``kind`` if given, in the
        order every fit takes them: by round, then key.

        Without ``full`` the bulky columns no fit reads (``top_logprobs``, ``raw``, ``text``,
        ``capped``, ``unresolved``) are left out of the records: parsing them took 3/4 of the time
        of rebuilding a 100k-judgment run (``benchmarks/speed/rebuild.py``). Export reads them all."""
        where, args = [], []
        if ok_only:
            where.append("status = 'ok'")
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        clause = f"where {' and '.join(where)}" if where else ""
        columns = "*" if full else light_columns(self._judgment_columns())
        # Loading 100k records allocates a million small objects, none of them cyclic; the cyclic
        # garbage collector would walk the growing heap again and again (2/3 of the load time).
        enabled = gc.isenabled()
        gc.disable()
        records: list[JudgmentRecord] = []
        try:
            cursor = self.db.conn.execute(f"select {columns} from judgments {clause} order by round, key", args)
            names = [d[0] for d in cursor.description]
            build = JudgmentRecord.from_row if full else JudgmentRecord.from_light
            records = [build(dict(zip(names, values))) for values in cursor]
        finally:
            if enabled:
                if len(records) >= FREEZE_AFTER:
                    # The records live as long as the run is open: move them (and what else is
                    # alive) out of the collector's generations, or its next full passes walk them
                    # all anyway, a delay that grows with the run. Refcounting still frees
                    # them; only cyclic garbage alive at this moment would wait.
                    gc.freeze()
                gc.enable()
        return iter(records)

    def answered(self) -> Iterator[tuple[PlannedRequest, JudgmentRecord]]:
        """Every successful judgment (whole) with the request that asked it, rendered messages
        included (what the judgment cache is filled from)."""
        columns = ", ".join(f"j.[{c}] as [j_{c}]" for c in sorted(self._judgment_columns()))
        cursor = self.db.conn.execute(
            f"select r.*, {columns} from requests r join judgments j on j.key = r.key where j.status = 'ok' order by j.round, j.key"
        )
        names = [d[0] for d in cursor.description]
        for values in cursor:
            row = dict(zip(names, values))
            yield PlannedRequest.from_row(row), JudgmentRecord.from_row({k[2:]: v for k, v in row.items() if k.startswith("j_")})

    def _judgment_columns(self) -> set[str]:
        """The ``judgments`` table's columns (an old read-only file may lack newer ones)."""
        if self._columns is None:
            self._columns = {row[1] for row in self.db.conn.execute("PRAGMA table_info(judgments)")}
        return self._columns

    def judgment_counts(self) -> dict[str, int]:
        """Committed judgments by status (``ok``, ``failed``)."""
        return {r["status"]: r["n"] for r in self.db.query("select status, count(*) as n from judgments group by status")}

    def request_counts(self) -> dict[str, int]:
        """Planned requests by status (``pending``, ``done``, ``failed``)."""
        return {r["status"]: r["n"] for r in self.db.query(REQUEST_COUNTS)}

    def failure_counts(self) -> dict[str, int]:
        """Permanent failures by error type."""
        return {
            r["error_type"] or "unknown": r["n"]
            for r in self.db.query("select error_type, count(*) as n from judgments where status = 'failed' group by error_type")
        }

    def typical_failure(self, *, judge: str | None = None) -> tuple[int, str, str] | None:
        """``(count, error type, one of its messages)`` of the commonest failure (of one judge), or None."""
        clause, args = ("and judge = ?", [judge]) if judge is not None else ("", [])
        row = next(
            self.db.query(
                f"select error_type, error, count(*) as n from judgments where status = 'failed' {clause} "
                "group by error_type order by n desc limit 1",
                args,
            ),
            None,
        )
        return None if row is None else (int(row["n"]), row["error_type"] or "error", row["error"] or "")

    def spend(self) -> Spend:
        cached = "coalesce(sum(cached), 0)" if "cached" in self._judgment_columns() else "0"
        row = next(
            self.db.query(
                f"select {self._completions()} as calls, coalesce(sum(prompt_tokens + completion_tokens), 0) as tokens, "
                f"coalesce(sum(cost_usd), 0.0) as usd, {cached} as cached from judgments"
            )
        )
        tokens, usd = self.answer_spend(None)
        return Spend(int(row["calls"]), int(row["tokens"]) + tokens, float(row["usd"]) + usd, int(row["cached"]))

    def answer_spend(self, cutoff: int | None) -> tuple[int, float]:
        """What the candidate models' answers cost (:mod:`.answers`), counted in every budget's total."""
        from .answers import answer_spend

        return answer_spend(self, cutoff)

    def _completions(self) -> str:  # paid completions (a file before schema 4: one per judgment)
        return "coalesce(sum(coalesce(completions, 1)), 0)" if "completions" in self._judgment_columns() else "count(*)"

    def attachment(self, name: str) -> dict | None:
        """An input kept whole at creation (:mod:`.attachments`), or None."""
        return read_attachment(self.db, name)

    def planning_spend(self, cutoff: int) -> Spend:
        """What planning may assume is spent: actual spend of rounds ``<= cutoff`` (all committed)
        plus the reservations of later rounds, whatever has arrived of them. An upper bound on the
        final spend of what is planned, and independent of arrival timing (so resumes agree)."""
        done = next(
            self.db.query(
                f"select {self._completions()} as calls, coalesce(sum(prompt_tokens + completion_tokens), 0) as tokens, "
                "coalesce(sum(cost_usd), 0.0) as usd from judgments where round <= ?",
                [cutoff],
            )
        )
        reserved = "coalesce(sum(coalesce(reserved_calls, 1)), 0)" if "reserved_calls" in self.db["requests"].columns_dict else "count(*)"
        later = next(
            self.db.query(
                f"select {reserved} as calls, coalesce(sum(reserved_tokens), 0) as tokens, coalesce(sum(reserved_usd), 0.0) as usd "
                "from requests where round > ?",
                [cutoff],
            )
        )
        tokens, usd = self.answer_spend(cutoff)
        return Spend(
            int(done["calls"] + later["calls"]), int(done["tokens"] + later["tokens"]) + tokens, float(done["usd"] + later["usd"]) + usd
        )

    def deployment_counts(self) -> dict[str, dict[str, int]]:
        """Judgments per judge and deployment (judges with several endpoints; the raw response's
        ``_deployment``)."""
        out: dict[str, dict[str, int]] = {}
        rows = self.db.conn.execute(
            "select judge, json_extract(raw, '$._deployment') as d, count(*) from judgments "
            "where raw is not null and json_extract(raw, '$._deployment') is not null group by judge, d order by judge, d"
        )
        for judge, deployment, n in rows:
            out.setdefault(judge, {})[deployment] = int(n)
        return out

    def reserved_per_request(self) -> tuple[float, float]:
        """Mean worst-case ``(tokens, USD)`` reserved per planned request (0, 0 before any)."""
        row = self.db.conn.execute("select avg(reserved_tokens), avg(reserved_usd) from requests").fetchone()
        return float(row[0] or 0.0), float(row[1] or 0.0)

    def asked(self) -> Counter[tuple[str, str, tuple[str, ...]]]:
        """``(judge, prompt, candidates)`` of every planned request (asked or pending), with its count."""
        rows = self.db.conn.execute("select judge, prompt_id, candidates from requests")
        return Counter((judge, prompt, parse_candidates(cands)) for judge, prompt, cands in rows)

    def last_round(self) -> int:
        row = next(self.db.query("select coalesce(max(round), -1) as r from rounds"))
        return int(row["r"])

    def rounds(self) -> list[dict]:
        return list(self.db.query("select * from rounds order by round"))
