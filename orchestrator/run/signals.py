"""Interrupts during a run: the first SIGINT or SIGTERM drains (calls already sent finish and are
committed, nothing new starts, waits end now), a second stops at once — also in the middle of
CPU-bound work (a refit, a selection), during which the event loop cannot run its handlers.

The engine holds one :class:`Drain` and asks it ``draining`` wherever it would start something new."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import Any, Callable, Iterable, Iterator

__all__ = ["Drain", "cancel_all", "early_interrupts"]

_EARLY: list[float] = []
"""When a signal came before a run's own handlers were installed (empty: none)."""


@contextlib.contextmanager
def early_interrupts() -> Iterator[None]:
    """A command's start-up (imports, checks, loading a model): a SIGINT or SIGTERM raises
    ``KeyboardInterrupt`` as usual and is also remembered, so that a library that swallows the
    exception while it imports cannot make the run start as if nothing had been asked; a run that
    starts after one drains at once (:meth:`Drain.handlers`). Outside the main thread: nothing."""
    import time

    def handler(signum, frame) -> None:
        _EARLY.append(time.monotonic())
        raise KeyboardInterrupt

    try:
        with _handling(handler):
            yield
    finally:
        _EARLY.clear()


@contextlib.contextmanager
def _handling(handler: Callable[[int, Any], None]) -> Iterator[None]:
    """``handler`` for SIGINT and SIGTERM while the block runs, the previous ones back after it
    (outside the main thread, where signals cannot be handled: nothing)."""
    previous = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class Drain:
    """The run's interrupt state. ``on_start`` is called once, when the first signal arrives (the
    engine reports a ``draining`` event from it)."""

    def __init__(self, on_start: Callable[[], None]):
        self.draining = False
        """Set by the first signal: no new round, no new call, no retry."""
        self.hard_stop = False
        """Set by the second signal: stop now (what was in flight is asked again on resume)."""
        self._on_start = on_start
        self._woken: asyncio.Event | None = None
        """Set with ``draining`` while :meth:`handlers` is active: wakes every :meth:`wait`."""

    def start(self) -> None:
        """The first signal: no new round, call or retry; waits end now."""
        self.draining = True
        if self._woken is not None:
            asyncio.get_running_loop().call_soon_threadsafe(self._woken.set)
        self._on_start()

    @contextlib.contextmanager
    def handlers(self, main: asyncio.Task | None) -> Iterator[None]:
        """asyncio signal handlers for the duration of a run: the first signal drains, the second
        cancels ``main`` (the run's task) with :attr:`hard_stop` set. Outside the main thread
        (where signals cannot be handled) nothing is installed."""
        loop = asyncio.get_running_loop()
        self.hard_stop = False
        self._woken = asyncio.Event()
        if _EARLY and not self.draining:  # interrupted while the command was starting: no call is sent
            self.start()

        def on_signal() -> None:
            if not self.draining:
                self.start()
            elif main is not None:
                self.hard_stop = True
                main.cancel()

        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, on_signal)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no such support
                pass
        try:
            yield
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    @contextlib.contextmanager
    def cpu_work(self) -> Iterator[None]:
        """Signals during CPU-bound work: asyncio's handlers only run when the event loop gets
        control back, so Python-level handlers stand in: the first signal starts the drain, a second
        raises ``KeyboardInterrupt`` at once, wherever the work is."""

        def handler(signum, frame) -> None:
            if not self.draining:
                self.start()
            else:
                self.hard_stop = True
                raise KeyboardInterrupt

        wakeup = None
        try:
            # asyncio also learns of signals through its wake-up fd and would act on them a second
            # time once the loop runs again: switch that off while these handlers stand in
            wakeup = signal.set_wakeup_fd(-1)
        except ValueError:  # not the main thread: leave signals alone
            pass
        try:
            with _handling(handler) if wakeup is not None else contextlib.nullcontext():
                yield
        finally:
            if wakeup is not None:
                signal.set_wakeup_fd(wakeup)

    async def wait(self, sleep: Callable[[float], Any], seconds: float) -> None:
        """``sleep(seconds)``, cut short by a drain: a signal during a provider's Retry-After (or a
        batch's polling interval) stops at once instead of when the wait is over."""
        if self.draining:
            return
        woken = self._woken
        if woken is None:
            await sleep(seconds)
            return
        sleeping = asyncio.ensure_future(sleep(seconds))
        waking = asyncio.ensure_future(woken.wait())
        try:
            await asyncio.wait({sleeping, waking}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeping, waking):
                task.cancel()
            await asyncio.gather(sleeping, waking, return_exceptions=True)


async def cancel_all(tasks: Iterable[asyncio.Task]) -> None:
    """Cancel the rounds still in flight and wait until each has stopped."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
