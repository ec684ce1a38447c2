"""How far each judge's probabilities are to be believed: a judge's *precision* κ_j,
estimated from how closely its probabilities follow the fitted model, weights its comparisons.

The PoE comparative expert treats a probability ``p`` like the outcome of one Bernoulli trial
(soft Bradley–Terry: ``p log σ(d) + (1−p) log σ(−d)``), so every judgment carries the information
of one coin flip whoever gives it. A judge whose probabilities are reproducible functions of the
scores (it says ½ for equals and 0.95 for a clear difference, every time) tells far more; one whose
probabilities scatter tells less. Quasi-likelihood (McCullagh & Nelder, *Generalized Linear Models*
§9) measures this by the dispersion of the Pearson residuals of judge ``j``'s judgments at the fit,

.. math:: r_k = \\frac{p_k − π_k}{\\sqrt{π_k (1 − π_k)}}, \\qquad
          R_j = \\sum_{k ∈ j} r_k^2, \\qquad m_j = \\sum_{k ∈ j} (1 − h_k)^2,

with ``π_k`` the expert's predicted probability at the fitted ``d_k`` (sharpness and position
bias included) and ``h_k = w_k c_k \\operatorname{Var}(d_k)`` the comparison's leverage (its
weight times its expected curvature times the fitted difference's posterior variance: the diagonal
of the hat matrix ``S``). A residual's expected square is ``φ ((1 − h_k)^2 + Σ_{l≠k} S_{kl}^2)``
(the residual degrees of freedom of a penalised fit, Buja, Hastie & Tibshirani 1989); ``m_j`` leaves
out the off-diagonal terms, which need the whole ``S``. ``R_j ≈ φ_j χ²_{m_j}``, and ``log φ_j``
gets a weak normal prior around a coin's dispersion (sd :data:`PRECISION_PRIOR_SD`), so

.. math:: \\log φ_j = \\arg\\min_u \\; \\frac{m_j}{2} u + \\frac{R_j}{2} e^{−u} + \\frac{u^2}{2 s^2},
          \\qquad κ_j = \\min(1/φ_j, κ_{max}),

and a judge with no judgments keeps ``κ = 1``. Why these two corrections: the first
version read ``φ_j = (R_j + ν)/(n_j + ν)`` with ν = 4 pseudo-judgments at φ = 1, on residuals of
the unweighted fit. For a judge whose probabilities are far more reproducible than a coin's the
pseudo-judgments were the whole estimate (``κ ≈ (n + 4)/4``: 3.4 after 20 calls of the embedded
1.5B judge, whose residuals say ≈ 285), and the rank intervals spanned 11 of 16 ranks after 120
calls where the judge's ranking from the other 120 pairs agreed at Spearman 0.91; without the
leverage a fit that passes close to few judgments reads its small residuals as a precise judge
(on coin flips from the model, 16 candidates and 24 judgments, the mean φ is 0.59 without it and
0.97 with it).

The posterior is refitted with every comparison's log-density weighted by its judge's ``κ_j``,
and ``κ`` read again at the weighted fit (whose residuals, unlike the unweighted fit's, are not
inflated by the prior's pull on a precise judge's scores), up to :data:`PRECISION_REFITS` times
(an empirical-Bayes plug-in: the Laplace covariance then shrinks by ``1/κ_j`` for that judge's information, as a quasi-likelihood's does).
Together with the sharpness ``t_j`` of :mod:`.objective` (which scales a judge's logits and sends a
random judge's weight to zero) this is the per-judge reliability of a panel.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import Tensor

from .experts import Expert, expected_curvature
from .graded import fit_cuts, graded_log_probabilities, graded_rows
from .laplace import Posterior, fit_laplace, pair_variances
from .objective import NegLogPosterior, Observations, PoEConfig
from .verdicts import fit_prior_scale

__all__ = [
    "PRECISION_PRIOR_SD",
    "MAX_PRECISION",
    "PRECISION_REFITS",
    "judge_precision",
    "fit_with_reliability",
    "leverage",
    "log_dispersion",
]

PRECISION_PRIOR_SD = 3.0
"""s: prior sd of ``log φ`` around a coin's dispersion 0 (±2 s covers φ from 0.0025 to 400)."""
MAX_PRECISION = 1000.0
"""κ_max: a judge is worth at most this many Bernoulli trials per judgment (a guard against a
judge whose probabilities equal the model's: the embedded 1.5B judge's residuals say ≈ 285)."""
PRECISION_REFITS = 2
"""Times κ is read again at the weighted fit and the posterior refitted (fewer when κ moves by
under 5%)."""


def judge_precision(
    obs: Observations, posterior: Posterior, config: PoEConfig, *, prior_sd: float = PRECISION_PRIOR_SD, cap: float = MAX_PRECISION
) -> Tensor:
    """``(J,)`` precision κ_j of every judge at the fitted ``posterior`` (module docstring)."""
    J = obs.n_judges
    judge = obs.judges_of_comparisons()
    if obs.n_comparisons == 0:
        return torch.ones(J, dtype=torch.float64)
    objective = NegLogPosterior(obs, config)
    d = objective._differences(posterior.theta)
    pi = config.expert.predict(d).clamp(1e-6, 1 - 1e-6)
    variance = pi * (1 - pi)
    rows = graded_rows(obs.grades)
    if rows is not None:
        # a graded verdict's win share W (1, 1, ½, 0, 0) under the ordered-logit model: its mean and
        # variance there (a tie makes W less variable than a coin), so a judge that follows the
        # model has κ ≈ 1
        cut = objective._cut_points()[judge[rows]]
        probs = graded_log_probabilities(d[rows], cut[:, 0], cut[:, 1]).exp()
        mean = probs[:, 0] + probs[:, 1] + 0.5 * probs[:, 2]
        pi, variance = pi.clone(), variance.clone()
        pi[rows] = mean
        variance[rows] = (probs[:, 0] + probs[:, 1] + 0.25 * probs[:, 2] - mean**2).clamp_min(1e-6)
    r2 = (obs.prob - pi) ** 2 / variance
    zeros = torch.zeros(J, dtype=torch.float64)
    dof = (1.0 - leverage(obs, posterior, config.expert, d)) ** 2
    log_phi = log_dispersion(zeros.index_add(0, judge, r2), zeros.index_add(0, judge, dof), prior_sd)
    return torch.exp(-log_phi).clamp(max=cap)


def log_dispersion(residual_sum: Tensor, dof: Tensor, prior_sd: float) -> Tensor:
    """``argmin_u (m/2) u + (R/2) e^{−u} + u²/(2 s²)`` per judge (module docstring): the mode of
    ``log φ`` given ``R ≈ φ χ²_m`` and ``log φ ~ N(0, s²)``; convex, by Newton from the plain ratio."""
    u = torch.log((residual_sum + 1e-12) / (dof + 1e-12)).clamp(-12.0, 12.0)
    for _ in range(50):
        grad = dof / 2 - residual_sum / 2 * torch.exp(-u) + u / prior_sd**2
        hess = residual_sum / 2 * torch.exp(-u) + 1 / prior_sd**2
        step = grad / hess
        u = u - step.clamp(-2.0, 2.0)
        if float(step.abs().max()) < 1e-10:
            break
    return u


def leverage(obs: Observations, posterior: Posterior, expert: Expert, d: Tensor) -> Tensor:
    """``(K,)`` each comparison's leverage ``h_k = w_k c_k Var(s_i − s_j)`` at the fit (module
    docstring), in [0, 0.99]; a sparse posterior estimates the variances from its draws, and a fit
    without them (an intermediate sparse fit) counts none."""
    if posterior.cov is None and posterior.sparse is None:
        return torch.zeros_like(d)
    variance = pair_variances(posterior, obs.first, obs.second)
    weight = obs.weight if obs.weight is not None else 1.0
    return (weight * expected_curvature(expert, d.detach()) * variance).clamp(0.0, 0.99)


def fit_with_reliability(obs: Observations, config: PoEConfig, warm_start: Posterior | None = None) -> Posterior:
    """The posterior with per-judge reliability (:func:`_reliable_fit`) and, with
    :attr:`PoEConfig.empirical_prior_scale` (verdict judges), the prior's scale estimated
    (:func:`orchestrator.poe.verdicts.fit_prior_scale`) with every judge's precision held."""
    weighted, final_config, post = _reliable_fit(obs, config, warm_start)
    if not config.empirical_prior_scale or weighted.n_comparisons == 0:
        return post
    return fit_prior_scale(weighted, final_config, post)


def _reliable_fit(obs: Observations, config: PoEConfig, warm_start: Posterior | None = None) -> tuple[Observations, PoEConfig, Posterior]:
    """The posterior with per-judge reliability, with the (weighted) observations and the config
    it was fitted with:

    1. the plain fit (shared calibration, no weights) — a few Newton steps from zero;
    2. each judge's precision κ_j at that fit (module docstring);
    3. the fit again, comparisons weighted by κ_j, started from the plain one — and, for a panel
       (two judges or more), with each judge's sharpness ``t_j`` fitted in the Laplace step,
       started at its least-squares estimate ``t̂_j = Σ x logit p / Σ x²``;
    4. κ_j read again at that weighted fit and the fit repeated from it, up to
       :data:`PRECISION_REFITS` times, until κ moves by under 5%.

    A single judge's sharpness is not fitted: it only trades the scores' scale against the prior's
    and cost 10 Newton steps from a cold start where the plain model takes 4
    (``benchmarks/speed/loop_overhead.py``). No state from earlier rounds is used, so a resumed run
    plans what an uninterrupted one would. ``posterior.judges["precision"]`` holds κ.
    """
    sharp = config.judge_sharpness and obs.n_judges > 1
    obs = with_fitted_cuts(obs, config, warm_start)
    if not (sharp or config.judge_precision) or obs.n_comparisons == 0:
        plain_fit = dataclasses.replace(config, judge_sharpness=sharp)
        return obs, plain_fit, _with_cuts(obs, fit_laplace(obs, plain_fit, warm_start=warm_start))
    plain_config = dataclasses.replace(config, judge_sharpness=False)
    plain = fit_laplace(obs, plain_config, warm_start=warm_start, draws=False)  # only its mode is used
    J = obs.n_judges
    judge = obs.judges_of_comparisons()
    plain_objective = NegLogPosterior(obs, plain_config)
    x = plain_objective._linear(plain.theta)
    zeros = torch.zeros(J, dtype=torch.float64)
    kappa = torch.ones(J, dtype=torch.float64)
    if config.judge_precision:
        kappa = judge_precision(obs, plain, plain_config)
        obs = dataclasses.replace(obs, weight=kappa[judge])
    final_config = dataclasses.replace(config, judge_sharpness=sharp)
    if not sharp:
        post = fit_laplace(obs, final_config, warm_start=plain)
    else:
        logit = torch.logit(obs.prob.clamp(0.01, 0.99))
        t = (zeros.index_add(0, judge, x * logit) / zeros.index_add(0, judge, x * x).clamp_min(1e-9)).clamp(math.exp(-3.0), math.exp(3.0))
        full = NegLogPosterior(obs, final_config)
        start = full.initial()
        start[: obs.n] = plain.mean
        if full.delta_index is not None and plain_objective.delta_index is not None:
            start[full.delta_index : full.delta_index + J] = plain.theta[plain_objective.delta_index : plain_objective.delta_index + J]
        assert full.sharp_index is not None
        start[full.sharp_index : full.sharp_index + J] = t.log()
        if full.link_index is not None and plain_objective.link_index is not None:
            start[full.link_index : full.link_index + 2 * J] = plain.theta[plain_objective.link_index : plain_objective.link_index + 2 * J]
        if full.control_index is not None and plain_objective.control_index is not None:
            width = J * full.n_controls
            start[full.control_index : full.control_index + width] = plain.theta[
                plain_objective.control_index : plain_objective.control_index + width
            ]
        if full.abs_control_index is not None and plain_objective.abs_control_index is not None:
            width = J * full.n_abs_controls
            start[full.abs_control_index : full.abs_control_index + width] = plain.theta[
                plain_objective.abs_control_index : plain_objective.abs_control_index + width
            ]
        post = fit_laplace(obs, final_config, warm_start=start)
    for _ in range(PRECISION_REFITS if config.judge_precision else 0):
        again = judge_precision(obs, post, final_config)
        if torch.allclose(again, kappa, rtol=0.05):
            break
        kappa = again
        obs = dataclasses.replace(obs, weight=kappa[judge])
        post = fit_laplace(obs, final_config, warm_start=post)
    judges = {**post.judges, "precision": kappa} if config.judge_precision else post.judges
    return obs, final_config, _with_cuts(obs, dataclasses.replace(post, judges=judges))


CUT_ROUNDS = 2
"""Alternations of the scores' fit and the cut-points' (the second moves the cut-points by
< 0.01 on the simulations of ``benchmarks/selection/graded_verdicts.py``)."""


def with_fitted_cuts(obs: Observations, config: PoEConfig, warm_start: Posterior | None = None) -> Observations:
    """The observations with each judge's graded cut-points fitted (:func:`.graded.fit_cuts`),
    alternating with the plain fit of the scores from the defaults; unchanged without graded
    verdicts."""
    rows = graded_rows(obs.grades)
    if rows is None or obs.cuts is not None:
        return obs
    assert obs.grades is not None
    plain_config = dataclasses.replace(config, judge_sharpness=False)
    judge = obs.judges_of_comparisons()[rows]
    post = warm_start
    for _ in range(CUT_ROUNDS):
        post = fit_laplace(obs, plain_config, warm_start=post, draws=False)
        d = NegLogPosterior(obs, plain_config)._differences(post.theta)[rows]
        obs = dataclasses.replace(obs, cuts=fit_cuts(d, obs.grades[rows], judge, obs.n_judges))
    return obs


def _with_cuts(obs: Observations, post: Posterior) -> Posterior:
    """``posterior.judges`` with the graded cut-points ``tie_cut`` (c1) and ``strong_cut`` (c2)."""
    if obs.cuts is None:
        return post
    return dataclasses.replace(post, judges={**post.judges, "tie_cut": obs.cuts[:, 0], "strong_cut": obs.cuts[:, 1]})
