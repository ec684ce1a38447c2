"""What a provider sends back, believed only within bounds: usage, cost, ``Retry-After``, and
its exceptions sorted into retryable and permanent failures."""

from __future__ import annotations

import asyncio
import math
from typing import Any

__all__ = ["MAX_TOKENS_PER_CALL", "MAX_USD_PER_CALL", "classify_error", "error_text", "parse_retry_after", "sane_cost", "sane_usage"]


MAX_TOKENS_PER_CALL = 10_000_000
"""Usage figures above this (or negative, or not numbers) are not believed: clamped and noted."""
MAX_USD_PER_CALL = 1_000.0


def parse_retry_after(value: Any) -> float | None:
    """Seconds from a ``Retry-After`` header: a finite number ≥ 0, else None (``nan``, ``inf``, an
    HTTP date or garbage fall back to the backoff policy, whose cap then applies)."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def sane_usage(usage: Any) -> tuple[int, int, str | None]:
    """``(prompt_tokens, completion_tokens, note)`` from a provider's usage object: each a whole
    number in ``[0, MAX_TOKENS_PER_CALL]``; anything else is clamped and the note says so."""
    usage = usage if isinstance(usage, dict) else {}
    out, bad = [], []
    for field in ("prompt_tokens", "completion_tokens"):
        raw = usage.get(field)
        try:
            value = float(raw) if raw is not None else 0.0
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value) or value < 0 or value > MAX_TOKENS_PER_CALL:
            bad.append(f"{field}={raw!r}")
            value = 0.0 if not math.isfinite(value) or value < 0 else float(MAX_TOKENS_PER_CALL)
        out.append(int(value))
    return out[0], out[1], (f"implausible usage from the provider ({', '.join(bad)}) clamped" if bad else None)


def sane_cost(cost: Any) -> tuple[float, str | None]:
    """A call's USD cost: finite and in ``[0, MAX_USD_PER_CALL]``, else clamped with a note."""
    try:
        value = float(cost)
    except (TypeError, ValueError):
        value = math.nan
    if math.isfinite(value) and 0 <= value <= MAX_USD_PER_CALL:
        return value, None
    clamped = MAX_USD_PER_CALL if value > MAX_USD_PER_CALL else 0.0
    return clamped, f"implausible cost {cost!r} clamped to {clamped}"


def error_text(exc: BaseException, limit: int = 500) -> str:
    """``Type: message`` of a failed call on one line, without the traceback text some provider
    libraries put into their messages."""
    message = str(exc).split("Traceback (most recent call last)")[0]
    return " ".join(f"{type(exc).__name__}: {message}".split())[:limit]


def classify_error(exc: BaseException) -> tuple[str, bool, float | None]:
    """(error type, retryable, Retry-After seconds) for an exception raised by litellm."""
    from litellm import exceptions as errors  # where every litellm release keeps them all

    retry_after = None
    # litellm keeps the provider's headers on the exception; its .response may be a stub
    headers = getattr(exc, "litellm_response_headers", None) or getattr(getattr(exc, "response", None), "headers", None) or {}
    retry_after = parse_retry_after(headers.get("retry-after"))
    if isinstance(exc, errors.RateLimitError):
        return "rate_limit", True, retry_after
    if isinstance(exc, (errors.Timeout, asyncio.TimeoutError)):
        return "timeout", True, None
    if isinstance(exc, errors.APIConnectionError):
        return "connection", True, None
    if isinstance(exc, (errors.AuthenticationError, errors.PermissionDeniedError)):
        return "auth", False, None
    if isinstance(exc, (errors.BadRequestError, errors.NotFoundError)):
        return "bad_request", False, None
    if isinstance(exc, (errors.InternalServerError, errors.ServiceUnavailableError, errors.APIError)):
        return "server", True, retry_after
    return "other", False, None
