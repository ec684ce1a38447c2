"""Per-judge fail-fast: a judge whose recent calls mostly fail permanently is stopped
before it eats the budget, with a message naming it, its template and its typical error; in a
panel the other judges go on."""

from __future__ import annotations

from collections import deque

__all__ = ["JudgeHealth", "WINDOW", "MIN_FAILURES", "MAX_FAILURE_RATE"]

WINDOW = 20
"""The last this many finished requests of a judge are watched."""
MIN_FAILURES = 8
"""A judge is stopped once its window holds at least this many permanent failures ..."""
MAX_FAILURE_RATE = 0.5
"""... making up at least this share of the window (8 of its first 8, 10 of its last 20)."""


class JudgeHealth:
    """Sliding windows of permanent outcomes, one per judge."""

    def __init__(self, *, window: int = WINDOW, min_failures: int = MIN_FAILURES, max_rate: float = MAX_FAILURE_RATE):
        self.window, self.min_failures, self.max_rate = window, min_failures, max_rate
        self._recent: dict[str, deque[bool]] = {}
        self.stopped: dict[str, int] = {}
        """Judge → failures in its window when it was stopped."""

    def record(self, judge: str, failed: bool) -> bool:
        """Add one finished request; True when this judge has just crossed the threshold."""
        recent = self._recent.setdefault(judge, deque(maxlen=self.window))
        recent.append(failed)
        if judge in self.stopped:
            return False
        failures = sum(recent)
        if failures >= self.min_failures and failures >= self.max_rate * len(recent):
            self.stopped[judge] = failures
            return True
        return False

    def seen(self, judge: str) -> int:
        """Finished requests of ``judge`` in its window."""
        return len(self._recent.get(judge, ()))
