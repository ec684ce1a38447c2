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
A person's pairwise verdict on two answers is Bradley–Terry on people's scores,
``P(a ≻ b) = σ(h_a − h_b)`` (the judges' scale; a tie counts ½): then ``h | labels`` is Laplace's
Gaussian (Newton on the log posterior) and the marginal likelihood Laplace's approximation.
Without labels nothing changes: the caller shows the judges' posterior.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

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


def _fit(mu: np.ndarray, cov: np.ndarray, tau: float, scored: tuple, compared: tuple, sweeps: int = 30):
    """``(mean, covariance, log marginal likelihood)`` of ``h`` at one τ: Newton on the log posterior
    (exact for scores alone, which are Gaussian; Laplace with pairwise verdicts), the scores' link
    α, β, σ re-fitted between Newton runs; the marginal likelihood by Laplace's approximation."""
    k = len(mu)
    prior = cov + tau**2 * np.eye(k)
    precision = np.linalg.inv(prior)
    idx, y = scored
    first, second, won = compared
    count = np.bincount(idx, minlength=k).astype(float)
    h, c = mu.copy(), prior
    alpha, beta, sigma2 = (float(y.mean()), 1.0, float(max(y.var(), 1e-6))) if len(y) else (0.0, 1.0, 1.0)
    hessian = precision
    for _ in range(sweeps):
        if len(y):
            design = np.stack([np.ones_like(y), h[idx]], 1)
            alpha, beta = np.linalg.lstsq(design, y, rcond=None)[0]
            beta = max(float(beta), 1e-3)  # people prefer what they score higher: the link is increasing
            residual = (y - alpha - beta * h[idx]) ** 2 + beta**2 * np.diag(c)[idx]
            sigma2 = max(float(residual.mean()), 1e-6)
        for _ in range(20):
            grad = -precision @ (h - mu)
            hessian = precision + np.diag(count * beta**2 / sigma2)
            if len(y):
                grad += np.bincount(idx, weights=beta * (y - alpha - beta * h[idx]) / sigma2, minlength=k)
            if len(won):
                p = expit(h[first] - h[second])
                grad += np.bincount(first, weights=won - p, minlength=k) - np.bincount(second, weights=won - p, minlength=k)
                w = p * (1 - p)
                np.add.at(hessian, (first, first), w)
                np.add.at(hessian, (second, second), w)
                np.add.at(hessian, (first, second), -w)
                np.add.at(hessian, (second, first), -w)
            step = np.linalg.solve(hessian, grad)
            h = h + step
            if np.abs(step).max() < 1e-10:
                break
        c = np.linalg.inv(hessian)
    log_lik = 0.0
    if len(y):
        log_lik += float(np.sum(-0.5 * np.log(2 * np.pi * sigma2) - (y - alpha - beta * h[idx]) ** 2 / (2 * sigma2)))
    if len(won):
        d = h[first] - h[second]
        log_lik += float(np.sum(-won * np.logaddexp(0, -d) - (1 - won) * np.logaddexp(0, d)))
    log_ml = log_lik - 0.5 * (h - mu) @ precision @ (h - mu) - 0.5 * np.linalg.slogdet(prior)[1] + 0.5 * np.linalg.slogdet(c)[1]
    return h, (c + c.T) / 2, float(log_ml)


def people_scores(
    mean: np.ndarray,
    cov: np.ndarray,
    candidate: np.ndarray,
    score: np.ndarray,
    *,
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    n_draws: int = 4000,
    seed: int = 0,
) -> PeopleScores | None:
    """People's scores given the judges' posterior ``N(mean, cov)``, people's scores ``score`` of
    answers of ``candidate`` (indices into ``mean``; used from three labels with two distinct values
    on two candidates: a link needs them) and pairwise verdicts ``pairs`` = ``(first, second,
    outcome)`` (indices; 1 first better, 0 second, ½ a tie); None when neither kind is usable."""
    mu, sigma = np.asarray(mean, dtype=float), np.asarray(cov, dtype=float)
    idx, y = np.asarray(candidate, dtype=int), np.asarray(score, dtype=float)
    first, second, won = (np.asarray(x) for x in (pairs if pairs is not None else ([], [], [])))
    first, second, won = first.astype(int), second.astype(int), won.astype(float)
    if not (len(y) >= 3 and np.ptp(y) > 0 and len(np.unique(idx)) >= 2):
        idx, y = idx[:0], y[:0]
    if not len(y) and not len(won):
        return None
    fits = [_fit(mu, sigma, tau, (idx, y), (first, second, won)) for tau in TAU_GRID]
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
    return PeopleScores(draws, draws.mean(0), draws.std(0), float(weights @ np.array(TAU_GRID)), len(y) + len(won))
