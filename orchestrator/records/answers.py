"""What a candidate model is asked and what it answers: the records generation (:mod:`orchestrator.generation`)
and the run file (:mod:`orchestrator.store.answers`) share."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .candidate_models import GenerationSettings

__all__ = ["AnswerRequest", "GeneratedAnswer"]


class AnswerRequest(BaseModel):
    """One answer to generate: a candidate's to one prompt, as it will be asked."""

    model_config = ConfigDict(frozen=True)

    prompt_id: str
    candidate: str
    messages: list[dict[str, str]]
    """The conversation the model answers (its system message, then the prompt)."""
    settings: GenerationSettings


class GeneratedAnswer(BaseModel):
    """A generation's outcome, with its provenance. A failed one has no text and says why; a
    ``truncated`` one stopped at ``max_tokens`` and is judged as it is."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    status: Literal["ok", "failed"] = "ok"
    text: str = ""
    finish_reason: str | None = None
    truncated: bool = False
    prompt_tokens: int = Field(default=0, ge=0, le=10**9)
    completion_tokens: int = Field(default=0, ge=0, le=10**9)
    cost_usd: float = Field(default=0.0, ge=0.0, le=1e6)
    latency_s: float = Field(default=0.0, ge=0.0)
    error: str | None = None
    error_type: str | None = None
    retryable: bool = False
    """A failure a retry could cure (a rate limit, a timeout, a dropped connection)."""
    retry_after_s: float | None = None
    """The server's ``Retry-After``, seconds, when it sent one."""
    cached: bool = False
    """Answered from the generation cache: nothing paid."""

    @field_validator("latency_s", "cost_usd")
    @classmethod
    def _finite(cls, value: float) -> float:
        return value if math.isfinite(value) else 0.0

    @classmethod
    def failure(cls, error: str, error_type: str, *, retryable: bool = False, **fields) -> "GeneratedAnswer":
        return cls(status="failed", error=error, error_type=error_type, retryable=retryable, **fields)
