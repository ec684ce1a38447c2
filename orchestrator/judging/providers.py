"""Judges from outside the package: a judge profile may say
``provider = "package.module:Class"``; the class implements the :class:`~orchestrator.judging.client.Judge`
protocol — a ``name`` and ``async def judge(self, request: JudgeRequest) -> Judgment`` — and is built as
``Class(profile)``. It then answers a run's requests like any litellm judge: behind the judgment
cache, within the budget, its judgments committed as they arrive (docs/extending.md)."""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import OrchestratorError
from ..records.named_classes import CLASS_SPEC, named_class
from .profiles import JudgeProfile

__all__ = ["PROVIDER_PATTERN", "load_provider", "provider_judge"]

PROVIDER_PATTERN = CLASS_SPEC
"""``package.module:Class``."""


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


def provider_judge(profile: JudgeProfile) -> Any:
    """``Class(profile)`` for a profile with a ``provider``; its ``name`` is the profile's."""
    assert profile.provider is not None
    judge = load_provider(profile.provider, judge=profile.name)(profile)
    if getattr(judge, "name", None) != profile.name:
        try:
            judge.name = profile.name
        except AttributeError:
            raise OrchestratorError(f"judge {profile.name!r}: provider {profile.provider!r} must name itself {profile.name!r}") from None
    return judge
