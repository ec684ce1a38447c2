"""Retries and backoff for judge calls, in one place: the run engine and ``record`` both use it.

A call is retried while its failure is retryable (rate limits, 5xx, timeouts, connection errors):
exponential backoff with jitter (tenacity), the server's ``Retry-After`` honoured when it is a
finite number, every wait capped at ``backoff_max_s``, at most ``max_attempts`` tries. A judge
that raises is a failed judgment (``other``), never a crash. Concurrency (a semaphore) stays with
the caller, which knows what else shares the limit.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any, Callable

from tenacity import AsyncRetrying, retry_if_result, stop_after_attempt, wait_exponential_jitter

from .client import Judge, JudgeRequest, Judgment, error_text

__all__ = ["RetryPolicy", "call_with_retries", "retrier"]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a failed call is tried again."""

    max_attempts: int = 6
    """Tries per request, the first included."""
    backoff_initial_s: float = 1.0
    """First backoff (doubling, with jitter)."""
    backoff_max_s: float = 60.0
    """Cap on every wait, ``Retry-After`` included."""

    def __post_init__(self) -> None:
        if not (1 <= self.max_attempts <= 1000):
            raise ValueError(f"max_attempts must be between 1 and 1000 (got {self.max_attempts})")
        for name in ("backoff_initial_s", "backoff_max_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0 (got {value})")


def retrier(
    policy: RetryPolicy, *, sleep: Callable[[float], Any], retry: Callable[[Any], bool], retry_after: Callable[[Any], float | None]
) -> AsyncRetrying:
    """tenacity's retrying loop for a call that returns its failure (never raises): at most
    ``policy.max_attempts`` tries while ``retry(outcome)``, each wait the outcome's
    ``retry_after(outcome)`` when finite, else exponential backoff with jitter, capped at
    ``backoff_max_s``; when the tries run out, the last outcome is the answer."""
    backoff = wait_exponential_jitter(multiplier=policy.backoff_initial_s, max=policy.backoff_max_s)

    def wait(state) -> float:
        outcome = state.outcome.result() if state.outcome and not state.outcome.failed else None
        said = retry_after(outcome) if outcome is not None else None
        if said is not None and math.isfinite(said):
            return min(max(said, 0.0), policy.backoff_max_s)
        return min(backoff(state), policy.backoff_max_s)

    return AsyncRetrying(
        stop=stop_after_attempt(policy.max_attempts),
        wait=wait,
        retry=retry_if_result(retry),
        retry_error_callback=_last_outcome,
        sleep=sleep,
    )


async def call_with_retries(
    judge: Judge,
    request: JudgeRequest,
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Any] = asyncio.sleep,
    stop: Callable[[], bool] = lambda: False,
) -> tuple[Judgment, int]:
    """Ask ``judge`` once, and again while the failure is retryable; ``(judgment, attempts)``.

    ``stop()`` true (a run draining after Ctrl-C) makes no new attempt: the last failure is
    returned and the caller decides what it means.
    """
    attempts = 0
    last: Judgment | None = None

    async def once() -> Judgment:
        nonlocal attempts, last
        if last is not None and stop():  # stopped while waiting to retry: nothing new is sent
            return last
        attempts += 1
        try:
            last = await judge.judge(request)
            return last
        except Exception as exc:  # an injected judge that raises: a failed judgment, not a crash
            last = Judgment(
                key=request.key,
                judge=getattr(judge, "name", "?"),
                template=request.template.name,
                kind=request.template.kind,
                prompt_id=request.prompt_id,
                candidates=list(request.candidates),
                status="failed",
                error=error_text(exc),
                error_type="other",
            )
            return last

    retrying = retrier(
        policy, sleep=sleep, retry=lambda j: j.status == "failed" and j.retryable and not stop(), retry_after=lambda j: j.retry_after_s
    )
    judgment: Judgment = await retrying(once)
    return judgment, attempts


def _last_outcome(state: Any) -> Any:
    """When the attempts run out, the last failure is the answer (not an exception)."""
    return state.outcome.result()
