"""Active selection of the next comparisons (PoE §4.2, Eqs. 3–6).

All metrics have the form ``w(μ_i − μ_j) · V_ij`` with ``V_ij = Σ_ii + Σ_jj − 2Σ_ij``:

- ``min_uncertainty`` (Eq. 3): ``σ(μ_i−μ_j) σ(μ_j−μ_i) V_ij``
- ``variance`` (Eq. 4): ``V_ij``
- ``reorder`` (Eq. 5): probability of reordering ``Φ(−|μ_i−μ_j| / √V_ij)``, ranked as ``V_ij/(μ_i−μ_j)²``
- ``eps:<ε>`` (Eq. 6): ``V_ij / |μ_i−μ_j|^ε`` (ε=0 is variance, ε=2 ranks like reorder)
- ``random``: uniform over the pairs still available
- ``diverse``: beyond the paper; reorder, but after each pick of a batch Σ is updated as if that
  comparison had been made, with the expert's expected curvature (a rank-one update), so the
  batch spreads over the ranking instead of piling onto one uncertain region.
- ``lookahead``: beyond the paper; the comparison expected to remove the most misordered pairs
  from the whole ranking (:mod:`orchestrator.poe.lookahead`); a sparse posterior ranks its
  candidate pairs by the reorder key instead.

(The metrics and their ranking keys; :mod:`orchestrator.poe.selection` builds batches from them.)
Metrics are ranked in log space (so ``1/0`` ties and huge ratios stay ordered) with a seeded
random tie-break, which makes selection deterministic given the posterior and the seed.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..records.choices import STRATEGIES, Strategy, parse_strategy
from .laplace import Posterior, pair_variances

__all__ = [
    "STRATEGIES",
    "Strategy",
    "parse_strategy",
    "pair_variance",
    "mean_differences",
    "min_uncertainty_metric",
    "variance_metric",
    "reorder_probability",
    "eps_metric",
    "selection_scores",
    "pair_metric",
    "ranking_key",
    "with_tie_break",
    "TINY",
]

TINY = 1e-300
_REORDER_LIKE = ("reorder", "diverse", "lookahead")
"""Strategies whose inspection metric (and shortlist) is the probability of reordering."""


def pair_variance(cov: Tensor) -> Tensor:
    """``V_ij = Σ_ii + Σ_jj − 2Σ_ij``: variance of ``s_i − s_j`` (PoE Eq. 4), ``(N, N)``."""
    diag = cov.diagonal()
    return (diag[:, None] + diag[None, :] - 2.0 * cov).clamp_min(0.0)


def mean_differences(mean: Tensor) -> Tensor:
    """``μ_i − μ_j`` as an ``(N, N)`` matrix."""
    return mean[:, None] - mean[None, :]


def _metric(strategy: Strategy, dmu: Tensor, v: Tensor) -> Tensor:
    """The strategy's metric from mean differences ``dmu`` and pair variances ``v`` (any shape, the
    same): Eq. (3), (4), (5)'s probability of reordering, (6); 1 for ``random``. The matrix functions
    below and :func:`pair_metric` are this on all pairs or on some."""
    if strategy.name == "min_uncertainty":
        return torch.sigmoid(dmu) * torch.sigmoid(-dmu) * v
    if strategy.name == "variance":
        return v
    if strategy.name in _REORDER_LIKE:
        dmu = dmu.abs()
        prob = torch.special.ndtr(-dmu / v.sqrt().clamp_min(1e-150))
        return torch.where((v == 0) & (dmu == 0), torch.full_like(prob, 0.5), prob)
    if strategy.name == "eps":
        return v / dmu.abs().pow(strategy.eps)
    return torch.ones_like(dmu)


def min_uncertainty_metric(mean: Tensor, cov: Tensor) -> Tensor:
    """PoE Eq. (3): ``σ(μ_i−μ_j) σ(μ_j−μ_i) (Σ_ii − 2Σ_ij + Σ_jj)``."""
    return _metric(Strategy("min_uncertainty", 0.0), mean_differences(mean), pair_variance(cov))


def variance_metric(mean: Tensor, cov: Tensor) -> Tensor:
    """PoE Eq. (4): ``Σ_ii − 2Σ_ij + Σ_jj``."""
    del mean
    return pair_variance(cov)


def reorder_probability(mean: Tensor, cov: Tensor) -> Tensor:
    """Probability of reordering ``Φ(−|μ_i − μ_j| / √V_ij)`` (PoE §4.2, Eq. 5's exact form).

    The diagonal is 0 (a candidate is not reordered with itself); a pair with ``V_ij = 0``
    and distinct means has probability 0.
    """
    return _metric(Strategy("reorder"), mean_differences(mean), pair_variance(cov)).fill_diagonal_(0.0)


def eps_metric(mean: Tensor, cov: Tensor, eps: float) -> Tensor:
    """PoE Eq. (6): ``V_ij / |μ_i − μ_j|^ε`` (may be ``inf`` where means coincide)."""
    return _metric(Strategy("eps", eps), mean_differences(mean), pair_variance(cov))


def ranking_key(strategy: Strategy, dmu: Tensor, v: Tensor, generator: torch.Generator) -> Tensor:
    """A monotone transform of the strategy's metric, ``(N, N)`` (larger = ask first).

    Reorder uses ``−(μ_i−μ_j)²/V_ij``, which orders pairs exactly as Eq. (5)'s ``V/(μ_i−μ_j)²``
    without dividing by zero; the others are compared in log space.
    """
    if strategy.name == "random":
        return torch.rand(dmu.shape, generator=generator, dtype=dmu.dtype)
    if strategy.name in _REORDER_LIKE or (strategy.name == "eps" and strategy.eps == 2.0):
        return -(dmu * dmu) / v.clamp_min(TINY)
    log_v = v.clamp_min(TINY).log()
    if strategy.name == "variance" or (strategy.name == "eps" and strategy.eps == 0.0):
        return log_v
    if strategy.name == "min_uncertainty":
        return torch.nn.functional.logsigmoid(dmu) + torch.nn.functional.logsigmoid(-dmu) + log_v
    return log_v - strategy.eps * dmu.abs().clamp_min(TINY).log()


def with_tie_break(key: Tensor, generator: torch.Generator) -> Tensor:
    """Add seeded per-pair offsets of relative size ≤ 1e-9 so that exact ties, e.g. every pair
    under the symmetric prior, fall by the seed. The offsets are independent per pair (structured
    ones, a row vector plus a column vector, would rank a whole row first and make the first batch
    a star around one candidate) and the key stays float64 (in float32 a relative offset this small
    leaves only a handful of distinct values, so ties would fall by index instead)."""
    offsets = torch.rand(key.shape, generator=generator, dtype=key.dtype) * 1e-9
    return key + (key.abs() + 1e-300) * offsets


def selection_scores(posterior: Posterior, strategy: Strategy | str) -> Tensor:
    """The strategy's metric for every ordered pair, ``(N, N)`` (for inspection and reports)."""
    strategy = parse_strategy(strategy) if isinstance(strategy, str) else strategy
    mean, cov = posterior.mean, posterior.dense_cov()
    if strategy.name == "min_uncertainty":
        return min_uncertainty_metric(mean, cov)
    if strategy.name == "variance":
        return variance_metric(mean, cov)
    if strategy.name in _REORDER_LIKE:
        return reorder_probability(mean, cov)
    if strategy.name == "eps":
        return eps_metric(mean, cov, strategy.eps)
    return torch.ones_like(cov)


def pair_metric(posterior: Posterior, strategy: Strategy | str, a: Tensor, b: Tensor) -> Tensor:
    """The strategy's metric for the pairs ``(a[k], b[k])`` only (what :func:`selection_scores`
    holds at ``[a, b]``, without an ``N × N`` matrix)."""
    strategy = parse_strategy(strategy) if isinstance(strategy, str) else strategy
    values = _metric(strategy, posterior.mean[a] - posterior.mean[b], pair_variances(posterior, a, b))
    # (as the matrix's diagonal: a candidate is not reordered with itself)
    return values.masked_fill(a == b, 0.0) if strategy.name in _REORDER_LIKE else values
