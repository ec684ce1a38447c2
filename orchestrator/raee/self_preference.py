"""Self-preference of judges in a reference campaign: a pure function on arrays.

A judge may prefer answers of its own model family (MT-Bench's self-enhancement). In a reference
log, judge j's log-odds that candidate m beats the anchor, read from its judged prompts, is modelled
as a two-way panel with a self term,

    ℓ_jm = θ_m + b_j + γ_j · s_jm + ε_jm,   s_jm = 1[family(m) = family(j)],   ε_jm ~ N(0, v_jm),   (1)

θ_m the candidate's quality as the panel sees it, b_j the judge's leniency towards candidates
(whatever it thinks of the anchor, its own family's or not, is in b_j: it moves every candidate
alike and cannot be told apart from leniency), γ_j its self-preference, v_jm the variance of ℓ̂_jm
(delta method on the spread of the per-prompt outcomes). Weighted least squares with b_0 = 0 and a
weak N(0, PRIOR_SD²) prior on each γ_j gives θ, b, γ and their covariance in closed form. γ_j is
identified only beside a judge that has no candidate of its own family: with one judge per family
a judge's taste for its family and the family's quality trade off exactly (the same rule as the
PoE posterior's, ``model.control = ["self"]``).

The controlled log-odds are what judge j would say without its taste for its family,

    ℓ^c_jm = ℓ̂_jm − γ̂_j s_jm,   Var ≈ v_jm + s_jm Var(γ̂_j),                                    (2)

conservative: ℓ̂_jm and γ̂_j are positively correlated, so the covariance term left out would only
shrink the variance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PRIOR_SD", "SelfPreference", "logit_win_rates", "self_preference"]

PRIOR_SD = 2.0
"""Prior sd of a judge's self-preference γ_j in log-odds (weak: 2 logits moves an even match to 88%)."""


@dataclass(frozen=True)
class SelfPreference:
    """γ_j with its sd per judge (NaN for a judge with no candidate of its family), the controlled
    log-odds and their variances per (judge, candidate), and the panel's θ_m with its sd."""

    effect: np.ndarray
    effect_sd: np.ndarray
    controlled: np.ndarray
    controlled_var: np.ndarray
    quality: np.ndarray
    quality_sd: np.ndarray


def logit_win_rates(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Log-odds of the mean outcome of each row of ``y`` (candidates × prompts, NaN = not judged)
    and its variance: the delta method on the outcomes' own spread, the mean kept ½/n inside (0, 1)."""
    seen = ~np.isnan(y)
    n = seen.sum(axis=1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.nanmean(np.where(seen, y, np.nan), axis=1)
        spread = np.nanvar(np.where(seen, y, np.nan), axis=1, ddof=1) if y.shape[1] > 1 else np.full(len(y), np.nan)
    p = np.clip(p, 0.5 / np.maximum(n, 1), 1 - 0.5 / np.maximum(n, 1))
    # a row whose outcomes never vary (always won) gets the variance of a Bernoulli at its clipped mean
    spread = np.where(np.isfinite(spread) & (spread > 0), spread, p * (1 - p))
    logit = np.log(p / (1 - p))
    var = spread / np.maximum(n, 1) / (p * (1 - p)) ** 2
    bad = n < 2
    return np.where(bad, np.nan, logit), np.where(bad, np.nan, var)


def self_preference(logit: np.ndarray, var: np.ndarray, own: np.ndarray, *, prior_sd: float = PRIOR_SD) -> SelfPreference:
    """Fit Eq. (1) on judges × candidates arrays (``logit``, ``var``: NaN where a judge did not
    judge a candidate; ``own``: the candidate is of the judge's family) and return Eq. (2).

    Raises:
        ValueError: a judge's self-preference cannot be told from its family's quality (no judge
            of another family to compare with), or fewer than two judges.
    """
    judges, candidates = logit.shape
    if judges < 2:
        raise ValueError("self-preference needs at least two judges (one of no candidate's family)")
    seen = np.isfinite(logit) & np.isfinite(var) & (var > 0)
    tasted = [j for j in range(judges) if (own[j] & seen[j]).any() and (~own[j] & seen[j]).any()]
    # columns: θ (candidates), b_1.. (judges − 1; b_0 = 0), γ of the judges that have both kinds
    width = candidates + judges - 1 + len(tasted)
    rows, weights, targets = [], [], []
    for j in range(judges):
        for m in np.nonzero(seen[j])[0]:
            x = np.zeros(width)
            x[m] = 1.0
            if j > 0:
                x[candidates + j - 1] = 1.0
            if j in tasted and own[j, m]:
                x[candidates + judges - 1 + tasted.index(j)] = 1.0
            rows.append(x)
            weights.append(1.0 / var[j, m])
            targets.append(logit[j, m])
    design, w, target = np.array(rows), np.array(weights), np.array(targets)
    information = design.T @ (design * w[:, None])
    gamma_columns = np.arange(candidates + judges - 1, width)
    free = np.ones(width, dtype=bool)
    free[[m for m in range(candidates) if not seen[:, m].any()]] = False
    sub = information[np.ix_(free, free)]
    if np.linalg.matrix_rank(sub, tol=1e-9 * max(1.0, float(np.abs(sub).max()))) < int(free.sum()):
        raise ValueError(
            "a judge's self-preference cannot be told from its family's quality: judge the same candidates "
            "with a judge of no candidate's family as well"
        )
    prior = np.zeros(width)
    prior[gamma_columns] = 1.0 / prior_sd**2
    precision = information + np.diag(prior)
    beta = np.full(width, np.nan)
    cov = np.full((width, width), np.nan)
    inverse = np.linalg.inv(precision[np.ix_(free, free)])
    cov[np.ix_(free, free)] = inverse
    beta[free] = inverse @ (design[:, free].T @ (w * target))
    effect = np.full(judges, np.nan)
    effect_sd = np.full(judges, np.nan)
    for k, j in enumerate(tasted):
        effect[j] = beta[gamma_columns[k]]
        effect_sd[j] = float(np.sqrt(cov[gamma_columns[k], gamma_columns[k]]))
    shift = np.where(own, np.nan_to_num(effect)[:, None], 0.0)
    controlled = np.where(seen, logit - shift, np.nan)
    controlled_var = np.where(seen, var + np.where(own, np.nan_to_num(effect_sd)[:, None] ** 2, 0.0), np.nan)
    quality = beta[:candidates]
    quality_sd = np.sqrt(np.diag(cov)[:candidates])
    return SelfPreference(effect, effect_sd, controlled, controlled_var, quality, quality_sd)
