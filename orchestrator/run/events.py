"""What a run tells its display as it goes (:class:`RunEvent`): a light module, so that the API,
the judges' set-up and the CLI can name it without importing the engine (and torch)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..store import Spend

__all__ = ["RunEvent"]


@dataclass(frozen=True)
class RunEvent:
    """Progress of a run, for displays."""

    kind: str
    """``round`` (a round was planned), ``judgment`` (one arrived), ``judge_stopped`` (a judge's
    calls mostly failed: it is asked no more, ``reason`` says why), ``draining`` (an interrupt:
    calls in flight finish and commit, nothing new starts) or ``stop``."""
    round: int
    judgments: int
    failed: int
    spend: Spend
    planned_requests: int = 0
    generations: int = 0
    """``draining``: candidate models' answers being generated (``planned_requests``: judge calls in flight)."""
    wait_limit_s: float | None = None
    """``draining``: the longest the calls in flight may take (their time limits)."""
    entropy: float | None = None
    max_adjacent_reorder: float | None = None
    top: list[str] = field(default_factory=list)
    reason: str = ""
    forecast: dict | None = None
    """After the first round of a PoE run: expected calls, tokens and USD to reach the stopping
    rule, with 90th percentiles and the worst case (:mod:`.forecast`)."""
