"""Batch mode: a round's requests to a ``batch = true`` judge go out as one
provider batch, exactly once, whatever crashes in between.

The protocol, against the run file (:mod:`orchestrator.store.batches`):

1. the batch row (our id, the request keys) is committed before anything is sent;
2. the batch is created at the provider tagged with our id; its provider id is committed;
   a crash between the two is healed on resume by finding the batch by its tag (never by
   submitting again);
3. the batch is polled with backoff (``batch_poll_s`` doubling to ``batch_poll_max_s``);
4. its results are committed one judgment at a time; a resume re-downloads them and commits only
   what is still pending;
5. requests without a result (a failed line, an expired, cancelled or failed batch) go into the
   next batch, up to ``dispatch.max_attempts`` times, then are committed as failures.

A drain (Ctrl-C) stops polling and leaves the batch open: the provider keeps working on it and the
resume collects its answers. Cache hits are committed before the batch is built.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from typing import Any, Callable

from ..errors import OrchestratorError
from ..failpoints import failpoint
from ..judging.batch import TERMINAL, BatchClient
from ..judging.client import JudgeRequest, Judgment, error_text
from ..store import PlannedRequest, RunStore
from ..store.batches import BatchRecord, open_batches, record_batch, update_batch

__all__ = ["BatchRunner", "PROVIDER_TRIES"]

PROVIDER_TRIES = 5
"""Tries of each batch-API call (list, status, download) before the run stops, resumable."""


class BatchRunner:
    """Batches of one judge. ``commit(row, judgment, attempts)`` stores a finished request (the
    engine's own commit); ``request(row)`` makes the request a row stands for."""

    def __init__(
        self,
        store: RunStore,
        judge: str,
        client: BatchClient,
        *,
        request: Callable[[PlannedRequest], JudgeRequest],
        commit: Callable[[PlannedRequest, Judgment, int], None],
        sleep: Callable[[float], Any],
        draining: Callable[[], bool],
        max_attempts: int,
        cache: Any = None,
    ):
        self.store, self.judge, self.client = store, judge, client
        self.request, self.commit, self.sleep, self.draining = request, commit, sleep, draining
        self.max_attempts = max_attempts
        self.cache = cache
        self.tries: Counter[str] = Counter()

    async def run(self, rows: list[PlannedRequest], round_no: int) -> None:
        pending = {r.key: r for r in rows}
        if self.cache is not None:
            for key, row in list(pending.items()):
                hit = self.cache.lookup(self.request(row))
                if hit is not None:
                    self.commit(row, hit, 1)
                    del pending[key]
        for batch in open_batches(self.store, self.judge):  # re-attach before anything new is sent
            if self.draining():
                return
            if not set(batch.keys) & set(pending):
                continue
            await self._finish(batch, pending)
        while pending and not self.draining():
            keys = sorted(pending)
            attempt = max(self.tries[k] for k in keys)
            batch_id = "b" + hashlib.sha256("\x1f".join([self.judge, str(round_no), str(attempt), *keys]).encode()).hexdigest()[:24]
            batch = record_batch(self.store, batch_id, self.judge, round_no, keys)
            failpoint("batch_recorded")
            await self._finish(batch, pending)

    async def _provider(self, call: Callable[..., Any], *args: Any, recover: Callable[[], Any] | None = None) -> Any:
        """A batch-API call, tried again with backoff when it raises (a 5xx, a dropped connection);
        ``recover()`` runs before each new try and may answer instead (a created batch found by its
        tag after its answer was lost).

        Raises:
            OrchestratorError: it kept failing; the batch stays in the run file, and ``resume`` goes on
                from it (finding a batch that did arrive).
        """
        wait = self.client.profile.batch_poll_s
        for attempt in range(1, PROVIDER_TRIES + 1):
            try:
                return await call(*args)
            except Exception as exc:
                if attempt == PROVIDER_TRIES:
                    raise OrchestratorError(
                        f"judge {self.judge!r}: the batch API failed {attempt} times ({error_text(exc)}); "
                        "the batch is kept in the run file — `orchestrator resume` goes on from it"
                    ) from None
                await self.sleep(wait)
                wait = min(wait * 2, self.client.profile.batch_poll_max_s)
                if recover is not None:
                    found = await recover()
                    if found is not None:
                        return found
        raise AssertionError("unreachable")

    async def _submit(self, batch: BatchRecord, pending: dict[str, PlannedRequest]) -> str:
        """Create the batch; after a failed attempt, look for it by its tag before trying again (the
        provider may have accepted it and only the answer was lost), so it is never created twice."""
        requests = [self.request(pending[k]) for k in batch.keys if k in pending]
        return await self._provider(self.client.submit, batch.id, requests, recover=lambda: self._provider(self.client.find, batch.id))

    async def _finish(self, batch: BatchRecord, pending: dict[str, PlannedRequest]) -> None:
        """Submit (or find) the batch, wait for it, commit its answers; what it did not answer
        stays pending (or fails for good after ``max_attempts`` batches)."""
        started = time.perf_counter()
        provider_id = batch.provider_id
        if provider_id is None:
            provider_id = await self._provider(self.client.find, batch.id)  # created just before a crash?
            if provider_id is None:
                provider_id = await self._submit(batch, pending)
            failpoint("batch_created")
            update_batch(self.store, batch.id, status="submitted", provider_id=provider_id)
        wait = self.client.profile.batch_poll_s
        while True:
            info = await self._provider(self.client.status, provider_id)
            if info.status in TERMINAL:
                break
            if self.draining():
                return  # the provider goes on; the resume collects the answers
            await self.sleep(wait)
            failpoint("batch_poll")
            wait = min(wait * 2, self.client.profile.batch_poll_max_s)
        results = await self._provider(self.client.results, info)
        latency = time.perf_counter() - started
        for key in batch.keys:
            row = pending.get(key)
            if row is None:
                continue  # committed before a crash, or answered from the cache
            outcome = results.get(key)
            self.tries[key] += 1
            if outcome is None:
                if self.tries[key] < self.max_attempts:
                    continue  # into the next batch
                reason = info.errors or f"the batch ended {info.status} without answering it"
                outcome = f"{info.status}: {reason}"
            judgment = await self.client.judgment(self.request(row), outcome, latency)
            if judgment.status == "failed" and judgment.retryable and self.tries[key] < self.max_attempts:
                continue
            self.commit(row, judgment, self.tries[key])
            if self.cache is not None and judgment.status == "ok":
                self.cache.remember(self.request(row), judgment)
            del pending[key]
            failpoint("batch_commit")
        update_batch(self.store, batch.id, status=info.status, error=info.errors or None)
