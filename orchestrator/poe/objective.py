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
from .graded import DEFAULT_CUTS, graded_derivatives, graded_log_density, graded_rows
from .observations import DTYPE, Observations

__all__ = ["Observations", "PoEConfig", "NegLogPosterior"]


@dataclass(frozen=True)
class PoEConfig:
    """Modelling choices of the PoE posterior."""

    expert: Expert = field(default_factory=soft_bradley_terry)
    """Comparative expert (see :mod:`orchestrator.poe.experts`)."""
    home_advantage: bool = False
    """Fit a position bias ``Δ`` with the scores (PoE §3.3): ``d = s_i − s_j − Δ``; ``Δ < 0`` favours the first-shown."""
    prior_precision: float = 1.0
    """Precision λ of the ``N(0, λ⁻¹ I)`` prior on scores (PoE §4.2: unit Gaussian)."""
    delta_prior_sd: float = 2.0
    """Standard deviation of the weak ``N(0, ·)`` prior on Δ (logit units)."""
    link_slope_prior: tuple[float, float] = (1.0, 2.0)
    """Mean and sd of the prior on the link slope ``a`` (absolute = a·s + b)."""
    link_intercept_prior_sd: float = 5.0
    """Sd of the prior on the intercept ``b``, centred at the mean absolute score."""
    judge_sharpness: bool = False
    """Fit each judge's sharpness ``t_j = exp(η_j)`` jointly with the scores: ``d = t_j (s_i − s_j
    − Δ_j)``, so a judge whose probabilities follow the scores closely (large ``t``) counts for more
    and a judge answering at random (``t → 0``) for nothing (PoE App. B's temperature, per judge)."""
    sharpness_prior_sd: float = 1.0
    """Sd of the ``N(0, ·)`` prior on ``η_j = log t_j`` (t = 1: the judge's probabilities as given)."""
    controls: tuple[str, ...] = ()
    """Covariates whose weight each judge gets, fitted jointly with the scores
    (arena-hard's style control): ``x = s_i − s_j − Δ_j + Σ_c β_jc z_ijc`` with ``z`` the
    observations' covariates (``length``, ``headers``, ``lists``, ``bold``), so the scores are what
    the judge would say at equal length and style; ``β_jc > 0``: the judge prefers more of ``c``.
    Absolute judgments get weights of their own, ``μ = a_j s + b_j + Σ_c γ_jc x_c`` with ``x`` the
    answer's covariates against its prompt's typical answer (score units per unit)."""
    families: dict[str, str] = field(default_factory=dict)
    """Model family of judges and candidates by name, for the ``self`` control (self-preference)."""
    control_prior_sd: float = 2.0
    """Sd of the weak ``N(0, ·)`` prior on every ``β_jc`` (logit per unit of the normalised difference)."""
    judge_precision: bool = False
    """Weight each judge's comparisons by its precision κ_j (:mod:`orchestrator.poe.reliability`):
    how many Bernoulli trials one of its probabilities is worth, from the dispersion of its
    residuals (used by :func:`~orchestrator.poe.reliability.fit_with_reliability`)."""

    empirical_prior_scale: bool = False
    """Average over the prior's scale ``τ`` (``s ~ N(0, τ² I)``) by its evidence (verdict judges: :mod:`.verdicts`)."""

    posterior: str = "auto"
    """``dense`` (``Σ`` as an ``N × N`` matrix), ``sparse`` (sparse Hessian, conjugate gradients,
    variances from posterior draws: :mod:`orchestrator.poe.sparse`) or ``auto`` (sparse from
    :data:`~orchestrator.poe.sparse.SPARSE_MIN_N` candidates)."""

    def __post_init__(self) -> None:
        if self.posterior not in ("auto", "dense", "sparse"):
            raise ValueError(f"posterior must be auto, dense or sparse (got {self.posterior!r})")
        if self.prior_precision < 0:
            raise ValueError(f"prior_precision must be >= 0 (got {self.prior_precision})")
        if (
            min(self.delta_prior_sd, self.link_slope_prior[1], self.link_intercept_prior_sd, self.sharpness_prior_sd, self.control_prior_sd)
            <= 0
        ):
            raise ValueError("prior standard deviations must be > 0")


class NegLogPosterior:
    """``−log p(θ | C, A)`` with gradient and Hessian for a fixed set of observations.

    Layout of θ: scores ``[0, n)``; then, per judge ``j = 0..J−1``, ``Δ_j`` from
    :attr:`delta_index` (if home advantage is fitted), ``η_j = log t_j`` from :attr:`sharp_index`
    (if sharpness is fitted), and the link ``(a_j, b_j)`` from :attr:`link_index` (if absolute
    experts are present; judge ``j``'s pair at ``link_index + 2j``), and ``β_jc`` at
    ``control_index + j·C + c`` (controls, when the observations carry their C covariates). With
    one judge and no controls this is the paper's ``[s, Δ?, a?, b?]``.
    """

    def __init__(self, obs: Observations, config: PoEConfig):
        self.obs = obs
        self.config = config
        n, J = obs.n, obs.n_judges
        self.n_judges = J
        at = n
        self.delta_index: int | None = at if config.home_advantage else None
        at += J if config.home_advantage else 0
        self.sharp_index: int | None = at if config.judge_sharpness else None
        at += J if config.judge_sharpness else 0
        self.link_index: int | None = at if obs.has_absolute else None
        at += 2 * J if obs.has_absolute else 0
        covariates = obs.covariates
        controlled = bool(config.controls) and covariates is not None and obs.n_comparisons > 0
        if controlled and covariates is not None and covariates.shape[1] != len(config.controls):
            raise ValueError(f"{covariates.shape[1]} covariates per comparison for {len(config.controls)} controls")
        self.n_controls = len(config.controls) if controlled else 0
        self.control_index: int | None = at if controlled else None
        at += J * self.n_controls
        abs_covariates = obs.abs_covariates
        abs_controlled = bool(config.controls) and abs_covariates is not None and obs.has_absolute
        if abs_controlled and abs_covariates is not None and abs_covariates.shape[1] != len(config.controls):
            raise ValueError(f"{abs_covariates.shape[1]} covariates per absolute judgment for {len(config.controls)} controls")
        self.n_abs_controls = len(config.controls) if abs_controlled else 0
        self.abs_control_index: int | None = at if abs_controlled else None
        at += J * self.n_abs_controls
        self.dim = at
        self._intercept_mean = float(obs.abs_mean.mean()) if obs.has_absolute else 0.0
        self._judge = obs.judges_of_comparisons()
        self._abs_judge = obs.judges_of_absolutes()

    def initial(self) -> Tensor:
        """A starting point: zero scores, Δ and η, the prior means of the links."""
        theta = torch.zeros(self.dim, dtype=DTYPE)
        if self.link_index is not None:
            theta[self.link_index :: 2][: self.n_judges] = self.config.link_slope_prior[0]
            theta[self.link_index + 1 :: 2][: self.n_judges] = self._intercept_mean
        return theta

    def _linear(self, theta: Tensor) -> Tensor:
        """``x = s_i − s_j − Δ_j (+ β_j ℓ_ij)`` per comparison."""
        s = theta[: self.obs.n]
        x = s[self.obs.first] - s[self.obs.second]
        if self.delta_index is not None:
            x = x - theta[self.delta_index + self._judge]
        if self.control_index is not None:
            assert self.obs.covariates is not None
            weights = theta[self.control_index : self.control_index + self.n_judges * self.n_controls].view(self.n_judges, self.n_controls)
            x = x + (weights[self._judge] * self.obs.covariates).sum(1)
        return x

    def _cut_points(self) -> Tensor:
        """``(J, 2)`` each judge's graded cut-points (the defaults until they are fitted)."""
        if self.obs.cuts is not None:
            return self.obs.cuts
        return torch.tensor([DEFAULT_CUTS], dtype=DTYPE).expand(self.n_judges, 2)

    def comparison_log_density(self, d: Tensor) -> Tensor:
        """Each comparison's weighted log-density at ``d``, differentiable (:meth:`expert_terms`)."""
        obs = self.obs
        logp = self.config.expert.log_density(d, obs.prob)
        graded = graded_rows(obs.grades)
        if graded is not None:
            assert obs.grades is not None
            cut = self._cut_points()[self._judge[graded]]
            logp = logp.index_put((graded,), graded_log_density(d[graded], obs.grades[graded], cut[:, 0], cut[:, 1]))
        return logp if obs.weight is None else obs.weight * logp

    def expert_terms(self, d: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Each comparison's log-density at ``d`` with its first and second derivative in ``d``,
        weighted: the configured expert's, or the graded expert's where a comparison carries a
        graded verdict (:mod:`.graded`, at its judge's cut-points)."""
        obs = self.obs
        logp, g, h = expert_derivatives(self.config.expert, d, obs.prob)
        graded = graded_rows(obs.grades)
        if graded is not None:
            assert obs.grades is not None
            cut = self._cut_points()[self._judge[graded]]
            terms = graded_derivatives(d[graded], obs.grades[graded], cut[:, 0], cut[:, 1])
            logp, g, h = logp.clone(), g.clone(), h.clone()
            for whole, part in zip((logp, g, h), terms):
                whole[graded] = part
        if obs.weight is not None:
            logp, g, h = obs.weight * logp, obs.weight * g, obs.weight * h
        return logp, g, h

    def control_entries(self, t: Tensor) -> tuple[list[Tensor], list[Tensor]]:
        """Indices and slopes ``∂d/∂β_jc = t z_c`` of the control weights, one pair per covariate."""
        if self.control_index is None:
            return [], []
        assert self.obs.covariates is not None
        C = self.n_controls
        index = [self.control_index + self._judge * C + c for c in range(C)]
        return index, [t * self.obs.covariates[:, c] for c in range(C)]

    def _differences(self, theta: Tensor) -> Tensor:
        """``d = t_j x`` per comparison (``t_j = 1`` without sharpness)."""
        x = self._linear(theta)
        if self.sharp_index is not None:
            x = x * torch.exp(theta[self.sharp_index + self._judge])
        return x

    def _prior_terms(self) -> tuple[Tensor, Tensor]:
        """Precision vector and mean vector of the independent Gaussian priors on θ."""
        cfg = self.config
        J = self.n_judges
        precision = torch.full((self.dim,), cfg.prior_precision, dtype=DTYPE)
        mean = torch.zeros(self.dim, dtype=DTYPE)
        if self.delta_index is not None:
            precision[self.delta_index : self.delta_index + J] = cfg.delta_prior_sd**-2
        if self.sharp_index is not None:
            precision[self.sharp_index : self.sharp_index + J] = cfg.sharpness_prior_sd**-2
        if self.control_index is not None:
            precision[self.control_index : self.control_index + J * self.n_controls] = cfg.control_prior_sd**-2
        if self.abs_control_index is not None:
            precision[self.abs_control_index : self.abs_control_index + J * self.n_abs_controls] = cfg.control_prior_sd**-2
        if self.link_index is not None:
            li = self.link_index
            precision[li : li + 2 * J : 2] = cfg.link_slope_prior[1] ** -2
            mean[li : li + 2 * J : 2] = cfg.link_slope_prior[0]
            precision[li + 1 : li + 2 * J : 2] = cfg.link_intercept_prior_sd**-2
            mean[li + 1 : li + 2 * J : 2] = self._intercept_mean
        return precision, mean

    def _absolute_residuals(self, theta: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """``(a, b, s_item, w, r)`` per absolute judgment, ``r = μ − a_j s − b_j (− Σ_c γ_jc x_c)``, ``w = 1/σ²``."""
        assert self.link_index is not None
        obs = self.obs
        ka = self.link_index + 2 * self._abs_judge
        a, b = theta[ka], theta[ka + 1]
        s_item = theta[obs.abs_item]
        w = 1.0 / obs.abs_var
        r = obs.abs_mean - a * s_item - b
        if self.abs_control_index is not None:
            assert obs.abs_covariates is not None
            C = self.n_abs_controls
            weights = theta[self.abs_control_index : self.abs_control_index + self.n_judges * C].view(self.n_judges, C)
            r = r - (weights[self._abs_judge] * obs.abs_covariates).sum(1)
        return a, b, s_item, w, r

    def value(self, theta: Tensor) -> Tensor:
        """``−log p(θ | C, A)`` up to a constant."""
        obs = self.obs
        precision, mean = self._prior_terms()
        value = 0.5 * (precision * (theta - mean) ** 2).sum()
        if obs.n_comparisons:
            value = value - self.comparison_log_density(self._differences(theta)).sum()
        if self.link_index is not None:
            _, _, _, w, r = self._absolute_residuals(theta)
            value = value + 0.5 * (w * r * r).sum()
        return value

    def value_and_grad(self, theta: Tensor) -> tuple[Tensor, Tensor]:
        """Value and gradient only (no Hessian assembly)."""
        value, grad, _ = self.evaluate(theta, hessian=False)
        return value, grad

    def evaluate(self, theta: Tensor, hessian: bool = True) -> tuple[Tensor, Tensor, Tensor | None]:
        """Value, gradient ``(P,)`` and dense Hessian ``(P, P)`` of ``−log p(θ | C, A)``
        (:meth:`hessian_entries` for the terms)."""
        P = self.dim
        value, grad, entries = self.hessian_entries(theta, hessian=hessian)
        if entries is None:
            return value, grad, None
        rows, cols, vals = entries
        hess = torch.zeros(P * P, dtype=DTYPE).index_add_(0, rows * P + cols, vals)
        return value, grad, hess.view(P, P)

    def hessian_entries(
        self, theta: Tensor, hessian: bool = True, *, gauss_newton: bool = False
    ) -> tuple[Tensor, Tensor, tuple[Tensor, Tensor, Tensor] | None]:
        """Value, gradient ``(P,)`` and the Hessian as unsummed entries ``(rows, cols, vals)``
        (duplicates add up): the dense path scatters them into a ``(P, P)`` matrix, the sparse
        path (:mod:`orchestrator.poe.sparse`) into a CSR matrix with ``O(P + K)`` entries.

        Comparative block: ``d = t x`` with ``x = u·θ``, ``u = e_i − e_j − e_Δj`` and ``t = exp(η_j)``
        (``t = 1`` without sharpness). With per-expert derivatives ``g = ∂ log e/∂d`` and
        ``h = ∂² log e/∂d²`` from autograd, ``∇d = (t u, d e_η)`` and the only second derivatives
        of ``d`` are ``∂²d/∂η∂θ = t u`` and ``∂²d/∂η² = d``, so ``∇ = −Σ g ∇d`` and
        ``∇² = Σ (−h) ∇d ∇dᵀ − g ∇²d``: without sharpness a weighted graph Laplacian.
        Absolute block (Gaussian in ``(s_n, a_j, b_j)``, closed form): with ``r = μ_n − a_j s_n − b_j``
        and ``w = 1/σ_n²`` the terms are ``½ w r²``.

        ``gauss_newton`` zeroes the terms with second derivatives of ``d`` and ``r`` (``−g ∇²d``,
        the ``−w r`` in ``∂²/∂s∂a``; the entries stay, so the sparsity pattern is the same): what remains is a sum of squares, the covariance of the sparse
        path's perturbation noise (:mod:`orchestrator.poe.sparse`).
        """
        obs, P = self.obs, self.dim
        precision, mean = self._prior_terms()
        value = 0.5 * (precision * (theta - mean) ** 2).sum()
        grad = precision * (theta - mean)
        diagonal = torch.arange(P)
        rows: list[Tensor] = [diagonal]
        cols: list[Tensor] = [diagonal]
        vals: list[Tensor] = [precision]

        if obs.n_comparisons:
            value = value + self._comparison_terms(theta, grad, (rows, cols, vals) if hessian else None, gauss_newton)

        if self.link_index is not None:
            a, b, s_item, w, r = self._absolute_residuals(theta)
            item = obs.abs_item
            ka = self.link_index + 2 * self._abs_judge
            kb = ka + 1
            value = value + 0.5 * (w * r * r).sum()
            grad.index_add_(0, item, -w * r * a)
            grad.index_add_(0, ka, -w * r * s_item)
            grad.index_add_(0, kb, -w * r)
            if hessian:
                cross_a = w * a * s_item if gauss_newton else -w * (r - a * s_item)  # ∂²(½wr²)/∂s∂a
                cross_b = w * a
                rows += [item, item, ka, item, kb, ka, ka, kb, kb]
                cols += [item, ka, item, kb, item, ka, kb, ka, kb]
                vals += [w * a * a, cross_a, cross_a, cross_b, cross_b, w * s_item * s_item, w * s_item, w * s_item, w]
            if self.abs_control_index is not None:
                self._absolute_control_terms(grad, (rows, cols, vals) if hessian else None, item, ka, kb, a, s_item, w, r)
        if not hessian:
            return value, grad, None
        return value, grad, (torch.cat(rows), torch.cat(cols), torch.cat(vals))

    def _absolute_control_terms(
        self,
        grad: Tensor,
        entries: tuple[list[Tensor], list[Tensor], list[Tensor]] | None,
        item: Tensor,
        ka: Tensor,
        kb: Tensor,
        a: Tensor,
        s_item: Tensor,
        w: Tensor,
        r: Tensor,
    ) -> None:
        """The absolute judgments' control weights γ_jc: ``∂(½wr²)/∂γ_c = −w r x_c``; ``r`` is
        linear in γ, so the second derivatives are ``w x_c x_c'`` (γ, γ), ``w a x_c`` (γ, s),
        ``w s x_c`` (γ, a) and ``w x_c`` (γ, b), the same with ``gauss_newton``."""
        assert self.abs_control_index is not None and self.obs.abs_covariates is not None
        X, C = self.obs.abs_covariates, self.n_abs_controls
        kc = [self.abs_control_index + self._abs_judge * C + c for c in range(C)]
        for c in range(C):
            grad.index_add_(0, kc[c], -w * r * X[:, c])
        if entries is None:
            return
        rows, cols, vals = entries
        for c in range(C):
            x = X[:, c]
            rows += [kc[c], item, kc[c], ka, kc[c], kb]
            cols += [item, kc[c], ka, kc[c], kb, kc[c]]
            vals += [w * a * x, w * a * x, w * s_item * x, w * s_item * x, w * x, w * x]
            for c2 in range(C):
                rows.append(kc[c])
                cols.append(kc[c2])
                vals.append(w * x * X[:, c2])

    def _comparison_terms(
        self, theta: Tensor, grad: Tensor, entries: tuple[list[Tensor], list[Tensor], list[Tensor]] | None, gauss_newton: bool
    ) -> Tensor:
        """The comparative block of :meth:`hessian_entries`: adds its gradient into ``grad`` and
        its Hessian entries to ``entries`` (None: no Hessian); returns its negative log-likelihood."""
        obs = self.obs
        d = self._differences(theta)
        logp, g, h = self.expert_terms(d)
        c = -h
        i, j = obs.first, obs.second
        t = torch.exp(theta[self.sharp_index + self._judge]) if self.sharp_index is not None else torch.ones_like(d)
        index = [i, j]
        slope = [t, -t]  # ∂d/∂θ at each index
        if self.delta_index is not None:
            index.append(self.delta_index + self._judge)
            slope.append(-t)
        control_index, control_slope = self.control_entries(t)
        index += control_index
        slope += control_slope
        linear_terms = len(index)
        if self.sharp_index is not None:
            index.append(self.sharp_index + self._judge)
            slope.append(d)
        for at, v in zip(index, slope):
            grad.index_add_(0, at, -g * v)
        if entries is not None:
            rows, cols, vals = entries
            for k in range(len(index)):
                for m in range(len(index)):
                    rows.append(index[k])
                    cols.append(index[m])
                    vals.append(c * slope[k] * slope[m])
            if self.sharp_index is not None:
                second = 0.0 if gauss_newton else 1.0  # (zeros keep the entries' layout)
                eta = index[-1]
                for k in range(linear_terms):  # −g ∂²d/∂η∂θ_k, both orders
                    rows += [eta, index[k]]
                    cols += [index[k], eta]
                    vals += [-second * g * slope[k], -second * g * slope[k]]
                rows.append(eta)
                cols.append(eta)
                vals.append(-second * g * d)
        return -logp.sum()
