"""Generated answers in the run file: the ``answers`` table.

One row per (prompt, candidate that is a model), written when the round that first needs the answer
is planned (``pending``, with the worst case it reserves) and completed once, when the answer
arrives (``ok``, or ``failed`` with the reason), with its provenance: the settings it was asked
with (JSON, :class:`~orchestrator.records.candidate_models.GenerationSettings`), tokens, USD,
latency, finish reason, ``truncated``, ``cached``. An answer is committed before any judge sees it
and is never asked for again: a pending row whose answer was lost (a kill during the call) is asked
again, an ``ok`` or ``failed`` one never.

The table is created with a run whose config names candidate models, and on demand otherwise, so
run files without it read as before (no schema version change).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import ContextManager, Protocol

import sqlite_utils

from ..failpoints import failpoint
from ..records.answers import GeneratedAnswer
from ..records.candidate_models import GenerationSettings
from ..records.dataset import Dataset


class RunStore(Protocol):
    """The run file as these functions use it (:class:`~orchestrator.store.run_store.RunStore`,
    which reads its answers through them)."""

    db: sqlite_utils.Database

    def _transaction(self) -> ContextManager[None]: ...


__all__ = [
    "with_answers",
    "AnswerRecord",
    "answer_counts",
    "answer_round",
    "answer_spend",
    "commit_answer",
    "create_answers_table",
    "plan_answers",
    "fixable",
    "reopen_fixable",
    "stored_answers",
]

TABLE = "answers"

CREATE = f"""create table if not exists [{TABLE}] (
    prompt_id text not null, candidate text not null, status text not null, round integer not null,
    reserved_tokens integer not null, reserved_usd real not null, text text, settings text not null,
    prompt_tokens integer, completion_tokens integer, cost_usd real, latency_s real, finish_reason text,
    truncated integer, error text, error_type text, cached integer, created_at real, answered_at real,
    primary key (prompt_id, candidate))"""


@dataclass(frozen=True)
class AnswerRecord:
    """One generated answer as the run file keeps it."""

    prompt_id: str
    candidate: str
    status: str
    """``pending``, ``ok`` or ``failed``."""
    round: int
    """The round whose requests first needed it (its reservation counts there)."""
    text: str
    settings: GenerationSettings
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float
    finish_reason: str | None
    truncated: bool
    error: str | None
    error_type: str | None
    cached: bool


def create_answers_table(db) -> None:
    db.execute(CREATE)


def _exists(store: RunStore) -> bool:
    return store.db[TABLE].exists()


def plan_answers(store: RunStore, rows: list[dict]) -> None:
    """Reserve answers a planned round needs (inside the round's transaction): ``{prompt_id,
    candidate, round, reserved_tokens, reserved_usd, settings}``; one already planned is kept."""
    if not rows:
        return
    store.db.execute(CREATE)
    now = time.time()
    store.db.conn.executemany(
        f"insert or ignore into [{TABLE}] (prompt_id, candidate, status, round, reserved_tokens, reserved_usd, settings, created_at) "
        "values (?, ?, 'pending', ?, ?, ?, ?, ?)",
        [(r["prompt_id"], r["candidate"], r["round"], r["reserved_tokens"], r["reserved_usd"], r["settings"], now) for r in rows],
    )


def commit_answer(store: RunStore, prompt_id: str, candidate: str, answer: GeneratedAnswer) -> None:
    """Store an answer (or its failure) in its own transaction, once: an answer already stored
    stays as it was."""
    with store._transaction():
        store.db.execute(
            f"update [{TABLE}] set status = ?, text = ?, prompt_tokens = ?, completion_tokens = ?, cost_usd = ?, latency_s = ?, "
            "finish_reason = ?, truncated = ?, error = ?, error_type = ?, cached = ?, answered_at = ? "
            "where prompt_id = ? and candidate = ? and status = 'pending'",
            [
                answer.status,
                answer.text if answer.status == "ok" else None,
                answer.prompt_tokens,
                answer.completion_tokens,
                answer.cost_usd,
                answer.latency_s,
                answer.finish_reason,
                int(answer.truncated),
                answer.error,
                answer.error_type,
                int(answer.cached),
                time.time(),
                prompt_id,
                candidate,
            ],
        )
        failpoint("commit_answer")


FIXABLE = ("auth", "connection", "bad_request", "rate_limit", "server", "timeout")
"""Failures of the endpoint, not of the answer (a key, an address, a model name, a rate limit, an
outage): what a user fixes before resuming."""


def fixable(store: RunStore) -> list[tuple[str, str, str]]:
    """``(prompt, candidate, error type)`` of every answer that failed for a reason in :data:`FIXABLE`."""
    if not _exists(store):
        return []
    marks = ", ".join("?" for _ in FIXABLE)
    return store.db.conn.execute(
        f"select prompt_id, candidate, error_type from [{TABLE}] where status = 'failed' and error_type in ({marks})", FIXABLE
    ).fetchall()


def reopen_fixable(store: RunStore) -> dict[str, int]:
    """Make every answer that failed for a reason in :data:`FIXABLE` pending again, and the
    requests that failed because of it (``no_answer``, no judge was asked) pending with it, so that
    the run asks for it once more (``resume``); ``error_type → count`` of the answers reopened.
    Nothing paid is undone: a failed call cost nothing, and the failed judgments cost nothing."""
    rows = fixable(store)
    if not rows:
        return {}
    reopened = {(p, c) for p, c, _ in rows}
    keys = [
        key
        for key, prompt, candidates in store.db.conn.execute(
            "select key, prompt_id, candidates from judgments where status = 'failed' and error_type = 'no_answer'"
        )
        if any((prompt, c) in reopened for c in json.loads(candidates))
    ]
    with store._transaction():
        store.db.conn.executemany(
            f"update [{TABLE}] set status = 'pending', error = null, error_type = null, answered_at = null "
            "where prompt_id = ? and candidate = ? and status = 'failed'",
            sorted(reopened),
        )
        store.db.conn.executemany("delete from judgments where key = ?", [(k,) for k in keys])
        store.db.conn.executemany("update requests set status = 'pending' where key = ?", [(k,) for k in keys])
    counts: dict[str, int] = {}
    for _, _, error_type in rows:
        counts[error_type] = counts.get(error_type, 0) + 1
    return counts


def answer_round(store: RunStore, prompt_id: str, candidate: str) -> int:
    """The round that first needed an answer (its row's ``round``; -1 without one)."""
    row = store.db.conn.execute(f"select round from [{TABLE}] where prompt_id = ? and candidate = ?", [prompt_id, candidate]).fetchone()
    return int(row[0]) if row is not None else -1


def stored_answers(store: RunStore) -> dict[tuple[str, str], AnswerRecord]:
    """Every answer row, ``(prompt, candidate) → record``."""
    if not _exists(store):
        return {}
    out = {}
    for r in store.db.query(f"select * from [{TABLE}] order by round, prompt_id, candidate"):
        out[(r["prompt_id"], r["candidate"])] = AnswerRecord(
            prompt_id=r["prompt_id"],
            candidate=r["candidate"],
            status=r["status"],
            round=r["round"],
            text=r["text"] or "",
            settings=GenerationSettings.model_validate_json(r["settings"]),
            prompt_tokens=r["prompt_tokens"] or 0,
            completion_tokens=r["completion_tokens"] or 0,
            cost_usd=r["cost_usd"] or 0.0,
            latency_s=r["latency_s"] or 0.0,
            finish_reason=r["finish_reason"],
            truncated=bool(r["truncated"]),
            error=r["error"],
            error_type=r["error_type"],
            cached=bool(r["cached"]),
        )
    return out


def answer_spend(store: RunStore, cutoff: int | None = None) -> tuple[int, float]:
    """Tokens and USD of the generations: what was paid (``cutoff`` None), or what planning may
    assume — paid for answers of rounds ``<= cutoff``, reserved for later ones (as
    :meth:`RunStore.planning_spend` counts requests)."""
    if not _exists(store):
        return 0, 0.0
    if cutoff is None:
        row = store.db.conn.execute(
            f"select coalesce(sum(prompt_tokens + completion_tokens), 0), coalesce(sum(cost_usd), 0.0) from [{TABLE}] "
            "where status != 'pending'"
        ).fetchone()
        return int(row[0]), float(row[1])
    row = store.db.conn.execute(
        "select coalesce(sum(case when round > ? or status = 'pending' then reserved_tokens "
        "else coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0) end), 0), "
        "coalesce(sum(case when round > ? or status = 'pending' then reserved_usd else coalesce(cost_usd, 0.0) end), 0.0) "
        f"from [{TABLE}]",
        [cutoff, cutoff],
    ).fetchone()
    return int(row[0]), float(row[1])


def answer_counts(store: RunStore) -> dict[str, dict[str, int]]:
    """``candidate → {"ok", "failed", "pending", "truncated", "cached"}`` counts of its answers."""
    if not _exists(store):
        return {}
    out: dict[str, dict[str, int]] = {}
    for candidate, status, truncated, cached, n in store.db.conn.execute(
        f"select candidate, status, coalesce(truncated, 0), coalesce(cached, 0), count(*) from [{TABLE}] group by 1, 2, 3, 4"
    ):
        counts = out.setdefault(candidate, {"ok": 0, "failed": 0, "pending": 0, "truncated": 0, "cached": 0})
        counts[status] += n
        counts["truncated"] += n * int(truncated)
        counts["cached"] += n * int(cached)
    return out


def with_answers(store: RunStore, dataset: Dataset) -> Dataset:
    """The snapshot with the candidates that are models (the run's config) answering every prompt:
    the answers generated so far in place, the others pending."""
    models = list(json.loads(store.db.execute("select config from runs where id = 1").fetchone()[0]).get("candidates") or {})
    if not models:
        return dataset
    texts = {key: a.text for key, a in stored_answers(store).items() if a.status == "ok"}
    return dataset.with_models(models, texts)


def answer_provenance(store: RunStore, prompts: int) -> dict[str, dict]:
    """Per candidate model: its model, answers generated / failed / truncated / from the cache /
    reserved and not yet written of ``prompts``, their tokens, USD and mean latency."""
    out: dict[str, dict] = {}
    for a in stored_answers(store).values():
        row = out.setdefault(
            a.candidate,
            {
                "model": a.settings.model,
                "prompts": prompts,
                "generated": 0,
                "failed": 0,
                "pending": 0,
                "truncated": 0,
                "cached": 0,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "usd": 0.0,
                "latency_s": 0.0,
            },
        )
        row["generated" if a.status == "ok" else a.status] += 1
        row["truncated"] += int(a.truncated)
        row["cached"] += int(a.cached)
        row["prompt_tokens"] += a.prompt_tokens
        row["completion_tokens"] += a.completion_tokens
        row["usd"] += a.cost_usd
        row["latency_s"] += a.latency_s
    for row in out.values():
        asked = row["generated"] + row["failed"]
        row["usd"] = round(row["usd"], 6)
        row["mean_latency_s"] = round(row.pop("latency_s") / asked, 3) if asked else None
    return out


def mean_reservation(store: RunStore) -> tuple[float, float]:
    """The mean tokens and USD an answer reserved (what one more is expected to reserve)."""
    if not _exists(store):
        return 0.0, 0.0
    row = store.db.conn.execute(f"select avg(reserved_tokens), avg(reserved_usd) from [{TABLE}]").fetchone()
    return float(row[0] or 0.0), float(row[1] or 0.0)
