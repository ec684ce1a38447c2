"""People's ranking from a PoE posterior and a few people's scores (issue #34 item 3, PoE part):
pure functions on arrays.

The judges' Laplace posterior ``N(μ, Σ)`` (PoE §4.3) says where the judges would put the candidates
with unlimited calls. People's scores ``h`` differ from the judges' ``s`` by what the judges get
wrong about each candidate — a length taste, a family preference, a blind spot:

    h = s + δ,  δ ~ N(0, τ² I)          ⇒  prior  h ~ N(μ, Σ + τ² I) =: N(μ, P⁻¹).

A person's score of one of candidate c's answers, on any numeric scale, is linear in ``h_c``:

    y = α + β h_c + ε,  ε ~ N(0, σ²)    (α, β > 0, σ fitted: empirical Bayes, alternating),

so ``h | y`` is Gaussian with precision ``P + (β²/σ²) diag(n)`` and mean
``C (P μ + (β/σ²)(Σ_c y − n α))`` (``n_c`` the labels of candidate c, ``C`` the covariance). τ — how
far the judges' ranking may be from people's — is not known and the labels say little about it, so
it is averaged over :data:`TAU_GRID` with weights ∝ the labels' marginal likelihood
``y ~ N(α + β μ_c, β² (Σ + τ²I)_{cc'} + σ² I)`` (Bayesian model averaging on a flat grid). Rank
intervals come from draws of that mixture (:func:`orchestrator.poe.uncertainty.rank_intervals_from_draws`).
Without labels nothing changes: the caller shows the judges' posterior.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TAU_GRID", "PeopleScores", "people_scores"]

TAU_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
"""Candidate-specific judge bias sd τ on the score scale (logits of a Bradley–Terry judge)."""


@dataclass(frozen=True)
class PeopleScores:
    draws: np.ndarray
    """``(S, K)`` draws of people's scores ``h`` from the τ-averaged posterior."""
    mean: np.ndarray
    sd: np.ndarray
    tau: float
    """The posterior mean of τ (the weights of :data:`TAU_GRID`)."""
    labels: int


def _fit(mu: np.ndarray, cov: np.ndarray, idx: np.ndarray, y: np.ndarray, tau: float, sweeps: int = 30):
    """``(mean, covariance, log marginal likelihood)`` of ``h`` at one τ."""
    k = len(mu)
    prior = cov + tau**2 * np.eye(k)
    precision = np.linalg.inv(prior)
    n = np.bincount(idx, minlength=k).astype(float)
    total = np.bincount(idx, weights=y, minlength=k)
    h, c = mu.copy(), prior
    alpha, beta, sigma2 = float(y.mean()), 1.0, float(max(y.var(), 1e-6))
    for _ in range(sweeps):
        design = np.stack([np.ones_like(y), h[idx]], 1)
        alpha, beta = np.linalg.lstsq(design, y, rcond=None)[0]
        beta = max(float(beta), 1e-3)  # people prefer what they score higher: the link is increasing
        residual = (y - alpha - beta * h[idx]) ** 2 + beta**2 * np.diag(c)[idx]
        sigma2 = max(float(residual.mean()), 1e-6)
        c = np.linalg.inv(precision + np.diag(n * beta**2 / sigma2))
        h = c @ (precision @ mu + beta * (total - n * alpha) / sigma2)
    marginal = beta**2 * prior[np.ix_(idx, idx)] + sigma2 * np.eye(len(y))
    centred = y - alpha - beta * mu[idx]
    log_ml = -0.5 * (np.linalg.slogdet(marginal)[1] + centred @ np.linalg.solve(marginal, centred))
    return h, (c + c.T) / 2, float(log_ml)


def people_scores(
    mean: np.ndarray, cov: np.ndarray, candidate: np.ndarray, score: np.ndarray, *, n_draws: int = 4000, seed: int = 0
) -> PeopleScores | None:
    """People's scores given the judges' posterior ``N(mean, cov)`` and labels ``score`` of
    ``candidate`` (indices into ``mean``); None with fewer than three labels or one distinct score
    (nothing to fit a link on)."""
    mu, sigma = np.asarray(mean, dtype=float), np.asarray(cov, dtype=float)
    idx, y = np.asarray(candidate, dtype=int), np.asarray(score, dtype=float)
    if len(y) < 3 or np.ptp(y) == 0 or len(np.unique(idx)) < 2:
        return None
    fits = [_fit(mu, sigma, idx, y, tau) for tau in TAU_GRID]
    log_ml = np.array([f[2] for f in fits])
    weights = np.exp(log_ml - log_ml.max())
    weights /= weights.sum()
    rng = np.random.default_rng(seed)
    which = rng.choice(len(TAU_GRID), size=n_draws, p=weights)
    draws = np.empty((n_draws, len(mu)))
    for g, (h, c, _) in enumerate(fits):
        rows = which == g
        if rows.any():
            chol = np.linalg.cholesky(c + 1e-12 * np.eye(len(mu)))
            draws[rows] = h + rng.standard_normal((int(rows.sum()), len(mu))) @ chol.T
    return PeopleScores(draws, draws.mean(0), draws.std(0), float(weights @ np.array(TAU_GRID)), len(y))
