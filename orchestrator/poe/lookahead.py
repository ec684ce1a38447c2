"""Look-ahead selection: ask the comparison expected to remove the most misordered pairs.

The seed's criterion (PoE Eq. 5) asks the pair most likely to be misordered *now*. With a noisy
judge that pair is often a near tie that one more comparison cannot settle, and a greedy pick
returns to it while candidates elsewhere in the ranking were never compared. The look-ahead
criterion scores a comparison by what it is expected to change in the whole ranking (the
preposterior analysis of Bayesian experimental design; the active-ranking literature's expected
gain in ranking accuracy): the expected number of misordered pairs

.. math:: D = \\sum_{k<l} Φ(−|d_{kl}| / \\sqrt{V_{kl}}),\\qquad d_{kl} = μ_k − μ_l,

and the gain of comparing ``a`` and ``b`` is ``D − E[D′]`` after the comparison. In the Laplace
approximation a comparison adds its expected curvature ``h`` (the expert's Fisher information at
the current difference, :func:`~orchestrator.poe.experts.expected_curvature`) along ``u = e_a − e_b``
(the rank-one update of the ``diverse`` batch): with ``c_{kl} = cov(d_{kl}, d_{ab})``

.. math:: V′_{kl} = V_{kl} − \\frac{h\\, c_{kl}^2}{1 + h V_{ab}},

and, before the answer is known, the new mean difference is ``d′_{kl} ~ N(d_{kl}, τ²)`` with
``τ² = V_{kl} − V′_{kl}`` (the variance the comparison removes is the variance of the mean's move).
The expectation has a closed form: ``E Φ(−|d′|/√V′)`` is the probability that ``d′`` and
``d′ + √V′ Z`` (``Z`` standard normal; together ``N(d, V)``) differ in sign, which by Owen's T
function is ``2 T(|d|/√V, √V′/τ)``, and ``2T(h, a) = (1/π) ∫₀^{arctan a} exp(−h²/(2 cos² θ)) dθ``
— a smooth integrand on a finite interval, taken by Gauss–Legendre quadrature (no kink at
``d′ = 0`` to resolve, as a quadrature over ``d′`` would have; checked against Monte Carlo in
``tests/poe/test_lookahead.py``). A pair that is a settled tie gains little: its ``Φ`` stays near ½
whatever the answer.

A batch is greedy: after each pick the covariance is updated as if the comparison had been made
(its mean change is unknown, so the means stay), and the best ``max(128, 2b)`` of the first scoring are
scored again (a later pick only loses gain, so the rest could not overtake them by much) — after
every pick for batches up to 16, after every ``⌈b/16⌉`` picks for larger ones.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from .experts import Expert, expected_curvature

__all__ = [
    "LOOKAHEAD_CANDIDATES",
    "LOOKAHEAD_TARGETS",
    "LookaheadPool",
    "expected_misorder_after",
    "expected_misorder_gain",
    "lookahead_batch",
]

LOOKAHEAD_CANDIDATES = 256
"""At most this many eligible pairs are scored per round (the best by the reorder key; all of them
for up to 23 candidates)."""

LOOKAHEAD_TARGETS = 2048
"""At most this many pairs enter ``D`` (those most likely misordered; all of them for up to 64
candidates): pairs far apart stay ordered whatever one comparison says."""

_nodes, _weights = np.polynomial.legendre.leggauss(12)  # ∫₀¹ f(x) dx by 12 nodes
_NODES = torch.as_tensor((_nodes + 1.0) / 2.0, dtype=torch.float64)
_WEIGHTS = torch.as_tensor(_weights / 2.0, dtype=torch.float64)
_CHUNK_ELEMENTS = 2_000_000
_RESCORES = 16
"""A batch re-scores its pool at most this many times (every pick up to 16, then every few picks)."""


def _misorder(d: Tensor, v: Tensor) -> Tensor:
    return torch.special.ndtr(-d.abs() / v.clamp_min(1e-300).sqrt())


def expected_misorder_after(d: Tensor, v: Tensor, removed: Tensor) -> Tensor:
    """``E Φ(−|d′|/√(v − removed))`` for ``d′ ~ N(d, removed)``: ``2 T(|d|/√v, √(v − removed)/√removed)``
    (module docstring); broadcasts."""
    h = d.abs() / v.clamp_min(1e-300).sqrt()
    theta_max = torch.atan2((v - removed).clamp_min(0.0).sqrt(), removed.clamp_min(0.0).sqrt())
    theta = theta_max[..., None] * _NODES
    integrand = torch.exp(-0.5 * (h * h)[..., None] / torch.cos(theta).pow(2).clamp_min(1e-300))
    return theta_max / math.pi * (integrand * _WEIGHTS).sum(dim=-1)


def expected_misorder_gain(
    mean: Tensor, cov: Tensor, first: Tensor, second: Tensor, curvature: Tensor, targets: tuple[Tensor, Tensor]
) -> Tensor:
    """``D − E[D′]`` for comparing ``first[s]`` with ``second[s]`` (module docstring), ``(S,)``.

    Args:
        mean: ``(N,)`` posterior means; cov: ``(N, N)`` covariance.
        first, second: ``(S,)`` the candidate comparisons.
        curvature: ``(S,)`` the precision each would add along ``e_a − e_b``.
        targets: ``(k, l)`` index tensors of the pairs that enter ``D``.
    """
    k, l = targets
    diag = cov.diagonal()
    v = (diag[k] + diag[l] - 2.0 * cov[k, l]).clamp_min(0.0)
    return _gains(mean[k] - mean[l], v, cov[:, first] - cov[:, second], first, second, curvature, targets)


def _gains(d: Tensor, v: Tensor, w: Tensor, first: Tensor, second: Tensor, curvature: Tensor, targets: tuple[Tensor, Tensor]) -> Tensor:
    """The gains from the targets' differences ``d`` and variances ``v`` and ``w = Σ(e_a − e_b)``
    per comparison (``(N, S)``, a column each)."""
    k, l = targets
    before = _misorder(d, v).sum()
    gains = torch.empty(first.numel(), dtype=d.dtype)
    chunk = max(1, _CHUNK_ELEMENTS // max(1, k.numel() * _NODES.numel()))
    for start in range(0, first.numel(), chunk):
        stop = start + chunk
        cols = torch.arange(start, min(stop, first.numel()))
        w_s = w[:, start:stop]
        v_ab = (w[first[cols], cols] - w[second[cols], cols]).clamp_min(0.0)
        c = w_s[k] - w_s[l]  # (T, S): cov(d_kl, d_ab)
        h = curvature[start:stop]
        removed = torch.minimum((h / (1.0 + h * v_ab)) * c * c, v[:, None])
        expected = expected_misorder_after(d[:, None], v[:, None], removed)
        gains[start:stop] = before - expected.sum(dim=0)
    return gains


def _targets(mean: Tensor, cov: Tensor) -> tuple[Tensor, Tensor]:
    n = mean.numel()
    k, l = torch.triu_indices(n, n, 1)
    if k.numel() > LOOKAHEAD_TARGETS:
        diag = cov.diagonal()
        v = (diag[k] + diag[l] - 2.0 * cov[k, l]).clamp_min(1e-300)
        top = torch.topk(-((mean[k] - mean[l]) ** 2) / v, LOOKAHEAD_TARGETS).indices
        k, l = k[top], l[top]
    return k, l


class LookaheadPool:
    """One posterior's candidate comparisons, scored, from which a batch is taken pick by pick.

    :meth:`peek` is the best gain still to be had, :meth:`take` takes it and updates the rest as
    if that comparison had been made (Sherman–Morrison on the pool's columns ``w = Σ(e_a − e_b)``
    and the targets' variances, as in the diverse batch: Σ itself is never rebuilt). Several
    posteriors sharing one batch (``per_prompt`` scope) take from whichever pool gains most.

    ``sharpness`` is the judges' fitted scale ``t`` (the expert sees ``t·(s_a − s_b)``) and
    ``precision`` their weight κ (:mod:`orchestrator.poe.reliability`: how many Bernoulli trials
    one probability is worth), so a comparison adds ``κ t² h(t·d)``.
    """

    def __init__(
        self,
        mean: Tensor,
        cov: Tensor,
        pairs: list[tuple[int, int]],
        batch_size: int,
        expert: Expert,
        sharpness: float = 1.0,
        precision: float = 1.0,
    ):
        self.pairs = pairs
        self.targets = _targets(mean, cov)
        first = torch.tensor([p[0] for p in pairs], dtype=torch.long)
        second = torch.tensor([p[1] for p in pairs], dtype=torch.long)
        curvature = expected_curvature(expert, sharpness * (mean[first] - mean[second])) * (precision * sharpness**2)
        gain = expected_misorder_gain(mean, cov, first, second, curvature, self.targets)
        self.pool = torch.argsort(gain, descending=True, stable=True)[: max(128, 2 * batch_size)]
        self.first, self.second = first[self.pool], second[self.pool]
        self.curvature, self.gain = curvature[self.pool], gain[self.pool]
        k, l = self.targets
        self.d = mean[k] - mean[l]
        diag = cov.diagonal()
        self.v = (diag[k] + diag[l] - 2.0 * cov[k, l]).clamp_min(0.0)
        self.w = cov[:, self.first] - cov[:, self.second]
        self.taken = torch.zeros(self.pool.numel(), dtype=torch.bool)
        self.every = math.ceil(batch_size / _RESCORES)
        # each candidate at most ⌈2b/N⌉ times per batch while others can be had (the cap of the
        # diverse batch): the means stay where they are within a batch, so the gain would not see
        # that a pick next to an earlier one of the same batch learns less than it computes
        self.cap = math.ceil(2 * batch_size / mean.numel())
        self.uses = torch.zeros(mean.numel(), dtype=torch.long)
        self.steps = 0

    def peek(self) -> tuple[float, int] | None:
        """``(gain, index in the pool)`` of the best comparison left, or None."""
        if bool(self.taken.all()):
            return None
        crowded = (self.uses[self.first] >= self.cap) | (self.uses[self.second] >= self.cap)
        blocked = self.taken | crowded if bool((~(self.taken | crowded)).any()) else self.taken
        best = int(torch.argmax(self.gain.masked_fill(blocked, -math.inf)))
        return float(self.gain[best]), best

    def take(self) -> tuple[tuple[int, int], float]:
        """Take the best comparison left: ``(pair, gain)``."""
        peeked = self.peek()
        if peeked is None:
            raise IndexError("no comparison left in the pool")
        gain, best = peeked
        self.taken[best] = True
        a, b, h = int(self.first[best]), int(self.second[best]), float(self.curvature[best])
        self.uses[a] += 1
        self.uses[b] += 1
        k, l = self.targets
        w_best = self.w[:, best].clone()
        coef = h / (1.0 + h * float(w_best[a] - w_best[b]))
        self.v = (self.v - coef * (w_best[k] - w_best[l]) ** 2).clamp_min(0.0)
        self.w -= coef * torch.outer(w_best, w_best[self.first] - w_best[self.second])
        self.steps += 1
        if self.steps % self.every == 0 and not bool(self.taken.all()):
            self.gain = _gains(self.d, self.v, self.w, self.first, self.second, self.curvature, self.targets)
        return self.pairs[int(self.pool[best])], gain


def lookahead_batch(
    mean: Tensor, cov: Tensor, pairs: list[tuple[int, int]], batch_size: int, expert: Expert, sharpness: float = 1.0, precision: float = 1.0
) -> tuple[list[tuple[int, int]], list[float]]:
    """Greedily pick ``batch_size`` of ``pairs`` from a :class:`LookaheadPool`; returns the picks
    and their gains (comparable across groups: expected misordered pairs removed)."""
    if not pairs:
        return [], []
    pool = LookaheadPool(mean, cov, pairs, batch_size, expert, sharpness, precision)
    picks = [pool.take() for _ in range(min(batch_size, pool.pool.numel()))]
    return [p for p, _ in picks], [g for _, g in picks]
