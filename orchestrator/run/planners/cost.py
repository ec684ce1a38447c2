"""Cost-aware selection: which (comparison or candidate, judge, kind) to ask next, by
the expected reduction of the ranking's uncertainty per unit of cost.

Pairwise. For a pair ``(a, b)`` with posterior ``d = s_a − s_b ~ N(μ, v)`` and its selection score
``S_ab`` (the strategy's metric: the probability of reordering by default), asking judge ``j``, whose
fitted sharpness is ``t_j`` and precision ``κ_j`` (:mod:`orchestrator.poe.reliability`), adds the
curvature ``c_j = κ_j t_j² c(t_j μ)`` to the pair (``c`` the expert's expected curvature), which
removes the fraction ``c_j v / (1 + c_j v)`` of the pair's variance:

.. math:: V_{ab,j} = S_{ab} \\cdot \\frac{c_j v}{1 + c_j v}.

Absolute. Scoring candidate ``i`` alone with judge ``j`` (a Gaussian expert on ``a_j s_i + b_j`` of
variance ``σ_j²``, PoE §3.2) adds the curvature ``c_j = a_j² / σ_j²`` to ``s_i`` only; by
Sherman–Morrison it removes ``c_j (Σ_ii − Σ_ik)² / (1 + c_j Σ_ii)`` of the variance of every pair
``(i, k)``, so its value sums over the pairs the candidate is in:

.. math:: V_{i,j} = \\sum_{k \\ne i} S_{ik} \\cdot \\frac{c_j (Σ_{ii} − Σ_{ik})^2}{(1 + c_j Σ_{ii})\\, v_{ik}}.

Requests are ranked by ``V / cost`` — USD at the judges' prices when any judge is priced,
worst-case tokens otherwise (:mod:`orchestrator.run.budget`) — over every pair and candidate a
judge can still be asked, not only over the pairs with the highest ``S``: a judge that has asked
the closest pairs already is still weighed on the others. Where a pair is very uncertain
(``c v ≫ 1``) every judge removes nearly all of it and the cheapest wins; where the decision is
close and already well informed (``c v ≪ 1``) the value grows with ``c_j`` and a sharper, more
expensive judge is worth its price. A random judge's ``t_j → 0`` makes its value vanish. Judges
not measured yet are valued optimistically (:func:`value_parameters`).
"""

from __future__ import annotations

import torch

from ...poe import Expert, Posterior, expected_curvature
from ...store import PlannedRequest

__all__ = ["OPTIMISM", "judge_parameters", "value_parameters", "pairwise_values", "absolute_values", "request_cost"]

OPTIMISM = 2.0
"""How much more information per unit of cost than the best measured judge a judge not yet asked
is assumed to give (``benchmarks/selection/panel_cost.py``)."""


def judge_parameters(posterior: Posterior, names: list[str]) -> dict[str, tuple[float, float, float]]:
    """Judge name → ``(t_j, upper end of t_j's 95% interval, κ_j)`` from a posterior fitted on
    judges ``names`` (in index order); ``(1, 1, 1)`` where the model has none (one judge)."""
    t = posterior.judges.get("sharpness")
    t_high = posterior.judges.get("sharpness_high")
    kappa = posterior.judges.get("precision")

    def at(values, k: int) -> float:
        return float(values[k]) if values is not None and k < values.numel() else 1.0

    return {name: (at(t, k), at(t_high, k), at(kappa, k)) for k, name in enumerate(names)}


def value_parameters(fitted: dict[str, tuple[float, float, float]], unit_cost: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Judge name → ``(t, κ)`` a request's value is computed with, for every judge of ``unit_cost``.

    Optimism in the face of uncertainty: a judge with judgments counts at the upper end of its
    sharpness interval (a judge asked twice is not written off by a prior-shrunk estimate); a judge
    never asked is assumed to give ``OPTIMISM`` × the information per unit of cost of the best
    measured judge (``κ t²`` per cost), so that it is tried where its price would pay off, not
    before. With no judge measured yet every judge counts as ``(1, 1)`` and the cheapest goes first.
    """
    measured = {j: (t_high, kappa) for j, (_, t_high, kappa) in fitted.items() if j in unit_cost}
    out = dict(measured)
    if measured:
        best = max(measured, key=lambda j: measured[j][1] * measured[j][0] ** 2 / unit_cost[j])
        t_best, kappa_best = measured[best]
        for judge, cost in unit_cost.items():
            if judge not in measured:
                out[judge] = (t_best, OPTIMISM * kappa_best * cost / unit_cost[best])
    for judge in unit_cost:
        out.setdefault(judge, (1.0, 1.0))
    return out


def _pair_variance(cov: torch.Tensor) -> torch.Tensor:
    d = cov.diagonal()
    return d[:, None] + d[None, :] - 2 * cov


def pairwise_values(
    mean: torch.Tensor, cov: torch.Tensor, scores: torch.Tensor, sharpness: float, precision: float, expert: Expert
) -> torch.Tensor:
    """``(N, N)``: ``V_ab = S_ab · c v / (1 + c v)`` with ``c = κ t² c_expert(t μ_ab)`` (module docstring)."""
    mu = mean[:, None] - mean[None, :]
    v = _pair_variance(cov)
    c = precision * sharpness**2 * expected_curvature(expert, sharpness * mu)
    return scores * c * v / (1.0 + c * v)


def absolute_values(cov: torch.Tensor, scores: torch.Tensor, curvature: float) -> torch.Tensor:
    """``(N,)``: ``V_i = Σ_k S_ik · c (Σ_ii − Σ_ik)² / ((1 + c Σ_ii) v_ik)`` (module docstring); the
    score of an unordered pair is the mean of its two orders."""
    n = cov.shape[0]
    d = cov.diagonal()
    v = _pair_variance(cov)
    off = ~torch.eye(n, dtype=torch.bool)
    removed = curvature * (d[:, None] - cov) ** 2 / (1.0 + curvature * d[:, None])
    fraction = torch.where(off, removed / v.clamp_min(1e-300), torch.zeros_like(v))
    symmetric = (scores + scores.T) / 2
    return (symmetric * fraction * off).sum(1)


def request_cost(requests: list[PlannedRequest], priced: bool) -> float:
    """What a unit of requests may cost: worst-case USD when the panel is priced, tokens otherwise."""
    total = sum(r.reserved_usd for r in requests) if priced else float(sum(r.reserved_tokens for r in requests))
    return max(total, 1e-12)
