"""Judges that return verdicts, not log-probabilities: what a verdict says and how wide the
posterior must be for it.

A judge without log-probabilities (o-series, GPT-5, Claude or Gemini with thinking, any judge read
by parsing its answer) returns a *count*: of ``k`` sampled verdicts on a shown pair, ``n₁`` for the
first-shown answer, ``n₂`` for the second and ``n_t`` ties; one parsed verdict is ``k = 1``. The
record keeps ``p̄ = (n₁ + ½ n_t)/k`` with ``method`` (``verdict`` or ``samples``) and ``k``
(:class:`~orchestrator.records.judgments.Judgment`). The likelihood of the count under a
Bradley–Terry model with the judge's sharpness ``t_j`` and position bias ``Δ_j`` is binomial,

.. math:: \\log p(n_1 \\mid s) = k\\,[\\bar p \\log σ(d) + (1 − \\bar p) \\log σ(−d)] + \\text{const},
          \\qquad d = t_j (s_i − s_j − Δ_j),

which is the soft Bradley–Terry expert (PoE Eq. 1 with α = β = 0) at ``p̄`` with weight ``k``; a
tie counts half a win each way (the quasi-likelihood of the Davidson model's two decisive outcomes;
the tie propensity then enters only through the dispersion below). Two things separate a verdict
from a stated probability, and both are read from the data rather than assumed:

1. **How many trials a judgment is worth.** The per-judge precision κ_j of
   :mod:`orchestrator.poe.reliability` is the quasi-likelihood weight: for a count it comes out
   near the number of verdicts behind a comparison (≈ k for one order, ≈ 2k for a
   permutation-debiased pair whose orders are each ``k`` draws, less where the judge's verdicts
   vary with the prompt more than a binomial's). So ``k = 1`` and ``k = 64`` get the weight they
   carry, and a judge's verdicts never count for more than their own spread allows.
2. **How far apart the scores are.** A verdict moves a score far less than a confident
   log-probability does, so the scores of a verdict judge live on a much smaller scale. Under the
   fixed ``N(0, I)`` prior of PoE §4.2 the posterior then hardly shrinks the verdicts' noise, the
   posterior draws spread the candidates further than they are, and rank intervals that hold each
   pair's difference honestly still miss the ranking. The prior's scale is therefore estimated
   (type-II maximum likelihood, the evidence approximation: MacKay 1992, *Bayesian
   interpolation*, Eq. 4.9), by the fixed point of :func:`fixed_point_scale`; a single estimate
   of ``τ`` is noisy when the data are thin (and a ``τ`` too large is exactly when the intervals
   miss), so the posterior averages over it instead: each ``λ = τ⁻²`` of :data:`PRIOR_GRID`
   (τ from 1 down to 0.01, even in ``log τ``) is weighted by its Laplace evidence
   ``p(data | λ)`` (:func:`log_evidence`) times a proper prior on ``τ``, a half-Cauchy of scale 1
   (Gelman 2006; :func:`log_scale_prior`), cut at τ = 1. The prior matters because the evidence
   is flat as τ → 0 (the scores' spread is below what the verdicts resolve): under a log-uniform
   prior every decade of small ``τ`` would carry the same weight and the grid's arbitrary lower
   end would decide how wide the intervals are, while the half-Cauchy's mass below ``τ`` shrinks
   like ``τ`` and the lower end stops mattering. The rank intervals sample the mixture of the
   Laplace posteriors component by component (:class:`~orchestrator.poe.laplace.ScaleMixture`);
   everything else (reordering probabilities, selection, stopping) reads its first two moments
   (:func:`fit_prior_scale`: mean ``Σ w_λ μ_λ``, covariance ``Σ w_λ (Σ_λ + μ_λ μ_λᵀ) − μ μᵀ``).
   A sparse posterior (thousands of candidates) takes the fixed point alone. The figures behind
   these choices are in ``benchmarks/history/2026-11-27.md`` and ``2026-11-29.md``; what a
   posterior told the truth's scale reaches, in ``benchmarks/selection/verdict_scale_oracle.py``.

Log-probability judges keep the fixed prior (their scores' scale is set by their probabilities).

References
----------
[PoE] §3.1 (soft Bradley–Terry expert), §4.1 (Laplace), §4.2 (the unit Gaussian prior).
Gelman, A. (2006). Prior distributions for variance parameters in hierarchical models.
*Bayesian Analysis* 1(3), 515–534.
MacKay, D. J. C. (1992). Bayesian interpolation. *Neural Computation* 4(3), 415–447.
Davidson, R. R. (1970). On extending the Bradley–Terry model to accommodate ties in paired
comparison experiments. *JASA* 65(329), 317–328.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from .laplace import Posterior, ScaleMixture, fit_laplace, marginal_variances
from .objective import NegLogPosterior, Observations, PoEConfig

__all__ = [
    "VERDICT_METHODS",
    "PRIOR_GRID",
    "PRIOR_SCALE_ROUNDS",
    "MIN_PRIOR_PRECISION",
    "MAX_PRIOR_PRECISION",
    "MIXTURE_MIN_WEIGHT",
    "fit_prior_scale",
    "log_scale_prior",
    "fixed_point_scale",
    "log_evidence",
    "is_verdict",
]

VERDICT_METHODS = ("verdict", "samples")
"""``Judgment.method`` values whose probabilities are counts of verdicts, not stated probabilities."""
PRIOR_GRID = tuple(float(10 ** (k / 2)) for k in range(9))
"""The prior precisions λ = 1, 10^½, …, 10⁴ (τ from 1 down to 0.01) the posterior averages over."""
MIXTURE_MIN_WEIGHT = 1e-4
"""Components of the scale mixture below this weight are left out of what the rank intervals sample
(the rest renormalised): they would change a 4,000-draw interval by under one draw."""
PRIOR_SCALE_ROUNDS = 12
"""At most this many refits of the fixed point (sparse posteriors)."""
MIN_PRIOR_PRECISION = 1.0
"""λ is never below the fixed prior's: the scale is estimated only downwards (τ ≤ 1), so a verdict
judge's intervals are never narrower than under PoE's unit prior."""
MAX_PRIOR_PRECISION = 1e4
"""τ ≥ 0.01: a judge whose verdicts carry no information leaves every score near 0 and wide
intervals, never a division by zero."""


def is_verdict(method: str | None) -> bool:
    """Whether a judgment's probabilities are counts of verdicts (:data:`VERDICT_METHODS`)."""
    return method in VERDICT_METHODS


def log_evidence(obs: Observations, config: PoEConfig, posterior: Posterior) -> float:
    """Laplace approximation of ``log p(data | λ)`` at ``λ = config.prior_precision``, up to a
    constant that does not depend on λ: ``log p(data, θ̂) + ½ log det Σ_θ`` with the scores' prior
    normaliser ``(N/2) log λ`` (MacKay 1992, Eq. 4.7)."""
    assert posterior.theta_cov is not None
    value = float(NegLogPosterior(obs, config).value(posterior.theta))
    _, logdet = torch.linalg.slogdet(posterior.theta_cov)
    return -value + 0.5 * obs.n * math.log(config.prior_precision) + 0.5 * float(logdet)


def log_scale_prior(tau: float) -> float:
    """The log prior weight of a grid point at scale ``τ`` (up to a constant): the half-Cauchy(1)
    density ``2 / (π (1 + τ²))`` times the Jacobian ``τ`` of a grid even in ``log τ``."""
    return math.log(tau / (1.0 + tau * tau))


def fit_prior_scale(obs: Observations, config: PoEConfig, posterior: Posterior, *, grid: tuple[float, ...] = PRIOR_GRID) -> Posterior:
    """The posterior with the prior's scale averaged over (module docstring, item 2): a Laplace fit
    at every λ of ``grid`` (warm-started along it), weighted by its evidence times the half-Cauchy
    prior on ``τ = λ^{-1/2}``; ``mean`` and ``cov`` are the mixture's moments and ``mixture`` the
    mixture itself. The mode ``theta`` (warm starts, nuisance parameters) is the most probable λ's.
    ``posterior.judges["prior_scale"]`` holds the posterior mean of ``τ``. A sparse posterior takes
    :func:`fixed_point_scale`."""
    if posterior.cov is None or posterior.theta_cov is None:
        return fixed_point_scale(obs, config, posterior)
    fits: list[tuple[float, Posterior]] = []
    values = []
    post = posterior
    for lam in grid:
        grid_config = dataclasses.replace(config, prior_precision=lam)
        post = fit_laplace(obs, grid_config, warm_start=post)
        fits.append((lam, post))
        values.append(log_evidence(obs, grid_config, post) + log_scale_prior(lam**-0.5))
    weight = torch.softmax(torch.tensor(values, dtype=torch.float64), 0)
    mean = sum(float(w) * p.mean for w, (_, p) in zip(weight, fits))
    second = sum(float(w) * (p.dense_cov() + torch.outer(p.mean, p.mean)) for w, (_, p) in zip(weight, fits))
    assert isinstance(mean, torch.Tensor) and isinstance(second, torch.Tensor)
    cov = second - torch.outer(mean, mean)
    cov = 0.5 * (cov + cov.T)
    kept = [k for k in range(len(fits)) if float(weight[k]) >= MIXTURE_MIN_WEIGHT]
    mixture = ScaleMixture(
        weights=weight[kept] / weight[kept].sum(),
        means=torch.stack([fits[k][1].mean for k in kept]),
        covs=torch.stack([fits[k][1].dense_cov() for k in kept]),
    )
    best = fits[int(torch.argmax(weight))][1]
    tau = float(weight @ torch.tensor([lam**-0.5 for lam, _ in fits], dtype=torch.float64))
    judges = {**posterior.judges, **best.judges, "prior_scale": torch.tensor([tau], dtype=torch.float64)}
    return dataclasses.replace(best, mean=mean, cov=cov, judges=judges, mixture=mixture)


def fixed_point_scale(obs: Observations, config: PoEConfig, posterior: Posterior, *, rounds: int = PRIOR_SCALE_ROUNDS) -> Posterior:
    """The posterior refitted at the evidence fixed point ``λ ← (N − λ tr Σ)/‖μ‖²`` (MacKay 1992,
    Eq. 4.9), from ``posterior`` (fitted at ``config.prior_precision``)."""
    lam = config.prior_precision if config.prior_precision > 0 else 1.0
    post = posterior
    for _ in range(rounds):
        gamma = float(post.n - lam * marginal_variances(post).sum())
        spread = float((post.mean * post.mean).sum())
        new = min(max(max(gamma, 0.5) / max(spread, 1e-12), MIN_PRIOR_PRECISION), MAX_PRIOR_PRECISION)
        if math.isclose(new, lam, rel_tol=0.02):
            break
        lam = new
        post = fit_laplace(obs, dataclasses.replace(config, prior_precision=lam), warm_start=post)
    # the refits are plain Laplace fits: keep what the reliability fit read (precision, cut-points)
    return dataclasses.replace(
        post, judges={**posterior.judges, **post.judges, "prior_scale": torch.tensor([lam**-0.5], dtype=torch.float64)}
    )
