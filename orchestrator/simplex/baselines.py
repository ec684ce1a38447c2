"""The comparison methods of the simplex paper's Table 1 (App. D.3.1), on per-question scores.

All take ``scores (J, K, Q)`` (NaN = not scored) and return per-candidate estimates, higher =
better, and where the method has them, 95% rank intervals:

- **single judge**: one judge's mean score per candidate (every judge reported separately);
- **simple average**: the mean over judges of each judge's mean score (each judge weighs the same);
- **bootstrap**: the simple average with rank intervals from resampling questions with replacement
  (percentile intervals of the ranks, the population-rank bootstrap of Xie et al. 2009);
- **Bradley–Terry**: pairwise outcomes derived from the scores (for every judge and question, the
  candidate with the higher score wins, equal scores tie), fitted by maximum likelihood with the
  Rao–Kupper tie model (as in the paper), rank intervals by the question bootstrap.

Point methods have no interval: their "coverage" is the share of candidates whose point rank is the
true rank. Ranks: 1 = best; ties in an estimate share the lowest rank.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.stats import rankdata, spearmanr

__all__ = [
    "MethodResult",
    "judge_means",
    "simple_average",
    "bootstrap_average",
    "score_pairs",
    "rao_kupper",
    "bradley_terry",
    "ranks",
    "evaluate",
]


@dataclass
class MethodResult:
    name: str
    estimate: np.ndarray
    """``(K,)`` higher = better."""
    rank_low: np.ndarray | None = None
    rank_high: np.ndarray | None = None


def ranks(estimate: np.ndarray) -> np.ndarray:
    """Rank 1 = highest; ties share the lowest rank."""
    return rankdata(-np.asarray(estimate, dtype=float), method="min").astype(int)


def judge_means(scores: np.ndarray) -> np.ndarray:
    """``(J, K)`` each judge's mean score per candidate over the questions it scored."""
    with np.errstate(invalid="ignore"):
        return np.nanmean(scores, axis=2)


def simple_average(scores: np.ndarray) -> np.ndarray:
    """``(K,)`` mean over judges of the judges' mean scores."""
    with np.errstate(invalid="ignore"):
        return np.nanmean(judge_means(scores), axis=0)


def _percentile_ranks(rank_draws: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    lo = np.quantile(rank_draws, (1 - level) / 2, axis=0, method="lower")
    hi = np.quantile(rank_draws, (1 + level) / 2, axis=0, method="higher")
    return lo.astype(int), hi.astype(int)


def bootstrap_average(scores: np.ndarray, *, draws: int = 1000, level: float = 0.95, seed: int = 0) -> MethodResult:
    """Simple average with question-bootstrap rank intervals."""
    rng = np.random.default_rng(seed)
    q = scores.shape[2]
    boot = np.empty((draws, scores.shape[1]))
    for b in range(draws):
        boot[b] = simple_average(scores[:, :, rng.integers(0, q, size=q)])
    boot = np.where(np.isnan(boot), -np.inf, boot)
    lo, hi = _percentile_ranks(np.apply_along_axis(ranks, 1, boot), level)
    return MethodResult("bootstrap", simple_average(scores), lo, hi)


def score_pairs(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``wins[k, l]``: (judge, question) cases where k scored higher than l; ``ties[k, l]``: equal
    scores (symmetric). Only cases where the judge scored both count."""
    a = scores[:, :, None, :]
    b = scores[:, None, :, :]
    both = ~np.isnan(a) & ~np.isnan(b)
    wins = np.sum(both & (a > b), axis=(0, 3)).astype(float)
    ties = np.sum(both & (a == b), axis=(0, 3)).astype(float)
    np.fill_diagonal(ties, 0.0)
    return wins, ties


def rao_kupper(wins: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, float]:
    """Maximum-likelihood log-strengths (centred) and tie parameter θ > 1 of the Rao–Kupper model:
    ``P(k ≻ l) = π_k / (π_k + θπ_l)``, ``P(k = l) = (θ² − 1)π_kπ_l / ((π_k + θπ_l)(π_l + θπ_k))``.

    With ``s = log π``, ``c = log θ`` and ``A = wins + ties`` the negative log-likelihood is
    ``Σ_{k≠l} A_kl·softplus(c + s_l − s_k) − (Σ_{k<l} ties_kl)·log(θ² − 1)``; θ = 1 + eᵗ keeps θ > 1.
    A tiny ridge (1e-6) on ``s`` keeps candidates that never lose finite.
    """
    k = wins.shape[0]
    total = wins + ties
    n_ties = float(np.triu(ties, 1).sum())

    def nll(x: np.ndarray) -> tuple[float, np.ndarray]:
        s, t = x[:k], x[k]
        theta = 1.0 + math.exp(t)
        z = math.log(theta) + (s[None, :] - s[:, None])  # z[k, l] = c + s_l − s_k
        value = float(np.sum(total * np.logaddexp(0.0, z))) + 1e-6 * float(s @ s)
        g = total / (1.0 + np.exp(-z))  # A ∘ σ(z)
        grad_s = g.sum(axis=0) - g.sum(axis=1) + 2e-6 * s
        grad_t = float(g.sum()) * (1.0 - 1.0 / theta)  # dc/dt = eᵗ/θ
        if n_ties > 0:
            value -= n_ties * math.log(theta**2 - 1.0)
            grad_t -= n_ties * 2.0 * theta * math.exp(t) / (theta**2 - 1.0)
        return value, np.append(grad_s, grad_t)

    res = minimize(nll, np.zeros(k + 1), jac=True, method="L-BFGS-B")
    s = res.x[:k] - res.x[:k].mean()
    return s, 1.0 + math.exp(res.x[k])


def bradley_terry(scores: np.ndarray, *, draws: int = 200, level: float = 0.95, seed: int = 0) -> MethodResult:
    """Rao–Kupper Bradley–Terry on score-derived pairs, question-bootstrap rank intervals."""
    rng = np.random.default_rng(seed)
    q = scores.shape[2]
    estimate, _ = rao_kupper(*score_pairs(scores))
    boot = np.empty((draws, scores.shape[1]))
    for b in range(draws):
        boot[b], _ = rao_kupper(*score_pairs(scores[:, :, rng.integers(0, q, size=q)]))
    lo, hi = _percentile_ranks(np.apply_along_axis(ranks, 1, boot), level)
    return MethodResult("Bradley-Terry", estimate, lo, hi)


def evaluate(result: MethodResult, truth: np.ndarray) -> dict[str, float]:
    """Spearman of the estimate with the truth, and coverage of the true ranks (the share inside
    the rank interval, or equal to the point rank for methods without one)."""
    true_rank = ranks(truth)
    rho = float(spearmanr(result.estimate, truth).statistic)
    if result.rank_low is None:
        coverage = float(np.mean(ranks(result.estimate) == true_rank))
    else:
        coverage = float(np.mean((result.rank_low <= true_rank) & (true_rank <= result.rank_high)))
    return {"spearman": rho, "coverage": coverage}
