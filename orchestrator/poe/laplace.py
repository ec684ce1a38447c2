"""Laplace approximation of the PoE posterior (PoE §4.1).

.. math::
    μ = \\arg\\max_s \\log p(s \\mid C), \\qquad Σ^{-1} = -∇∇ \\log p(s \\mid C)\\big|_{μ}

The mode is found by damped Newton steps (Cholesky solves of the assembled Hessian, Armijo
backtracking, Levenberg damping where the Hessian is not positive definite), warm-started from
the previous round's parameters. The covariance of the scores is the score block of the inverse
Hessian, so Δ and the link parameters are marginalised, not fixed.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

import torch
from torch import Tensor

from .newton import armijo, newton_steps
from .objective import DTYPE, NegLogPosterior, Observations, PoEConfig
from .sparse import SPARSE_MIN_N, SparseCovariance, damping_schedule, sparse_covariance, sparse_newton

__all__ = [
    "Posterior",
    "ScaleMixture",
    "fit_laplace",
    "newton_map",
    "threads_for",
    "pair_variances",
    "marginal_variances",
    "centred_variances",
    "POSTERIOR_METHODS",
]

POSTERIOR_METHODS = ("auto", "dense", "sparse")

SMALL_GROUP = 256
"""Below this many candidates one torch thread fits faster than the thread pool."""

QUASI_NEWTON_MIN_DIM = 256
"""Below this many parameters a Cholesky factorisation is cheaper than the extra iterations of
frozen-Hessian steps (``benchmarks/speed/``), so warm starts use Newton."""


@dataclass(frozen=True)
class ScaleMixture:
    """A posterior that is a mixture of Laplace posteriors, one per value of the prior's scale
    (:func:`orchestrator.poe.verdicts.fit_prior_scale`): component ``k`` is ``N(means[k], covs[k])``
    with weight ``weights[k]``."""

    weights: Tensor
    """``(K,)`` the components' posterior weights (sum 1)."""
    means: Tensor
    """``(K, N)`` each component's mode of the scores."""
    covs: Tensor
    """``(K, N, N)`` each component's Laplace covariance of the scores."""

    def draws(self, n_samples: int, generator: torch.Generator) -> Tensor:
        """``(n_samples, N)`` draws: a component by its weight, then a Gaussian draw from it."""
        component = torch.multinomial(self.weights, n_samples, replacement=True, generator=generator)
        z = torch.randn((n_samples, self.means.shape[1]), generator=generator, dtype=self.means.dtype)
        out = torch.empty_like(z)
        eye = torch.eye(self.means.shape[1], dtype=self.means.dtype)
        for k in range(len(self.weights)):
            rows = (component == k).nonzero().flatten()
            if len(rows):
                chol, info = torch.linalg.cholesky_ex(self.covs[k])
                if int(info) != 0:
                    chol = torch.linalg.cholesky(self.covs[k] + 1e-10 * eye)
                out[rows] = self.means[k] + z[rows] @ chol.T
        return out


@dataclass(frozen=True)
class Posterior:
    """Gaussian approximation ``N(mean, cov)`` of the scores, with the fitted nuisance parameters."""

    mean: Tensor
    """``(N,)`` posterior mode of the scores μ (higher is better)."""
    cov: Tensor | None
    """``(N, N)`` Laplace covariance Σ of the scores (Δ and link marginalised); None for a sparse
    posterior (:attr:`sparse`), whose variances come from :func:`pair_variances`."""
    theta: Tensor
    """Full parameter vector at the mode ``[s, Δ?, a?, b?]``; pass it back as a warm start."""
    theta_cov: Tensor | None
    """Inverse Hessian over all of θ (``cov`` is its score block); reused by warm starts; None
    for a sparse posterior."""
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
    judges: dict[str, Tensor] = field(default_factory=dict)
    """Per-judge parameters, each ``(J,)`` (judge index order): ``delta``/``delta_sd`` (position
    bias Δ_j), ``sharpness``/``sharpness_low``/``sharpness_high`` (``t_j`` with its 95% interval
    from the Laplace sd of ``η_j = log t_j``), ``slope``/``intercept`` (the absolute link)."""

    sparse: SparseCovariance | None = None
    """For many candidates (:mod:`orchestrator.poe.sparse`): posterior draws and the sparse
    precision instead of ``cov``."""

    mixture: ScaleMixture | None = None
    """For a verdict judge's posterior averaged over the prior's scale: the mixture itself, which
    the rank intervals sample (``mean`` and ``cov`` are its first two moments, which everything
    else reads); None: the posterior is the one Gaussian ``N(mean, cov)``."""

    @property
    def n(self) -> int:
        return int(self.mean.numel())

    def dense_cov(self) -> Tensor:
        """``Σ`` as a matrix (for a sparse posterior, the draws' sample covariance: only for small
        inspections, it is ``N × N``)."""
        if self.cov is not None:
            return self.cov
        assert self.sparse is not None
        x = self.sparse.draws
        return (x.T @ x) / x.shape[0]


def pair_variances(posterior: Posterior, a: Tensor, b: Tensor) -> Tensor:
    """``V_ab = Σ_aa + Σ_bb − 2Σ_ab`` for index tensors ``a``, ``b`` (PoE Eq. 4): exact from ``Σ``,
    estimated for a sparse posterior (:class:`~orchestrator.poe.sparse.SparseCovariance`)."""
    if posterior.cov is None:
        assert posterior.sparse is not None
        return posterior.sparse.pair(a, b)
    cov = posterior.cov
    return (cov.diagonal()[a] + cov.diagonal()[b] - 2.0 * cov[a, b]).clamp_min(0.0)


def marginal_variances(posterior: Posterior) -> Tensor:
    """``(N,)`` posterior variances ``Σ_ii`` of the scores (estimated for a sparse posterior)."""
    if posterior.cov is None:
        assert posterior.sparse is not None
        return posterior.sparse.marginal()
    return posterior.cov.diagonal().clone()


def centred_variances(posterior: Posterior) -> Tensor:
    """``(N,)`` posterior variances of ``s_i − s̄``, each score against the mean of all scores.

    Scores are identified only up to a common shift, so ``Σ_ii`` carries the uncertainty of the
    scale's location (often the prior's), the same for every candidate; what matters for
    comparisons is the spread against the field: ``Var(s_i − s̄) = Σ_ii − 2 (Σ𝟙)_i / N + 𝟙ᵀΣ𝟙 / N²``.
    A sparse posterior corrects its marginal estimate by the draws' ``s̄`` terms."""
    if posterior.cov is None:
        assert posterior.sparse is not None
        x = posterior.sparse.draws
        bar = x.mean(dim=1, keepdim=True)
        return (posterior.sparse.marginal() + (bar * bar - 2.0 * x * bar).mean(dim=0)).clamp_min(0.0)
    cov = posterior.cov
    return (cov.diagonal() - 2.0 * cov.mean(dim=1) + cov.mean()).clamp_min(0.0)


def newton_map(
    objective: NegLogPosterior,
    theta0: Tensor | None = None,
    *,
    tol: float = 1e-7,
    max_iter: int = 100,
    inverse_hessian_guess: Tensor | None = None,
) -> tuple[Tensor, Tensor, int, bool]:
    """Minimise ``objective`` by damped Newton steps.

    With ``inverse_hessian_guess`` (the previous round's inverse Hessian, when only a few
    comparisons were added), first take quasi-Newton steps ``θ ← θ − G ∇`` with that frozen
    matrix: each costs one matrix-vector product instead of a Cholesky factorisation, and they
    converge in a few steps when the Hessian has barely moved. Full Newton takes over if not.

    Returns:
        ``(theta, hessian_at_theta, iterations, converged)``.
    """
    theta = objective.initial() if theta0 is None else theta0.detach().to(DTYPE).clone()
    it = 0
    if inverse_hessian_guess is not None and inverse_hessian_guess.shape == (objective.dim, objective.dim):
        value, grad = objective.value_and_grad(theta)
        for _ in range(12):
            if float(grad.abs().max()) < tol:
                return theta, _hessian(objective, theta), it, True
            candidate = armijo(objective, theta, value, grad, inverse_hessian_guess @ grad)
            if candidate is None:
                break
            theta = candidate
            it += 1
            value, grad = objective.value_and_grad(theta)

    def evaluate(theta: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        value, grad, hess = objective.evaluate(theta)
        assert hess is not None  # (evaluate returns the Hessian unless told not to)
        return value, grad, hess

    def solve(hess: Tensor, grad: Tensor) -> Tensor:
        chol, _ = _damped_cholesky(hess)
        return torch.cholesky_solve(grad[:, None], chol)[:, 0]

    return newton_steps(objective, theta, evaluate, solve, tol=tol, max_iter=max_iter, done=it)


def _hessian(objective: NegLogPosterior, theta: Tensor) -> Tensor:
    hess = objective.evaluate(theta)[2]
    assert hess is not None
    return hess


def _damped_cholesky(hess: Tensor) -> tuple[Tensor, float]:
    """Cholesky of ``hess + λI`` with the smallest λ of :func:`~orchestrator.poe.sparse.damping_schedule`
    (``0, 1e-6·s, 1e-5·s, …``) that works."""
    if not bool(torch.isfinite(hess).all()):
        raise FloatingPointError("PoE Hessian is not finite; check the judge probabilities and the expert's parameters")
    eye = torch.eye(hess.shape[0], dtype=hess.dtype)
    for damping in damping_schedule(hess.diagonal().numpy()):
        chol, info = torch.linalg.cholesky_ex(hess + damping * eye if damping else hess)
        if int(info) == 0:
            return chol, damping
    raise AssertionError("unreachable: the schedule raises when it ends")


def fit_laplace(
    obs: Observations,
    config: PoEConfig | None = None,
    warm_start: Posterior | Tensor | None = None,
    *,
    tol: float = 1e-7,
    max_iter: int = 100,
    method: str | None = None,
    seed: int = 0,
    draws: bool = True,
) -> Posterior:
    """Laplace approximation ``N(μ, Σ)`` of the PoE posterior (PoE §4.1).

    Args:
        obs: the comparative and absolute judgments.
        config: expert and priors; default soft Bradley–Terry with a unit Gaussian prior.
        warm_start: a previous :class:`Posterior` (or parameter vector) to start Newton from;
            parameters it lacks (e.g. the link, once absolute experts appear) start at their prior.
        tol: convergence tolerance on the max-norm of the gradient.
        method: ``config.posterior`` unless given: ``dense`` (``Σ`` as a matrix), ``sparse`` (:mod:`orchestrator.poe.sparse`: sparse
            Hessian, conjugate gradients, variances from posterior draws) or ``auto`` (sparse from
            :data:`~orchestrator.poe.sparse.SPARSE_MIN_N` candidates).
        seed: seed of the sparse posterior's draws.
        draws: False skips a sparse posterior's draws and nuisance variances (an intermediate fit
            whose mode is all that is used: ``sparse`` and ``cov`` are then both None).

    Returns:
        The :class:`Posterior`. With no observations it is the prior.
    """
    config = config or PoEConfig()
    method = method or config.posterior
    if method not in POSTERIOR_METHODS:
        raise ValueError(f"method must be one of {', '.join(POSTERIOR_METHODS)} (got {method!r})")
    use_sparse = method == "sparse" or (method == "auto" and obs.n >= SPARSE_MIN_N)
    objective = NegLogPosterior(obs, config)
    theta0, guess = _starting_point(objective, obs, warm_start, use_sparse)
    n = obs.n
    sparse = None
    full_cov: Tensor | None = None
    if use_sparse:
        theta, sparse_hess, pattern, n_iter, converged = sparse_newton(objective, theta0, tol=tol, max_iter=max_iter)
        theta_var = torch.zeros(objective.dim, dtype=DTYPE)
        if draws:
            sparse = sparse_covariance(objective, theta, sparse_hess, pattern, seed=seed)
            theta_var[n:] = sparse.nuisance_var
    else:
        theta, hess, n_iter, converged = newton_map(objective, theta0, tol=tol, max_iter=max_iter, inverse_hessian_guess=guess)
        chol, _ = _damped_cholesky(hess)
        full_cov = torch.cholesky_inverse(chol)
        theta_var = full_cov.diagonal()
    delta = delta_sd = None
    if objective.delta_index is not None:
        delta = float(theta[objective.delta_index])
        delta_sd = float(theta_var[objective.delta_index].sqrt())
    link = None
    if objective.link_index is not None:
        link = (float(theta[objective.link_index]), float(theta[objective.link_index + 1]))
    judges = _judge_parameters(objective, config, theta, theta_var)
    return Posterior(
        mean=theta[:n].clone(),
        cov=None if full_cov is None else full_cov[:n, :n] if objective.dim > n else full_cov,
        theta=theta,
        theta_cov=full_cov,
        delta=delta,
        delta_sd=delta_sd,
        link=link,
        n_iter=n_iter,
        converged=converged,
        n_comparisons=obs.n_comparisons,
        judges=judges,
        sparse=sparse,
    )


def _starting_point(
    objective: NegLogPosterior, obs: Observations, warm_start: Posterior | Tensor | None, use_sparse: bool
) -> tuple[Tensor, Tensor | None]:
    """Newton's starting parameters from a warm start (a previous posterior or a raw vector; what
    it lacks starts at the prior), and the previous inverse Hessian as a quasi-Newton guess where
    the layout is unchanged and the problem large enough to profit."""
    theta0 = objective.initial()
    guess = None
    if (
        not use_sparse
        and isinstance(warm_start, Posterior)
        and objective.dim >= QUASI_NEWTON_MIN_DIM
        and warm_start.theta_cov is not None
        and warm_start.theta_cov.shape == (objective.dim, objective.dim)
    ):
        guess = warm_start.theta_cov
    if isinstance(warm_start, Posterior) and warm_start.theta.shape == theta0.shape and warm_start.n == obs.n:
        theta0 = warm_start.theta.clone()  # the same layout: every parameter carries over
    elif isinstance(warm_start, Posterior):
        m = min(warm_start.n, obs.n)
        theta0[:m] = warm_start.mean[:m]
        if objective.delta_index is not None and warm_start.delta is not None:
            theta0[objective.delta_index] = warm_start.delta
        if objective.link_index is not None and warm_start.link is not None:
            theta0[objective.link_index : objective.link_index + 2] = torch.tensor(warm_start.link, dtype=DTYPE)
    elif warm_start is not None:  # a raw parameter vector: its leading entries are scores
        m = min(int(warm_start.numel()), objective.dim)
        theta0[:m] = warm_start[:m]
    return theta0, guess


def _judge_parameters(objective: NegLogPosterior, config: PoEConfig, theta: Tensor, theta_var: Tensor) -> dict[str, Tensor]:
    """Per judge: position bias Δ_j, sharpness t_j with its 95% interval, bias-control weights and
    the absolute link, each where the objective has it, with sds."""
    judges: dict[str, Tensor] = {}
    J = objective.n_judges
    if objective.delta_index is not None:
        block = slice(objective.delta_index, objective.delta_index + J)
        judges["delta"] = theta[block].clone()
        judges["delta_sd"] = theta_var[block].sqrt()
    if objective.sharp_index is not None:
        block = slice(objective.sharp_index, objective.sharp_index + J)
        eta, eta_sd = theta[block], theta_var[block].sqrt()
        judges["sharpness"] = eta.exp()
        judges["sharpness_low"] = (eta - 1.96 * eta_sd).exp()
        judges["sharpness_high"] = (eta + 1.96 * eta_sd).exp()
    if objective.control_index is not None:
        for c, name in enumerate(config.controls):
            at = objective.control_index + torch.arange(J) * objective.n_controls + c
            judges[name] = theta[at].clone()
            judges[f"{name}_sd"] = theta_var[at].sqrt()
    if objective.abs_control_index is not None:
        for c, name in enumerate(config.controls):
            at = objective.abs_control_index + torch.arange(J) * objective.n_abs_controls + c
            judges[f"{name}_absolute"] = theta[at].clone()
            judges[f"{name}_absolute_sd"] = theta_var[at].sqrt()
    if objective.link_index is not None:
        judges["slope"] = theta[objective.link_index : objective.link_index + 2 * J : 2].clone()
        judges["intercept"] = theta[objective.link_index + 1 : objective.link_index + 2 * J : 2].clone()
    return judges


@contextmanager
def threads_for(n_max: int) -> Iterator[None]:
    """One torch thread while fitting posteriors of at most ``n_max`` candidates when that is below
    :data:`SMALL_GROUP`: the thread pool's overhead outweighs the work on groups that small."""
    before = torch.get_num_threads()
    if n_max < SMALL_GROUP and before > 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
