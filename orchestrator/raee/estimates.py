"""Reference-Anchored Elo Estimation (RAEE paper, ``shared/papers/raee-reference-anchored-elo.txt``).

Pure functions on arrays. Every candidate is judged against one fixed reference; its outcomes
``S_i ∈ [0, 1]`` (1 = the candidate wins) give a Jeffreys–Beta posterior on the win probability
``p`` (Eq. 3), an Elo gap ``γ·logit(p̄)`` with ``γ = 400/ln 10`` and an interval that is the image
of the Beta quantiles (Algorithm 1), a delta-method standard error (Eq. 4) with the
finite-population correction and the κ reliability adjustment (§4, App. E.4). Judges are screened
by ICC(3, k) over k repeated runs (§2.3, Eq. 6; Shrout & Fleiss two-way mixed, consistency) and
strong judges pooled with variance ``σ²(ρ_k + (1 − ρ_k)/J)`` (Eq. 9).

Outcomes: *hard* ternary outcomes from the judge's argmax (win 1, tie ½, loss 0; the paper) or
*soft* outcomes ``P(win) + ½·P(tie)`` from the option probabilities (our extension).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import betaincinv

__all__ = [
    "GAMMA",
    "RaeeEstimate",
    "outcomes",
    "raee_arrays",
    "raee_estimate",
    "icc3k",
    "cohen_kappa",
    "kappa_factor",
    "pooled_variance",
    "elo",
    "spread_se",
    "SE_CURVE_SIZES",
    "se_calibration",
]

GAMMA = 400.0 / math.log(10.0)
"""Elo points per logit (Algorithm 1)."""


def elo(p: np.ndarray | float) -> np.ndarray | float:
    """The reporting map ``γ·g(p)`` with ``g = logit`` (§2.1)."""
    p = np.asarray(p, dtype=float)
    return GAMMA * np.log(p / (1.0 - p))


def outcomes(p_win: np.ndarray, p_tie: np.ndarray, p_loss: np.ndarray, *, soft: bool) -> np.ndarray:
    """Per-judgment outcomes ``S_i`` of the candidate against the reference.

    Hard: the judge's argmax, a tie counting ½ (Algorithm 1, step 1). Soft: ``P(win) + ½·P(tie)`` after normalising (Eq. 1).
    """
    w, t, l = (np.asarray(x, dtype=float) for x in (p_win, p_tie, p_loss))
    total = w + t + l
    if np.any(total <= 0):
        raise ValueError("every judgment needs positive option probabilities")
    if soft:
        return (w + 0.5 * t) / total
    # argmax; exact equalities resolve to the tie, then to the reference (no win by a coin flip)
    best = np.argmax(np.stack([t, l, w]), axis=0)
    return np.array([0.5, 0.0, 1.0])[best]


@dataclass(frozen=True)
class RaeeEstimate:
    """RAEE summary of one candidate (and judge) against the reference."""

    n: int
    wins: float
    """``W`` (hard outcomes) or the summed soft outcomes minus half the ties."""
    ties: float
    losses: float
    p_hat: float
    """Empirical win rate ``(W + T/2)/N``."""
    p_bar: float
    """Jeffreys-smoothed ``(W + T/2 + 1/2)/(N + 1)`` (Eq. 2)."""
    p_low: float
    p_high: float
    """Equal-tailed credible interval of ``p`` (Beta quantiles, Eq. 3)."""
    elo: float
    elo_low: float
    elo_high: float
    """Elo gap to the reference and the image of the interval (Algorithm 1)."""
    se_p: float
    """Posterior sd of ``p``: ``sqrt(ab/((a+b)²(a+b+1)))`` (Eq. 4), after FPC and κ when given."""
    se_elo: float
    """Delta method: ``γ·|g'(p̄)|·se_p`` (Eq. 4)."""
    se_p_raw: float
    """``se_p`` without corrections."""


def raee_arrays(
    total: np.ndarray, n: np.ndarray, *, level: float = 0.95, population: int | None = None, kappa: float | np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Algorithm 1 and Eq. (2)–(4) for many (candidate, judge) cells at once, from the summed
    outcomes ``total = W + T/2`` (or the summed soft outcomes) over ``n`` prompts.

    Returns arrays ``p_hat, p_bar, p_low, p_high, elo, elo_low, elo_high, se_p_raw, se_p`` (after
    FPC and κ) and ``se_elo`` (delta method on ``se_p``). ``population`` applies the finite-population
    correction ``(M − n)/(M − 1)``; ``kappa`` multiplies the SE (App. E.4).
    """
    total = np.asarray(total, dtype=float)
    n = np.asarray(n, dtype=float)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if np.any(n <= 0):
        raise ValueError("no judgments against the reference")
    a, b = total + 0.5, n - total + 0.5
    p_bar = a / (a + b)
    p_low = betaincinv(a, b, (1 - level) / 2)
    p_high = betaincinv(a, b, (1 + level) / 2)
    se_raw = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    se = se_raw.copy()
    if population is not None:
        if np.any(population < n):
            raise ValueError(f"population M = {population} is smaller than the n = {int(n.max())} prompts judged")
        se = se * (np.sqrt((population - n) / (population - 1)) if population > 1 else 0.0)
    if kappa is not None:
        se = se * kappa
    return {
        "p_hat": total / n,
        "p_bar": p_bar,
        "p_low": p_low,
        "p_high": p_high,
        "elo": elo(p_bar),
        "elo_low": elo(p_low),
        "elo_high": elo(p_high),
        "se_p_raw": se_raw,
        "se_p": se,
        "se_elo": GAMMA * se / (p_bar * (1 - p_bar)),
    }


def raee_estimate(s: np.ndarray, *, level: float = 0.95, population: int | None = None, kappa: float | None = None) -> RaeeEstimate:
    """Algorithm 1 with the uncertainty of §2.2 on outcomes ``s`` (one per prompt, in ``[0, 1]``).

    Args:
        s: outcomes (hard in {0, ½, 1}, or soft); run-averaged when a judge ran several times.
        level: credibility of the interval.
        population: size ``M`` of the prompt pool the ``n`` prompts were drawn from without
            replacement: variances times ``(M − n)/(M − 1)`` (finite-population correction).
        kappa: reliability factor (``sqrt`` of the mean pairwise Cohen's κ, :func:`kappa_factor`);
            the SE is multiplied by it (App. E.4).

    Raises:
        ValueError: no outcomes, outcomes outside [0, 1], a level outside (0, 1), or ``M < n``.
    """
    s = np.asarray(s, dtype=float)
    n = int(s.size)
    if n == 0:
        raise ValueError("no judgments against the reference")
    if not np.all(np.isfinite(s)) or s.min() < 0 or s.max() > 1:
        raise ValueError("outcomes must lie in [0, 1]")
    ties = float(np.sum((s > 0) & (s < 1)))  # hard outcomes: the ½s; soft ones: every fractional outcome
    wins = float(np.sum(s == 1.0))
    r = {
        k: float(np.ravel(v)[0])
        for k, v in raee_arrays(np.array([s.sum()]), np.array([n]), level=level, population=population, kappa=kappa).items()
    }
    return RaeeEstimate(
        n=n,
        wins=wins,
        ties=ties,
        losses=n - wins - ties,
        p_hat=r["p_hat"],
        p_bar=r["p_bar"],
        p_low=r["p_low"],
        p_high=r["p_high"],
        elo=r["elo"],
        elo_low=r["elo_low"],
        elo_high=r["elo_high"],
        se_p=r["se_p"],
        se_elo=r["se_elo"],
        se_p_raw=r["se_p_raw"],
    )


def spread_se(
    total: np.ndarray, sumsq: np.ndarray, n: np.ndarray, group: np.ndarray | None = None, prior_weight: float = 1.0
) -> np.ndarray:
    """SE of each cell's mean outcome from the outcomes' own spread: ``sqrt(s²/n)`` with ``s²`` the
    residual variance pooled over the cells of a ``group`` (one-way ANOVA), shrunk towards the
    Bernoulli variance by ``prior_weight`` pseudo-observations:
    ``s² = (Σ SS + w·mean p̄(1 − p̄)) / (Σ (n − 1) + w)`` (p̄ the Jeffreys means).

    Eq. (4)'s Beta variance ``p̄(1 − p̄)/n`` assumes win/loss outcomes; soft outcomes
    ``P(win) + ½P(tie)`` vary less (an indecisive judge's cluster near ½), so the Beta SE can
    overstate their sampling error many times over. Pooling the variance over a judge's candidates
    keeps it stable when each candidate has few prompts, and the pseudo-observation keeps a small
    sample that missed the rare outcomes (p̄ near 0 or 1) from looking certain; with many degrees
    of freedom it is the spread alone. NaN where a group has no replication and ``w = 0``.
    """
    total, sumsq, n = (np.asarray(x, dtype=float) for x in (total, sumsq, n))
    group = np.zeros(n.size, dtype=np.int64) if group is None else np.asarray(group)
    ss = np.maximum(sumsq - total**2 / n, 0.0)
    _, g = np.unique(group, return_inverse=True)
    p_bar = (total + 0.5) / (n + 1.0)
    bernoulli = np.bincount(g, weights=p_bar * (1 - p_bar)) / np.bincount(g)
    dof = np.bincount(g, weights=n - 1.0) + prior_weight
    var = (np.bincount(g, weights=ss) + prior_weight * bernoulli) / np.where(dof > 0, dof, np.nan)
    return np.sqrt(var[g] / n)


def icc3k(scores: np.ndarray) -> float:
    """ICC(3, k) of a ``(n_prompts, k_runs)`` matrix: two-way mixed, consistency, average of k
    runs (Shrout & Fleiss 1979; RAEE Eq. 6): ``(MS_rows − MS_error) / MS_rows``.

    Raises:
        ValueError: fewer than two prompts or two runs, or missing values.
    """
    x = np.asarray(scores, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        raise ValueError("ICC(3,k) needs at least 2 prompts × 2 repeated runs")
    if not np.all(np.isfinite(x)):
        raise ValueError("ICC(3,k) needs every prompt scored in every run")
    n, k = x.shape
    grand = x.mean()
    ss_rows = k * np.sum((x.mean(axis=1) - grand) ** 2)
    ss_cols = n * np.sum((x.mean(axis=0) - grand) ** 2)
    ss_error = np.sum((x - grand) ** 2) - ss_rows - ss_cols
    ms_rows = ss_rows / (n - 1)
    ms_error = ss_error / ((n - 1) * (k - 1))
    if ms_rows == 0:
        return 1.0 if ms_error == 0 else 0.0
    return float((ms_rows - ms_error) / ms_rows)


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's κ of two raters' categorical labels (e.g. hard outcomes)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.size == 0:
        raise ValueError("Cohen's kappa needs two label vectors of the same non-zero length")
    labels = np.union1d(a, b)
    observed = float(np.mean(a == b))
    expected = float(sum(np.mean(a == c) * np.mean(b == c) for c in labels))
    return 1.0 if expected == 1.0 else (observed - expected) / (1.0 - expected)


def kappa_factor(labels_by_judge: list[np.ndarray]) -> float:
    """``sqrt(mean pairwise Cohen's κ)`` across judges (App. E.4); negative means clip to 0."""
    if len(labels_by_judge) < 2:
        raise ValueError("the κ factor needs at least two judges")
    pairs = [
        cohen_kappa(labels_by_judge[i], labels_by_judge[j]) for i in range(len(labels_by_judge)) for j in range(i + 1, len(labels_by_judge))
    ]
    return math.sqrt(max(0.0, float(np.mean(pairs))))


def pooled_variance(sigma2: float, rho_k: float, n_judges: int) -> float:
    """Variance of the mean over ``J`` strong judges: ``σ²(ρ_k + (1 − ρ_k)/J)`` (Eq. 9)."""
    if n_judges < 1:
        raise ValueError("need at least one judge")
    return sigma2 * (rho_k + (1.0 - rho_k) / n_judges)


SE_CURVE_SIZES = (16, 32, 64, 128, 256)
"""Subsample sizes of the RAEE paper's analytic-vs-empirical comparison (§4, Fig. 4)."""


def se_calibration(
    s: np.ndarray,
    sizes: tuple[int, ...] = SE_CURVE_SIZES,
    *,
    draws: int = 2000,
    estimates: int = 50,
    rng: np.random.Generator | None = None,
) -> dict[int, dict[str, float]]:
    """Analytic vs empirical standard error of p̂ on one candidate's ``M`` item outcomes ``s``
    (RAEE §4, Fig. 4): for each ``n`` in ``sizes`` (``n < M``), the SD of p̂ over ``draws``
    subsamples of ``n`` items without replacement (empirical) and the Eq. (4) SE a user holding
    ``n`` items would report — raw and with the finite-population correction ``(M − n)/(M − 1)`` —
    averaged over ``estimates`` subsamples.

    ``analytic_spread_fpc`` is the SE from the outcomes' own spread (:func:`spread_se`) with the FPC.

    Returns ``{n: {"empirical", "analytic_raw", "analytic_fpc", "analytic_spread_fpc"}}``; sizes ≥ M
    and constant outcomes (no sampling variability) are left out.
    """
    s = np.asarray(s, dtype=float)
    rng = rng or np.random.default_rng(0)
    m = s.size
    out: dict[int, dict[str, float]] = {}
    if m < 2 or np.ptp(s) == 0:
        return out
    for n in sizes:
        if n >= m:
            continue
        # argsort of uniforms gives independent subsets without replacement in one vectorised call
        picks = np.argsort(rng.random((draws, m)), axis=1)[:, :n]
        empirical = float(s[picks].mean(axis=1).std(ddof=1))
        picks = np.argsort(rng.random((estimates, m)), axis=1)[:, :n]
        sub = s[picks]
        est = raee_arrays(sub.sum(axis=1), np.full(estimates, float(n)), population=m)
        spread = spread_se(sub.sum(axis=1), (sub**2).sum(axis=1), np.full(estimates, float(n)), np.arange(estimates)) * math.sqrt(
            (m - n) / (m - 1)
        )
        out[n] = {
            "empirical": empirical,
            "analytic_raw": float(est["se_p_raw"].mean()),
            "analytic_fpc": float(est["se_p"].mean()),
            "analytic_spread_fpc": float(spread.mean()),
        }
    return out
