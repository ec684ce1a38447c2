"""A board as prior knowledge: where a new model lands on a leaderboard that already
exists, from few of its prompts.

The board's full judgments against the anchor, ``y[m, i] ∈ [0, 1]`` (model m's soft outcome on
prompt i; NaN where not judged), fit a two-parameter item-response model (2PL, as tinyBenchmarks
does for AlpacaEval):

    E[y_mi] = σ(a_i θ_m + c_i),       θ_m ~ N(0, 1),  log a_i ~ N(0, 1),  c_i ~ N(0, 3²)

(``a_i`` the prompt's discrimination, ``−c_i / a_i`` its difficulty; soft outcomes enter the
Bernoulli log-likelihood as fractional counts). It is fitted by alternating Newton steps — each
model's θ given the prompts, each prompt's ``(a, c)`` given the abilities — with the abilities
standardised after every sweep.

A new candidate judged on prompts ``S`` is placed on the board in two steps:

1. its ability ``θ̂`` by maximum a posteriori under the board's prompts, with the board's spread of
   abilities as the prior, and the model's predicted outcome ``p_i = σ(a_i θ̂ + c_i)`` on every
   prompt of the pool;
2. outside the board's range of abilities, its win rate over the pool by the **regression
   estimator** of survey sampling (model-assisted, design-based) in its finite-population form —
   the judged prompts count as they are, the others ``R`` are predicted:
   ``ŵ = (Σ_S y + |R| (ȳ_S + β (p̄_R − p̄_S))) / P``, ``β`` the least-squares slope of ``y`` on ``p``
   over ``S`` (judged on the whole pool, a candidate gets its own win rate exactly). Under random
   sampling of ``S`` it is consistent whatever the model gets wrong, and its variance
   ``s²_e / n · (1 − n / P)`` (``s_e`` the residual sd of that regression) is never larger than the
   plain mean's ``s²_y / n · (1 − n / P)`` but by the one degree of freedom the slope costs: a prompt
   model that does not fit the candidate (a model stronger than the whole board) gives ``β ≈ 0`` and
   the plain mean back.

3. within the board's range (θ̂ between the board's lowest and highest ability), the prompts of
   ``R`` are predicted by the model corrected by the mean residual, **cross-fitted** (θ from one half
   of ``S``, the residuals on the other, averaged both ways): unbiased under random prompts, and on
   AlpacaEval lower in error and better covered than step 2
   (``benchmarks/leaderboards/board_placement.py``).

The interval, in both regimes, is a score (Wilson-type) interval: the win rates ``w`` with
``(ŵ − w)² ≤ t² κ w (1 − w) (1 − n / P) / n``, where the design ratio ``κ`` — the residual variance
as a share of the Bernoulli variance ``w (1 − w)`` — is the candidate's own behind
:data:`PRIOR_PROMPTS` pseudo-prompts of the board's models of similar ability, and never below
theirs (:func:`design_ratio`; on one or two prompts, where the estimate is the plain mean, 1).
The variance is read at ``w``, not at ``ŵ``: a candidate whose few judged prompts happened to be
mostly lost does not get a narrow interval below its win rate.

``informative_order`` picks the next prompt by Fisher information ``a_i² p_i (1 − p_i)`` at ``θ̂`` —
worth it only where the candidate lies within the board's range of abilities; outside it the
product keeps random prompts (the issue's measurement: the adaptive choice was 9 points off on
models stronger than the board).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, stdtrit

__all__ = ["Board", "Placement", "cross_fitted", "fit_board", "informative_order", "kept_outcomes", "place"]

PRIOR_A_LOG_SD = 1.0
PRIOR_C_SD = 3.0
CLIP = 1e-6


@dataclass(frozen=True)
class Board:
    """The fitted board: per prompt ``a`` (discrimination) and ``c`` (intercept; difficulty ``−c/a``),
    per model ``theta`` (standardised) and its full-data ``win_rate`` (plain mean over its prompts)."""

    models: list[str]
    a: np.ndarray
    c: np.ndarray
    theta: np.ndarray
    win_rate: np.ndarray
    residual_var: np.ndarray
    """Per model: the variance of its outcomes about the 2PL prediction (the prior of a new
    candidate's residual variance, from the board's models of similar ability)."""

    def predicted(self, theta: float) -> np.ndarray:
        """``σ(a_i θ + c_i)`` on every prompt."""
        return expit(self.a * theta + self.c)


def _theta_step(y: np.ndarray, seen: np.ndarray, a: np.ndarray, c: np.ndarray, theta: np.ndarray, prior_sd: float) -> np.ndarray:
    """One Newton step of every model's ability (rows of ``y``), prompts fixed, prior N(0, prior_sd²)."""
    p = expit(theta[:, None] * a[None, :] + c[None, :])
    grad = np.where(seen, (y - p) * a[None, :], 0.0).sum(1) - theta / prior_sd**2
    hess = np.where(seen, p * (1 - p) * a[None, :] ** 2, 0.0).sum(1) + 1 / prior_sd**2
    return theta + grad / hess


def _prompt_step(y: np.ndarray, seen: np.ndarray, theta: np.ndarray, a: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One damped 2×2 Newton step of every prompt's ``(log a, c)``, abilities fixed."""
    p = expit(theta[:, None] * a[None, :] + c[None, :])
    r = np.where(seen, y - p, 0.0)
    w = np.where(seen, p * (1 - p), 0.0)
    log_a = np.log(a)
    # derivatives in (log a, c): ∂η/∂log a = a θ, ∂η/∂c = 1
    g1 = (r * theta[:, None]).sum(0) * a - log_a / PRIOR_A_LOG_SD**2
    g2 = r.sum(0) - c / PRIOR_C_SD**2
    h11 = (w * theta[:, None] ** 2).sum(0) * a**2 + 1 / PRIOR_A_LOG_SD**2
    h12 = (w * theta[:, None]).sum(0) * a
    h22 = w.sum(0) + 1 / PRIOR_C_SD**2
    det = np.maximum(h11 * h22 - h12**2, 1e-9)
    d1 = (h22 * g1 - h12 * g2) / det
    d2 = (h11 * g2 - h12 * g1) / det
    d1, d2 = np.clip(d1, -1.0, 1.0), np.clip(d2, -2.0, 2.0)  # damped: a few prompts' steps can overshoot
    return np.exp(log_a + d1), c + d2


def kept_outcomes(rows: list[list[float | None]]) -> np.ndarray:
    """A board's outcomes as a run file keeps them (JSON rows, ``null`` where not judged) as
    ``models × prompts`` with NaN."""
    return np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)


def fit_board(models: list[str], y: np.ndarray, *, sweeps: int = 60) -> Board:
    """Fit the 2PL model of the module docstring to a board (``y``: models × prompts, NaN where not
    judged; outcomes are clipped into (0, 1))."""
    seen = ~np.isnan(y)
    values = np.clip(np.where(seen, y, 0.5), 0.0, 1.0)
    win = np.where(seen, values, 0.0).sum(1) / np.maximum(seen.sum(1), 1)
    theta = (win - win.mean()) / max(float(win.std()), 1e-9)
    prompt_mean = np.clip(np.where(seen, values, 0.0).sum(0) / np.maximum(seen.sum(0), 1), 0.02, 0.98)
    a, c = np.ones(y.shape[1]), np.log(prompt_mean / (1 - prompt_mean))
    for _ in range(sweeps):
        theta = _theta_step(values, seen, a, c, theta, 1.0)
        # standardised while the abilities differ at all (models that all tie leave the scale alone:
        # dividing by a spread of ~0 drove every discrimination to 0 and its logarithm to -inf)
        shift, spread = float(theta.mean()), float(theta.std())
        scale = spread if spread > 1e-6 else 1.0
        theta = (theta - shift) / scale
        c, a = c + a * shift, a * scale  # the same predictions on the standardised scale
        a, c = _prompt_step(values, seen, theta, a, c)
    residual = np.where(seen, values - expit(theta[:, None] * a[None, :] + c[None, :]), 0.0)
    residual_var = (residual**2).sum(1) / np.maximum(seen.sum(1) - 1, 1)
    return Board(list(models), a, c, theta, win, residual_var)


PRIOR_PROMPTS = 10
"""Pseudo-prompts of the board's design ratio behind a new candidate's own (a few prompts of
skewed outcomes — a weak model's are mostly near 0 — underestimate it: intervals too narrow)."""


def prior_design_ratio(board: Board, theta: float, k: int = 5) -> float:
    """The mean design ratio (residual variance over ``w (1 − w)``) of the ``k`` board models
    nearest in ability to ``theta``."""
    win = np.clip(board.win_rate, 1e-3, 1 - 1e-3)
    nearest = np.argsort(np.abs(board.theta - theta))[:k]
    return float((board.residual_var / (win * (1 - win)))[nearest].mean())


@dataclass(frozen=True)
class Placement:
    """A new candidate on the board."""

    theta: float
    win_rate: float
    """The regression estimate of its win rate over the pool (0–1)."""
    low: float
    high: float
    plain: float
    """The plain mean of its judged outcomes."""
    slope: float
    """β of the regression estimator (≈ 1: the board's prompts predict the candidate; ≈ 0: they do not)."""
    n: int
    in_range: bool
    """θ̂ within the board's abilities (then the most informative prompt next is worth it)."""


def place(board: Board, judged: np.ndarray, outcomes: np.ndarray, *, pool: np.ndarray | None = None, level: float = 0.95) -> Placement:
    """Place a candidate judged on prompts ``judged`` (indices into the board's prompts) with soft
    ``outcomes`` (module docstring, steps 1–2); ``pool``: the prompts its win rate is over (default
    every prompt of the board)."""
    judged = np.asarray(judged, dtype=int)
    y = np.clip(np.asarray(outcomes, dtype=float), 0.0, 1.0)
    pool = np.arange(len(board.a)) if pool is None else np.asarray(pool, dtype=int)
    n = len(judged)
    theta = _map_theta(board, judged, y)  # prior N(0, 1): the board is standardised
    predicted = board.predicted(theta)
    # the pool's win rate = its judged prompts' outcomes as they are + a prediction for the rest
    # (finite population: judged on every prompt of the pool, a candidate gets its plain win rate)
    known, rest = np.isin(judged, pool), np.setdiff1d(pool, judged)
    known_sum, share_rest = float(y[known].sum()), len(rest) / max(len(pool), 1)
    p_s = predicted[judged]
    p_rest = float(predicted[rest].mean()) if len(rest) else 0.0
    plain = float(y.mean()) if n else float("nan")
    fpc = max(1.0 - n / max(len(pool), 1), 0.0)
    regression = n >= 3 and float(np.var(p_s)) > 1e-12
    # what the judged outcomes alone allow over the pool: every unjudged prompt lost, or every one won
    floor, ceiling = known_sum / max(len(pool), 1), (known_sum + len(rest)) / max(len(pool), 1)

    def over_pool(rest_mean: float) -> float:
        """The pool's win rate with the unjudged prompts' mean outcome ``rest_mean`` — itself a share
        in [0, 1] (a steep slope on few prompts can predict a negative one)."""
        return known_sum / max(len(pool), 1) + share_rest * min(max(rest_mean, 0.0), 1.0)

    if regression:
        slope = float(np.cov(p_s, y, bias=True)[0, 1] / np.var(p_s))
        estimate = over_pool(plain + slope * (p_rest - float(p_s.mean())))
        residual = y - (plain + slope * (p_s - float(p_s.mean())))
        own, df = float(residual @ residual), max(n - 2, 0)
    else:  # the plain mean: its variance is the outcomes' whole spread, which the board's residuals
        # understate (they leave out the prompts' difficulty), so its ratio is taken at the bound
        # every outcome in [0, 1] obeys, var ≤ w (1 − w)
        slope, estimate = 0.0, over_pool(plain)
        own, df = (float(np.var(y) * n), max(n - 1, 0)) if n > 1 else (0.0, 0)
    estimate = float(np.clip(estimate, 0.0, 1.0))
    in_range = bool(board.theta.min() <= theta <= board.theta.max())
    if in_range and n >= 4:  # within the board's range: the cross-fitted residual correction (step 3)
        rest_estimate, s2_own = cross_fitted(lambda train: board.predicted(_map_theta(board, judged[train], y[train])), judged, y, rest)
        estimate = over_pool(rest_estimate)
        own, df = (n - 1) * s2_own, n - 1
    kappa = design_ratio(board, theta, own, df, plain, n, prior=None if regression else 1.0)
    low, high = score_interval(estimate, kappa, n, fpc, df + PRIOR_PROMPTS, level)
    low, high = max(low, floor), min(high, ceiling)  # never beyond what the judged outcomes allow
    return Placement(theta, estimate, min(low, estimate), max(high, estimate), plain, slope, n, in_range)


def design_ratio(board: Board, theta: float, own: float, df: int, plain: float, n: int, *, prior: float | None = None) -> float:
    """The candidate's residual variance as a share ``κ`` of the Bernoulli variance ``w (1 − w)`` at
    its win rate: its own (residual sum of squares ``own`` on ``df`` degrees of freedom, over the
    variance at its plain mean) behind :data:`PRIOR_PROMPTS` pseudo-prompts of the ratio of the
    board's models nearest in ability (on AlpacaEval 0.25–0.9, mostly about 0.4, at every win rate),
    and never below the latter: a few prompts misjudge the ratio low far more often than high (a
    model that wins rarely and outright shows none of its wins in 25 prompts, and its ratio, near
    1, reads as 0) — on AlpacaEval the board's weakest model was covered 0.88–0.90 of the time
    without the floor, 0.92–0.97 with it. ``prior``: a ratio to use instead of the board's."""
    mean = float(np.clip(plain, 0.5 / max(n, 1), 1 - 0.5 / max(n, 1))) if n else 0.5
    prior = prior_design_ratio(board, theta) if prior is None else prior
    return max((own / (mean * (1 - mean)) + PRIOR_PROMPTS * prior) / (df + PRIOR_PROMPTS), prior)


def score_interval(estimate: float, kappa: float, n: int, fpc: float, df: float, level: float) -> tuple[float, float]:
    """The interval of the win rates ``w`` that the estimate does not reject: ``(ŵ − w)² ≤ t² κ
    w (1 − w) fpc / n`` (Wilson's score interval with the design ratio ``κ``; ``t`` Student's on
    ``df``). A t-interval around ``ŵ`` with the sample's variance shrinks exactly when few of the
    judged prompts were won, so a model drawn unluckily low got a narrow interval below its win rate
    (on AlpacaEval 58 of 70 misses at 50 prompts were such); evaluated at ``w``, the variance grows
    toward the truth. Judged on the whole pool (``fpc = 0``) the interval is the point."""
    if n == 0:
        return 0.0, 1.0
    t = float(stdtrit(max(df, 1.0), 0.5 + level / 2))
    c2 = t * t * kappa * fpc / n
    centre = (2 * estimate + c2) / (2 * (1 + c2))
    half = np.sqrt(c2 * (c2 + 4 * estimate * (1 - estimate))) / (2 * (1 + c2))
    return max(float(centre - half), 0.0), min(float(centre + half), 1.0)


def _map_theta(board: Board, judged: np.ndarray, y: np.ndarray) -> float:
    """MAP of θ under the board's prompts ``judged`` with outcomes ``y``, prior N(0, 1)."""
    theta = 0.0
    a, c = board.a[judged], board.c[judged]
    for _ in range(30):
        p = expit(a * theta + c)
        theta += float(np.clip((((y - p) * a).sum() - theta) / ((p * (1 - p) * a**2).sum() + 1.0), -2.0, 2.0))
    return theta


def cross_fitted(predict: Callable[[np.ndarray], np.ndarray], judged: np.ndarray, y: np.ndarray, pool: np.ndarray) -> tuple[float, float]:
    """The mean outcome over ``pool`` (the prompts not judged) as a prediction plus the mean
    residual, cross-fitted: the judged prompts in two halves (alternately, in the order judged), the
    predictor fitted on one half and the residuals read on the other, the two estimates averaged.
    ``predict(train)`` takes the positions in ``judged`` of one half and returns a prediction for
    every prompt. A predictor fitted on the same prompts absorbs their residuals (the 2PL's score
    equation sets them near zero), leaving its misfit for this candidate as bias (up to a point on
    AlpacaEval); cross-fitting keeps the correction unbiased under random prompts. ``(estimate,
    residual variance)``; an empty ``pool`` gives 0 (nothing to predict)."""
    halves = [np.arange(len(judged))[k::2] for k in (0, 1)]
    estimates, residuals = [], []
    for k in (0, 1):
        train, test = halves[1 - k], halves[k]
        predicted = predict(train)
        r = y[test] - predicted[judged[test]]
        estimates.append(float(predicted[pool].mean() + r.mean()) if len(pool) else 0.0)
        residuals.append(r - r.mean())
    r = np.concatenate(residuals)
    return float(np.mean(estimates)), float(r @ r) / max(len(r) - 2, 1)


def informative_order(board: Board, theta: float, remaining: np.ndarray) -> np.ndarray:
    """``remaining`` prompts, the most informative at ``θ`` first (Fisher information ``a² p(1−p)``)."""
    p = board.predicted(theta)[remaining]
    information = board.a[remaining] ** 2 * p * (1 - p)
    return np.asarray(remaining)[np.argsort(-information, kind="stable")]
