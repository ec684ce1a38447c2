"""What planning knows of the candidate models' answers: which exist, which could not be
generated (no judge is asked about those), what an answer not yet written may make a judge
request cost, and what generating it may cost — both reserved before the round is written, as
judge calls are (:mod:`orchestrator.run.budget`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..records.candidate_models import GenerationSettings
from ..records.dataset import Dataset
from ..records.templates import MESSAGE_OVERHEAD_TOKENS
from ..store import PlannedRequest
from .settings import answer_messages

__all__ = ["BYTES_PER_TOKEN_BOUND", "AnswerPlanning"]

BYTES_PER_TOKEN_BOUND = 8
"""Bytes a generated token is assumed to take at most, to reserve a judge request before the
answer it shows exists (a judge's prompt is reserved one token per byte). An answer that turns out
longer than its reservation is not judged: the request fails with error type ``budget``."""


@dataclass
class AnswerPlanning:
    """The run's candidate models as planning sees them."""

    dataset: Dataset
    settings: dict[str, GenerationSettings]
    planned: set[tuple[str, str]] = field(default_factory=set)
    """Answers some round has reserved already (stored rows of the ``answers`` table)."""
    failed: dict[tuple[str, str], str] = field(default_factory=dict)
    """Answers that could not be generated, with why (the pipeline's own record of them)."""
    failure_rounds: dict[tuple[str, str], int] = field(default_factory=dict)
    """The same answers, each with the round that first needed it (what a comparison reads)."""
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Candidate → USD per (prompt, completion) token."""

    def placeholder(self, candidate: str) -> str:
        """What stands for an answer not yet written when a request is reserved: as many bytes
        as its longest answer may take."""
        return "x" * (BYTES_PER_TOKEN_BOUND * self.settings[candidate].max_tokens)

    def unanswerable(self, prompt_id: str, candidates: tuple[str, ...] | list[str]) -> bool:
        """Whether a request shows an answer that could not be generated."""
        return any((prompt_id, c) in self.failed for c in candidates)

    def _new(self, rows: list[PlannedRequest], seen: set[tuple[str, str]]) -> list[dict]:
        out = []
        for row in rows:
            for candidate in row.candidates:
                key = (row.prompt_id, candidate)
                if candidate not in self.settings or key in self.planned or key in seen or not self.dataset.pending(*key):
                    continue
                settings = self.settings[candidate]
                messages = answer_messages(self.dataset.prompts[row.prompt_id], settings)
                prompt = sum(len(m["content"].encode()) + MESSAGE_OVERHEAD_TOKENS for m in messages)
                price = self.prices.get(candidate, (0.0, 0.0))
                out.append(
                    {
                        "prompt_id": row.prompt_id,
                        "candidate": candidate,
                        "reserved_tokens": prompt + settings.max_tokens,
                        "reserved_usd": prompt * price[0] + settings.max_tokens * price[1],
                        "settings": settings.model_dump_json(),
                    }
                )
                seen.add(key)
        return out

    def reservation(self, seen: set[tuple[str, str]]) -> Callable[[list[PlannedRequest]], tuple[int, float]]:
        """``unit → (tokens, USD)`` the answers a planned unit needs first may cost, each answer
        counted once over the units asked in turn (``seen``: those counted already)."""

        def of(unit: list[PlannedRequest]) -> tuple[int, float]:
            new = self._new(unit, seen)
            return sum(a["reserved_tokens"] for a in new), sum(a["reserved_usd"] for a in new)

        return of

    def needed(self, rows: list[PlannedRequest]) -> list[dict]:
        """The answers these requests show that no earlier round reserved, each with its worst
        case (its prompt's bytes as tokens plus ``max_tokens``, at the candidate's price), marked
        as reserved from now on."""
        return self._new(rows, self.planned)
