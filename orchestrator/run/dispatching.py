"""Asking one round's requests: each through its judge under the run-wide concurrency limit (with
retries and backoff, :mod:`..judging.dispatch`), or — for a judge whose profile says
``batch = true`` — all of that judge's requests as one provider batch (:mod:`.batching`). Every
answer is handed to ``commit`` as it arrives; a drain (:mod:`.signals`) stops new calls and retries."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from ..judging.answers import check_answer
from ..judging.batch import BatchClient
from ..judging.cache import CachingJudge
from ..judging.client import Judge, JudgeRequest, Judgment, LiteLLMJudge
from ..judging.dispatch import RetryPolicy, call_with_retries
from ..records.config import RunConfig
from ..records.templates import Template
from ..store import PlannedRequest, RunStore
from .batching import BatchRunner
from .signals import Drain

__all__ = ["RoundDispatcher"]

Commit = Callable[[PlannedRequest, Judgment, int, int], None]
"""``commit(row, judgment, attempts, round_no)``: store one finished request."""


@dataclass(eq=False)
class RoundDispatcher:
    """Sends rounds of planned requests to the injected judges (``name → Judge``)."""

    store: RunStore
    """The run file: judgments go in through :attr:`commit`, the round's end here."""
    config: RunConfig
    judges: dict[str, Judge]
    """Profile name → the injected judge (litellm, a replayed log, the cache, a test server)."""
    templates: dict[str, Template]
    """Role → template (the engine's); requests name them."""
    drain: Drain
    """The run's interrupt state: after the first signal no new call and no retry, and waits end early."""
    commit: Commit
    sleep: Callable[[float], Any]
    prepare: Callable[[PlannedRequest], Awaitable[PlannedRequest | Judgment | None]] | None = None
    """Makes a request ready to send (the candidate models' answers it shows, generated and in
    place): the request, a failed judgment to store instead of asking, or None to leave it
    pending (a drain); None: every request is ready as planned."""
    in_flight_calls: int = 0
    """Calls sent and not yet answered (a drain's event reports them)."""

    def __post_init__(self) -> None:
        self._templates_by_name = {t.name: t for t in self.templates.values()}

    async def wait(self, seconds: float) -> None:
        await self.drain.wait(self.sleep, seconds)

    def request(self, row: PlannedRequest) -> JudgeRequest:
        return JudgeRequest(
            key=row.key,
            template=self._templates_by_name[row.template],
            messages=row.messages,
            prompt_id=row.prompt_id,
            candidates=row.candidates,
            repeat=row.repeat,
            samples=row.reserved_calls,
        )

    def store_answer(self, row: PlannedRequest, judgment: Judgment, attempts: int, round_no: int) -> None:
        """Commit one answer, from whatever judge, as the checks allow it (:func:`check_answer`)."""
        outer = self.judges.get(row.judge)
        from_log = getattr(outer.inner if isinstance(outer, CachingJudge) else outer, "answers_from_log", False)
        self.commit(row, check_answer(self.request(row), judgment, judge=row.judge, from_log=from_log), attempts, round_no)

    def quoted(self, unit: list[PlannedRequest]) -> list[PlannedRequest]:
        """``unit`` with each request's reservation raised to what its judge says answering it will
        cost, where the judge knows before it is asked (a judgment log: its ``quote``), so no answer
        is counted past the budget."""
        out = []
        for row in unit:
            quote = getattr(self.judges.get(row.judge), "quote", None)
            said = quote(self.request(row)) if quote is not None else None
            if said is not None:
                calls, tokens, usd = said
                row = dataclasses.replace(
                    row,
                    reserved_calls=max(row.reserved_calls, calls),
                    reserved_tokens=max(row.reserved_tokens, tokens),
                    reserved_usd=max(row.reserved_usd, usd),
                )
            out.append(row)
        return out

    def batched(self, judge: str) -> LiteLLMJudge | None:
        """The litellm judge behind ``judge`` (behind the cache, if any) when its profile says
        ``batch = true``, else None."""
        outer = self.judges[judge]
        inner = outer.inner if isinstance(outer, CachingJudge) else outer
        return inner if isinstance(inner, LiteLLMJudge) and inner.profile.batch else None

    def _batch_runner(self, judge: str, round_no: int) -> BatchRunner:
        outer, inner = self.judges[judge], self.batched(judge)
        assert inner is not None
        return BatchRunner(
            self.store,
            judge,
            BatchClient(inner),
            request=self.request,
            commit=lambda row, judgment, attempts: self.store_answer(row, judgment, attempts, round_no),
            sleep=self.wait,
            draining=lambda: self.drain.draining,
            max_attempts=self.config.dispatch.max_attempts,
            cache=outer if outer is not inner else None,
        )

    async def _call(self, request: JudgeRequest, judge: Judge) -> tuple[Judgment, int]:
        d = self.config.dispatch
        policy = RetryPolicy(d.max_attempts, d.backoff_initial_s, d.backoff_max_s)
        # draining: no new attempt (the request stays pending and is sent again on resume)
        return await call_with_retries(judge, request, policy, sleep=self.wait, stop=lambda: self.drain.draining)

    async def _ready(self, row: PlannedRequest, round_no: int) -> PlannedRequest | None:
        """The request to send (see :attr:`prepare`); None when there is nothing to send: a
        failure stored instead, or left pending by a drain."""
        if self.prepare is None:
            return row
        ready = await self.prepare(row)
        if isinstance(ready, Judgment):
            self.store_answer(row, ready, 0, round_no)
            return None
        return ready

    async def dispatch(
        self, rows: list[PlannedRequest], round_no: int, semaphore: asyncio.Semaphore, round_info: Callable[[], dict]
    ) -> None:
        """Ask one round's requests, committing each as it arrives, then record the round's end
        (``round_info()``: the spend to store with it) unless a drain cut the round short."""
        started = time.perf_counter()
        batched: dict[str, list[PlannedRequest]] = {}
        live: list[PlannedRequest] = []
        for row in rows:
            (batched.setdefault(row.judge, []) if self.batched(row.judge) is not None else live).append(row)

        async def one(row: PlannedRequest) -> None:
            ready = await self._ready(row, round_no)
            if ready is None:
                return
            row = ready
            request = self.request(row)
            async with semaphore:
                if self.drain.draining:  # not sent yet: leave it pending for the resume
                    return
                self.in_flight_calls += 1
                try:
                    judgment, attempts = await self._call(request, self.judges[row.judge])
                finally:
                    self.in_flight_calls -= 1
            if self.drain.draining and judgment.status == "failed" and judgment.retryable:
                return  # a retry would have followed: pending, sent again on resume
            self.store_answer(row, judgment, attempts, round_no)

        async def batch(judge: str, judge_rows: list[PlannedRequest]) -> None:
            ready = await asyncio.gather(*(self._ready(r, round_no) for r in judge_rows))
            await self._batch_runner(judge, round_no).run([r for r in ready if r is not None], round_no)

        # Grouped by prompt: consecutive requests then share the prompt's prefix, which a local
        # llama.cpp judge reuses from its cache (much faster on CPU: benchmarks/RESULTS.md).
        await asyncio.gather(
            *(one(r) for r in sorted(live, key=lambda r: (r.prompt_id, r.key))),
            *(batch(j, judge_rows) for j, judge_rows in batched.items()),
        )
        if not self.drain.draining:
            self.store.finish_round(round_no, {**round_info(), "dispatch_s": time.perf_counter() - started})
