"""The Laplace posterior for many candidates without an ``N × N`` matrix.

The negative log-posterior's Hessian is the prior's diagonal plus a curvature-weighted graph
Laplacian over the comparisons (PoE §4.1; :meth:`NegLogPosterior.hessian_entries`), so it has
``O(N + K)`` non-zero entries for ``K`` comparisons. Here it is a CSR matrix and every solve is a
Jacobi-preconditioned conjugate-gradient solve: the prior's precision ``λ`` bounds its smallest
eigenvalue, so the preconditioned condition number is at most ``2 max_i H_ii / λ`` and a solve
takes tens of sparse products.

Selection and stopping need variances of score differences, ``V_ab = uᵀ Σ u`` with
``u = e_a − e_b`` (PoE Eq. 4), never ``Σ`` itself. They come from ``S`` exact posterior draws
(*perturb and solve*): with ``H = λI + Σ_k c_k u_k u_kᵀ`` (plus the nuisance terms), ``b = H^{1/2}``-
like noise ``b = √λ z₀ + Σ_k √c_k u_k z_k`` has covariance ``H``, so ``x = H⁻¹ b ~ N(0, Σ)``.
With fitted judge sharpness or an absolute link, ``H`` also holds second-derivative terms that
are not a sum of squares (``−g ∇²d``); the noise then has covariance ``H̃ = H − M`` (Gauss–Newton)
and ``Cov(x) = Σ − Σ M Σ``. ``M`` lives on the few nuisance rows ``R`` (sharpness ``η_j``, link
``a_j``), so ``Σ M Σ = B Aᵀ + A Bᵀ − A M_RR Aᵀ`` with ``A = Σ E_R`` and ``B = Σ M E_R``: ``2|R|``
more solves, and the correction is exact. The plain Monte-Carlo estimate ``mean (u·x)²`` has relative
standard error ``√(2/S)``; a control variate lowers it: ``y = D⁻¹ b`` (``D = diag H``) is computed
for free from the same noise and ``E (u·y)² = 1/D_a + 1/D_b − 2 H_ab/(D_a D_b)`` is known exactly,
so ``V̂ = mean (u·x)² − mean (u·y)² + E (u·y)²``. ``benchmarks/speed/sparse_posterior.py`` measures the
error against the dense ``Σ`` (RESULTS.md); the draws also give rank intervals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from .newton import newton_steps
from .objective import DTYPE, NegLogPosterior

__all__ = [
    "SPARSE_MIN_N",
    "N_DRAWS",
    "SparseCovariance",
    "HessianPattern",
    "block_pcg",
    "damped_solve",
    "damping_schedule",
    "sparse_newton",
    "sparse_covariance",
]

SPARSE_MIN_N = 2000
"""From this many candidates a posterior is fitted sparse (``model.posterior = "auto"``): below it
the dense ``Σ`` costs less than 100 MB and its exact variances cost nothing extra."""

N_DRAWS = 32
"""Posterior draws behind the sparse variance estimates (relative error ``≲ √(2/S)`` before the
control variate)."""


class HessianPattern:
    """The sparsity pattern of one objective's Hessian, found once: every Newton step only sums
    new values into it (a ``bincount``), instead of sorting ``O(K)`` entries again."""

    def __init__(self, rows: Tensor, cols: Tensor, dim: int):
        keys = rows.numpy().astype(np.int64) * dim + cols.numpy().astype(np.int64)
        self.keys, self.slot = np.unique(keys, return_inverse=True)
        self.dim = dim
        rows_u = self.keys // dim
        self.indices = (self.keys % dim).astype(np.int32 if dim < 2**31 else np.int64)
        self.indptr = np.searchsorted(rows_u, np.arange(dim + 1)).astype(self.indices.dtype)

    def matrix(self, vals: Tensor) -> sp.csr_matrix:
        data = np.bincount(self.slot, weights=vals.numpy(), minlength=self.keys.size)
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.dim, self.dim))

    def lookup(self, matrix: sp.csr_matrix, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``H[a, b]`` for index arrays (0 outside the pattern)."""
        want = a.astype(np.int64) * self.dim + b.astype(np.int64)
        at = np.searchsorted(self.keys, want).clip(max=self.keys.size - 1)
        return np.where(self.keys[at] == want, matrix.data[at], 0.0)


class NegativeCurvature(ArithmeticError):
    """The matrix is not positive definite along a conjugate-gradient direction."""


def block_pcg(
    matrix: sp.csr_matrix, rhs: np.ndarray, *, rtol: float = 1e-10, max_iter: int = 2000, damping: float = 0.0
) -> tuple[np.ndarray, int]:
    """Solve ``(H + damping·I) X = B`` column by column at once, Jacobi-preconditioned conjugate
    gradients (each column its own step sizes; stops when every residual is below ``rtol`` of its
    right-hand side).

    Raises:
        NegativeCurvature: ``H + damping·I`` is not positive definite.
        FloatingPointError: no convergence within ``max_iter`` products.
    """
    single = rhs.ndim == 1
    B = rhs[:, None] if single else rhs
    inv_diag = 1.0 / (matrix.diagonal() + damping)
    if not np.all(np.isfinite(inv_diag)) or np.any(inv_diag <= 0):
        raise NegativeCurvature("non-positive diagonal")
    X = np.zeros_like(B)
    R = B.copy()
    Z = R * inv_diag[:, None]
    Pdir = Z.copy()
    rz = np.einsum("ij,ij->j", R, Z)
    target = rtol * np.linalg.norm(B, axis=0)
    for it in range(1, max_iter + 1):
        AP = matrix @ Pdir + damping * Pdir
        curvature = np.einsum("ij,ij->j", Pdir, AP)
        live = rz > 0
        if np.any(curvature[live] <= 0):
            raise NegativeCurvature("negative curvature")
        alpha = np.where(live, rz / np.where(live, curvature, 1.0), 0.0)
        X += alpha * Pdir
        R -= alpha * AP
        if np.all(np.linalg.norm(R, axis=0) <= target):
            return (X[:, 0] if single else X), it
        Z = R * inv_diag[:, None]
        rz_new = np.einsum("ij,ij->j", R, Z)
        beta = np.where(live, rz_new / np.where(live, rz, 1.0), 0.0)
        Pdir = Z + beta * Pdir
        rz = rz_new
    raise FloatingPointError(f"conjugate gradients did not converge in {max_iter} products")


def damping_schedule(diagonal: np.ndarray) -> Iterator[float]:
    """Levenberg damping to try, smallest first: ``0, 1e-6·s, 1e-5·s, …, 1e12·s`` with ``s`` the
    largest ``|H_ii|`` (the dense and the sparse solves share it).

    Raises:
        FloatingPointError: the Hessian is not finite (a NaN scale would never end the schedule), or
            no damping in the schedule was enough.
    """
    if not np.all(np.isfinite(diagonal)):
        raise FloatingPointError("PoE Hessian is not finite; check the judge probabilities and the expert's parameters")
    scale = float(np.abs(diagonal).max(initial=0.0)) or 1.0
    yield 0.0
    damping = 1e-6 * scale
    while damping <= 1e12 * scale:
        yield damping
        damping *= 10.0
    raise FloatingPointError("PoE Hessian could not be regularised")


def damped_solve(matrix: sp.csr_matrix, rhs: np.ndarray, *, rtol: float = 1e-10) -> np.ndarray:
    """``H⁻¹ B``, with the smallest damping of :func:`damping_schedule` that makes ``H + λI``
    positive definite (as the dense path's damped Cholesky)."""
    if not np.all(np.isfinite(matrix.data)):
        raise FloatingPointError("PoE Hessian is not finite; check the judge probabilities and the expert's parameters")
    for damping in damping_schedule(matrix.diagonal()):
        try:
            return block_pcg(matrix, rhs, rtol=rtol, damping=damping)[0]
        except NegativeCurvature:
            continue
    raise AssertionError("unreachable: the schedule raises when it ends")


def sparse_newton(
    objective: NegLogPosterior, theta0: Tensor, *, tol: float = 1e-7, max_iter: int = 100
) -> tuple[Tensor, sp.csr_matrix, HessianPattern, int, bool]:
    """Damped Newton on ``objective`` with conjugate-gradient steps (the dense path's
    :func:`~orchestrator.poe.laplace.newton_map`, Armijo backtracking included).

    Returns:
        ``(theta, hessian_at_theta, pattern, iterations, converged)``.
    """
    theta = theta0.detach().to(DTYPE).clone()
    found: list[HessianPattern] = []  # the pattern, from the first evaluation's entries

    def evaluate(theta: Tensor) -> tuple[Tensor, Tensor, sp.csr_matrix]:
        value, grad, entries = objective.hessian_entries(theta)
        assert entries is not None
        if not found:
            found.append(HessianPattern(entries[0], entries[1], objective.dim))
        return value, grad, found[0].matrix(entries[2])

    def solve(hess: sp.csr_matrix, grad: Tensor) -> Tensor:
        return torch.from_numpy(damped_solve(hess, grad.numpy(), rtol=1e-10))

    theta, hess, it, converged = newton_steps(objective, theta, evaluate, solve, tol=tol, max_iter=max_iter)
    return theta, hess, found[0], it, converged


@dataclass(frozen=True)
class SparseCovariance:
    """What selection, stopping and rank intervals need of ``Σ`` for a sparse posterior: posterior
    draws (perturb and solve) with their control variate (module docstring)."""

    draws: Tensor
    """``(S, N)`` draws of the scores minus their mean, ``x ~ N(0, Σ)``."""
    control: Tensor
    """``(S, N)`` the control variate ``y = D⁻¹ b`` of the same noise."""
    hess_diag: Tensor
    """``(N,)`` ``D``: the Hessian's diagonal over the scores."""
    hessian: sp.csr_matrix
    """The Hessian over all of θ at the mode (the posterior precision)."""
    pattern: HessianPattern
    nuisance_var: Tensor
    """``(P − N,)`` exact posterior variances of the nuisance parameters (Δ_j, η_j, links)."""
    low_rank: tuple[Tensor, Tensor, Tensor] | None = None
    """``(A, B, M_RR)`` over the scores (``(N, r)``, ``(N, r)``, ``(r, r)``): the exact correction
    ``Σ M Σ`` of the draws' covariance (module docstring); None when ``H`` is a sum of squares."""

    def _correction(self, u_a: Tensor, u_b: Tensor | None = None) -> Tensor:
        """``uᵀ Σ M Σ u`` for ``u = e_a − e_b`` (or ``e_a``)."""
        if self.low_rank is None:
            return torch.zeros(u_a.shape[0], dtype=DTYPE)
        A, B, m_rr = self.low_rank
        ua = A[u_a] - (A[u_b] if u_b is not None else 0.0)
        ub = B[u_a] - (B[u_b] if u_b is not None else 0.0)
        return 2.0 * (ua * ub).sum(1) - ((ua @ m_rr) * ua).sum(1)

    def marginal(self) -> Tensor:
        """``(N,)`` estimated ``Σ_ii`` (never below the exact lower bound ``1/H_ii``)."""
        x, y, D = self.draws, self.control, self.hess_diag
        est = (x * x).mean(0) - (y * y).mean(0) + 1.0 / D + self._correction(torch.arange(D.numel()))
        return est.clamp_min(1.0 / D)

    def pair(self, a: Tensor, b: Tensor) -> Tensor:
        """Estimated ``V_ab = Σ_aa + Σ_bb − 2Σ_ab`` for index tensors ``a``, ``b`` (same shape)."""
        shape = a.shape
        a, b = a.reshape(-1), b.reshape(-1)
        x, y, D = self.draws, self.control, self.hess_diag
        dx = x[:, a] - x[:, b]
        dy = y[:, a] - y[:, b]
        h_ab = torch.from_numpy(self.pattern.lookup(self.hessian, a.numpy(), b.numpy()))
        known = 1.0 / D[a] + 1.0 / D[b] - 2.0 * h_ab / (D[a] * D[b])
        est = (dx * dx).mean(0) - (dy * dy).mean(0) + known + self._correction(a, b)
        # a variance of a difference is > 0: an estimate the noise pushed below a small share of
        # the control variate's value is floored there
        floor = 1e-3 * known.clamp_min(1e-12)
        est = torch.where(a == b, torch.zeros_like(est), est.clamp_min(0.0).maximum(floor))
        return est.reshape(shape)


def sparse_covariance(
    objective: NegLogPosterior, theta: Tensor, hess: sp.csr_matrix, pattern: HessianPattern, *, n_draws: int = N_DRAWS, seed: int = 0
) -> SparseCovariance:
    """Posterior draws of the scores by perturb-and-solve (module docstring), one block solve in
    single precision (the draws need 4 digits, not 15; it halves the memory and is 5× faster)."""
    n, dim = objective.obs.n, objective.dim
    rng = np.random.default_rng(seed)
    noise = _precision_noise(objective, theta, rng, n_draws)
    hess32 = hess.astype(np.float32)
    x = damped_solve(hess32, noise, rtol=1e-4)
    D = hess.diagonal()
    y = noise[:n] / D[:n, None].astype(np.float32)
    nuisance = np.arange(n, dim)
    nuisance_var = np.zeros(0)
    low_rank = None
    if nuisance.size:  # exact columns Σ E_R of the few nuisance parameters: one block solve
        unit = np.zeros((dim, nuisance.size))
        unit[nuisance, np.arange(nuisance.size)] = 1.0
        A = damped_solve(hess, unit)
        nuisance_var = A[nuisance, np.arange(nuisance.size)]
        _, _, gn = objective.hessian_entries(theta, gauss_newton=True)
        assert gn is not None
        M_R = (hess - pattern.matrix(gn[2]))[:, nuisance].toarray()
        if np.abs(M_R).max(initial=0.0) > 0:
            B = damped_solve(hess, M_R)
            low_rank = (torch.from_numpy(A[:n].copy()), torch.from_numpy(B[:n].copy()), torch.from_numpy(M_R[nuisance].copy()))
    return SparseCovariance(
        draws=torch.from_numpy(np.ascontiguousarray(x[:n].T, dtype=np.float64)),
        control=torch.from_numpy(np.ascontiguousarray(y.T, dtype=np.float64)),
        hess_diag=torch.from_numpy(D[:n].copy()),
        hessian=hess,
        pattern=pattern,
        nuisance_var=torch.from_numpy(np.asarray(nuisance_var, dtype=np.float64)),
        low_rank=low_rank,
    )


def _precision_noise(objective: NegLogPosterior, theta: Tensor, rng: np.random.Generator, n_draws: int) -> np.ndarray:
    """``(P, S)`` float32 noise with covariance ≈ the Hessian: the prior's ``√λ z`` plus
    ``√c_k ∇d_k z_k`` for every comparison and the absolute terms' ``√w ∇r z`` (the sums of squares
    that make up H)."""
    obs, P = objective.obs, objective.dim
    precision, _ = objective._prior_terms()
    f32 = np.float32
    out = np.sqrt(precision.numpy()).astype(f32)[:, None] * rng.standard_normal((P, n_draws), dtype=f32)
    if obs.n_comparisons:
        d = objective._differences(theta)
        _, _, h = objective.expert_terms(d)
        c = (-h).clamp_min(0.0)
        judge = objective._judge
        t = torch.exp(theta[objective.sharp_index + judge]) if objective.sharp_index is not None else torch.ones_like(d)
        index = [obs.first, obs.second]
        slope = [t, -t]
        if objective.delta_index is not None:
            index.append(objective.delta_index + judge)
            slope.append(-t)
        control_index, control_slope = objective.control_entries(t)
        index += control_index
        slope += control_slope
        if objective.sharp_index is not None:
            index.append(objective.sharp_index + judge)
            slope.append(d)
        z = rng.standard_normal((obs.n_comparisons, n_draws), dtype=f32)
        root_c = c.sqrt()
        _scatter_rows(out, torch.cat(index).numpy(), torch.cat([v * root_c for v in slope]).numpy().astype(f32), z, len(index))
    if objective.link_index is not None:
        a, _, s_item, w, _ = objective._absolute_residuals(theta)
        ka = objective.link_index + 2 * objective._abs_judge
        z = rng.standard_normal((obs.abs_item.numel(), n_draws), dtype=f32)
        root_w = w.sqrt()
        rows, slopes = [obs.abs_item, ka, ka + 1], [a * root_w, s_item * root_w, root_w]
        if objective.abs_control_index is not None:  # ∂r/∂γ_c = −x_c
            assert obs.abs_covariates is not None
            C = objective.n_abs_controls
            for covariate in range(C):
                rows.append(objective.abs_control_index + objective._abs_judge * C + covariate)
                slopes.append(obs.abs_covariates[:, covariate] * root_w)
        _scatter_rows(out, torch.cat(rows).numpy(), torch.cat(slopes).numpy().astype(f32), z, len(rows))
    return out


def _scatter_rows(out: np.ndarray, rows: np.ndarray, weights: np.ndarray, z: np.ndarray, repeats: int) -> None:
    """``out[rows[m]] += weights[m] · z[m mod K]`` summed over ``m`` (``rows`` and ``weights`` are
    ``repeats`` blocks of ``K``, one per ∇d entry): one sparse product."""
    k = z.shape[0]
    m = sp.csr_matrix((weights, (rows, np.tile(np.arange(k), repeats))), shape=(out.shape[0], k), dtype=out.dtype)
    out += m @ z
