"""The weight-propagation judge prior for any number of levels M (simplex paper §5.3, App. B.3).

A judge's confusion matrix ``θ`` (``θ[m, s] = P(assigned s | true m)``, rows = true scores) is
built row by row:

1. **Row 1** (true score 1) is a point on the simplex: ``θ[1] ~ Dirichlet(1, …, 1)``.
2. **Row m+1 from row m.** The mass at node ``(m, s)`` is split over the nodes ``(m+1, s')`` with
   ``s' ≥ s`` — it stays or moves to a *higher* assigned score, never lower — by edge weights
   ``α[m, s, ·] ~ Dirichlet(β)`` over the ``M − s + 1`` children, with ``β = 1`` on every edge but
   ``1 + ρ_j·β_max`` on the **one-step-up** edge ``s → s + 1``; ``ρ_j ~ Beta(1, 1)`` per judge.
   Node ``(m, M)`` has one child, weight 1.
   ``θ[m+1, s'] = Σ_{s ≤ s'} θ[m, s]·α[m, s, s']``.

Why this is the paper's construction for general M:

- *Monotone by construction* (Assumption 3, App. B.3.3): mass at or below any assigned level ``t``
  in row ``m+1`` can only come from mass at or below ``t`` in row ``m``, so every row first-order
  stochastically dominates the previous one: a better answer is never more likely to get a low
  score. Label switching (App. E.4) is impossible, with no inequality constraints in the sampler.
- *β_max is judge discrimination* (§5.3): the boosted edge makes the assigned score follow the
  true score one step at a time — a judge whose rows are shifted copies of each other separates
  every true level. ``β_max = 0`` is the uniform prior over all monotone judges (including one that
  ignores the answer: every edge "stay"). ``ρ_j`` lets judges differ in quality.
- *M = 3* reproduces App. B.3.2's ``β_{1,1} = [1, 1 + ρβ_max, 1]`` (node (1,1) → (2,1), (2,2), (2,3)).
  For node (2,1) the paper prints ``[1, 1, 1 + ρβ_max]``, boosting the edge to the diagonal (3,3)
  instead; the one-step-up edge is used everywhere (as specified for this project), which is what this module does.
  Nothing else of the general-M graph is printed (App. B.3.4 defers it to unavailable code).

Parameters per judge: ``(M − 1)`` for row 1 and ``(M − 1)·Σ_{s<M}(M − s) = (M − 1)²M/2`` edge
weights, plus ρ_j; M = 5 gives 4 + 40 + 1 = 45. :func:`propagation_table` lists the edges
(docs/simplex-prior.md shows it for M = 3 and M = 5).

The functions are written against an array namespace ``xp`` (numpy, jax.numpy or torch), so the
same code builds θ inside the sampler, in tests and in the pyro comparison benchmark.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["confusion_matrix", "edge_concentrations", "propagation_table", "n_judge_parameters"]


def edge_concentrations(levels: int, rho_beta: Any, xp: Any = np) -> list[Any]:
    """Dirichlet concentrations of the edge weights out of assigned level ``s`` (0-based, ``s < M − 1``):
    a list of ``M − 1`` arrays shaped ``(..., M − 1, M − s)`` — one row per transition ``m → m + 1``
    — with ``1 + ρ·β_max`` on the one-step-up child (index 1) and 1 elsewhere.

    ``rho_beta`` is ``ρ_j·β_max`` with any leading (judge) shape.
    """
    rho_beta = rho_beta if hasattr(rho_beta, "shape") else xp.asarray(rho_beta)
    out = []
    for s in range(levels - 1):
        width = levels - s
        boost = xp.asarray([1.0 if i == 1 else 0.0 for i in range(width)], dtype=rho_beta.dtype)
        conc = 1.0 + rho_beta[..., None, None] * boost  # (..., 1, width)
        out.append(xp.broadcast_to(conc, tuple(rho_beta.shape) + (levels - 1, width)))
    return out


def confusion_matrix(root: Any, steps: list[Any], xp: Any = np) -> Any:
    """θ ``(..., M, M)`` from row 1 ``root (..., M)`` and the edge weights ``steps[s] (..., M − 1, M − s)``
    (``steps[s][..., m, :]`` splits node ``(m, s)`` over ``(m + 1, s), …, (m + 1, M)``; 0-based).

    Each transition is an upper-triangular row-stochastic matrix ``A_m``; ``θ[m + 1] = θ[m]·A_m``.
    """
    levels = root.shape[-1]
    if len(steps) != levels - 1:
        raise ValueError(f"need {levels - 1} edge-weight arrays for M = {levels}, got {len(steps)}")
    lead = root.shape[:-1]
    rows = [root]
    last = xp.broadcast_to(xp.asarray([1.0 if i == levels - 1 else 0.0 for i in range(levels)], dtype=root.dtype), tuple(lead) + (levels,))
    for m in range(levels - 1):
        trans = []
        for s in range(levels - 1):
            w = steps[s][..., m, :]
            trans.append(xp.concatenate([xp.zeros(tuple(lead) + (s,), dtype=root.dtype), w], axis=-1))
        trans.append(last)
        a = xp.stack(trans, axis=-2)  # (..., M, M), row s = where node (m, s)'s mass goes
        rows.append(xp.einsum("...s,...st->...t", rows[-1], a))
    return xp.stack(rows, axis=-2)


def n_judge_parameters(levels: int) -> int:
    """Free parameters of one judge's confusion matrix (row 1 plus edge weights, excluding ρ)."""
    return (levels - 1) + (levels - 1) * sum(levels - s for s in range(1, levels))


def propagation_table(levels: int) -> list[dict]:
    """Every edge of the graph: ``{"from": (m, s), "to": (m + 1, s'), "concentration": "1" | "1 + ρβ_max"}``
    (1-based levels), for documentation and tests."""
    edges = []
    for m in range(1, levels):
        for s in range(1, levels + 1):
            for t in range(s, levels + 1):
                conc = "1 (only child)" if s == levels else ("1 + ρβ_max" if t == s + 1 else "1")
                edges.append({"from": (m, s), "to": (m + 1, t), "concentration": conc})
    return edges
