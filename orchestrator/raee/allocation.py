"""Where a reference campaign's next prompt pays most: pure functions on arrays.

A leaderboard campaign judges M candidates against one anchor on P prompts. Every candidate walks
the *same* seeded prompt order, so any two candidates share their first ``min(n_a, n_b)`` prompts:
their difference is a paired one, free of prompt difficulty — the property that makes "cutting the
benchmark" (one prompt subset for everybody) hard to beat. The adaptive allocation keeps it and
only decides how deep each candidate goes.

:func:`leaderboard_state` reads the judged items as a two-way table ``y[m, i] = a_m + d_i + e``
(candidate ability, prompt difficulty; alternating means with a weak prior on ``d``) and returns the
difficulty-corrected win rate of each candidate (the regression estimator of two-phase sampling,

    ŵ_m = mean_{i ∈ S_m} y[m, i] + (mean_{i ∈ S} d_i − mean_{i ∈ S_m} d_i),

S_m the prompts m answered, S all judged prompts; with every prompt judged it is the plain mean,
the official win rate), the per-prompt residual sd σ_m shrunk towards the pooled one (a candidate
with four identical outcomes is still uncertain), and n_m.

:func:`allocation_gains` is the expected value of one more prompt for each candidate: the drop of
the expected number of misordered pairs over *all* pairs (what Kendall's τ counts),

    g_m = Σ_o Φ(−|ŵ_m − ŵ_o| / s_mo) − Φ(−|ŵ_m − ŵ_o| / s'_mo),   s²_mo = v_m + v_o,

with ``v_m = σ_m² / n_m · (1 − n_m / P)`` (finite population) and ``s'`` the same with ``n_m + 1``,
plus ``width_weight`` times the drop of the candidate's own sd (the error in win-rate points the
user reads). A candidate with few prompts has a wide ``s`` and therefore a large gain: it is never
starved, the defect of the former overlap-per-width priority. With prompt categories,
:func:`slice_gains` adds the same gain on the board of the category the candidate's next prompt
belongs to (per-category leaderboards from one run).

:func:`lockstep_choice` is the default rule ("never worse than cutting the benchmark"):
every candidate whose place is still open walks the shared order at the same depth (the fixed
subset's pairing, kept exactly), and only a candidate whose place is *settled* — each neighbour
ordered beyond ``z`` standard errors of the difference, or (with a resolution) tied within it —
stops, unless its own interval is wider than the widest still open (it must not become the largest
error). With weak evidence nothing is settled and it *is* the fixed subset; on AlpacaEval it equals
the fixed subset on Kendall's τ and the largest error within noise at 5–40% of the calls, while the
``allocation_gains`` rule lost 0.02 in τ at 5% and up to 0.6 points of largest error at 20–40%, and
it reaches the simultaneous stopping claims with 78% / 60% of the calls at R = 2 / 3 where the
gains rule needed 92% / 77% (``benchmarks/leaderboards/leaderboard_budget.py``, ``stopping_claims.py``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import ndtr, ndtri, stdtrit  # not scipy.stats: reading a leaderboard imports this (0.6 s)

__all__ = [
    "WIDTH_WEIGHT",
    "WinRateIntervals",
    "allocation_gains",
    "claim_z",
    "leaderboard_state",
    "lockstep_choice",
    "prompt_sampling_variance",
    "settled_leaderboard",
    "simultaneous_half",
    "slice_gains",
    "stratified_order",
    "win_rate_intervals",
]

WIDTH_WEIGHT = 60.0
"""Weight of a candidate's own sd (win-rate units, 0–1) against the expected misordered pairs.
Measured on AlpacaEval 2.0's annotations (``benchmarks/leaderboards/leaderboard_budget.py``): 0 spends nearly
everything on crowded neighbours and doubles the largest error; 60 keeps Kendall's τ and the
largest error both at the fixed subset's."""

SETTLED_Z = 5.0
"""Without a resolution, a candidate stops getting prompts only when both neighbour gaps exceed this
many standard errors (its place is beyond doubt); with one, the stopping rule's own
:func:`claim_z` decides. Measured (AlpacaEval, 20 seeds): at the simultaneous z of 37 candidates
(3.2) the largest error at 10% of the calls was 0.6 points above the fixed subset's, at 5 within
0.1."""

PRIOR_PROMPTS = 2.0
"""Pseudo-observations of the pooled residual variance in each candidate's σ_m, and of a zero
difficulty in each prompt's d_i."""


def stratified_order(shuffled: list[str], category: dict[str, str | None], offsets: dict[str | None, float]) -> list[str]:
    """The prompts in an order whose every prefix holds each category in proportion to its size
    (proportional stratified sampling, systematic within the order): the k-th prompt of a category
    of P_c prompts (in ``shuffled``'s order) sits at ``(k + u_c) / P_c``, ``u_c`` in [0, 1) its
    ``offsets`` entry. A leaderboard cut at n prompts then has ⌊n P_c / P⌋ or ⌈n P_c / P⌉ prompts
    of every category — a per-category board is never empty by chance — and, as with any
    proportional stratification, the overall mean is at least as precise as with a plain random
    order. One category (or none): ``shuffled`` itself."""
    members: dict[str | None, list[str]] = {}
    for prompt in shuffled:
        members.setdefault(category.get(prompt), []).append(prompt)
    if len(members) < 2:
        return list(shuffled)
    position = {p: (k + offsets.get(c, 0.0)) / len(ps) for c, ps in members.items() for k, p in enumerate(ps)}
    rank = {p: r for r, p in enumerate(shuffled)}
    return sorted(shuffled, key=lambda p: (position[p], rank[p]))


def _two_way(y: np.ndarray, sweeps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """``(values, seen, n, ability, difficulty, per_prompt, overall)`` of the two-way table (module
    docstring): alternating means with :data:`PRIOR_PROMPTS` pseudo-observations of a zero difficulty."""
    seen = ~np.isnan(y)
    values = np.where(seen, y, 0.0)
    n = seen.sum(1)
    per_prompt = seen.sum(0)
    overall = values.sum() / max(seen.sum(), 1)
    ability = np.where(n > 0, values.sum(1) / np.maximum(n, 1), overall)
    difficulty = np.zeros(y.shape[1])
    for _ in range(sweeps):
        difficulty = ((values - ability[:, None]) * seen).sum(0) / (per_prompt + PRIOR_PROMPTS)
        ability = np.where(n > 0, ((values - difficulty[None, :]) * seen).sum(1) / np.maximum(n, 1), overall)
    return values, seen, n, ability, difficulty, per_prompt, float(overall)


def leaderboard_state(y: np.ndarray, *, sweeps: int = 20) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ŵ, σ, n)`` per candidate from ``y`` (candidates × prompts, outcomes in [0, 1], NaN where
    not judged); see the module docstring for the equations. A candidate with no judgment gets
    ``ŵ`` = the mean of all, ``σ`` = the pooled sd and ``n`` = 0."""
    values, seen, n, ability, difficulty, per_prompt, overall = _two_way(y, sweeps)
    judged = per_prompt > 0
    mean_difficulty = difficulty[judged].mean() if judged.any() else 0.0
    own_difficulty = (difficulty[None, :] * seen).sum(1) / np.maximum(n, 1)
    plain = np.where(n > 0, values.sum(1) / np.maximum(n, 1), overall)
    estimate = np.where(n > 0, plain + mean_difficulty - own_difficulty, overall)
    residual = np.where(seen, values - difficulty[None, :] - ability[:, None], 0.0)
    squares = (residual**2).sum(1)
    pooled = squares.sum() / max(int(seen.sum() - (n > 0).sum()), 1)
    variance = (squares + PRIOR_PROMPTS * pooled) / (np.maximum(n - 1, 0) + PRIOR_PROMPTS)
    return estimate, np.sqrt(np.maximum(variance, 1e-12)), n


def prompt_sampling_variance(y: np.ndarray, populations: np.ndarray | int, *, sweeps: int = 20) -> np.ndarray:
    """Per candidate, the variance its win rate carries from *which* prompts it was judged on:
    ``var(d) / n_m · (1 − n_m / P_m)`` beside its own ``σ_m² / n_m · (1 − n_m / P_m)`` (the paired
    differences between candidates do not carry it: it cancels). ``var(d)`` is the spread of the
    estimated difficulties less their own noise; ``populations``: each candidate's pool (or one
    pool for all).

    Why the candidate's own ``n_m`` and not the count of all judged prompts, though
    :func:`leaderboard_state` corrects ``ŵ_m`` to them: the correction is additive on the win-rate
    scale, and a model near 0 (or 1) feels a prompt's difficulty less than the board's average
    model does, so for it the correction removes only part of its prompts' luck. With ``λ_m`` its
    sensitivity to difficulty (1 for the average model), what is left is ``(1 − λ_m)`` times the
    luck of its own prompts against all judged ones, plus the luck of all judged against the pool;
    its variance is convex in ``λ_m`` and at both ends of [0, 1] at most
    ``var(d) / n_m · (1 − n_m / P_m)`` — the bound for every model less sensitive than the average,
    which the weak and the strong are. Measured (AlpacaEval, lockstep runs to the stopping rule's
    claims, ``benchmarks/leaderboards/stopping_claims.py``): the partly judged models' 95% intervals
    held their win rates 0.915 (R = 3) and 0.908 (the whole board) of the time with the count of
    all judged prompts — every miss a weak model estimated low in a run whose early prompts were
    easy — and 0.963 and 0.961 (20 seeds) with their own ``n_m``."""
    values, seen, n, ability, difficulty, per_prompt, _ = _two_way(y, sweeps)
    judged = per_prompt > 0
    count = int(judged.sum())
    populations = np.broadcast_to(np.asarray(populations, dtype=float), n.shape)
    if count < 2:
        return np.zeros(len(n))
    residual = np.where(seen, values - difficulty[None, :] - ability[:, None], 0.0)
    pooled = float((residual**2).sum()) / max(int(seen.sum() - (n > 0).sum() - count), 1)
    # the difficulties unshrunk (their prior's pseudo-observations taken out) and their own noise
    m = per_prompt[judged]
    raw = difficulty[judged] * (m + PRIOR_PROMPTS) / m
    spread = max(float(np.var(raw, ddof=1)) - float(np.mean(pooled / m)), 0.0)
    remaining = np.clip(1.0 - n / np.maximum(populations, 1.0), 0.0, 1.0)
    return np.where(n > 0, spread / np.maximum(n, 1) * remaining, 0.0)


class WinRateIntervals(NamedTuple):
    """Per candidate: the win rate, the half-width of its interval, its own sd (what differences
    carry), the prompts judged and the per-prompt residual sd."""

    estimate: np.ndarray
    half: np.ndarray
    own_sd: np.ndarray
    n: np.ndarray
    sigma: np.ndarray


def win_rate_intervals(
    y: np.ndarray, populations: np.ndarray, *, level: float = 0.95, sigma_floor: np.ndarray | None = None
) -> WinRateIntervals:
    """:func:`leaderboard_state`'s win rates with a ``level`` interval for the win rate over each
    candidate's whole pool (``populations[m]`` prompts): its own variance ``σ_m² / n_m · (1 − n_m / P_m)`` plus
    :func:`prompt_sampling_variance`, with Student's t on ``n_m − 1`` degrees of freedom (a few
    prompts make σ_m itself uncertain). The own sd alone is what differences carry. ``sigma_floor``:
    a lower bound on σ_m known from more data (a slice's few prompts cannot estimate it: with one or
    two prompts the two-way fit leaves no residual, and σ would read as 0)."""
    estimate, sigma, n = leaderboard_state(y)
    if sigma_floor is not None:
        sigma = np.maximum(sigma, sigma_floor)
    populations = np.maximum(np.asarray(populations, dtype=float), n)
    shared = prompt_sampling_variance(y, populations)
    # judged on its whole pool, a candidate's win rate is its own mean, exactly: the difficulty
    # adjustment reads the pool of every prompt, which a candidate without an answer to some lacks
    complete = (n >= populations) & (n > 0)
    if complete.any():
        values = np.where(np.isnan(y), 0.0, y)
        estimate = np.where(complete, values.sum(1) / np.maximum(n, 1), estimate)
    # the additive difficulty correction can carry a candidate judged on a few prompts past 0 or 1
    # (one won prompt that others lost read 116.7%): a win rate is a share
    estimate = np.clip(estimate, 0.0, 1.0)
    own = own_variance(sigma, n, populations)
    half = stdtrit(np.maximum(n - 1, 1), (1 + level) / 2) * np.sqrt(own + np.where(complete, 0.0, shared))
    return WinRateIntervals(estimate, half, np.sqrt(own), n, sigma)


def simultaneous_half(
    y: np.ndarray, populations: np.ndarray, *, level: float = 0.95, sigma_floor: np.ndarray | None = None
) -> np.ndarray | None:
    """Half-widths of win-rate intervals that hold all at once with ``level``: each of
    the K candidates judged on part of their pool at ``(1 − level) / K`` (Bonferroni: under any
    dependence between them); a candidate judged on its whole pool keeps its point. ``None`` when
    fewer than two are partly judged (the one interval is then the statement)."""
    n = (~np.isnan(y)).sum(1)
    partly = int(((n > 0) & (n < np.maximum(np.asarray(populations), n))).sum())
    if partly < 2:
        return None
    return win_rate_intervals(y, populations, level=1 - (1 - level) / partly, sigma_floor=sigma_floor).half


def allocation_gains(
    estimate: np.ndarray, sigma: np.ndarray, n: np.ndarray, population: np.ndarray, *, width_weight: float = WIDTH_WEIGHT
) -> np.ndarray:
    """The value of one more prompt for each candidate (module docstring); ``-inf`` where the
    candidate has answered every prompt it has (``n >= population``)."""
    n = np.asarray(n, dtype=float)
    population = np.asarray(population, dtype=float)

    now, after = own_variance(sigma, n, population), own_variance(sigma, n + 1.0, population)
    gap = np.abs(estimate[:, None] - estimate[None, :])
    tiny = 1e-12
    misorder_now = ndtr(-gap / np.sqrt(now[:, None] + now[None, :] + tiny))
    misorder_after = ndtr(-gap / np.sqrt(after[:, None] + now[None, :] + tiny))
    pairs = misorder_now - misorder_after
    np.fill_diagonal(pairs, 0.0)
    gains = pairs.sum(1) + width_weight * (np.sqrt(now) - np.sqrt(after))
    return np.where(n >= population, -np.inf, gains)


def slice_gains(
    y: np.ndarray, slices: np.ndarray, next_slice: np.ndarray, population: np.ndarray, *, width_weight: float = WIDTH_WEIGHT
) -> np.ndarray:
    """The value of one more prompt for each candidate *in the per-slice leaderboards*: a
    candidate's next prompt (its order is fixed) belongs to one slice, and there it lowers that
    slice's expected misordered pairs and widths as :func:`allocation_gains` computes them on the
    slice's columns alone (``slices[i]``: prompt i's slice; ``next_slice[m]``: the slice of m's next
    prompt, ``-1`` when none; ``population[m, s]``: m's prompts in slice s). Added to the overall
    gains with a weight, it steers the budget towards candidates whose next prompt settles a slice."""
    gains = np.zeros(y.shape[0])
    for s in np.unique(next_slice[next_slice >= 0]):
        columns = slices == s
        estimate, sigma, n = leaderboard_state(y[:, columns])
        values = allocation_gains(estimate, sigma, n, population[:, s], width_weight=width_weight)
        chosen = next_slice == s
        gains[chosen] = values[chosen]
    return gains


def claim_z(candidates: int, alpha: float = 0.05) -> float:
    """The normal quantile that makes the stopping rule's claims about a board of ``candidates``
    hold together: each of its ``candidates − 1`` neighbour claims at level
    ``α / (candidates − 1)`` (Bonferroni), so the chance that *any* claim is wrong is at most ``α``
    at the look where the run stops (a user reads "the order is settled" as one statement)."""
    return float(ndtri(1.0 - alpha / (2.0 * max(candidates - 1, 1))))


def own_variance(sigma: np.ndarray, n: np.ndarray, population: np.ndarray) -> np.ndarray:
    """``v_m = σ_m² / n_m · (1 − n_m / P_m)``: a candidate's own variance of its win rate over its pool
    (finite population; ``n_m`` floored at 1)."""
    n = np.asarray(n, dtype=float)
    return sigma**2 / np.maximum(n, 1.0) * np.clip(1.0 - n / np.maximum(np.asarray(population, dtype=float), 1.0), 0.0, 1.0)


def neighbour_claims(estimate: np.ndarray, variance: np.ndarray, z: float, resolution: float | None) -> list[tuple[int, int, str]]:
    """Each pair of neighbours ``(a, b)``, ``a`` above by ``estimate``, with its claim: ``ordered``
    (``ŵ_a − ŵ_b > z·s_ab``), ``tied`` (``|ŵ_a − ŵ_b| + z·s_ab ≤ resolution``) or ``open``;
    ``s²_ab = v_a + v_b``."""
    order = np.argsort(-estimate, kind="stable")
    claims = []
    for a, b in zip(order[:-1], order[1:]):
        gap, spread = float(estimate[a] - estimate[b]), z * float(np.sqrt(variance[a] + variance[b]))
        if gap > spread:
            claims.append((int(a), int(b), "ordered"))
        elif resolution is not None and gap + spread <= resolution:
            claims.append((int(a), int(b), "tied"))
        else:
            claims.append((int(a), int(b), "open"))
    return claims


def lockstep_choice(
    estimate: np.ndarray,
    sigma: np.ndarray,
    n: np.ndarray,
    population: np.ndarray,
    batch: int,
    *,
    z: float = SETTLED_Z,
    resolution: float | None = None,
) -> np.ndarray:
    """The candidates (indices, at most ``batch``) that get the next prompt under the lockstep rule
    of the module docstring: the open ones (unsettled, or wider than the widest unsettled one), the
    shallowest first (ties in index order). ``resolution`` on the win-rate scale (0–1)."""
    n = np.asarray(n, dtype=float)
    population = np.asarray(population, dtype=float)
    variance = own_variance(sigma, n, population)
    has_more = n < population
    settled = np.ones(len(n), dtype=bool)
    for a, b, claim in neighbour_claims(estimate, variance, z, resolution):
        if claim == "open" or n[a] <= 0 or n[b] <= 0:
            settled[a] = settled[b] = False
    open_ = ~settled & has_more
    if open_.any():
        open_ |= (variance > variance[open_].max()) & has_more
    else:
        open_ = has_more
    chosen = np.flatnonzero(open_)
    return chosen[np.argsort(n[chosen], kind="stable")][:batch]


def settled_leaderboard(
    names: list[str], estimate: np.ndarray, sigma: np.ndarray, n: np.ndarray, population: np.ndarray, resolution: float, *, z: float = 1.96
) -> list[tuple[str, str]] | None:
    """The leaderboard stopping rule: ``None`` while some neighbours are undecided, else the
    neighbour pairs treated as tied (possibly none).

    Neighbours ``a`` above ``b`` (by ``estimate``) are *ordered* when the interval of their
    difference excludes 0, ``ŵ_a − ŵ_b > z·s_ab``, and *tied* when it lies within the resolution,
    ``|ŵ_a − ŵ_b| + z·s_ab ≤ resolution`` (both on the win-rate scale 0–1), with
    ``s²_ab = v_a + v_b`` as in :func:`allocation_gains`. A candidate without a judgment keeps the
    board undecided.
    """
    if (np.asarray(n) <= 0).any():
        return None
    ties = []
    for a, b, claim in neighbour_claims(estimate, own_variance(sigma, n, population), z, resolution):
        if claim == "open":
            return None
        if claim == "tied":
            ties.append((names[a], names[b]))
    return ties
