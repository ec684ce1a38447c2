"""A comparison gate's decision under its design, and the plan that sizes it.

Two designs read the same per-prompt outcomes ``X_i ∈ [0, 1]`` (:mod:`.sequence`):

- ``anytime``: the hedged betting confidence sequence, its stakes sized for the most prompts the
  run can read (``max_prompts``), looked at after every prompt — valid at every look, forever,
  past the planned maximum too; a person may stop it whenever they like.
- ``planned``: a group-sequential design over the engine's rounds (:mod:`.group_sequential`):
  repeated confidence intervals with O'Brien–Fleming-type alpha spending, valid at the planned
  looks (the ends of rounds) with ``max_prompts`` fixed at the start. It needs fewer prompts for
  the same power, and says nothing between its looks.

The plan (:func:`plan`) answers before anything is paid: how many prompts a fixed-size paired test
needs for a power of 0.8 at a true difference of ``effect`` points beyond the margin (the spread of
the outcomes from a pilot, an earlier run, or an assumed value), how many each design needs at most
for the same power, and whether the budget reaches them.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import numpy as np
from scipy.stats import norm

from .group_sequential import inflation, repeated_intervals
from .sequence import Decision, confidence_sequence, decide

__all__ = ["ASSUMED_SPREAD", "DESIGNS", "ANYTIME_INFLATION", "GatePlan", "gate_decision", "plan", "reachable"]

DESIGNS = ("anytime", "planned")

ASSUMED_SPREAD = 0.3
"""The outcomes' standard deviation a plan assumes without a pilot or an earlier run: a judge's
win shares of two systems on prompts like AlpacaEval's, both orders averaged (0.25–0.35 there)."""

ANYTIME_INFLATION = 1.5
"""How many times the fixed test's prompts the anytime sequence, sized for its horizon, needs at
most for a power of 0.8 (measured by simulation at α = 0.05: ``benchmarks/validity/compare_gate.py``)."""


def gate_decision(
    outcomes: np.ndarray,
    *,
    margin: float,
    alpha: float,
    require: str = "better",
    design: Literal["anytime", "planned"] = "anytime",
    max_prompts: int | None = None,
    looks: list[int] | None = None,
) -> Decision:
    """The decision the outcomes read so far support (:func:`~.sequence.decide`) under ``design``:
    ``anytime`` looks after every outcome, its stakes sized for ``max_prompts`` (None: for every
    time at once); ``planned`` looks only at ``looks`` (cumulative outcomes read at the ends of
    rounds), with ``max_prompts`` the planned maximum.

    Raises:
        ValueError: a planned design without ``max_prompts``, or a bad outcome, α or margin."""
    x = np.asarray(outcomes, dtype=float)
    if design == "planned":
        if max_prompts is None:
            raise ValueError("a planned design needs its maximum number of prompts")
        bounds, read = repeated_intervals(x, looks if looks is not None else [x.size], max_prompts, alpha)
        if not read:
            return Decision("not yet known", float("nan"), -50.0, 50.0, 0)
        return decide(bounds, margin, require, at=read)
    return decide(confidence_sequence(x, alpha, horizon=max_prompts), margin, require)


class GatePlan(NamedTuple):
    """What a comparison needs, before anything is paid."""

    spread: float
    """The outcomes' standard deviation the plan uses."""
    spread_from: str
    """Where it comes from: ``pilot``, ``run``, ``assumed``."""
    effect: float
    """The true difference beyond the margin the power is for, in points."""
    fixed: int
    """Prompts a fixed-size two-sided paired test at α needs for a power of 0.8 at ``effect``."""
    anytime: int
    """Prompts the anytime sequence needs at most for the same power."""
    planned: int
    """Prompts the planned design needs at most for the same power."""
    available: int
    """The most prompts the run can read (budget, judges, shown orders, prompts available)."""


def plan(
    *, effect: float, alpha: float, available: int, spread: float | None = None, spread_from: str = "assumed", looks: int = 20
) -> GatePlan:
    """The prompts each design needs for a power of 0.8 at a true difference of ``effect`` points
    beyond the margin, from the outcomes' ``spread`` (default :data:`ASSUMED_SPREAD`), against the
    ``available`` prompts; ``looks``: the planned design's number of looks (rounds)."""
    sd = ASSUMED_SPREAD if spread is None else max(spread, 1e-6)
    shift = max(effect, 1e-9) / 100.0
    fixed = int(math.ceil(((norm.ppf(1 - alpha / 2) + norm.ppf(0.8)) * sd / shift) ** 2))
    # past 20 looks the maximum grows by under a percent more: 20 looks stand for any number above
    needed = (norm.ppf(1 - alpha / 2) + norm.ppf(0.8)) * math.sqrt(inflation(min(max(1, looks), 20), alpha))
    planned = _prompts_for(needed, shift, sd)
    return GatePlan(
        spread=sd,
        spread_from=spread_from if spread is not None else "assumed",
        effect=effect,
        fixed=fixed,
        anytime=int(math.ceil(fixed * ANYTIME_INFLATION)),
        planned=planned,
        available=available,
    )


def _prompts_for(drift: float, shift: float, sd: float) -> int:
    """The fewest prompts whose repeated interval reaches ``drift`` standard errors at a true shift of
    ``shift``: its variance starts with one pseudo-prompt (:mod:`.group_sequential`), so
    ``v_n = (s₀² + (n − 1) sd²)/(n + 1)``; never below the looks' minimum."""
    from .group_sequential import MIN_LOOK, PRIOR_SPREAD

    def reaches(n: int) -> bool:
        return shift * math.sqrt(n * (n + 1) / (PRIOR_SPREAD + (n - 1) * sd**2)) >= drift

    low, high = 1, 2
    while not reaches(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle, high)
    return max(high, MIN_LOOK)


def reachable(*, margin: float, alpha: float, require: str, design: str, max_prompts: int, batch: int = 1) -> list[str]:
    """The decisions a run of at most ``max_prompts`` prompts could reach at all — the most extreme
    outcomes (every prompt won, every prompt lost, every prompt a tie) read to the end — so a
    budget too small for any decision, or a margin beyond any difference, is said before paying."""
    looks = list(range(batch, max_prompts + 1, batch)) or [max_prompts]
    if looks[-1] != max_prompts:
        looks.append(max_prompts)
    found: list[str] = []
    for value in (1.0, 0.0, 0.5):
        x = np.full(max_prompts, value)
        decision = gate_decision(x, margin=margin, alpha=alpha, require=require, design=design, max_prompts=max_prompts, looks=looks)  # type: ignore[arg-type]
        if decision.decision != "not yet known":
            found.append(decision.decision)
    return found
