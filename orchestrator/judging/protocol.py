"""What a new judge provider implements: the :class:`Judge` protocol."""

from __future__ import annotations

from typing import Protocol

from ..records.judgments import JudgeRequest, Judgment

__all__ = ["Judge"]


class Judge(Protocol):
    """Anything that answers judge requests: litellm's providers, a replayed log, the cache, a
    provider of your own. A run asks ``await judge.judge(request)`` for every request; the answer is
    a :class:`~orchestrator.records.judgments.Judgment`, most simply written with the request's own
    helpers — ``request.answer(probs, method=…)`` (option → probability at each read position, and
    how they were read: ``logprobs``, ``verdict``, ``samples`` with ``samples = k``) or
    ``request.failure(error, error_type=…, retryable=…)`` (a failed call is data, never an
    exception) — so what the request knows comes from the request. Tokens and ``cost_usd`` are what
    the budget counts. Every answer passes :func:`~orchestrator.judging.answers.check_answer` before
    it is stored. Example, a judge that prefers the longer answer (docs/extending.md)::

        class Longer:
            def __init__(self, profile):
                self.name = profile.name

            async def judge(self, request):
                a, b = (len(m["content"]) for m in request.messages[-2:])  # (your own reading of the prompt)
                return request.answer({"A": 0.8, "B": 0.2} if a >= b else {"A": 0.2, "B": 0.8})

    A profile names it: ``provider = "my_package.judges:Longer"`` (:mod:`.providers`)."""

    name: str

    async def judge(self, request: JudgeRequest) -> Judgment: ...
