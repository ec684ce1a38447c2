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
from scipy.stats import beta as beta_dist

__all__ = ["GAMMA", "RaeeEstimate", "outcomes", "raee_estimate", "icc3k", "cohen_kappa", "kappa_factor",
           "pooled_variance", "elo"]

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


def raee_estimate(
    s: np.ndarray,
    *,
    level: float = 0.95,
    population: int | None = None,
    kappa: float | None = None,
) -> RaeeEstimate:
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
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    total = float(s.sum())
    ties = float(np.sum((s > 0) & (s < 1)))  # hard outcomes: the ½s; soft ones: every fractional outcome
    wins = float(np.sum(s == 1.0))
    a, b = total + 0.5, n - total + 0.5
    p_bar = a / (a + b)
    p_low, p_high = (float(x) for x in beta_dist.ppf([(1 - level) / 2, (1 + level) / 2], a, b))
    se_raw = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    se = se_raw
    if population is not None:
        if population < n:
            raise ValueError(f"population M = {population} is smaller than the n = {n} prompts judged")
        se *= math.sqrt((population - n) / (population - 1)) if population > 1 else 0.0
    if kappa is not None:
        se *= kappa
    return RaeeEstimate(
        n=n, wins=wins, ties=ties, losses=n - wins - ties, p_hat=total / n, p_bar=p_bar, p_low=p_low, p_high=p_high,
        elo=float(elo(p_bar)), elo_low=float(elo(p_low)), elo_high=float(elo(p_high)),
        se_p=se, se_elo=GAMMA * se / (p_bar * (1 - p_bar)), se_p_raw=se_raw,
    )


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
    pairs = [cohen_kappa(labels_by_judge[i], labels_by_judge[j])
             for i in range(len(labels_by_judge)) for j in range(i + 1, len(labels_by_judge))]
    return math.sqrt(max(0.0, float(np.mean(pairs))))


def pooled_variance(sigma2: float, rho_k: float, n_judges: int) -> float:
    """Variance of the mean over ``J`` strong judges: ``σ²(ρ_k + (1 − ρ_k)/J)`` (Eq. 9)."""
    if n_judges < 1:
        raise ValueError("need at least one judge")
    return sigma2 * (rho_k + (1.0 - rho_k) / n_judges)
