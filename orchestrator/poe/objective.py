"""The PoE negative log-posterior, its gradient and its Hessian, on one object.

References
----------
[PoE] §3.1 (comparative experts), §3.2 (absolute experts), §3.3 (home advantage), §4.1 (Laplace).

The posterior over scores ``s ∈ R^N`` is (PoE §3.2)

.. math:: p(s \\mid C, A) \\propto N(s; 0, λ^{-1} I) \\prod_k p(s_i - s_j - Δ \\mid C_k) \\prod_n N(μ_n; a s_n + b, σ_n^2)

The parameter vector is ``θ = [s_1..s_N, Δ?, a?, b?]``: ``Δ`` (home advantage) is present when
enabled, ``(a, b)`` (the affine link from the comparative to the absolute scale) when absolute
experts are present. The paper leaves the link implicit; we fit ``a`` and ``b`` jointly with the
scores by maximum a-posteriori estimation under weak Gaussian priors, so a Laplace covariance
exists even for degenerate data.

Every comparative expert depends on θ only through the linear form ``d = u·θ`` with
``u = e_i − e_j − e_Δ``, so its Hessian is ``c uuᵀ`` with per-expert curvature ``c`` (from
autograd): the score block is a weighted graph Laplacian, assembled with one scatter-add.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from .experts import Expert, expert_derivatives, soft_bradley_terry

__all__ = ["Observations", "PoEConfig", "NegLogPosterior"]

DTYPE = torch.float64


@dataclass(frozen=True)
class Observations:
    """Judgments as tensors; indices refer to candidates ``0..n-1``."""

    n: int
    """Number of candidates."""
    first: Tensor
    """``(K,)`` long: the candidate shown first (A) in each comparison."""
    second: Tensor
    """``(K,)`` long: the candidate shown second (B)."""
    prob: Tensor
    """``(K,)`` judge probability that the first-shown candidate is better."""
    abs_item: Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    """``(A,)`` long: candidate of each absolute judgment."""
    abs_mean: Tensor = field(default_factory=lambda: torch.zeros(0, dtype=DTYPE))
    """``(A,)`` moment-matched mean of the judge's score distribution (PoE §3.2)."""
    abs_var: Tensor = field(default_factory=lambda: torch.zeros(0, dtype=DTYPE))
    """``(A,)`` moment-matched variance (floored)."""

    @staticmethod
    def from_lists(
        n: int, comparisons: list[tuple[int, int, float]] | None = None, absolutes: list[tuple[int, float, float]] | None = None
    ) -> "Observations":
        """Build from ``(first, second, p)`` and ``(item, mean, var)`` tuples."""
        comparisons = comparisons or []
        absolutes = absolutes or []
        first = torch.tensor([c[0] for c in comparisons], dtype=torch.long)
        second = torch.tensor([c[1] for c in comparisons], dtype=torch.long)
        prob = torch.tensor([c[2] for c in comparisons], dtype=DTYPE)
        abs_item = torch.tensor([a[0] for a in absolutes], dtype=torch.long)
        abs_mean = torch.tensor([a[1] for a in absolutes], dtype=DTYPE)
        abs_var = torch.tensor([a[2] for a in absolutes], dtype=DTYPE)
        return Observations(n, first, second, prob, abs_item, abs_mean, abs_var)

    @property
    def n_comparisons(self) -> int:
        return int(self.first.numel())

    @property
    def has_absolute(self) -> bool:
        return self.abs_item.numel() > 0


@dataclass(frozen=True)
class PoEConfig:
    """Modelling choices of the PoE posterior."""

    expert: Expert = field(default_factory=soft_bradley_terry)
    """Comparative expert (see :mod:`orchestrator.poe.experts`)."""
    home_advantage: bool = False
    """Fit a position bias ``Δ`` jointly with the scores (PoE §3.3): ``d = s_i − s_j − Δ``,
    so ``Δ < 0`` means the first-shown candidate is favoured."""
    prior_precision: float = 1.0
    """Precision λ of the ``N(0, λ⁻¹ I)`` prior on scores (PoE §4.2: unit Gaussian)."""
    delta_prior_sd: float = 2.0
    """Standard deviation of the weak ``N(0, ·)`` prior on Δ (logit units)."""
    link_slope_prior: tuple[float, float] = (1.0, 2.0)
    """Mean and sd of the prior on the link slope ``a`` (absolute = a·s + b)."""
    link_intercept_prior_sd: float = 5.0
    """Sd of the prior on the intercept ``b``, centred at the mean absolute score."""

    def __post_init__(self) -> None:
        if self.prior_precision < 0:
            raise ValueError(f"prior_precision must be >= 0 (got {self.prior_precision})")
        if self.delta_prior_sd <= 0 or self.link_slope_prior[1] <= 0 or self.link_intercept_prior_sd <= 0:
            raise ValueError("prior standard deviations must be > 0")


class NegLogPosterior:
    """``−log p(θ | C, A)`` with gradient and Hessian for a fixed set of observations.

    Layout of θ: scores ``[0, n)``, then ``Δ`` at :attr:`delta_index` (if enabled), then the
    link ``(a, b)`` at :attr:`link_index` (if absolute experts are present).
    """

    def __init__(self, obs: Observations, config: PoEConfig):
        self.obs = obs
        self.config = config
        n = obs.n
        self.delta_index: int | None = n if config.home_advantage else None
        self.link_index: int | None = n + int(config.home_advantage) if obs.has_absolute else None
        self.dim = n + int(config.home_advantage) + (2 if obs.has_absolute else 0)
        self._intercept_mean = float(obs.abs_mean.mean()) if obs.has_absolute else 0.0

    def initial(self) -> Tensor:
        """A starting point: zero scores and Δ, the prior means of the link."""
        theta = torch.zeros(self.dim, dtype=DTYPE)
        if self.link_index is not None:
            theta[self.link_index] = self.config.link_slope_prior[0]
            theta[self.link_index + 1] = self._intercept_mean
        return theta

    def _differences(self, theta: Tensor) -> Tensor:
        s = theta[: self.obs.n]
        d = s[self.obs.first] - s[self.obs.second]
        if self.delta_index is not None:
            d = d - theta[self.delta_index]
        return d

    def _prior_terms(self) -> tuple[Tensor, Tensor]:
        """Precision vector and mean vector of the independent Gaussian priors on θ."""
        cfg = self.config
        precision = torch.full((self.dim,), cfg.prior_precision, dtype=DTYPE)
        mean = torch.zeros(self.dim, dtype=DTYPE)
        if self.delta_index is not None:
            precision[self.delta_index] = cfg.delta_prior_sd**-2
        if self.link_index is not None:
            li = self.link_index
            precision[li] = cfg.link_slope_prior[1] ** -2
            mean[li] = cfg.link_slope_prior[0]
            precision[li + 1] = cfg.link_intercept_prior_sd**-2
            mean[li + 1] = self._intercept_mean
        return precision, mean

    def value(self, theta: Tensor) -> Tensor:
        """``−log p(θ | C, A)`` up to a constant."""
        obs = self.obs
        precision, mean = self._prior_terms()
        value = 0.5 * (precision * (theta - mean) ** 2).sum()
        if obs.n_comparisons:
            value = value - self.config.expert.log_density(self._differences(theta), obs.prob).sum()
        if self.link_index is not None:
            a, b = theta[self.link_index], theta[self.link_index + 1]
            r = obs.abs_mean - a * theta[obs.abs_item] - b
            value = value + 0.5 * (r * r / obs.abs_var).sum()
        return value

    def value_and_grad(self, theta: Tensor) -> tuple[Tensor, Tensor]:
        """Value and gradient only (no Hessian assembly)."""
        value, grad, _ = self.evaluate(theta, hessian=False)
        return value, grad

    def evaluate(self, theta: Tensor, hessian: bool = True) -> tuple[Tensor, Tensor, Tensor | None]:
        """Value, gradient ``(P,)`` and Hessian ``(P, P)`` of ``−log p(θ | C, A)``.

        Comparative block: with per-expert derivatives ``g = ∂ log e/∂d`` and ``h = ∂² log e/∂d²``
        from autograd, ``∇ = −Σ g u`` and ``∇² = Σ (−h) u uᵀ`` for ``u = e_i − e_j − e_Δ``.
        Absolute block (Gaussian in ``(s_n, a, b)``, closed form): with ``r = μ_n − a s_n − b``
        and ``w = 1/σ_n²`` the terms are ``½ w r²``.
        """
        obs, P = self.obs, self.dim
        precision, mean = self._prior_terms()
        value = 0.5 * (precision * (theta - mean) ** 2).sum()
        grad = precision * (theta - mean)
        hess = torch.zeros(P * P if hessian else 0, dtype=DTYPE)
        if hessian:
            hess.index_add_(0, torch.arange(P) * (P + 1), precision)

        if obs.n_comparisons:
            logp, g, h = expert_derivatives(self.config.expert, self._differences(theta), obs.prob)
            value = value - logp.sum()
            c = -h
            i, j = obs.first, obs.second
            grad.index_add_(0, i, -g)
            grad.index_add_(0, j, g)
            rows = [i, j, i, j]
            cols = [i, j, j, i]
            vals = [c, c, -c, -c]
            if self.delta_index is not None:
                k = torch.full_like(i, self.delta_index)
                grad[self.delta_index] += g.sum()
                # u has +1 at i, −1 at j, −1 at Δ: H[i,Δ] = −c, H[j,Δ] = +c, H[Δ,Δ] = +c.
                rows += [i, k, j, k, k]
                cols += [k, i, k, j, k]
                vals += [-c, -c, c, c, c]
            if hessian:
                hess.index_add_(0, torch.cat(rows) * P + torch.cat(cols), torch.cat(vals))

        if self.link_index is not None:
            li = self.link_index
            a, b = theta[li], theta[li + 1]
            item = obs.abs_item
            s_item = theta[item]
            w = 1.0 / obs.abs_var
            r = obs.abs_mean - a * s_item - b
            value = value + 0.5 * (w * r * r).sum()
            grad.index_add_(0, item, -w * r * a)
            grad[li] += -(w * r * s_item).sum()
            grad[li + 1] += -(w * r).sum()
            if not hessian:
                return value, grad, None
            ka = torch.full_like(item, li)
            kb = torch.full_like(item, li + 1)
            cross_a = -w * (r - a * s_item)  # ∂²(½wr²)/∂s∂a
            cross_b = w * a
            rows = [item, item, ka, item, kb]
            cols = [item, ka, item, kb, item]
            vals = [w * a * a, cross_a, cross_a, cross_b, cross_b]
            hess.index_add_(0, torch.cat(rows) * P + torch.cat(cols), torch.cat(vals))
            block = torch.stack([(w * s_item * s_item).sum(), (w * s_item).sum(), w.sum()])
            hess.index_add_(0, torch.tensor([li * P + li, li * P + li + 1, (li + 1) * P + li, (li + 1) * P + li + 1]), block[[0, 1, 1, 2]])
        return value, grad, hess.view(P, P) if hessian else None
