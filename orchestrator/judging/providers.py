"""Judges from outside the package: a judge profile may say
``provider = "package.module:Class"``; the class implements the :class:`~orchestrator.judging.client.Judge`
protocol — a ``name`` and ``async def judge(self, request: JudgeRequest) -> Judgment`` — and is built as
``Class(profile)``. It then answers a run's requests like any litellm judge: behind the judgment
cache, within the budget, its judgments committed as they arrive (docs/extending.md)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from ..errors import OrchestratorError
from ..records.judgments import JudgeRequest, Judgment
from ..records.named_classes import named_class
from .profiles import JudgeProfile

__all__ = ["ProviderJudge", "load_provider", "provider_judge"]


def load_provider(spec: str, *, judge: str = "?") -> type:
    """The judge class a profile's ``provider`` names.

    Raises:
        OrchestratorError: one line: not ``module:Class``, a module that does not import, no such
            class, or a class without an ``async def judge(request)``."""
    cls = named_class(spec, f"judge {judge!r}: provider")
    method = getattr(cls, "judge", None)
    if method is None or not inspect.iscoroutinefunction(method):
        raise OrchestratorError(f"judge {judge!r}: provider {spec!r} has no 'async def judge(self, request)' (the Judge protocol)")
    return cls


def provider_judge(profile: JudgeProfile) -> "ProviderJudge":
    """``Class(profile)`` for a profile with a ``provider``, its ``name`` the profile's, behind
    :class:`ProviderJudge`.

    Raises:
        OrchestratorError: one line: the class cannot be loaded, or building it raised."""
    assert profile.provider is not None
    cls = load_provider(profile.provider, judge=profile.name)
    try:
        judge = cls(profile)
    except Exception as exc:  # the provider's own constructor: its failure is one line, not a crash
        raise OrchestratorError(
            f"judge {profile.name!r}: provider {profile.provider!r} could not be built ({type(exc).__name__}: {exc})"
        ) from None
    if getattr(judge, "name", None) != profile.name:
        try:
            judge.name = profile.name
        except AttributeError:
            raise OrchestratorError(f"judge {profile.name!r}: provider {profile.provider!r} must name itself {profile.name!r}") from None
    return ProviderJudge(judge, profile.timeout_s)


class ProviderJudge:
    """A provider's judge as the run asks it: an answer that does not come within the profile's
    ``timeout_s`` is a retryable ``timeout`` failure (a provider that hangs cannot hang the run), and
    whatever it returns that is not a :class:`Judgment` is a failure that says what came back."""

    def __init__(self, inner: Any, timeout_s: float):
        self.inner = inner
        self.name = inner.name
        self.timeout_s = timeout_s

    async def judge(self, request: JudgeRequest) -> Judgment:
        try:
            answer = await asyncio.wait_for(self.inner.judge(request), self.timeout_s)
        except asyncio.TimeoutError:
            return request.failure(
                f"the provider did not answer within timeout_s = {self.timeout_s:g} s", error_type="timeout", retryable=True
            )
        if not isinstance(answer, Judgment):
            return request.failure(
                f"the provider returned {type(answer).__name__} ({str(answer)[:80]!r}), not a Judgment (write it with request.answer)",
                error_type="invalid",
            )
        return answer
