"""An anytime-valid comparison of two systems: a confidence sequence for the mean of
bounded paired outcomes, and the decision it supports at every look.

Each prompt ``i`` gives one outcome ``X_i ∈ [0, 1]``: the candidate's win share against the
baseline on that prompt (both shown orders averaged, ties half, several judges averaged; or the
difference of two win rates against a shared anchor, mapped to ``(1 + d)/2``). Prompts are asked
in a seeded random order, so the ``X_i`` are draws from the prompts a user's prompts are like and
``μ = E[X]`` is the candidate's win rate over the baseline on such prompts.

The confidence sequence is the hedged capital process of Waudby-Smith & Ramdas (2024), Theorem 3:
for every candidate mean ``m`` two bettors wager on ``X_i − m`` with predictable stakes,

.. math:: K_t^{±}(m) = \\prod_{i ≤ t} \\bigl(1 ± λ_i^{±}(m) (X_i − m)\\bigr), \\qquad
          K_t(m) = \\max\\bigl(½ K_t^{+}(m), ½ K_t^{-}(m)\\bigr),

(rejecting on ``½K⁺ + ½K⁻``, a test martingale at least as large), with predictable plug-in stakes
truncated as the theorem states, ``λ_i^{+}(m) = \\min(λ_i, c/m)`` and ``λ_i^{−}(m) = \\min(λ_i, c/(1 − m))``
(``c = ¾``, the larger of the two values the paper uses: small horizons need the larger stakes).
The raw stake ``λ_i`` is sized for the horizon the run knows: with ``n`` the most prompts it can
read (its budget, judges, shown orders and the prompts available), ``λ_i = \\sqrt{2 \\log(2/α) / (n σ̂²_{i−1})}``
— the plug-in tuned to be tightest at ``n`` (Waudby-Smith & Ramdas 2024, §B.2, their "fixed-n"
choice), and past ``n`` the every-time stakes below scaled to meet it there — and without a horizon ``λ_i = \\sqrt{2 \\log(2/α) / (σ̂²_{i−1} i \\log(1 + i))}``, tight at every
time at once (Eq. (26)). ``σ̂²`` is a running variance estimate starting at ¼. Either is
predictable, so validity never depends on the horizon: past it (a larger budget) the sequence stays
valid, only less tight than one sized for the new horizon; a horizon changed mid-run changes the
later stakes only, and the guarantee holds as before. Under
``μ = m`` both capitals are non-negative martingales, so by Ville's inequality
``P(∃t: K_t(μ) ≥ 1/α) ≤ α`` and ``C_t = {m : K_t(m) < 1/α}`` holds the true mean at every ``t`` at
once with probability ``≥ 1 − α``: a user may look after every round and stop whenever they like.
The running intersection ``∩_{s ≤ t} C_s`` keeps that guarantee and never widens. ``C_t`` is
computed on a grid of ``m`` (:data:`GRID` points; its ends rounded outwards).

The decision against a margin ``δ ≥ 0`` (win-rate points) reads ``d = 100(μ − ½)``:

- ``better``: the whole interval above ``+δ`` (by at least the margin);
- ``worse``: the whole interval below ``−δ``;
- ``equivalent`` (``δ > 0``): the whole interval within ``(−δ, +δ)``;
- ``not better`` (a gate that requires ``better``, ``δ > 0``): the whole interval below ``+δ`` —
  the data exclude a difference of ``δ`` or more, so waiting longer cannot make it pass;
- ``not worse`` (a gate that requires ``not-worse``, ``δ > 0``): the whole interval above ``−δ``;
- ``not yet known`` otherwise.

Each wrong decision needs the sequence to miss ``μ``, so the chance of any wrong decision, at any
look, is at most ``α``; the run stops at the first decision.

References
----------
Waudby-Smith, I. & Ramdas, A. (2024). Estimating means of bounded random variables by betting.
*JRSS-B* 86(1), 1–27 (arXiv:2010.09686), §4, Theorem 3 and Eq. (26).
Howard, S. R., Ramdas, A., McAuliffe, J. & Sekhon, J. (2021). Time-uniform, nonparametric,
nonasymptotic confidence sequences. *Annals of Statistics* 49(2).
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import numpy as np

__all__ = ["GRID", "TRUNCATION", "Decision", "SequenceBounds", "confidence_sequence", "decide", "DECISIONS", "REQUIRE"]

GRID = 2001
"""Candidate means on ``[0, 1]`` the capital is computed for (a step of 0.0005: 0.05 points)."""
TRUNCATION = 0.75
"""``c`` of the truncation ``λ⁺ ≤ c/m``, ``λ⁻ ≤ c/(1 − m)`` (Waudby-Smith & Ramdas use ½ or ¾)."""

DECISIONS = ("better", "worse", "equivalent", "not better", "not worse", "not yet known")
REQUIRE = ("better", "not-worse")
"""What a gate requires to pass: ``better`` by the margin, or ``not-worse`` (not worse by the margin)."""


class SequenceBounds(NamedTuple):
    """The confidence sequence after each outcome (running intersection)."""

    mean: np.ndarray
    """``(T,)`` the plain mean of the first ``t`` outcomes."""
    low: np.ndarray
    """``(T,)`` lower end of ``∩_{s ≤ t} C_s``."""
    high: np.ndarray
    """``(T,)`` upper end."""


class Decision(NamedTuple):
    decision: Literal["better", "worse", "equivalent", "not better", "not worse", "not yet known"]
    difference: float
    """``100 (x̄ − ½)``: the candidate's win rate over the baseline minus 50, in points."""
    low: float
    """Lower end of the difference's confidence sequence, in points."""
    high: float
    at: int
    """Outcomes read (prompts) when it was reached (the last one when not yet known)."""


def confidence_sequence(outcomes: np.ndarray, alpha: float = 0.05, horizon: int | None = None) -> SequenceBounds:
    """The hedged betting confidence sequence (module docstring) of the mean of ``outcomes`` in
    ``[0, 1]``, valid at every ``t`` at once with level ``1 − α``; ``horizon``: the most outcomes the
    run can read, which the stakes are sized for (None: tight at every time).

    Raises:
        ValueError: an outcome outside [0, 1] or not finite, ``α`` outside (0, 1) or a horizon below 1."""
    x = np.asarray(outcomes, dtype=float)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if horizon is not None and horizon < 1:
        raise ValueError(f"horizon must be at least 1 outcome, got {horizon}")
    if x.size and (not np.all(np.isfinite(x)) or x.min() < 0.0 or x.max() > 1.0):
        raise ValueError("outcomes must be finite numbers in [0, 1]")
    T = x.size
    if T == 0:
        return SequenceBounds(np.zeros(0), np.zeros(0), np.zeros(0))
    t = np.arange(1, T + 1, dtype=float)
    running_mean = (0.5 + np.cumsum(x)) / (t + 1)
    variance = (0.25 + np.cumsum((x - running_mean) ** 2)) / (t + 1)
    previous_variance = np.concatenate([[0.25], variance[:-1]])
    if horizon is None:
        spread = t * np.log1p(t)
    else:  # tuned for the horizon; past it, shrinking as the every-time stakes do (continuous at the horizon)
        spread = np.where(t <= horizon, float(horizon), t * np.log1p(t) / math.log1p(horizon))
    stake = np.sqrt(2 * math.log(2 / alpha) / (previous_variance * spread))
    m = np.linspace(0.0, 1.0, GRID)
    up = np.minimum(stake[:, None], TRUNCATION / np.maximum(m[None, :], 1e-12))
    down = np.minimum(stake[:, None], TRUNCATION / np.maximum(1 - m[None, :], 1e-12))
    centred = x[:, None] - m[None, :]
    log_up = np.cumsum(np.log1p(up * centred), axis=0)
    log_down = np.cumsum(np.log1p(-down * centred), axis=0)
    # ½K⁺ + ½K⁻ is itself a test martingale (a mixture of the two, starting at 1), so Ville's
    # inequality holds for it too; it is at least the theorem's max(½K⁺, ½K⁻): never wider
    log_capital = np.logaddexp(log_up, log_down) + math.log(0.5)
    inside = log_capital < math.log(1 / alpha)
    low = np.empty(T)
    high = np.empty(T)
    for k in range(T):
        kept = np.nonzero(inside[k])[0]
        if kept.size == 0:  # (a grid too coarse for this outcome sequence: the plain mean, a point)
            low[k] = high[k] = float(np.mean(x[: k + 1]))
            continue
        low[k] = m[max(kept[0] - 1, 0)]
        high[k] = m[min(kept[-1] + 1, GRID - 1)]
    low = np.maximum.accumulate(low)
    high = np.minimum.accumulate(high)
    crossed = low > high  # (the intersection can only empty on a miss: keep the last interval there;
    if crossed.any():  # never at the first outcome, whose interval is a range of the grid)
        first = int(np.argmax(crossed))
        low[first:], high[first:] = low[first - 1], high[first - 1]
    return SequenceBounds(np.cumsum(x) / t, low, high)


def decide(bounds: SequenceBounds, margin: float = 0.0, require: str = "better", at: list[int] | None = None) -> Decision:
    """The first decision the sequence supports against ``margin`` (points, ≥ 0) for a gate that
    requires ``require``, or ``not yet known`` at its end (module docstring). ``at``: how many
    outcomes each entry of ``bounds`` had read (a planned design's looks; default 1, 2, …).

    What stops a gate: ``better`` (the whole interval above ``+δ``), ``worse`` (below ``−δ``),
    ``equivalent`` (within ``(−δ, +δ)``, ``δ > 0``); and what settles its question without either:
    ``not better`` (``require = "better"``: the whole interval below ``+δ``, ``δ > 0``) or ``not
    worse`` (``require = "not-worse"``: the whole interval above ``−δ``). Each needs the interval to
    miss the true difference to be wrong, so every decision together is wrong with probability ≤ α."""
    if margin < 0:
        raise ValueError(f"margin must be >= 0 points, got {margin}")
    if require not in REQUIRE:
        raise ValueError(f"require must be one of {', '.join(REQUIRE)}, got {require!r}")
    T = len(bounds.mean)
    reads = list(range(1, T + 1)) if at is None else list(at)
    if T == 0:
        return Decision("not yet known", float("nan"), -50.0, 50.0, 0)
    low = 100 * (bounds.low - 0.5)
    high = 100 * (bounds.high - 0.5)
    for k in range(T):
        verdict = _verdict(low[k], high[k], margin, require)
        if verdict != "not yet known":
            return Decision(verdict, float(100 * (bounds.mean[k] - 0.5)), float(low[k]), float(high[k]), reads[k])
    return Decision("not yet known", float(100 * (bounds.mean[-1] - 0.5)), float(low[-1]), float(high[-1]), reads[-1])


def _verdict(
    low: float, high: float, margin: float, require: str = "better"
) -> Literal["better", "worse", "equivalent", "not better", "not worse", "not yet known"]:
    if low > margin:
        return "better"
    if high < -margin:
        return "worse"
    if margin > 0 and low > -margin and high < margin:
        return "equivalent"
    if require == "better" and margin > 0 and high < margin:
        return "not better"
    if require == "not-worse" and margin > 0 and low > -margin:
        return "not worse"
    return "not yet known"
