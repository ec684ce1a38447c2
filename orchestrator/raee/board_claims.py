"""Stopping claims about a board's models: when a reference campaign with ``[reference] board`` and
``allocation = "adaptive"`` may stop, and what it may then say.

A candidate placed on a board (:func:`orchestrator.raee.board.place`) has an interval for its win rate
over the board's prompts; the board's models have their full-data win rates ``w_b`` (points: every
one of them was judged on every prompt). Its place is **settled** when

- no board model's win rate lies inside the interval: the candidate is between the two models
  around it (or above, or below, every one of them) — an ordering claim; or, with a ``resolution`` r,
- every board model inside the interval is within r points of both its ends: tied with them within
  r — a tie claim (``|w − w_b| ≤ r`` for every win rate ``w`` in the interval).

The claims are read at looks of a doubling schedule of the candidate's judged prompts (``first``,
``2·first``, ``4·first``, …): a look at every round would test the same hypothesis tens of times and
an interval at 95% would, sooner or later, stop on a chance excursion. Each look and each candidate
gets ``α / (L · M)`` (Bonferroni over the ``L`` looks the schedule can have and the ``M``
candidates), so the chance that any claim the run stops on is wrong is at most ``α`` however the
looks fall (the union bound needs no independence between looks). Doubling keeps ``L`` at
``log₂(P / first) + 1`` — 9 for 805 prompts from 4 — where a look every 10 prompts would make it 81.

References:
    Bonferroni over interim analyses: Jennison & Turnbull, *Group Sequential Methods with Applications
    to Clinical Trials* (2000), ch. 2 (a conservative group-sequential boundary).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BoardClaim", "board_claim", "look_depths", "look_level"]


def look_depths(population: int, first: int) -> list[int]:
    """The judged-prompt counts at which a candidate's claim is read: ``first`` doubling while below
    ``population``, then ``population`` (the whole pool: the placement is exact there)."""
    first = max(int(first), 1)
    depths = []
    depth = first
    while depth < population:
        depths.append(depth)
        depth *= 2
    return depths + [int(population)]


def look_level(population: int, first: int, candidates: int, alpha: float = 0.05) -> float:
    """The confidence level of each look's interval: ``1 − α / (L · M)`` (module docstring)."""
    looks = len(look_depths(population, first))
    return 1.0 - alpha / (looks * max(int(candidates), 1))


@dataclass(frozen=True)
class BoardClaim:
    """What a settled candidate's place on the board is."""

    kind: str
    """``between`` (no board model inside its interval) or ``tied`` (those inside within the
    resolution)."""
    upper: str | None
    """``between``: the board model just above the candidate (None: it is above every one)."""
    lower: str | None
    """``between``: the board model just below the candidate (None: it is below every one)."""
    tied_with: tuple[str, ...] = ()

    def words(self, candidate: str, rates: dict[str, float], resolution: float | None) -> str:
        """The claim as a user reads it, win rates in percent."""
        if self.kind == "tied":
            names = ", ".join(f"{m} ({100 * rates[m]:.1f}%)" for m in self.tied_with)
            return f"{candidate} is within {resolution:g} points of {names}"
        if self.upper is None and self.lower is not None:
            return f"{candidate} is above every board model (the best: {self.lower}, {100 * rates[self.lower]:.1f}%)"
        if self.lower is None and self.upper is not None:
            return f"{candidate} is below every board model (the weakest: {self.upper}, {100 * rates[self.upper]:.1f}%)"
        assert self.upper is not None and self.lower is not None
        return f"{candidate} is between {self.upper} ({100 * rates[self.upper]:.1f}%) and {self.lower} ({100 * rates[self.lower]:.1f}%)"


def board_claim(models: list[str], rates: np.ndarray, low: float, high: float, resolution: float | None = None) -> BoardClaim | None:
    """The claim a candidate's interval ``[low, high]`` (win rates, 0–1) supports about the board's
    models with full-data win rates ``rates`` (module docstring), or None while it supports none.
    ``resolution`` on the same 0–1 scale."""
    rates = np.asarray(rates, dtype=float)
    inside = (rates > low) & (rates < high)
    if not inside.any():
        above_me = [k for k in range(len(models)) if rates[k] >= high]
        below_me = [k for k in range(len(models)) if rates[k] <= low]
        nearest_above = min(above_me, key=lambda k: rates[k]) if above_me else None
        nearest_below = max(below_me, key=lambda k: rates[k]) if below_me else None
        return BoardClaim(
            "between",
            models[nearest_above] if nearest_above is not None else None,
            models[nearest_below] if nearest_below is not None else None,
        )
    if resolution is not None and all(max(high - rates[k], rates[k] - low) <= resolution + 1e-12 for k in np.flatnonzero(inside)):
        return BoardClaim("tied", None, None, tuple(models[k] for k in np.flatnonzero(inside)))
    return None
