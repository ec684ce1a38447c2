"""Laplace approximation of the PoE posterior (PoE §4.1).

.. math::
    μ = \\arg\\max_s \\log p(s \\mid C), \\qquad Σ^{-1} = -∇∇ \\log p(s \\mid C)\\big|_{μ}

The mode is found by damped Newton steps (Cholesky solves of the assembled Hessian, Armijo
backtracking, Levenberg damping where the Hessian is not positive definite), warm-started from
the previous round's parameters. The covariance of the scores is the score block of the inverse
Hessian, so Δ and the link parameters are marginalised, not fixed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .objective import DTYPE, NegLogPosterior, Observations, PoEConfig

__all__ = ["Posterior", "fit_laplace", "newton_map"]


@dataclass(frozen=True)
class Posterior:
    """Gaussian approximation ``N(mean, cov)`` of the scores, with the fitted nuisance parameters."""

    mean: Tensor
    """``(N,)`` posterior mode of the scores μ (higher is better)."""
    cov: Tensor
    """``(N, N)`` Laplace covariance Σ of the scores (Δ and link marginalised)."""
    theta: Tensor
    """Full parameter vector at the mode ``[s, Δ?, a?, b?]``; pass it back as a warm start."""
    delta: float | None
    """Fitted home advantage Δ (``d = s_i − s_j − Δ``; Δ < 0 favours the first-shown), or None."""
    delta_sd: float | None
    """Posterior standard deviation of Δ, or None."""
    link: tuple[float, float] | None
    """Fitted affine link ``(a, b)``: absolute score ≈ a·s + b; None without absolute experts."""
    n_iter: int
    """Newton iterations used."""
    converged: bool
    """Whether the gradient norm fell below tolerance."""
    n_comparisons: int
    """Number of comparative experts in the fit."""

    @property
    def n(self) -> int:
        return int(self.mean.numel())


def newton_map(
    objective: NegLogPosterior,
    theta0: Tensor | None = None,
    *,
    tol: float = 1e-7,
    max_iter: int = 100,
) -> tuple[Tensor, Tensor, int, bool]:
    """Minimise ``objective`` by damped Newton steps.

    Returns:
        ``(theta, hessian_at_theta, iterations, converged)``.
    """
    theta = objective.initial() if theta0 is None else theta0.detach().to(DTYPE).clone()
    value, grad, hess = objective.evaluate(theta)
    eye = torch.eye(objective.dim, dtype=DTYPE)
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        if float(grad.abs().max()) < tol:
            converged = True
            it -= 1
            break
        chol, _ = _damped_cholesky(hess, eye)
        step = torch.cholesky_solve(grad[:, None], chol)[:, 0]
        slope = float(grad @ step)
        t = 1.0
        while True:
            candidate = theta - t * step
            new_value = objective.value(candidate)
            if torch.isfinite(new_value) and float(new_value) <= float(value) - 1e-4 * t * slope:
                break
            t *= 0.5
            if t < 1e-12:
                break
        if t < 1e-12:
            # No decrease along the Newton direction: we are at the numerical optimum.
            converged = float(grad.abs().max()) < max(tol, 1e-5)
            break
        theta = candidate
        value, grad, hess = objective.evaluate(theta)
        if not torch.isfinite(value):
            raise FloatingPointError("PoE objective became non-finite; check the judge probabilities")
    else:
        converged = float(grad.abs().max()) < tol
    return theta, hess, it, converged


def _damped_cholesky(hess: Tensor, eye: Tensor) -> tuple[Tensor, float]:
    """Cholesky of ``hess + λI`` with the smallest λ in ``{0, 1e-6·s, 1e-5·s, ...}`` that works."""
    chol, info = torch.linalg.cholesky_ex(hess)
    if int(info) == 0:
        return chol, 0.0
    scale = float(hess.diagonal().abs().max()) or 1.0
    damping = 1e-6 * scale
    while True:
        chol, info = torch.linalg.cholesky_ex(hess + damping * eye)
        if int(info) == 0:
            return chol, damping
        damping *= 10.0
        if damping > 1e12 * scale:
            raise FloatingPointError("PoE Hessian could not be regularised")


def fit_laplace(
    obs: Observations,
    config: PoEConfig | None = None,
    warm_start: Posterior | Tensor | None = None,
    *,
    tol: float = 1e-7,
    max_iter: int = 100,
) -> Posterior:
    """Laplace approximation ``N(μ, Σ)`` of the PoE posterior (PoE §4.1).

    Args:
        obs: the comparative and absolute judgments.
        config: expert and priors; default soft Bradley–Terry with a unit Gaussian prior.
        warm_start: a previous :class:`Posterior` (or parameter vector) to start Newton from;
            parameters it lacks (e.g. the link, once absolute experts appear) start at their prior.
        tol: convergence tolerance on the max-norm of the gradient.

    Returns:
        The :class:`Posterior`. With no observations it is the prior.
    """
    config = config or PoEConfig()
    objective = NegLogPosterior(obs, config)
    theta0 = objective.initial()
    if warm_start is not None:
        prev = warm_start.theta if isinstance(warm_start, Posterior) else warm_start
        prev_n = warm_start.n if isinstance(warm_start, Posterior) else obs.n
        m = min(prev_n, obs.n)
        theta0[:m] = prev[:m]
        if objective.delta_index is not None and isinstance(warm_start, Posterior) and warm_start.delta is not None:
            theta0[objective.delta_index] = warm_start.delta
        if objective.link_index is not None and isinstance(warm_start, Posterior) and warm_start.link is not None:
            theta0[objective.link_index : objective.link_index + 2] = torch.tensor(warm_start.link, dtype=DTYPE)
    theta, hess, n_iter, converged = newton_map(objective, theta0, tol=tol, max_iter=max_iter)
    chol, _ = _damped_cholesky(hess, torch.eye(objective.dim, dtype=DTYPE))
    full_cov = torch.cholesky_inverse(chol)
    n = obs.n
    delta = delta_sd = None
    if objective.delta_index is not None:
        delta = float(theta[objective.delta_index])
        delta_sd = float(full_cov[objective.delta_index, objective.delta_index].sqrt())
    link = None
    if objective.link_index is not None:
        link = (float(theta[objective.link_index]), float(theta[objective.link_index + 1]))
    return Posterior(
        mean=theta[:n].clone(),
        cov=full_cov[:n, :n].clone() if objective.dim > n else full_cov,
        theta=theta,
        delta=delta,
        delta_sd=delta_sd,
        link=link,
        n_iter=n_iter,
        converged=converged,
        n_comparisons=obs.n_comparisons,
    )
