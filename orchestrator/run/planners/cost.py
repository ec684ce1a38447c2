"""Cost-aware panels (issue #17): which judge to ask about a selected comparison, by the expected
reduction of the ranking's uncertainty per unit of cost.

For a candidate pair ``(a, b)`` with posterior ``d = s_a − s_b ~ N(μ, v)`` and its selection score
``S`` (the strategy's metric: the probability of reordering by default), asking judge ``j``, whose
fitted sharpness is ``t_j`` and precision ``κ_j`` (:mod:`orchestrator.poe.reliability`), adds the
curvature ``c_j = κ_j t_j² c(t_j μ)`` to the pair (``c`` the expert's expected curvature), which
removes the fraction ``c_j v / (1 + c_j v)`` of the pair's variance. The value of the request is

.. math:: V_{ab,j} = S_{ab} \\cdot \\frac{c_j v}{1 + c_j v},

and requests are ranked by ``V / cost`` — USD at the judges' prices when any judge of the panel is
priced, worst-case tokens otherwise (:mod:`orchestrator.run.budget`). Where a pair is still very
uncertain (``c v ≫ 1``) every judge removes nearly all of it and the cheapest wins; where the
decision is close and already well informed (``c v ≪ 1``) the value grows with ``c_j`` and a
sharper, more expensive judge is worth its price. A random judge's ``t_j → 0`` makes its value
vanish. Every judge is first asked ``EXPLORE`` comparisons of a ranking, so that its reliability is
learned before it is priced against the others. Known limit (``benchmarks/RESULTS.md``): the
value counts variance removed, and a very reproducible judge removes much of it per call while
its verdicts order the candidates only somewhat better than a cheap judge's; where a cheap judge
suffices the panel then spends about twice what that judge alone would.
"""

from __future__ import annotations

import torch

from ...poe import Expert, Posterior, expected_curvature
from ...store import PlannedRequest

__all__ = ["EXPLORE", "judge_parameters", "information_value", "request_cost"]

EXPLORE = 2
"""Comparisons every judge answers in a ranking before its value is weighed against its price
(``benchmarks/panel_cost.py``: 0 never tries an expensive judge when a cheap one looks as good
under the prior, 5 spends too much exploring it)."""


def judge_parameters(posterior: Posterior, names: list[str]) -> dict[str, tuple[float, float]]:
    """Judge name → ``(t_j, κ_j)`` from a posterior fitted on judges ``names`` (in index order);
    ``(1, 1)`` where the model has none."""
    t = posterior.judges.get("sharpness")
    kappa = posterior.judges.get("precision")

    def at(values, k: int) -> float:
        return float(values[k]) if values is not None and k < values.numel() else 1.0

    return {name: (at(t, k), at(kappa, k)) for k, name in enumerate(names)}


def information_value(score: float, mu: float, v: float, sharpness: float, precision: float, expert: Expert) -> float:
    """``V = S · c v / (1 + c v)`` with ``c = κ t² c_expert(t μ)`` (module docstring)."""
    c = precision * sharpness**2 * float(expected_curvature(expert, torch.tensor([sharpness * mu], dtype=torch.float64))[0])
    return score * c * v / (1.0 + c * v)


def request_cost(requests: list[PlannedRequest], priced: bool) -> float:
    """What a unit of requests may cost: worst-case USD when the panel is priced, tokens otherwise."""
    total = sum(r.reserved_usd for r in requests) if priced else float(sum(r.reserved_tokens for r in requests))
    return max(total, 1e-12)
