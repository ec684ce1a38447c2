"""A planned comparison: a group-sequential test over the engine's rounds, with Lan–DeMets
O'Brien–Fleming alpha spending, read as repeated confidence intervals.

The anytime-valid sequence of :mod:`.sequence` may be looked at after every prompt, forever. A
gate whose budget fixes the most prompts it can read in advance (``n_max``) can pay less: a
group-sequential design looks only at the ends of the engine's rounds, and spends its error
``α`` over them as the information grows (Lan & DeMets 1983). With the information fraction
``t = n / n_max`` of a look, the O'Brien–Fleming-type spending function

.. math:: α(t) = 2 \\bigl[2 − 2 Φ\\bigl(z_{1−α/4} / \\sqrt{t}\\bigr)\\bigr]

(each side spending ``α/2``) spends almost nothing early and nearly all of ``α`` at ``t = 1``, so the final look is barely
stricter than a fixed-size test's. At look ``k`` the two-sided boundary ``c_k`` solves

.. math:: P_0\\bigl(|Z_1| < c_1, …, |Z_{k−1}| < c_{k−1}, |Z_k| ≥ c_k\\bigr) = α(t_k) − α(t_{k−1})

under the canonical joint distribution of the standardised statistics (``Z_k`` at information
``t_k``, ``Cov(Z_j, Z_k) = \\sqrt{t_j / t_k}``: a Brownian motion read at the looks), computed by
the recursive numerical integration of Armitage, McPherson & Rowe (1969) as Jennison & Turnbull
(2000, ch. 19) give it. The boundaries depend only on the looks' information fractions, never on
the data, so looks at whatever counts the rounds reach are valid as long as ``n_max`` was fixed at
the start.

Read at every look, ``d̂_k ± c_k · se_k`` are *repeated confidence intervals* (Jennison & Turnbull
1989): they hold the true difference at every look at once with probability ``≥ 1 − α``, so the
decisions of :func:`~.sequence.decide` (better, worse, equivalent, not better, not worse) made on
them keep their error at ``α`` — at the planned looks only, and with the maximum fixed in advance.
``d̂_k`` is the mean outcome of the ``n_k`` prompts read, ``se_k`` its standard error with a
variance that starts with one pseudo-prompt of variance 1/12 (an outcome spread evenly over
[0, 1]: a look at identical outcomes is never read as certainty), and the boundary is read on Student's t with ``n_k − 1``
degrees of freedom at the normal boundary's tail probability; a look at fewer than
:data:`MIN_LOOK` prompts decides nothing (the normal approximation needs some data). These are
checked by simulation (``tests/run/test_compare_design.py``, ``benchmarks/validity/compare_cost.py``).

References
----------
Lan, K. K. G. & DeMets, D. L. (1983). Discrete sequential boundaries for clinical trials.
*Biometrika* 70(3), 659–663.
O'Brien, P. C. & Fleming, T. R. (1979). A multiple testing procedure for clinical trials.
*Biometrics* 35(3), 549–556.
Jennison, C. & Turnbull, B. W. (1989). Interim analyses: the repeated confidence interval approach.
*JRSS-B* 51(3), 305–361. — (2000). *Group Sequential Methods with Applications to Clinical Trials*,
Chapman & Hall, §7.2 (spending functions), ch. 19 (numerical computation).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm
from scipy.stats import t as student_t

from .sequence import SequenceBounds

__all__ = [
    "GRID_POINTS",
    "MIN_LOOK",
    "PRIOR_SPREAD",
    "obrien_fleming_spending",
    "group_sequential_bounds",
    "repeated_intervals",
    "inflation",
]

MIN_LOOK = 20
"""Prompts a look must have read before it may decide."""

PRIOR_SPREAD = 1.0 / 12.0
"""The variance of the one pseudo-prompt the intervals' variance starts with: an outcome spread
evenly over [0, 1] (a look at identical outcomes is never read as certainty)."""

GRID_POINTS = 401
"""Points of the integration grid on each look's continuation region (Simpson's rule)."""


def obrien_fleming_spending(t: np.ndarray | float, alpha: float) -> np.ndarray:
    """Lan–DeMets' O'Brien–Fleming-type spending of a two-sided test at total level ``α``: each side
    spends ``2 − 2Φ(z_{1−α/4}/√t)`` (the one-sided function at ``α/2``, as ``ldbounds`` and
    ``gsDesign``'s ``sfLDOF`` define it), so ``α(0) = 0`` and ``α(1) = α``; ``t`` is clipped to
    [0, 1] (past the planned maximum there is no error left to spend)."""
    t = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)
    side = norm.ppf(1 - alpha / 4) / np.sqrt(np.maximum(t, 1e-300))
    return np.where(t > 0, 2.0 * (2.0 - 2.0 * norm.cdf(side)), 0.0)


def _simpson(points: int, half_width: float) -> tuple[np.ndarray, np.ndarray]:
    grid = np.linspace(-half_width, half_width, points)
    weights = np.ones(points)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    return grid, weights * (grid[1] - grid[0]) / 3.0


_CACHE: dict[tuple[float, tuple[float, ...]], np.ndarray] = {}
"""Boundaries already computed, by (α, looks): every look of a run recomputes the same prefix."""
_CACHE_SIZE = 256


def group_sequential_bounds(fractions: np.ndarray, alpha: float) -> np.ndarray:
    """:func:`_bounds`, remembered (the boundaries depend on the looks' fractions and α only)."""
    key = (float(alpha), tuple(float(f) for f in np.asarray(fractions, dtype=float)))
    found = _CACHE.get(key)
    if found is None:
        found = _bounds(np.asarray(fractions, dtype=float), alpha)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = found
    return found.copy()


def _bounds(fractions: np.ndarray, alpha: float) -> np.ndarray:
    """The two-sided boundaries ``c_k`` (on the Z scale) of an O'Brien–Fleming-type design looked at
    the increasing information ``fractions`` ``t_k ∈ (0, 1]`` (module docstring). A look with no
    error left to spend (``t_k`` at 1 already, or not past the last look) gets ``inf``.

    Raises:
        ValueError: fractions not increasing or outside (0, ∞), or ``α`` outside (0, 1)."""
    t = np.asarray(fractions, dtype=float)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if t.size and (t[0] <= 0 or np.any(np.diff(t) <= 0)):
        raise ValueError("information fractions must be positive and increasing")
    spent = obrien_fleming_spending(t, alpha)
    bounds = np.full(t.size, np.inf)
    density: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (grid on S = Z√t, weights, f)
    previous, previous_spent = 0.0, 0.0
    for k, (info, total) in enumerate(zip(np.minimum(t, 1.0), spent)):
        step = info - previous
        increment = float(total - previous_spent)
        if step <= 0 or increment <= 1e-15:
            bounds[k] = np.inf  # nothing to spend here: the look cannot decide
        elif density is None:
            bounds[k] = float(norm.ppf(1 - increment / 2))
        else:
            grid, weights, f = density
            root = math.sqrt(step)

            def crossing(c: float) -> float:
                b = c * math.sqrt(info)
                tails = norm.cdf((-b - grid) / root) + norm.sf((b - grid) / root)
                return float(np.sum(weights * f * tails)) - increment

            bounds[k] = brentq(crossing, 1e-6, 60.0, xtol=1e-10) if crossing(60.0) < 0 < crossing(1e-6) else np.inf
        if np.isfinite(bounds[k]):
            # the sub-density of S_k on its continuation region, for the next look
            new_grid, new_weights = _simpson(GRID_POINTS, bounds[k] * math.sqrt(info))
            if density is None:
                f_new = norm.pdf(new_grid / math.sqrt(info)) / math.sqrt(info)
            else:
                grid, weights, f = density
                root = math.sqrt(step)
                kernel = norm.pdf((new_grid[:, None] - grid[None, :]) / root) / root
                f_new = kernel @ (weights * f)
            density = (new_grid, new_weights, f_new)
            previous, previous_spent = info, float(total)
    return bounds


def repeated_intervals(outcomes: np.ndarray, looks: list[int], max_prompts: int, alpha: float = 0.05) -> tuple[SequenceBounds, list[int]]:
    """Repeated confidence intervals (module docstring) for the mean of ``outcomes`` in [0, 1] at the
    ``looks`` (cumulative numbers of outcomes read, increasing; those beyond the outcomes are
    dropped), the information fraction of a look ``n / max_prompts``. Returns the bounds at each
    look (``mean``, ``low``, ``high`` on the outcome scale, intersected over the looks so far) and
    the looks they were read at.

    Raises:
        ValueError: outcomes outside [0, 1], ``max_prompts`` below 1, or ``α`` outside (0, 1)."""
    x = np.asarray(outcomes, dtype=float)
    if x.size and (not np.all(np.isfinite(x)) or x.min() < 0.0 or x.max() > 1.0):
        raise ValueError("outcomes must be finite numbers in [0, 1]")
    if max_prompts < 1:
        raise ValueError(f"max_prompts must be at least 1, got {max_prompts}")
    read = sorted({n for n in looks if 0 < n <= x.size})
    if not read:
        return SequenceBounds(np.zeros(0), np.zeros(0), np.zeros(0)), []
    c = group_sequential_bounds(np.array(read, dtype=float) / max_prompts, alpha)
    means, lows, highs = [], [], []
    for n, bound in zip(read, c):
        mean = float(x[:n].mean())
        variance = (PRIOR_SPREAD + float(np.sum((x[:n] - mean) ** 2))) / (n + 1)  # one pseudo-prompt
        on_t = float(student_t.isf(norm.sf(bound), n - 1)) if n > 1 and np.isfinite(bound) else np.inf
        half = (on_t if n >= MIN_LOOK else np.inf) * math.sqrt(variance / n)
        means.append(mean)
        lows.append(max(0.0, mean - half))
        highs.append(min(1.0, mean + half))
    low = np.maximum.accumulate(np.array(lows))
    high = np.minimum.accumulate(np.array(highs))
    crossed = low > high  # (only on a miss: keep the last interval there)
    if crossed.any():
        first = int(np.argmax(crossed))
        if first > 0:
            low[first:], high[first:] = low[first - 1], high[first - 1]
    return SequenceBounds(np.array(means), low, high), read


@functools.lru_cache(maxsize=64)
def inflation(looks: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """How many times a fixed-size two-sided test's prompts an O'Brien–Fleming-type design with
    ``looks`` equally spaced looks needs at most for the same ``power`` (its ``n_max / n_fixed``):
    the drift ``θ`` at which the design's power is ``power``, squared over the fixed test's."""
    fractions = np.arange(1, looks + 1) / looks
    c = group_sequential_bounds(fractions, alpha)
    fixed = norm.ppf(1 - alpha / 2) + norm.ppf(power)

    def shortfall(drift: float) -> float:
        return _power(fractions, c, drift) - power

    drift = brentq(shortfall, 0.1, 10.0, xtol=1e-8)
    return float((drift / fixed) ** 2)


def _power(fractions: np.ndarray, c: np.ndarray, drift: float) -> float:
    """P(some look crosses its upper boundary) when ``Z_k ~ N(drift √t_k, 1)`` (the lower crossings
    are negligible at any useful power), by the same recursion as the boundaries."""
    crossed = 0.0
    density = None
    previous = 0.0
    for info, bound in zip(fractions, c):
        if not np.isfinite(bound):  # a look that cannot decide: the path goes on to the next
            continue
        step = info - previous
        mean_step = drift * step  # S has drift θ per unit of information
        b = bound * math.sqrt(info)
        if density is None:
            crossed += float(norm.sf((b - mean_step) / math.sqrt(step)))
            grid, weights = _simpson(GRID_POINTS, b)
            f = norm.pdf((grid - mean_step) / math.sqrt(step)) / math.sqrt(step)
        else:
            g, w, fv = density
            root = math.sqrt(step)
            crossed += float(np.sum(w * fv * norm.sf((b - g - mean_step) / root)))
            grid, weights = _simpson(GRID_POINTS, b)
            f = (norm.pdf((grid[:, None] - g[None, :] - mean_step) / root) / root) @ (w * fv)
        density = (grid, weights, f)
        previous = info
    return crossed
