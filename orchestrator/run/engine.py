"""The run engine: rounds, budgets, dispatch, commits, signals, stopping and resume — the same for
every campaign; what to ask next comes from the campaign's planner (:mod:`.planners`), and the
judges are injected (``name → Judge``: litellm, the embedded llama.cpp judge, a test server, a
replayed log), so one engine serves every run (DESIGN.md "Data flow of one run").

Determinism: a planner plans from the committed log alone (PoE: a cold Laplace fit per group on
its judgments sorted by round and key), and round ``r`` draws its tie-breaks from a generator seeded
with ``(seed, r)``, so a resumed run plans exactly what the uninterrupted run would have planned.

Budgets: before a round is written, each request reserves its worst case (:mod:`.budget`); only
units whose reservation fits are planned, so calls, tokens and USD never exceed the limits.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sqlite3
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..errors import RunFailed
from ..judging.client import Judge, JudgeProfile, Judgment
from ..poe import threads_for
from ..records.config import RunConfig
from ..records.judgments import UNASKED
from ..records.templates import Template
from ..store import PlannedRequest, RunStore, Spend
from .budget import fit_budget, judge_prices
from .dispatching import RoundDispatcher
from .events import RunEvent
from .health import JudgeHealth
from .planners import Plan, planner_for
from .requests import PlanContext
from .signals import Drain, cancel_all
from .stops import StopReason, kind_of

if TYPE_CHECKING:
    from ..generation.answering import Answering

__all__ = ["FAIL_FAST_AFTER", "RunEngine", "RunEvent"]

FAIL_FAST_AFTER = 8
"""A run whose first this many finished requests all failed permanently stops (``failed``)."""


class RunEngine:
    """Runs (or resumes) one run to its end. ``judges`` maps profile name → :class:`Judge`."""

    def __init__(
        self,
        store: RunStore,
        config: RunConfig,
        judges: dict[str, Judge],
        profiles: dict[str, JudgeProfile],
        templates: dict[str, Template],
        *,
        local: set[str] | None = None,
        progress: Callable[[RunEvent], None] | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
        answerable: Callable[..., bool] | None = None,
        observe: Callable[[Spend, Any], None] | None = None,
        pilot: int | None = None,
        known_pairs: Callable[[], Iterable[tuple[str, tuple[str, ...]]]] | None = None,
        people: JudgeProfile | None = None,
        concurrency: int | None = None,
        answering: "Answering | None" = None,
    ):
        """``answerable``: which requests a judge can answer at all, ``known_pairs``: the pairs
        they can answer where that is a known set (see :class:`PlanContext`);
        ``observe(spend, planner)``: called whenever the planner has fitted the committed log,
        before it plans the next round (replay draws its learning curves from it); ``pilot``: plan
        no round once this many calls are planned or spent — the run stops ``interrupted`` (resume
        goes on) with its forecast, so a user sees what the whole run would cost first; ``people``:
        the ``judging.people`` profile, asked items to label after each planned round
        (:mod:`orchestrator.people.asking`); ``concurrency``: calls in flight at once instead of the config's
        (1 for embedded judges only: one llama.cpp slot answers in arrival order, and a fixed order
        makes a run repeat exactly); ``answering``: the candidate models' settings, generators
        and cache (:class:`~orchestrator.generation.answering.Answering`), needed when the config
        names candidates that are models."""
        self.store = store
        self.concurrency = concurrency or config.dispatch.concurrency
        self.config = config
        self.judges = judges
        self.templates = templates
        self.progress = progress
        self.ctx = PlanContext(
            run_name=store.run["name"],
            config=config,
            dataset=store.dataset(),
            profiles=profiles,
            templates=templates,
            prices=judge_prices(profiles, local or set(), max_usd=config.budget.max_usd),
            asked=store.asked(),
            answerable=answerable,
            known_pairs=known_pairs,
            attachment=store.attachment,
        )
        self.observe = observe
        self._spend: Spend | None = None
        self.pilot = pilot
        self._pilot_done = False
        if config.candidates and answering is None:
            raise RunFailed(f"{store.path}: the config names candidate models and the run was given no way to ask them")
        # the first SIGINT/SIGTERM drains: calls in flight finish and are committed (a provider
        # has already charged for them), nothing new starts, and waits before a retry end
        self.drain = Drain(on_start=self._on_drain)
        wait = functools.partial(self.drain.wait, sleep)
        self.answers = answering.pipeline(store, self.ctx, config.dispatch, lambda: self.drain.draining, wait) if answering else None
        self.planner = planner_for(config)(self.ctx)
        self.people = None
        if people is not None:
            from ..people.asking import PeopleAsker

            self.people = PeopleAsker(store.path, people, self.ctx.dataset, store.config, int(store.run["seed"]))
        self._possible = planner_for(config).possible_requests(config, self.ctx.dataset, len(profiles))
        for row in store.judgments():
            self.planner.add(row)
        # per-judge fail-fast; a resume gives every judge a fresh window (as the run-wide fail-fast
        # does): resuming is what one does after fixing a judge
        self.health = JudgeHealth()
        self.judge_stops: list[str] = []
        counts = store.judgment_counts()
        self._failed, self._ok = counts.get("failed", 0), counts.get("ok", 0)
        self._failed_at_start = self._failed
        self.dispatcher = RoundDispatcher(store, config, judges, templates, self.drain, self._commit, sleep)
        if self.answers is not None:  # requests that show a candidate model's answer wait for it
            self.dispatcher.prepare = functools.partial(self.answers.ready, ctx=self.ctx, request_of=self.dispatcher.request)

    def _commit(self, row: PlannedRequest, judgment: Judgment, attempts: int, round_no: int) -> None:
        """Store one finished request and tell the planner, the health check and the display."""
        judgment = judgment.model_copy(update={"judge": row.judge})
        committed = self.store.commit_judgment(judgment, attempts, round_no, row.repeat)
        if self._spend is not None:  # the running total the progress events show (module: _event)
            s = self._spend
            self._spend = Spend(
                s.calls + (1 if committed.completions is None else committed.completions),
                s.tokens + committed.prompt_tokens + committed.completion_tokens,
                s.usd + committed.cost_usd,
                s.cached + int(committed.cached),
            )
        if judgment.status == "ok":
            self._ok += 1
            self.planner.add(committed)
        else:
            self._failed += 1
        # a request about an answer that does not exist asked no judge: it says nothing of the judge
        if judgment.error_type not in UNASKED and self.health.record(row.judge, judgment.status == "failed"):
            self._stop_judge(row.judge)
        self._event("judgment", round_no)

    def _dispatch(self, rows: list[PlannedRequest], round_no: int, semaphore: asyncio.Semaphore) -> asyncio.Task:
        return asyncio.create_task(self.dispatcher.dispatch(rows, round_no, semaphore, self._round_info))

    # -- the loop ----------------------------------------------------------------------------
    def _event(self, kind: str, round_no: int, **extra) -> None:
        """A progress event. A judgment's event carries the running spend (kept up to date by
        ``_commit``): querying the store for every judgment made a run quadratic in its length
        (a 60,000-call replay spent most of its time there); every other event re-reads it."""
        if self.progress is None:
            return
        if kind != "judgment" or self._spend is None:
            self._spend = self.store.spend()
        self.progress(RunEvent(kind, round_no, self._ok, self._failed, self._spend, **extra))

    async def run(self) -> str:
        """Run to the end; returns the stop reason. Judgments are committed as they arrive.

        The first SIGINT or SIGTERM drains: calls already sent finish and are committed, nothing
        new starts, and the run stops as interrupted (``KeyboardInterrupt``); a second one stops
        at once (what was in flight is asked again on resume), also in the middle of a posterior
        update or a selection (CPU-bound work, during which the event loop cannot run handlers).
        Planned requests stay pending.

        Raises:
            RunFailed: the run could not do what it was asked: no judgment succeeded (every call
                failed, or the budget did not fit one request). The run file keeps the failures
                and is marked ``failed``.
        """
        self.store.set_status("running")
        round_no = self.store.last_round()
        with self.drain.handlers(asyncio.current_task()):
            try:
                with threads_for(self.planner.largest_fit):
                    return await self._run(round_no)
            except asyncio.CancelledError:
                if self.drain.hard_stop:
                    raise KeyboardInterrupt from None
                raise

    def _on_drain(self) -> None:
        generations = self.answers.in_flight if self.answers is not None else 0
        self._event(
            "draining",
            self.store.last_round(),
            planned_requests=self.dispatcher.in_flight_calls,
            generations=generations,
            wait_limit_s=self.answers.time_limit_s() if generations and self.answers is not None else None,
        )

    def _stop_judge(self, judge: str) -> None:
        """Ask ``judge`` no more: its recent calls mostly failed (:mod:`.health`)."""
        self.ctx.disabled.add(judge)
        typical = self.store.typical_failure(judge=judge)
        what = "" if typical is None else f": {typical[0]} × {typical[1]}: {' '.join(typical[2].split())[:500]}"
        templates = ", ".join(sorted({t.name for t in self.templates.values()}))
        message = (
            f"judge {judge!r} stopped after {self.health.stopped[judge]} of its last {self.health.seen(judge)} calls failed "
            f"(template {templates}){what}"
        )
        self.judge_stops.append(message)
        if set(self.ctx.profiles) - self.ctx.disabled:  # (the last judge: the run's stop says it)
            self._event("judge_stopped", self.store.last_round(), reason=message)

    def _fail_fast(self) -> StopReason | None:
        """A reason to stop when nothing has worked yet: the first ``FAIL_FAST_AFTER`` finished
        requests all failed permanently (a wrong address, a rejected request, an unreadable
        answer): the next ones would only spend the budget the same way."""
        if self._ok == 0 and self._failed - self._failed_at_start >= FAIL_FAST_AFTER:
            return StopReason(
                f"the first {self._failed - self._failed_at_start} judge calls all failed ({self._typical_error()})", "fail_fast"
            )
        if self.ctx.profiles and set(self.ctx.profiles) <= self.ctx.disabled:
            return StopReason("every judge was stopped: " + "; ".join(self.judge_stops), "judges_stopped")
        return None

    def _typical_error(self) -> str:
        typical = self.store.typical_failure()
        if typical is None:
            return "no call was made"
        n, error_type, error = typical
        error = " ".join(error.split("Traceback (most recent call last)")[0].split())
        return f"{n} × {error_type}: {error[:500]}"

    def _set_status_safely(self, status: str, reason: str, kind: str) -> None:
        """Mark the run's state on the way out of an error; a run file that cannot be written (a
        full disk) keeps ``running``, which resume treats like ``interrupted``."""
        try:
            self.store.set_status(status, reason, kind)
        except sqlite3.Error:
            pass

    async def _run(self, round_no: int) -> str:
        # Round r is planned once every round <= r - depth has been committed, from the posterior on
        # exactly those rounds: depth 1 waits for each round (fully adaptive); depth 2 plans the next
        # round while the current one is in flight (judges stay busy). Either way the plan depends
        # only on the log, not on timing, so a resumed run asks what an uninterrupted one would.
        depth = self.config.dispatch.pipeline_depth
        semaphore = asyncio.Semaphore(self.concurrency)
        in_flight: dict[int, asyncio.Task] = {}
        reason = StopReason("", "done")
        failed = False
        drained = False
        try:
            pending = self.store.pending_requests()
            for r in sorted({row.round for row in pending}):  # interrupted rounds go first
                rows = [row for row in pending if row.round == r]
                self._event("round", r, planned_requests=len(rows))
                in_flight[r] = self._dispatch(rows, r, semaphore)
            while True:
                if self.drain.draining:
                    break
                cutoff = round_no + 1 - depth
                for r in sorted(r for r in in_flight if r <= cutoff):
                    await in_flight.pop(r)
                if self.drain.draining:
                    break
                stopped = self._fail_fast()
                if stopped is not None:
                    reason, failed = stopped, self._ok == 0
                    break
                with self.drain.cpu_work():
                    reason, round_no, planned = self._plan_round(round_no, cutoff)
                if planned is None and reason.kind == "budget" and in_flight and reason.limit != "max_calls":
                    # tokens and USD in flight are reserved at their worst case: such a budget ends
                    # the run only once they are committed and their real cost has replaced it
                    # (a call costs one call, reserved or spent)
                    for r in sorted(in_flight):
                        await in_flight.pop(r)
                    if self.drain.draining:
                        break
                    with self.drain.cpu_work():
                        reason, round_no, planned = self._plan_round(round_no, round_no)
                if planned is None:
                    break
                in_flight[round_no] = self._dispatch(planned, round_no, semaphore)
            for r in sorted(in_flight):  # what was planned is asked (and paid) before stopping
                await in_flight.pop(r)
            if self.drain.draining:
                self.store.set_status("interrupted", "interrupted; resume to continue", "interrupted")
                drained = True
                raise KeyboardInterrupt
        except BaseException as exc:
            # a drain has already stopped cleanly; anything else (a hard stop, a Ctrl-C without our
            # handler, an error) stops now: what was in flight is asked again on resume
            if not (drained and isinstance(exc, KeyboardInterrupt)):
                await cancel_all(in_flight.values())
                self._set_status_safely("interrupted", "interrupted; resume to continue", "interrupted")
            raise
        return self._finish(reason, failed, round_no)

    def _finish(self, reason: str, failed: bool, round_no: int) -> str:
        """The run's end after its last round: the final status, the summary event, the reason."""
        if self._ok == 0:
            # nothing to rank: say so, never "finished" with statistics from no data
            failed = True
            if kind_of(reason) != "fail_fast":  # that one says so already, with the typical failure
                reason = StopReason(f"no judgment succeeded: {reason}", "no_success")
                if self._failed:
                    reason = reason.extended(f"; typical failure: {self._typical_error()}")
        if failed:
            self.store.set_status("failed", reason, kind_of(reason))
            raise RunFailed(
                f"{self.store.path}: the run failed: {reason}. The run file keeps every failure "
                f"(`orchestrator status {self.store.path}`); fix the judge or the config, then "
                f"`orchestrator resume {self.store.path}` (it asks new requests) or start a new run",
                reason=str(reason),
            )
        if self.judge_stops and kind_of(reason) != "judges_stopped":
            reason = StopReason(reason, kind_of(reason)).extended("; " + "; ".join(self.judge_stops))
        if self.people is not None:  # the last rounds' items too: a run of one or two rounds asks here only
            self.people.after_round(round_no + 1, self.store.judgments())
        self.store.set_status("interrupted" if self._pilot_done else "finished", reason, kind_of(reason))
        with self.drain.cpu_work():
            summary = self.planner.summary(None)
            forecast = self._forecast(None) if self.progress is not None else None
        self._event("stop", round_no, reason=reason, forecast=forecast, **summary)
        return reason

    def _forecast(self, cutoff: int | None) -> dict | None:
        """What reaching the stopping rule is expected to cost (PoE runs; :mod:`.forecast`)."""
        from .forecast import forecast

        posteriors = self.planner.posteriors_for_forecast(cutoff)
        if posteriors is None:
            return None
        judges = len([j for j in self.ctx.profiles if j not in self.ctx.disabled]) or 1
        return forecast(self.store, self.config, posteriors, n_judges=judges, possible=self._possible)

    def _plan_round(self, round_no: int, cutoff: int) -> tuple[StopReason, int, list[PlannedRequest] | None]:
        """Ask the planner for the next round and write it as pending requests. Returns ``(stop
        reason, round number, planned request rows or None to stop)``."""
        timings: dict[str, float] = {}
        started = time.perf_counter()
        reason = self.planner.stop_before(cutoff)
        if self.observe is not None:
            self.observe(self.store.planning_spend(cutoff), self.planner)
        if reason:
            return StopReason(reason, "campaign"), round_no, None
        if self.pilot is not None and self.store.planning_spend(cutoff).calls >= self.pilot:
            self._pilot_done = True
            return StopReason(f"pilot of {self.pilot} calls done (resume to go on)", "pilot"), round_no, None
        timings["fit_s"] = time.perf_counter() - started
        started = time.perf_counter()
        plan = self.planner.next_round(round_no + 1, cutoff)
        if not isinstance(plan, Plan):
            return StopReason(plan, "campaign"), round_no, None
        spend = self.store.planning_spend(cutoff)
        extra = self.ctx.answers.reservation(set()) if self.ctx.answers is not None else None
        kept, budget_reason = fit_budget(
            [self.dispatcher.quoted(unit) for unit in plan.units], spend, self.config.budget, extra, self.store.answer_spend(cutoff)
        )
        if self.pilot is not None:  # a pilot pays for at most `pilot` calls, whatever the round's size
            room = self.pilot - spend.calls
            while kept and sum(r.reserved_calls for unit in kept for r in unit) > room:
                kept.pop()
            if not kept:
                self._pilot_done = True
                return StopReason(f"pilot of {self.pilot} calls done (resume to go on)", "pilot"), round_no, None
        if not kept:
            return StopReason(budget_reason or "budget spent", "budget"), round_no, None
        round_no += 1
        rows = [r for unit in kept for r in unit]
        timings["select_s"] = time.perf_counter() - started
        summary = self.planner.summary(cutoff)
        answers = self.ctx.answers.needed(rows) if self.ctx.answers is not None else None
        self.store.add_round(
            round_no, plan.kind, plan.selected[: len(kept)], rows, {**summary, **timings, "top": json.dumps(summary["top"])}, answers
        )
        self.ctx.mark_asked(rows)
        self.planner.planned(rows)
        if self.people is not None:  # from the rounds this one was planned from, as the planner
            self.people.after_round(round_no, (j for j in self.store.judgments() if j.round <= cutoff))
        self._event(
            "round", round_no, planned_requests=len(rows), forecast=self._forecast(cutoff) if self.progress is not None else None, **summary
        )
        return StopReason("", "done"), round_no, rows

    def _round_info(self) -> dict:
        spend = self.store.spend()
        return {"calls": spend.calls, "tokens": spend.tokens, "usd": spend.usd}
