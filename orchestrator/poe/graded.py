"""Graded five-way verdicts as an expert of their own: the ordered-logit
(proportional-odds, McCullagh 1980) model of arena-hard's verdicts ``A≫B, A>B, A=B, B>A, B≫A``.

With the comparison's difference ``d = t_j (s_i − s_j − Δ_j + …)`` (the same ``d`` every PoE
comparative expert sees, :mod:`.objective`) and judge ``j``'s cut-points ``0 < c1_j < c2_j``:

.. math::
   P(g ⪰ A≫B) = σ(d − c_2),\\quad P(g ⪰ A>B) = σ(d − c_1),\\quad
   P(g ⪰ A=B) = σ(d + c_1),\\quad P(g ⪰ B>A) = σ(d + c_2),

and each verdict's probability ``P_k(d)`` is the difference of two successive ones (``A≫B``:
the first; ``B≫A``: ``1 − σ(d + c_2)``). A judge's verdict distribution ``q`` (one-hot for a
parsed verdict, its option probabilities when log-probabilities were read) enters as the expected
log-likelihood

.. math:: \\log p(d \\mid q) = \\sum_k q_k \\log P_k(d),

the graded counterpart of soft Bradley–Terry's ``p log σ(d) + (1−p) log σ(−d)`` (PoE Eq. 1, α = β
= 0). A tie is a category with its own probability, largest at ``d = 0``: a judge that says
``A=B`` says the difference is small (within ``±c_1``), not that ``A`` won half a game, and a
``≫`` says it is large. ``c_1 → 0``, ``c_2 → ∞`` is soft Bradley–Terry on ``P(A ahead)``.

The cut-points are a judge's habits (how readily it calls a tie or a strong preference). They are
fitted per judge by maximum a posteriori at the scores' mode, alternating with the Laplace fit of
the scores (:func:`fit_cuts`), under a weak log-normal prior around :data:`DEFAULT_CUTS`; the
scores' covariance is the Laplace one at the fitted cut-points.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn.functional import logsigmoid

__all__ = [
    "DEFAULT_CUTS",
    "CUT_PRIOR_SD",
    "graded_log_probabilities",
    "graded_log_density",
    "graded_derivatives",
    "graded_rows",
    "fit_cuts",
]

DEFAULT_CUTS = (0.5, 2.0)
"""``(c1, c2)`` before any verdict is seen (logit units of ``d``)."""
CUT_PRIOR_SD = 1.5
"""Sd of the prior on ``log c1`` and on ``log(c2 − c1)``, around the defaults' values."""


def _log_between(upper: Tensor, lower: Tensor) -> Tensor:
    """``log(σ(upper) − σ(lower))`` for ``upper > lower``, stably:
    ``σ(a) − σ(b) = σ(a) σ(−b) (1 − e^{b−a})``."""
    return logsigmoid(upper) + logsigmoid(-lower) + torch.log(-torch.expm1(lower - upper))


def graded_log_probabilities(d: Tensor, c1: Tensor, c2: Tensor) -> Tensor:
    """``(K, 5)`` ``log P_k(d)`` of each verdict (module docstring), :data:`~orchestrator.records.log.GRADES` order."""
    return torch.stack(
        [
            logsigmoid(d - c2),
            _log_between(d - c1, d - c2),
            _log_between(d + c1, d - c1),
            _log_between(d + c2, d + c1),
            logsigmoid(-(d + c2)),
        ],
        dim=-1,
    )


def graded_log_density(d: Tensor, q: Tensor, c1: Tensor, c2: Tensor) -> Tensor:
    """``Σ_k q_k log P_k(d)`` (module docstring), elementwise over the rows of ``d`` ``(K,)``,
    ``q`` ``(K, 5)`` in :data:`~orchestrator.records.log.GRADES` order, ``c1``, ``c2`` ``(K,)``."""
    log_p = graded_log_probabilities(d, c1, c2)
    # a verdict of probability 0 contributes nothing, whatever its log (0 · −inf would be NaN)
    return torch.where(q > 0, q * log_p, torch.zeros_like(log_p)).sum(-1)


def graded_derivatives(d: Tensor, q: Tensor, c1: Tensor, c2: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Value, first and second derivative in ``d`` of :func:`graded_log_density` (autograd; the
    density is elementwise in ``d``, so two passes give every row's curvature)."""
    with torch.enable_grad():
        d = d.detach().requires_grad_(True)
        value = graded_log_density(d, q, c1, c2)
        (first,) = torch.autograd.grad(value.sum(), d, create_graph=True)
        (second,) = torch.autograd.grad(first.sum(), d)
    return value.detach(), first.detach(), second.detach()


def graded_rows(grades: Tensor | None) -> Tensor | None:
    """``(K,)`` bool: the comparisons that carry a graded verdict (rows of ``grades`` not NaN);
    None where none does."""
    if grades is None:
        return None
    rows = ~torch.isnan(grades[:, 0])
    return rows if bool(rows.any()) else None


def _cuts(u: Tensor) -> tuple[Tensor, Tensor]:
    c1 = u[:, 0].exp()
    return c1, c1 + u[:, 1].exp()


def fit_cuts(d: Tensor, q: Tensor, judge: Tensor, n_judges: int, *, steps: int = 40) -> Tensor:
    """``(J, 2)`` cut-points ``(c1_j, c2_j)`` maximising ``Σ log p(d_k | q_k)`` over each judge's
    graded comparisons at fixed differences ``d`` (the scores' mode), plus the log-normal prior
    (:data:`CUT_PRIOR_SD`); a judge without graded verdicts keeps the defaults. Parametrised by
    ``u = (log c1, log(c2 − c1))`` so the order holds; Newton steps on the 2-by-2 blocks."""
    c1, c2 = DEFAULT_CUTS
    centre = torch.tensor([c1, c2 - c1], dtype=torch.float64).log()
    u = centre.repeat(n_judges, 1)
    d = d.detach()

    def objective(u: Tensor) -> Tensor:
        c_low, c_high = _cuts(u)
        fit = graded_log_density(d, q, c_low[judge], c_high[judge]).sum()
        return -fit + 0.5 * (((u - centre) / CUT_PRIOR_SD) ** 2).sum()

    for _ in range(steps):
        grad = torch.autograd.functional.jacobian(objective, u)
        hess = torch.autograd.functional.hessian(objective, u).reshape(2 * n_judges, 2 * n_judges)
        # each judge's block is its own (the others' cut-points do not enter its terms)
        blocks = torch.stack([hess[2 * j : 2 * j + 2, 2 * j : 2 * j + 2] for j in range(n_judges)])
        step = torch.linalg.solve(blocks + 1e-9 * torch.eye(2, dtype=torch.float64), grad.unsqueeze(-1)).squeeze(-1)
        new = u - step.clamp(-1.0, 1.0)
        if objective(new) > objective(u):  # a Newton step that does not descend: halve it
            new = u - 0.5 * step.clamp(-1.0, 1.0)
        if float((new - u).abs().max()) < 1e-8:
            u = new
            break
        u = new
    c_low, c_high = _cuts(u)
    return torch.stack([c_low, c_high], dim=-1).detach()
