"""People's ranking from a PoE posterior and a few people's scores (PoE part):
pure functions on arrays.

The judges' Laplace posterior ``N(μ, Σ)`` (PoE §4.3) says where the judges would put the candidates
with unlimited calls. People's scores ``h`` differ from the judges' ``s`` by what the judges get
wrong about each candidate — a length taste, a family preference, a blind spot:

    h = s + δ,  δ ~ N(0, τ² I)          ⇒  prior  h ~ N(μ, Σ + τ² I) =: N(μ, P⁻¹).

A person's score of one of candidate c's answers, on any numeric scale, is linear in ``h_c``:

    y = α + β h_c + ε,  ε ~ N(0, σ²)    (α, β > 0, σ fitted: empirical Bayes),

so ``h | y`` is Gaussian with precision ``P + (β²/σ²) diag(n)`` and mean
``C (P μ + (β/σ²)(Σ_c y − n α))`` (``n_c`` the labels of candidate c, ``C`` the covariance). The link
α, β, σ maximises the labels' marginal likelihood at each τ (type-II maximum likelihood, α by
generalised least squares, β and σ numerically from several starts) — not re-fitted against the
current ``h``: started at the judges' mean, that alternation found β ≈ 0 whenever the judges ordered
the candidates against people and then ignored the labels, which is when they matter most. τ — how
far the judges' ranking may be from people's — is not known and the labels say little about it, so
it is averaged over :data:`TAU_GRID` (or the caller's grid: the simplex model's expected scores on
1..M use :func:`spread_grid`) with weights ∝ the labels' marginal likelihood
``y ~ N(α + β μ_c, β² (Σ + τ²I)_{cc'} + σ² I)`` (Bayesian model averaging on a flat grid). Rank
intervals come from draws of that mixture (:func:`orchestrator.poe.uncertainty.rank_intervals_from_draws`).
A person's pairwise verdict on two answers is Bradley–Terry on people's scores,
``P(a ≻ b) = σ(γ (h_a − h_b))`` (a tie counts ½; γ, the verdicts' sharpness on the judges' scale,
averaged over :data:`SHARPNESS_GRID` with τ): then ``h | labels`` is Laplace's
Gaussian (Newton on the log posterior) and the marginal likelihood Laplace's approximation.
A common τ cannot describe a panel that shares one blind spot — every judge marking one candidate
down far more than the rest: the labels then weigh small τ (the other candidates agree) and shrink
that candidate back towards the judges. So each τ also has the hypotheses "candidate c is misplaced
by ~OUTLIER_MULTIPLE spreads beyond τ" (``δ_c ~ N(0, τ² + ω²)``, prior mass :data:`OUTLIER_PRIOR` shared
over the candidates; a scale mixture, i.e. a heavy-tailed bias), each with its own link (the shared one
was fitted with the misplaced candidate pulling it), for the suspects whose scores sit far from the
judges' (:func:`_suspects`; the others' hypotheses would weigh next to nothing).
Without labels nothing changes: the caller shows the judges' posterior.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

__all__ = ["SPREAD_MULTIPLES", "TAU_GRID", "PeopleScores", "people_scores", "spread_grid"]

TAU_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
"""Candidate-specific judge bias sd τ on the score scale (logits of a Bradley–Terry judge)."""

SPREAD_MULTIPLES = (0.0, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0)
"""τ as multiples of the judges' spread (:func:`spread_grid`), log-spaced: for scores on a scale with
no fixed unit (the simplex model's expected scores; a logit is one). On that scale a linear grid
like :data:`TAU_GRID` weights large τ the labels cannot tell apart, and on the PoE logs this grid
in place of :data:`TAU_GRID` lost coverage (the figures: benchmarks/history/2026-11-29.md)."""


def judges_spread(mean: np.ndarray, cov: np.ndarray) -> float:
    """The judges' spread ``√(var(μ) + mean diag Σ)``: how far apart they put the candidates, and how
    unsure they are (1 where that is 0)."""
    return float(np.sqrt(np.var(mean) + np.clip(np.diag(cov), 0.0, None).mean())) or 1.0


def spread_grid(mean: np.ndarray, cov: np.ndarray) -> tuple[float, ...]:
    """:data:`SPREAD_MULTIPLES` × the judges' spread (:func:`judges_spread`)."""
    spread = judges_spread(mean, cov)
    return tuple(spread * multiple for multiple in SPREAD_MULTIPLES)


OUTLIER_PRIOR = 0.5
"""Prior probability that one candidate is misplaced by every judge far beyond τ."""
OUTLIER_MULTIPLE = 2.0
"""How far: the misplaced candidate's bias has sd ``√(τ² + (OUTLIER_MULTIPLE × spread)²)``
(:func:`judges_spread`)."""
OUTLIER_SCREEN = 1.0
"""A candidate is a suspect when its people's scores are this many sds from the judges' (:func:`_suspects`)."""
MAX_SUSPECTS = 4
"""At most this many suspects per τ (each costs a link fit and a posterior)."""
MAX_OUTLIER_CANDIDATES = 200
"""Above this many candidates no outlier hypotheses (each posterior costs O(K³); a ranking that
large has few labels per candidate to find one with)."""

SHARPNESS_GRID = (0.25, 0.5, 1.0, 2.0)
"""How sharply a person's verdict follows people's scores, ``P(a ≻ b) = σ(γ (h_a − h_b))``, relative
to a judge's: one person on one prompt is usually noisier than the judges' scale (γ < 1)."""


@dataclass(frozen=True)
class PeopleScores:
    draws: np.ndarray
    """``(S, K)`` draws of people's scores ``h`` from the τ-averaged posterior."""
    mean: np.ndarray
    sd: np.ndarray
    tau: float
    """The posterior mean of τ (the weights of :data:`TAU_GRID`)."""
    labels: int


def _link(
    mu: np.ndarray, prior: np.ndarray, idx: np.ndarray, y: np.ndarray, near: tuple[float, float, float] | None = None
) -> tuple[float, float, float]:
    """``(α, β, σ²)`` maximising the scores' marginal likelihood ``y ~ N(α + β μ_idx, β² P⁻¹_idx + σ² I)``
    with ``β > 0``: α in closed form (generalised least squares) for each ``(β, σ)``, those two by
    Nelder–Mead on their logarithms from a few starts (the likelihood has a flat ridge at β → 0),
    or from ``near`` alone (a link of a nearby prior)."""
    spread = float(np.std(y)) or 1.0
    # one eigendecomposition of the prior block makes every evaluation O(n): the covariance
    # β² U Λ Uᵀ + σ² I has eigenvalues β² λ + σ² on the same eigenvectors
    eigenvalues, vectors = np.linalg.eigh(prior[np.ix_(idx, idx)])
    eigenvalues = np.clip(eigenvalues, 0.0, None)
    rotated_one, rotated_y, rotated_mu = (vectors.T @ v for v in (np.ones(len(y)), y, mu[idx]))

    def profile(log_beta: float, log_sigma: float) -> tuple[float, float]:
        beta, sigma2 = np.exp(log_beta), np.exp(2 * log_sigma)
        variance = beta**2 * eigenvalues + sigma2
        target = rotated_y - beta * rotated_mu
        alpha = float((rotated_one * target / variance).sum() / (rotated_one**2 / variance).sum())
        residual = target - alpha * rotated_one
        return float(0.5 * np.log(variance).sum() + 0.5 * (residual**2 / variance).sum()), alpha

    # σ at least a thousandth of the scores' spread keeps the covariance positive definite
    bounds = [(np.log(1e-4 * spread), np.log(1e3 * spread)), (np.log(1e-3 * spread), np.log(10 * spread))]
    starts = [[np.log(beta0 * spread), np.log(sigma0 * spread)] for beta0 in (0.1, 0.5, 2.0) for sigma0 in (0.5, 1.0)]
    if near is not None:
        starts = [[np.log(near[1]), 0.5 * np.log(near[2])]]
    best = None
    for start in starts:
        found = minimize(lambda t: profile(*t)[0], start, method="Nelder-Mead", bounds=bounds, options={"xatol": 1e-5, "fatol": 1e-9})
        if best is None or found.fun < best.fun:
            best = found
    assert best is not None
    log_beta, log_sigma = (float(v) for v in best.x)
    return profile(log_beta, log_sigma)[1], float(np.exp(log_beta)), float(np.exp(2 * log_sigma))


def _suspects(mu: np.ndarray, prior: np.ndarray, link: tuple[float, float, float], idx: np.ndarray, y: np.ndarray) -> list[int]:
    """Candidates whose people's scores are far from where the judges put them: the mean of their
    scores against the link's prediction, ``z = (ȳ_c − α − β μ_c) / √(σ²/n_c + β² P⁻¹_cc)``, beyond
    :data:`OUTLIER_SCREEN`; at most :data:`MAX_SUSPECTS`, the largest ``|z|`` first. The other
    candidates' outlier hypotheses would weigh next to nothing (their labels agree with the judges)."""
    alpha, beta, sigma2 = link
    n = np.bincount(idx, minlength=len(mu))
    labelled = np.flatnonzero(n)
    mean_y = np.bincount(idx, weights=y, minlength=len(mu))[labelled] / n[labelled]
    z = (mean_y - alpha - beta * mu[labelled]) / np.sqrt(sigma2 / n[labelled] + beta**2 * np.diag(prior)[labelled])
    order = np.argsort(-np.abs(z))[:MAX_SUSPECTS]
    return [int(labelled[i]) for i in order if abs(z[i]) > OUTLIER_SCREEN]


def _fit(mu: np.ndarray, prior: np.ndarray, link: tuple[float, float, float], scored: tuple, compared: tuple, sharpness: float):
    """``(mean, covariance, log marginal likelihood)`` of ``h`` under the prior ``N(mu, prior)`` (one
    τ): Newton on the log posterior (exact for scores alone, which are Gaussian; Laplace with pairwise
    verdicts) with the scores' ``link`` from :func:`_link`; the marginal likelihood by Laplace's
    approximation."""
    k = len(mu)
    precision = np.linalg.inv(prior)
    idx, y = scored
    first, second, won = compared
    count = np.bincount(idx, minlength=k).astype(float)
    alpha, beta, sigma2 = link
    h = mu.copy()
    hessian = precision
    for _ in range(50):
        grad = -precision @ (h - mu)
        hessian = precision + np.diag(count * beta**2 / sigma2)
        if len(y):
            grad += np.bincount(idx, weights=beta * (y - alpha - beta * h[idx]) / sigma2, minlength=k)
        if len(won):
            p = expit(sharpness * (h[first] - h[second]))
            pull = sharpness * (won - p)
            grad += np.bincount(first, weights=pull, minlength=k) - np.bincount(second, weights=pull, minlength=k)
            w = sharpness**2 * p * (1 - p)
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
        d = sharpness * (h[first] - h[second])
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
    tau_grid: tuple[float, ...] = TAU_GRID,
    outliers: bool = True,
    n_draws: int = 4000,
    seed: int = 0,
) -> PeopleScores | None:
    """People's scores given the judges' posterior ``N(mean, cov)``, people's scores ``score`` of
    answers of ``candidate`` (indices into ``mean``; used from three labels with two distinct values
    on two candidates: a link needs them) and pairwise verdicts ``pairs`` = ``(first, second,
    outcome)`` (indices; 1 first better, 0 second, ½ a tie); None when neither kind is usable.
    ``outliers``: also weigh the hypotheses that one candidate is misplaced far beyond τ (module
    docstring; they need people's scores)."""
    mu, sigma = np.asarray(mean, dtype=float), np.asarray(cov, dtype=float)
    idx, y = np.asarray(candidate, dtype=int), np.asarray(score, dtype=float)
    first, second, won = (np.asarray(x) for x in (pairs if pairs is not None else ([], [], [])))
    first, second, won = first.astype(int), second.astype(int), won.astype(float)
    if len(y):
        # people's scale is arbitrary (α, β and σ absorb any affine change), so the scores are
        # standardised first: scores near the largest float (1e308) would overflow the link's fit
        y = y / np.abs(y).max() if np.abs(y).max() > 0 else y
        y = (y - y.mean()) / y.std() if y.std() > 0 else y
    if not (len(y) >= 3 and np.ptp(y) > 0 and len(np.unique(idx)) >= 2):
        idx, y = idx[:0], y[:0]
    if not len(y) and not len(won):
        return None
    gammas = SHARPNESS_GRID if len(won) else (1.0,)
    # the scores' link depends on τ only: fitted once per τ, shared by every sharpness γ
    priors = {tau: sigma + tau**2 * np.eye(len(mu)) for tau in tau_grid}
    links = {tau: _link(mu, priors[tau], idx, y) if len(y) else (0.0, 1.0, 1.0) for tau in tau_grid}
    # each τ's hypotheses: no candidate misplaced beyond τ, or one of the suspects (its labels far
    # from where the judges put it) misplaced by ~OUTLIER_MULTIPLE spreads, with its own link —
    # the shared one was fitted with the misplaced candidate pulling it
    outlier_sd = OUTLIER_MULTIPLE * judges_spread(mu, sigma)
    grid: list[tuple[float, float, np.ndarray, tuple[float, float, float], float]] = []
    for tau in tau_grid:
        hypotheses = [(priors[tau], links[tau], float(np.log1p(-OUTLIER_PRIOR)) if outliers else 0.0)]
        searched = outliers and len(y) and len(mu) <= MAX_OUTLIER_CANDIDATES
        for k in _suspects(mu, priors[tau], links[tau], idx, y) if searched else []:
            wide = priors[tau].copy()
            wide[k, k] += outlier_sd**2
            hypotheses.append((wide, _link(mu, wide, idx, y, near=links[tau]), float(np.log(OUTLIER_PRIOR / len(mu)))))
        grid += [(tau, gamma, prior, link, log_prior) for prior, link, log_prior in hypotheses for gamma in gammas]
    fits = [_fit(mu, prior, link, (idx, y), (first, second, won), gamma) for _, gamma, prior, link, _ in grid]
    log_ml = np.array([f[2] + log_prior for f, (*_, log_prior) in zip(fits, grid)])
    weights = np.exp(log_ml - log_ml.max())
    weights /= weights.sum()
    rng = np.random.default_rng(seed)
    which = rng.choice(len(grid), size=n_draws, p=weights)
    draws = np.empty((n_draws, len(mu)))
    for g, (h, c, _) in enumerate(fits):
        rows = which == g
        if rows.any():
            chol = np.linalg.cholesky(c + 1e-12 * np.eye(len(mu)))
            draws[rows] = h + rng.standard_normal((int(rows.sum()), len(mu))) @ chol.T
    return PeopleScores(draws, draws.mean(0), draws.std(0), float(weights @ np.array([tau for tau, *_ in grid])), len(y) + len(won))
