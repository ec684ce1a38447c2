"""Crash points for the crash campaign: ``ORCHESTRATOR_FAILPOINTS="name:N[,name:N]"``
makes the process kill itself with SIGKILL the N-th time it reaches ``failpoint(name)`` — inside
an SQLite transaction, in the middle of the posterior update — places a random ``kill -9`` rarely
hits. Unset (always, outside the tests), a failpoint is one dictionary lookup.

Points: ``commit_judgment`` (judgment row written, request not yet marked done, transaction open),
``add_round`` (round row written, its requests not yet), ``refit`` (between two groups' fits);
batch mode: ``batch_recorded`` (batch row committed, nothing sent), ``batch_created`` (the provider
has the batch, its id not yet committed), ``batch_poll`` (between two polls), ``batch_commit``
(after a batch result's judgment was committed, before the next); generated answers:
``commit_answer`` (the answer's row written, transaction open), ``answer_committed`` (committed,
no judge has seen it yet).

``ORCHESTRATOR_STALL="name:N"`` instead makes the N-th hit spin the CPU in Python for 60 s: a
stand-in for a long posterior update, to test that signals still work during CPU-bound work.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import Counter

__all__ = ["failpoint", "POINTS"]

POINTS = (
    "commit_judgment",
    "add_round",
    "refit",
    "batch_recorded",
    "batch_created",
    "batch_poll",
    "batch_commit",
    "commit_answer",
    "answer_committed",
)


def _parse(spec: str | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in (spec or "").split(","))):
        name, _, count = part.partition(":")
        if name not in POINTS or not count.isdigit() or int(count) < 1:
            raise ValueError(f"ORCHESTRATOR_FAILPOINTS: {part!r} is not NAME:N with NAME in {', '.join(POINTS)}")
        out[name] = int(count)
    return out


_ARMED = _parse(os.environ.get("ORCHESTRATOR_FAILPOINTS"))
_STALLS = _parse(os.environ.get("ORCHESTRATOR_STALL"))
_hits: Counter = Counter()
STALL_S = 60.0


def failpoint(name: str) -> None:
    """SIGKILL this process if ``name`` is armed and this is its N-th hit (or stall there)."""
    if not _ARMED and not _STALLS:
        return
    _hits[name] += 1
    if _hits[name] == _ARMED.get(name):
        os.kill(os.getpid(), signal.SIGKILL)
    if _hits[name] == _STALLS.get(name):
        sys.stderr.write(f"failpoint: stalling at {name}\n")
        sys.stderr.flush()
        deadline = time.perf_counter() + STALL_S
        while time.perf_counter() < deadline:  # pure Python: signal handlers run between bytecodes
            pass
