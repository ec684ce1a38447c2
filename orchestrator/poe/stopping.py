"""Stopping with an indifference zone: a ranking is done when every neighbour pair is either in the
right order or a practical tie that more calls would not settle (PoE §4.3 extended).

Why not the reorder probability alone (PoE §4.3)? Two candidates of equal quality keep a
reordering probability near ½ however often they are compared, so a rule "every adjacent pair
reordered with probability < α" never holds when a ranking has ties, and a run spends its whole
budget asking about them. Ranking-and-selection's *indifference zone* (Bechhofer 1954) fixes the
goal instead: an ordering error only counts when the candidates differ by more than ``δ``.

For neighbours ``a`` (ranked above) and ``b`` the posterior of ``d = s_a − s_b`` is ``N(μ, v)``
with ``μ ≥ 0``, and the **indifference-zone error** is

.. math:: E = P(d < −δ) = Φ\\!\\left(−\\frac{μ + δ}{\\sqrt v}\\right),

the probability that ``b`` is in truth better than ``a`` by more than ``δ``. One more comparison
of the pair with expected curvature ``c`` (the expert's Fisher information at ``μ``) shrinks the
variance to ``v' = v − c v² / (1 + c v)``; before the answer arrives the new mean is distributed as
``m ~ N(μ, v − v')`` (preposterior analysis), so the **expected gain** of the call is

.. math:: G = E − \\mathbb{E}_m\\, Φ\\!\\left(−\\frac{|m| + δ}{\\sqrt{v'}}\\right),

computed exactly up to quadrature: ``|m|`` is folded-normal, so the expectation is a smooth
integral over ``[0, μ + 8 sd]`` (64-point Gauss–Legendre; a Gauss–Hermite rule over ``m`` would
have to integrate the kink of ``|m|`` at 0). A pair is **settled** when it is resolved (``E < max_error``)
or when it is near (``μ < δ``) and ``G < min_gain``: the next call would lower its error by less than
``min_gain`` (a tie only ever resolves at the rate its variance shrinks). The run stops when every
pair that matters is settled. Pairs more likely within ``±δ`` than not (``P(|d| < δ) > ½``) are
reported as **practical ties**.

``δ`` is on the score scale, where ``σ(δ)`` is the win rate of the better candidate under a
Bradley–Terry judge: the default ``δ = 0.5`` calls candidates tied when the better one would win
at most 62% of comparisons. ``top_k`` restricts the goal to "find the best ``k``": the order within
the top ``k`` and the boundary between rank ``k`` and ``k + 1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from .experts import Expert, expected_curvature, soft_bradley_terry
from .laplace import Posterior, pair_variances
from .uncertainty import posterior_entropy

__all__ = [
    "TIE_DELTA",
    "MAX_ERROR",
    "MIN_GAIN",
    "IndifferenceZone",
    "NeighbourStatus",
    "IndifferenceDecision",
    "error_and_gain",
    "neighbour_gaps",
    "neighbour_status",
    "indifference_stop",
]

TIE_DELTA = 0.5
"""Default indifference zone ``δ`` (score units; the better of two tied candidates wins ≤ σ(0.5) = 62%)."""
MAX_ERROR = 0.05
"""Default bound on a pair's indifference-zone error for it to count as resolved."""
MIN_GAIN = 0.01
"""Default least expected error reduction per call for an unresolved near pair to be worth asking."""


@dataclass(frozen=True)
class IndifferenceZone:
    """The indifference-zone rule's settings (module docstring), shared by the status, the stop
    and the forecast of how many comparisons remain."""

    delta: float = TIE_DELTA
    """The zone ``δ`` (score units, read through the panel's sharpness)."""
    max_error: float = MAX_ERROR
    """A pair is resolved when its indifference-zone error is below this."""
    min_gain: float = MIN_GAIN
    """An unresolved near pair is worth another call while its expected gain is at least this."""
    top_k: int | None = None
    """Only the first ``k`` neighbour pairs matter (None: every one)."""

    def __post_init__(self) -> None:
        if self.delta < 0:
            raise ValueError(f"delta must be >= 0 (got {self.delta})")

    @classmethod
    def of(cls, stopping) -> "IndifferenceZone":
        """The zone a run's ``[stopping]`` section sets (``tie_delta``, ``max_error``, ``min_gain``, ``top_k``)."""
        return cls(stopping.tie_delta, stopping.max_error, stopping.min_gain, stopping.top_k)


_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(64)  # ∫_{-1}^{1} f(x) dx ≈ Σ w f(x)


def _phi(x: Tensor) -> Tensor:
    return 0.5 * torch.erfc(-x / math.sqrt(2.0))


@dataclass(frozen=True)
class NeighbourStatus:
    """Neighbour pairs of the current ranking, best first (``order[r]`` above ``order[r + 1]``)."""

    order: Tensor
    """``(N,)`` candidate indices, best first."""
    gap: Tensor
    """``(N−1,)`` posterior mean of ``s_a − s_b`` (≥ 0)."""
    sd: Tensor
    """``(N−1,)`` posterior sd of ``s_a − s_b``."""
    error: Tensor
    """``(N−1,)`` indifference-zone error ``E``."""
    gain: Tensor
    """``(N−1,)`` expected reduction of ``E`` from one more comparison of the pair."""
    resolved: Tensor
    """``(N−1,)`` bool: ``E < max_error``."""
    settled: Tensor
    """``(N−1,)`` bool: resolved, or near (gap < δ) with ``gain < min_gain``."""
    tie_probability: Tensor
    """``(N−1,)`` ``P(|d| < δ)``."""
    tied: Tensor
    """``(N−1,)`` bool: a practical tie, ``P(|d| < δ) > ½``."""

    def ordered(self, max_error: float = MAX_ERROR) -> Tensor:
        """``(N−1,)`` bool: the order itself is settled, ``P(d > 0) = Φ(gap / sd) ≥ 1 − max_error``.
        A pair can be ordered and a practical tie at once: two candidates whose small gap is
        known precisely ("ordered, but the gap is below δ"); the words shown must say which."""
        return _phi(self.gap / self.sd.clamp_min(1e-12)) >= 1.0 - max_error


def neighbour_status(posterior: Posterior, zone: IndifferenceZone = IndifferenceZone(), expert: Expert | None = None) -> NeighbourStatus:
    """The indifference-zone error, expected gain, and resolved/tied status of every neighbour pair
    (module docstring for the formulas).

    With fitted judge sharpness the scores are on the prior's scale and a judge's logits are
    ``t_j d``: ``δ`` (a win rate, on the logit scale) is then read through the panel's typical
    sharpness ``t̄`` (geometric mean over judges): ``δ_s = δ / t̄``, and a comparison's curvature
    is ``t̄² c(t̄ μ)``.
    """
    scale, order, gap, v = neighbour_gaps(posterior)
    delta, max_error, min_gain = zone.delta / scale, zone.max_error, zone.min_gain
    if order.numel() < 2:
        empty = torch.zeros(0, dtype=torch.float64)
        return NeighbourStatus(order, empty, empty, empty, empty, empty.bool(), empty.bool(), empty, empty.bool())
    c = scale**2 * expected_curvature(expert or soft_bradley_terry(), scale * gap)
    error, gain = error_and_gain(gap, v, c, delta)
    resolved = error < max_error
    settled = resolved | ((gap < delta) & (gain < min_gain))
    tie_probability = _phi((delta - gap) / v.sqrt()) - _phi((-delta - gap) / v.sqrt())
    return NeighbourStatus(order, gap, v.sqrt(), error, gain, resolved, settled, tie_probability, tie_probability > 0.5)


def neighbour_gaps(posterior: Posterior) -> tuple[float, Tensor, Tensor, Tensor]:
    """``(t̄, order, gap, v)``: the panel's typical sharpness (1 without fitted sharpness), the
    ranking best first, and each neighbour pair's posterior mean gap (≥ 0) and variance."""
    scale = float(posterior.judges["sharpness"].log().mean().exp()) if "sharpness" in posterior.judges else 1.0
    order = torch.argsort(posterior.mean, descending=True)
    a, b = order[:-1], order[1:]
    gap = (posterior.mean[a] - posterior.mean[b]).clamp_min(0.0)
    return scale, order, gap, pair_variances(posterior, a, b).clamp_min(1e-12)


def error_and_gain(gap: Tensor, v: Tensor, c: Tensor, delta: float) -> tuple[Tensor, Tensor]:
    """Indifference-zone error ``E`` and the expected gain ``G`` of one more comparison of pairs
    with posterior gap ``gap ≥ 0``, variance ``v`` and per-comparison curvature ``c`` (all the same
    shape, flattened here; module docstring for the formulas)."""
    shape = gap.shape
    gap, v, c = gap.reshape(-1), v.reshape(-1), c.reshape(-1)
    error = _phi(-(gap + delta) / v.sqrt())
    v_next = (v - c * v * v / (1.0 + c * v)).clamp_min(1e-12)
    spread = (v - v_next).clamp_min(1e-12).sqrt()
    # E Φ(−(|m| + δ)/√v') with |m| folded-normal: ∫_0^U Φ(−(x + δ)/√v') [φ((x−μ)/sd) + φ((x+μ)/sd)]/sd dx
    upper = gap + 8.0 * spread
    x = (torch.as_tensor(_NODES, dtype=torch.float64)[None, :] + 1.0) * 0.5 * upper[:, None]
    weights = torch.as_tensor(_WEIGHTS, dtype=torch.float64)[None, :] * 0.5 * upper[:, None]
    sd = spread[:, None]
    folded = (torch.exp(-0.5 * ((x - gap[:, None]) / sd) ** 2) + torch.exp(-0.5 * ((x + gap[:, None]) / sd) ** 2)) / (
        sd * math.sqrt(2 * math.pi)
    )
    expected = (_phi(-(x + delta) / v_next.sqrt()[:, None]) * folded * weights).sum(1)
    gain = (error - expected).clamp_min(0.0)
    return error.reshape(shape), gain.reshape(shape)


@dataclass(frozen=True)
class IndifferenceDecision:
    """Outcome of :func:`indifference_stop` for one ranking."""

    stop: bool
    reason: str
    tied: list[tuple[int, int]] = field(default_factory=list)
    """Neighbour pairs ``(a, b)`` (candidate indices, ``a`` ranked above) treated as tied."""
    max_error: float = 0.0
    """Largest indifference-zone error among the pairs that matter."""
    entropy: float = 0.0


def indifference_stop(
    posterior: Posterior, zone: IndifferenceZone = IndifferenceZone(), expert: Expert | None = None
) -> IndifferenceDecision:
    """Stop when every neighbour pair that matters is resolved or a practical tie.

    The pairs that matter are all neighbours, or with ``top_k`` the first ``k`` (the order within
    the top ``k`` and the boundary with rank ``k + 1``). A posterior with no comparison never stops.
    """
    status = neighbour_status(posterior, zone, expert)
    top_k, delta = zone.top_k, zone.delta
    count = status.error.numel()
    upto = count if top_k is None else min(max(top_k, 1), count)
    ent = posterior_entropy(posterior)
    if count == 0:
        return IndifferenceDecision(True, "one candidate", entropy=ent)
    worst = float(status.error[:upto].max())
    done = bool(status.settled[:upto].all())
    tied = [(int(status.order[r]), int(status.order[r + 1])) for r in range(upto) if bool(status.tied[r])]
    if posterior.n_comparisons == 0 and posterior.link is None or not done:
        return IndifferenceDecision(False, "", tied, worst, ent)
    goal = "every neighbour pair" if top_k is None else f"the top {top_k}"
    ties = f"; {len(tied)} neighbour pair(s) practically tied" if tied else ""
    said = f"{goal} in order, too close to matter (stopping.tie_delta = {delta:g}) or not worth another call{ties}"
    return IndifferenceDecision(True, said, tied, worst, ent)
