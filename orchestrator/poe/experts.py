"""Comparative and absolute experts of the product-of-experts (PoE) model.

References
----------
[PoE] Fathullah & Gales, "Generalised Probabilistic Modelling and Improved Uncertainty
Estimation in Comparative LLM-as-a-judge", §3 (``shared/papers/poe-uncertainty-comparative-judging.txt``).

A comparative expert is a log-density over the score difference ``d = s_i - s_j - Δ`` given the
judge's probability ``p`` that the first-shown candidate ``i`` is better (§3.1):

.. math::  p(d \\mid C) = f'(d)\\, \\tilde p(f(d) \\mid C)

Each expert is one small elementwise function ``log_density(d, p)``. Its first and second
derivatives in ``d`` come from torch autograd (:func:`expert_derivatives`), so adding an expert
is writing one function; the Laplace step assembles the Hessian from these per-expert curvatures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor
from torch.nn.functional import logsigmoid

from ..records.choices import EXPERT_NAMES, parse_expert_name

__all__ = [
    "Expert",
    "sigma_beta",
    "soft_bradley_terry",
    "phi_gaussian",
    "linear_gaussian",
    "get_expert",
    "EXPERT_NAMES",
    "expert_derivatives",
    "expected_curvature",
    "absolute_moments",
    "MIN_ABSOLUTE_VARIANCE",
]

_SQRT2 = math.sqrt(2.0)


@dataclass(frozen=True)
class Expert:
    """A comparative expert: an elementwise log-density over score differences."""

    name: str
    """Name used in configs and reports (``soft_bt``, ``beta:0.5,0.5``, ``ngaussian``, ``linear``)."""
    log_density: Callable[[Tensor, Tensor], Tensor]
    """``log p(d | p)`` up to a constant in ``d``; elementwise over tensors ``d`` and ``p``."""
    predict: Callable[[Tensor], Tensor]
    """The judge probability this expert expects at difference ``d`` (its mode in ``p``);
    used for the expected curvature of a comparison not yet made (diverse batches)."""
    derivatives: Callable[[Tensor, Tensor], tuple[Tensor, Tensor, Tensor]] | None = None
    """Optional closed form of ``(log p, ∂/∂d, ∂²/∂d²)``; without it autograd computes them."""


def _phi_cdf(x: Tensor) -> Tensor:
    return 0.5 * (1.0 + torch.erf(x / _SQRT2))


def sigma_beta(alpha: float = 0.0, beta: float = 0.0) -> Expert:
    """σ-Beta expert, PoE Eq. (1): ``f = σ``, ``p̃(f|C) = Beta(f; p+α, 1−p+β)``.

    With the Jacobian ``f'(d) = σ(d)σ(−d)``:

    .. math:: \\log p(d|C) = (p+α)\\log σ(d) + (1-p+β)\\log σ(-d) + \\text{const}

    ``α = β = 0`` is the soft Bradley–Terry expert of Liusie et al. (2024c).
    """
    if not (0 <= alpha < math.inf and 0 <= beta < math.inf):  # (NaN fails every comparison)
        raise ValueError(f"sigma_beta needs finite alpha, beta >= 0 (got {alpha}, {beta})")

    def log_density(d: Tensor, p: Tensor) -> Tensor:
        return (p + alpha) * logsigmoid(d) + (1.0 - p + beta) * logsigmoid(-d)

    def predict(d: Tensor) -> Tensor:
        # Mode in p of Beta-weighted sigmoid: the stationary point of the expert in d
        # satisfies σ(d) = (p+α)/(1+α+β), so the expected p at d is its inverse.
        return (torch.sigmoid(d) * (1.0 + alpha + beta) - alpha).clamp(0.0, 1.0)

    def derivatives(d: Tensor, p: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        # closed form (the two autograd passes were 40% of a posterior fit's time):
        # ∂/∂d = a σ(−d) − b σ(d), ∂²/∂d² = −(a + b) σ(d) σ(−d), with a = p + α, b = 1 − p + β
        a, b = p + alpha, 1.0 - p + beta
        s = torch.sigmoid(d)
        return a * logsigmoid(d) + b * logsigmoid(-d), a * (1.0 - s) - b * s, -(a + b) * s * (1.0 - s)

    name = "soft_bt" if alpha == 0 and beta == 0 else f"beta:{alpha:g},{beta:g}"
    return Expert(name, log_density, predict, derivatives)


def soft_bradley_terry() -> Expert:
    """Soft Bradley–Terry: ``p log σ(d) + (1−p) log σ(−d)`` (σ-Beta with α=β=0)."""
    return sigma_beta(0.0, 0.0)


def phi_gaussian() -> Expert:
    """Φ-Gaussian expert, PoE Eq. (2): ``N(d; 0, 1) · N(Φ(d); p, 1)``.

    .. math:: \\log p(d|C) = -d^2/2 - (Φ(d) - p)^2/2 + \\text{const}
    """

    def log_density(d: Tensor, p: Tensor) -> Tensor:
        return -0.5 * d * d - 0.5 * (_phi_cdf(d) - p) ** 2

    return Expert("ngaussian", log_density, _phi_cdf)


def linear_gaussian(gain: float = 4.0, scale: float = 1.0) -> Expert:
    """Linear-Gaussian expert (``f`` = identity), the Gaussian expert of Liusie et al. (2024c):

    .. math:: d \\sim N(\\text{gain}\\,(p - ½),\\ \\text{scale}^2)

    ``gain = 4`` matches the slope of ``logit(p)`` at ``p = ½`` so that near ties it agrees with
    soft Bradley–Terry (the paper leaves the mean map implicit; this choice is ours).
    """
    if scale <= 0:
        raise ValueError(f"linear_gaussian needs scale > 0 (got {scale})")

    def log_density(d: Tensor, p: Tensor) -> Tensor:
        return -0.5 * ((d - gain * (p - 0.5)) / scale) ** 2

    def predict(d: Tensor) -> Tensor:
        return (0.5 + d / gain).clamp(0.0, 1.0)

    return Expert("linear", log_density, predict)


def get_expert(name: str) -> Expert:
    """Expert by name: ``soft_bt``, ``beta:<alpha>,<beta>``, ``ngaussian`` (Φ-Gaussian), ``linear``
    (:func:`orchestrator.records.choices.parse_expert_name`).

    Raises:
        ValueError: the name is unknown or its parameters do not parse.
    """
    kind, parameters = parse_expert_name(name)
    if kind == "beta":
        return sigma_beta(*parameters)
    return {"soft_bt": soft_bradley_terry, "ngaussian": phi_gaussian, "linear": linear_gaussian}[kind]()


def expert_derivatives(expert: Expert, d: Tensor, p: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Value, first and second derivative in ``d`` of each expert's log-density.

    The log-density is elementwise in ``d``, so the gradient of its sum is the vector of
    per-expert first derivatives and the gradient of that sum the per-expert curvatures:
    two autograd passes of O(K) for K comparisons, for any expert.
    """
    if expert.derivatives is not None:
        return expert.derivatives(d.detach(), p)
    with torch.enable_grad():
        d = d.detach().requires_grad_(True)
        value = expert.log_density(d, p)
        (first,) = torch.autograd.grad(value.sum(), d, create_graph=True)
        (second,) = torch.autograd.grad(first.sum(), d)
    return value.detach(), first.detach(), second.detach()


def expected_curvature(expert: Expert, d: Tensor) -> Tensor:
    """``−∂²/∂d² log p(d | p)`` at ``p = expert.predict(d)``: the precision a comparison at
    current difference ``d`` is expected to add (used by the diverse batch)."""
    _, _, second = expert_derivatives(expert, d, expert.predict(d).detach())
    return (-second).clamp_min(0.0)


# A discrete score is only known to the nearest level: its rounding variance is 1/12. Flooring
# the moment-matched variance there keeps an over-confident judge (all mass on one level) from
# turning its absolute score into an infinitely precise expert.
MIN_ABSOLUTE_VARIANCE = 1.0 / 12.0


def absolute_moments(probs: Tensor, levels: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Moment-match a categorical score distribution to ``N(μ, σ²)`` (PoE §3.2):

    .. math:: μ = \\sum_c c\\, p_c, \\qquad σ^2 = \\sum_c (c-μ)^2 p_c

    Args:
        probs: ``(A, M)`` probabilities over the M levels (rows are normalised here).
        levels: ``(M,)`` level values; default ``1..M``.

    Returns:
        ``(μ, σ²)``, each ``(A,)``; ``σ²`` floored at :data:`MIN_ABSOLUTE_VARIANCE`.
    """
    probs = probs / probs.sum(-1, keepdim=True)
    if levels is None:
        levels = torch.arange(1, probs.shape[-1] + 1, dtype=probs.dtype)
    mean = (probs * levels).sum(-1)
    var = (probs * (levels - mean[..., None]) ** 2).sum(-1)
    return mean, var.clamp_min(MIN_ABSOLUTE_VARIANCE)
