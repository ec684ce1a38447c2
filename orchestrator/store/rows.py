"""Typed rows of the run file: what the store hands out (JSON columns parsed) and takes in.

Nothing outside :mod:`orchestrator.store` reads a JSON column or writes SQL; everyone else sees
these frozen records.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..records.judgments import Judgment
from ..secrets import lazy_secrets, redact, redact_json

__all__ = ["JudgmentRecord", "PlannedRequest", "judgment_row", "light_columns"]


@functools.lru_cache(maxsize=1 << 16)
def parse_candidates(candidates_json: str) -> tuple[str, ...]:
    """A ``candidates`` column parsed; the same few hundred values repeat over a whole run, so
    they are decoded once (a third of the JSON decoding when a 100k-judgment run is loaded)."""
    return tuple(json.loads(candidates_json))


def _load(value: Any, default: Any) -> Any:
    if value is None:
        return default
    return json.loads(value) if isinstance(value, str) else value


class JudgmentRecord(Judgment):
    """One finished request as the run file keeps it: the judge's :class:`Judgment` (``status = "ok"``,
    or a permanent failure) and where it stood in the run. Loaded without the bulky columns
    (:meth:`RunStore.judgments` ``full``), ``top_logprobs``, ``capped``, ``unresolved`` are empty
    and ``text`` is ``""``."""

    model_config = ConfigDict(frozen=True)

    template: str = ""
    """The template's id (none for a judgment read from a log)."""
    status: Literal["ok", "failed"] = "ok"
    p_first: float | None = None
    """P(first-shown better) of a pairwise/reference judgment (a tie counts half)."""
    round: int = 0
    repeat: int = 0
    """Index of a repeated run of the same item."""
    attempts: int = 0
    """Tries it took (retries of transient failures included)."""
    created_at: float = 0.0

    @classmethod
    def from_row(cls, row: dict) -> "JudgmentRecord":
        """From a whole ``judgments`` row (a write's, or one read with every column): a NULL or
        missing column reads as the field's default, the bulky JSON columns parsed."""
        fields = {name: row.get(name) for name in STORED_FIELDS if name not in BULKY_COLUMNS}
        for name, default in STORED_DEFAULTS.items():
            if fields[name] is None:
                fields[name] = default
        fields["capped"] = _load(row.get("capped"), None) or []
        fields["unresolved"] = _load(row.get("unresolved"), None) or []
        fields["top_logprobs"] = _load(row.get("top_logprobs"), None) or []
        fields["text"] = row.get("text") or ""
        fields["raw"] = _load(row.get("raw"), None)
        return cls._built(fields)

    @classmethod
    def from_light(cls, fields: dict) -> "JudgmentRecord":
        """From a row read by :func:`light_columns` (defaults filled in by SQLite, the bulky columns
        left out: they read as empty), taken over as the record's own fields."""
        fields["capped"] = []
        fields["unresolved"] = []
        fields["top_logprobs"] = []
        fields["text"] = ""
        fields["raw"] = None
        return cls._built(fields)

    @classmethod
    def _built(cls, fields: dict) -> "JudgmentRecord":
        """The record over ``fields``, built without validation (the row was validated when it was
        written): the instance takes the dict as it is, its three pydantic slots written through
        their descriptors — faster than ``model_construct`` (``benchmarks/speed/record_load.py``),
        and kept only while tests/run/test_loaded_records.py finds the record the same as a
        validated one."""
        candidates = fields["candidates"]
        fields["candidates"] = list(parse_candidates(candidates)) if isinstance(candidates, str) else list(candidates)
        fields["probs"] = _load(fields["probs"], None) or []
        fields["cached"] = bool(fields["cached"])
        fields["retryable"] = False
        fields["retry_after_s"] = None
        record = object.__new__(cls)
        _set_fields_set(record, _ALL_SET)
        _set_extra(record, None)
        _set_private(record, None)
        object.__setattr__(record, "__dict__", fields)
        return record


_ALL_SET = set(JudgmentRecord.model_fields)
"""Every field counts as set in a loaded record (shared: a frozen record never changes it)."""
# pydantic's three slots, set through their descriptors (faster than object.__setattr__)
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__

BULKY_COLUMNS = ("capped", "unresolved", "top_logprobs", "text", "raw")
"""The judgment columns no fit reads: left out of :func:`light_columns`."""
STORED_FIELDS = [name for name in JudgmentRecord.model_fields if name not in ("retryable", "retry_after_s")]
"""The record's fields a ``judgments`` row holds (a column each)."""
STORED_DEFAULTS: dict[str, Any] = {
    "round": 0,
    "repeat": 0,
    "status": "ok",
    "template": "",
    "prompt_tokens": 0,
    "completion_tokens": 0,
    "cost_usd": 0.0,
    "latency_s": 0.0,
    "attempts": 0,
    "created_at": 0.0,
    "cached": 0,
}
"""What a NULL stands for, and a column an older run file lacks (every other field: None)."""


def light_columns(present: set[str]) -> str:
    """The select list that reads a judgments row without its bulky columns, one column per
    stored field in :data:`STORED_FIELDS` order, NULLs and columns an older file lacks filled in
    with their defaults by SQLite: a row's ``dict(zip(names, values))`` is then its record's
    fields as they are (:meth:`JudgmentRecord.from_light`), no per-column work in Python."""
    parts = []
    for name in STORED_FIELDS:
        if name in BULKY_COLUMNS:
            continue
        default = STORED_DEFAULTS.get(name)
        literal = "NULL" if default is None else f"'{default}'" if isinstance(default, str) else repr(default)
        if name not in present:
            parts.append(f"{literal} as [{name}]")
        elif default is None:
            parts.append(f"[{name}]")
        else:
            parts.append(f"coalesce([{name}], {literal}) as [{name}]")
    return ", ".join(parts)


@dataclass(frozen=True)
class PlannedRequest:
    """A judge call planned by a round (written as ``pending`` before it is sent)."""

    key: str
    judge: str
    template: str
    kind: str
    prompt_id: str
    candidates: list[str]
    messages: list[dict[str, str]]
    """The rendered chat messages, exactly as they are sent."""
    reserved_tokens: int
    reserved_usd: float
    repeat: int = 0
    round: int = -1
    """The round that planned it (-1 until it is written)."""
    reserved_calls: int = 1
    """Completions it may pay for (``max_calls`` counts them): its judge's ``samples`` without
    log-probabilities, else 1."""

    def row(self) -> dict:
        """The ``requests`` table row (without round, status and time)."""
        return {
            "key": self.key,
            "judge": self.judge,
            "template": self.template,
            "kind": self.kind,
            "prompt_id": self.prompt_id,
            "candidates": json.dumps(self.candidates),
            "repeat": self.repeat,
            "messages": json.dumps(self.messages),
            "reserved_tokens": self.reserved_tokens,
            "reserved_usd": self.reserved_usd,
            "reserved_calls": self.reserved_calls,
        }

    @classmethod
    def from_row(cls, row: dict) -> "PlannedRequest":
        return cls(
            key=row["key"],
            judge=row["judge"],
            template=row["template"],
            kind=row["kind"],
            prompt_id=row["prompt_id"],
            candidates=list(parse_candidates(row["candidates"])) if isinstance(row["candidates"], str) else list(row["candidates"]),
            messages=_load(row["messages"], []),
            reserved_tokens=row["reserved_tokens"],
            reserved_usd=row["reserved_usd"],
            repeat=row.get("repeat") or 0,
            round=row["round"] if row.get("round") is not None else -1,
            reserved_calls=row.get("reserved_calls") or 1,
        )


def judgment_row(judgment: Judgment, attempts: int, round_no: int, repeat: int, first: float | None) -> dict[str, Any]:
    """The ``judgments`` row of a finished request; secrets in the environment are redacted from
    every free-text field (read at most once per row)."""
    secrets = lazy_secrets()
    return {
        "key": judgment.key,
        "judge": judgment.judge,
        "template": judgment.template,
        "kind": judgment.kind,
        "prompt_id": judgment.prompt_id,
        "candidates": json.dumps(judgment.candidates),
        "repeat": repeat,
        "status": judgment.status,
        "probs": json.dumps(judgment.probs),
        "p_first": first,
        "method": judgment.method,
        "capped": json.dumps(judgment.capped),
        "unresolved": json.dumps(judgment.unresolved),
        "top_logprobs": json.dumps(redact_json(judgment.top_logprobs, values=secrets)),
        "text": redact(judgment.text, values=secrets),
        "raw": json.dumps(redact_json(judgment.raw, values=secrets)) if judgment.raw is not None else None,
        "prompt_tokens": judgment.prompt_tokens,
        "completion_tokens": judgment.completion_tokens,
        "cost_usd": judgment.cost_usd,
        "latency_s": judgment.latency_s,
        "attempts": attempts,
        "error": redact(judgment.error, values=secrets),
        "error_type": judgment.error_type,
        "note": redact(judgment.note, values=secrets),
        "round": round_no,
        "created_at": time.time(),
        "cached": int(judgment.cached),
        "samples": judgment.samples,
        "completions": judgment.completions,
        "stated": judgment.stated,
    }
