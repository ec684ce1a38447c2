"""One judge call and what it produced: the records the judging layer hands out and the store keeps
whole (:mod:`orchestrator.store`); the judging layer's client fills them (:mod:`orchestrator.judging.client`)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .templates import Template

__all__ = ["FAILURE_CODES", "UNASKED", "JudgeRequest", "Judgment", "request_key"]

FAILURE_CODES: dict[str, str] = {
    "rate_limit": "the provider refused the call for now (HTTP 429); retried after its Retry-After",
    "server": "the provider failed (HTTP 5xx, a failed batch line); retried",
    "timeout": "no answer in time; retried",
    "connection": "the provider could not be reached; retried",
    "bad_request": "the provider refused the request (HTTP 400, 404: a wrong model name or parameter)",
    "auth": "the provider refused the key (HTTP 401, 403)",
    "unparsed": "the answer could not be read at all (not the provider's format, probabilities that are not numbers)",
    "no_option": "the answer holds none of the template's options where they are read",
    "no_verdict": "no verdict after the template's markers",
    "thinking_unclosed": "a thinking judge's thinking block never closed (it ran out of tokens)",
    "no_verdict_after_thinking": "a thinking judge wrote no verdict after its thinking",
    "invalid": "the answer failed the checks every answer passes (another key, impossible probabilities)",
    "not_in_log": "a replayed log holds no answer to this request",
    "no_answer": "the candidate model's answer to the prompt could not be generated (no judge was asked)",
    "answer_too_long": "the candidate model's answer is longer than a judge request may show (no judge was asked)",
    "budget": "not asked: the budget ran out first",
    "other": "anything else (the message says what)",
}
"""``Judgment.error_type``: what went wrong, as code reads it (the advice a run prints is keyed by
it, :func:`orchestrator.judging.extract.failure_advice`); the message in ``error`` is for people.
A provider may use a code of its own; these are the ones the package writes."""

UNASKED = ("no_answer", "answer_too_long")
"""Failure codes of requests that asked no judge (the answer they show could not be shown)."""


class JudgeRequest(BaseModel):
    """One judge call."""

    model_config = ConfigDict(frozen=True)

    key: str
    """Deterministic idempotency key (run, judge, template digest, prompt, candidates, repeat)."""
    template: Template
    messages: list[dict[str, str]]
    """Rendered chat messages (with the prefill as the last assistant message, if any)."""
    prompt_id: str = ""
    candidates: list[str] = Field(default_factory=list)
    """Shown candidates in order (first = option A)."""
    repeat: int = 0
    """Index of a repeated run of the same item (a log judge answers with that run's judgment)."""
    samples: int | None = None
    """Completions to ask of a judge without log-probabilities (None: its profile's ``samples``);
    a PoE campaign asks one at a time and decides where the next goes (``sampling = "adaptive"``)."""

    def answer(
        self,
        probs: dict[str, float] | list[dict[str, float]],
        *,
        method: Literal["logprobs", "verdict", "samples"] = "logprobs",
        samples: int | None = None,
        **fields: Any,
    ) -> "Judgment":
        """This request's successful judgment: ``probs`` (option → probability; a list of them for a
        template that reads several positions) read by ``method`` — the judge's own probabilities
        (``logprobs``), one parsed ``verdict``, or the shares of ``samples`` sampled verdicts.
        Everything the request knows (key, template, kind, prompt, shown candidates) comes from it;
        ``fields`` add the rest (``prompt_tokens``, ``completion_tokens``, ``cost_usd``, ``text``,
        ``raw``, ``latency_s``, ``note``). The run checks it before storing it
        (:mod:`orchestrator.judging.answers`)."""
        vectors = [dict(probs)] if isinstance(probs, dict) else [dict(p) for p in probs]
        extra: dict[str, Any] = {"samples": samples, "completions": samples} if method == "samples" else {}
        if method == "verdict":
            extra["samples"] = 1
        return Judgment(**self._identity(), status="ok", probs=vectors, method=method, **{**extra, **fields})

    def failure(self, error: str, *, error_type: str = "other", retryable: bool = False, **fields: Any) -> "Judgment":
        """This request's failed judgment: ``error`` says why; ``retryable`` when asking again may
        help (rate limits, timeouts: the run retries with backoff); ``fields`` as for :meth:`answer`."""
        return Judgment(**self._identity(), status="failed", error=error, error_type=error_type, retryable=retryable, **fields)

    def _identity(self) -> dict[str, Any]:
        return dict(
            key=self.key, template=self.template.name, kind=self.template.kind, prompt_id=self.prompt_id, candidates=list(self.candidates)
        )


class Judgment(BaseModel):
    """What one judge call produced (stored whole in the run database)."""

    key: str
    """The request's idempotency key (:func:`request_key`)."""
    judge: str = ""
    """The judge's profile name (the run fills it in)."""
    template: str
    kind: str
    """``pairwise``, ``absolute``, ``reference`` or ``multi``."""
    prompt_id: str = ""
    candidates: list[str] = Field(default_factory=list)
    """Shown candidates in order (first = option A)."""
    status: Literal["ok", "failed"]
    probs: list[dict[str, float]] = Field(default_factory=list)
    """Option probabilities at each read position (one for single-verdict templates)."""
    method: Literal["logprobs", "verdict", "samples", "log", "stated"] | None = None
    """How :attr:`probs` were read: the judge's log-probabilities, one parsed ``verdict``, the
    shares of :attr:`samples` sampled verdicts, or a judgment ``log``; ``stated`` only in a fit,
    never stored: a verdict read through its judge's calibrated stated confidence
    (:mod:`orchestrator.poe.stated`)."""
    samples: int | None = None
    """How many verdicts a ``verdict`` (1) or ``samples`` judgment's shares come from."""
    completions: int | None = None
    """Paid completions behind this judgment (the ``samples`` asked of a judge without
    log-probabilities, parsed or not); None: one."""
    stated: float | None = Field(default=None, ge=0.0, le=1.0)
    """The confidence the judge stated in its verdict (0–1; templates with a ``confidence_marker``).
    Never read as a probability as such: the fit calibrates it (:mod:`orchestrator.poe.stated`)."""
    capped: list[list[str]] = Field(default_factory=list)
    unresolved: list[list[str]] = Field(default_factory=list)
    top_logprobs: list[list[tuple[str, float]]] = Field(default_factory=list)
    """The top-k list at every generated position."""
    text: str = ""
    raw: dict[str, Any] | None = None
    """The raw response (or responses, for sampled verdicts)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    """Tokens the provider counted; ``completion_tokens`` includes reasoning tokens."""
    cost_usd: float = 0.0
    """Price of the request (the profile's prices, else litellm's cost table; 0 for a local judge)."""
    latency_s: float = 0.0
    error: str | None = None
    error_type: str | None = None
    """What went wrong, as a code (:data:`FAILURE_CODES`)."""
    retryable: bool = False
    retry_after_s: float | None = None
    note: str | None = None
    cached: bool = False
    """Answered from the judgment cache (:mod:`orchestrator.judging.cache`): nothing was paid."""


def request_key(*parts: str) -> str:
    """Deterministic idempotency key of a request (sha256 of its defining parts).

    Collision-free by construction: the parts are joined with a unit separator, and when a part
    contains that separator itself they are encoded as a JSON list instead (names with control
    characters are refused at every boundary, so this only guards the key itself)."""
    if any("\x1f" in part for part in parts):
        return hashlib.sha256(("\x1e" + json.dumps(list(parts))).encode()).hexdigest()[:32]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
