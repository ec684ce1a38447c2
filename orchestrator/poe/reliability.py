"""How far each judge's probabilities are to be believed (issue #17): a judge's *precision* κ_j,
estimated from how closely its probabilities follow the fitted model, weights its comparisons.

The PoE comparative expert treats a probability ``p`` like the outcome of one Bernoulli trial
(soft Bradley–Terry: ``p log σ(d) + (1−p) log σ(−d)``), so every judgment carries the information
of one coin flip whoever gives it. A judge whose probabilities are reproducible functions of the
scores (it says ½ for equals and 0.95 for a clear difference, every time) tells far more; one whose
probabilities scatter tells less. Quasi-likelihood (McCullagh & Nelder, *Generalized Linear Models*
§9) measures this by the dispersion of the Pearson residuals of judge ``j``'s judgments at the fit,

.. math:: r_k = \\frac{p_k − π_k}{\\sqrt{π_k (1 − π_k)}}, \\qquad
          φ_j = \\frac{\\sum_{k ∈ j} r_k^2 + ν}{n_j + ν}, \\qquad κ_j = \\min(1/φ_j, κ_{max}),

with ``π_k`` the expert's predicted probability at the fitted ``d_k`` (sharpness and position
bias included) and ``ν`` pseudo-judgments of the Bernoulli dispersion ``φ = 1`` as a prior, so a
judge with few judgments keeps ``κ ≈ 1``. The posterior is refitted once with every comparison's
log-density weighted by its judge's ``κ_j`` (an empirical-Bayes plug-in: the Laplace covariance
then shrinks by ``1/κ_j`` for that judge's information, as a quasi-likelihood's does).
Together with the sharpness ``t_j`` of :mod:`.objective` (which scales a judge's logits and sends a
random judge's weight to zero) this is the per-judge reliability of a panel.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import Tensor

from .laplace import Posterior, fit_laplace
from .objective import NegLogPosterior, Observations, PoEConfig

__all__ = ["PRECISION_PRIOR_WEIGHT", "MAX_PRECISION", "judge_precision", "fit_with_reliability"]

PRECISION_PRIOR_WEIGHT = 4.0
"""ν: pseudo-judgments at the Bernoulli dispersion φ = 1."""
MAX_PRECISION = 50.0
"""κ_max: a judge is worth at most this many Bernoulli trials per judgment."""


def judge_precision(
    obs: Observations, posterior: Posterior, config: PoEConfig, *, prior_weight: float = PRECISION_PRIOR_WEIGHT, cap: float = MAX_PRECISION
) -> Tensor:
    """``(J,)`` precision κ_j of every judge at the fitted ``posterior`` (module docstring)."""
    J = obs.n_judges
    judge = obs.judges_of_comparisons()
    if obs.n_comparisons == 0:
        return torch.ones(J, dtype=torch.float64)
    d = NegLogPosterior(obs, config)._differences(posterior.theta)
    pi = config.expert.predict(d).clamp(1e-6, 1 - 1e-6)
    r2 = (obs.prob - pi) ** 2 / (pi * (1 - pi))
    zeros = torch.zeros(J, dtype=torch.float64)
    phi = (zeros.index_add(0, judge, r2) + prior_weight) / (zeros.index_add(0, judge, torch.ones_like(r2)) + prior_weight)
    return (1.0 / phi).clamp(max=cap)


def fit_with_reliability(obs: Observations, config: PoEConfig, warm_start: Posterior | None = None) -> Posterior:
    """:func:`~orchestrator.poe.laplace.fit_laplace`, then (with ``config.judge_precision``) once
    more with every comparison weighted by its judge's precision; ``posterior.judges["precision"]``
    holds κ."""
    first = fit_laplace(obs, config, warm_start=warm_start)
    if not config.judge_precision or obs.n_comparisons == 0:
        return first
    kappa = judge_precision(obs, first, config)
    weighted = dataclasses.replace(obs, weight=kappa[obs.judges_of_comparisons()])
    post = fit_laplace(weighted, config, warm_start=first)
    return dataclasses.replace(post, judges={**post.judges, "precision": kappa})
