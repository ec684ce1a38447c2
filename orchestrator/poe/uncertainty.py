"""Ranking uncertainty (PoE §4.3), the stopping rule, and calibration (PoE Appendix B)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from .laplace import Posterior
from .metrics import pair_metric
from .ranks import rank_interval_arrays

__all__ = [
    "entropy",
    "posterior_entropy",
    "adjacent_reorder_probabilities",
    "RankIntervals",
    "rank_intervals",
    "rank_intervals_from_draws",
    "StopDecision",
    "stopping_rule",
    "temperature_scale",
    "expected_calibration_error",
    "fit_temperature",
]


def entropy(cov: Tensor) -> float:
    """Differential entropy of ``N(μ, Σ)`` (PoE §4.3): ``N(1 + ln 2π)/2 + ½ ln det Σ``."""
    _, logdet = torch.linalg.slogdet(cov)
    return _gaussian_entropy(cov.shape[0], float(logdet))


def _gaussian_entropy(n: int, logdet_cov: float) -> float:
    return n * (1.0 + math.log(2.0 * math.pi)) / 2.0 + 0.5 * logdet_cov


def posterior_entropy(posterior: Posterior) -> float:
    """:func:`entropy` of the scores' posterior. For a sparse posterior (no ``Σ``) the lower bound
    from Hadamard's inequality ``ln det H ≤ Σ ln H_ii`` on the score block's precision:
    ``N(1 + ln 2π)/2 − ½ Σ ln H_ii`` (exact when the candidates share no comparison)."""
    if posterior.cov is not None:
        return entropy(posterior.cov)
    assert posterior.sparse is not None
    return _gaussian_entropy(posterior.n, -float(posterior.sparse.hess_diag.log().sum()))


def adjacent_reorder_probabilities(posterior: Posterior) -> tuple[Tensor, Tensor]:
    """Probability of reordering for each pair of neighbours in the current ranking.

    Returns:
        ``(order, probs)``: candidate indices best-first, and ``(N−1,)`` probabilities that
        ranks ``r`` and ``r+1`` are in the wrong order.
    """
    order = torch.argsort(posterior.mean, descending=True)
    if order.numel() < 2:
        return order, torch.zeros(0, dtype=posterior.mean.dtype)
    return order, pair_metric(posterior, "reorder", order[:-1], order[1:])


@dataclass(frozen=True)
class RankIntervals:
    """Posterior rank summaries from samples of ``N(μ, Σ)``; rank 1 is the best."""

    mean_rank: Tensor
    """``(N,)`` expected rank."""
    lower: Tensor
    """``(N,)`` best rank of the shortest interval holding ``level`` of the rank mass."""
    upper: Tensor
    """``(N,)`` worst rank of that interval."""
    level: float
    """Credible level of the interval, e.g. 0.95."""
    rank_probs: Tensor | None
    """``(N, N)``: ``rank_probs[i, r]`` = P(candidate i has rank r+1); None from
    :data:`~orchestrator.poe.ranks.RANK_PROBS_MAX_N` candidates (the matrix alone would need ``8 N²`` bytes)."""


def rank_intervals(
    posterior: Posterior,
    *,
    level: float = 0.95,
    n_samples: int = 4000,
    generator: torch.Generator | None = None,
    among: list[int] | None = None,
) -> RankIntervals:
    """Rank credible intervals by sampling the Laplace posterior ``N(μ, Σ)`` (PoE §4.3), or the
    mixture of Laplace posteriors a verdict judge's fit averages over (:attr:`Posterior.mixture`),
    component by component. A sparse posterior's own draws are used
    (:data:`~orchestrator.poe.sparse.N_DRAWS` of them, so the interval ends are those of a few
    dozen draws). ``among``: the ranks among these candidates only (the draws' marginal over them),
    in that order.

    Raises:
        ValueError: level outside (0, 1) or fewer than 100 samples.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n_samples < 100:
        raise ValueError(f"n_samples must be >= 100, got {n_samples}")
    generator = generator or torch.Generator().manual_seed(0)
    n = posterior.n
    if posterior.mixture is not None:
        draws = posterior.mixture.draws(n_samples, generator)
    elif posterior.cov is None:
        assert posterior.sparse is not None
        draws = posterior.mean + posterior.sparse.draws
    else:
        chol, info = torch.linalg.cholesky_ex(posterior.cov)
        if int(info) != 0:
            chol = torch.linalg.cholesky(posterior.cov + 1e-10 * torch.eye(n, dtype=posterior.cov.dtype))
        z = torch.randn((n_samples, n), generator=generator, dtype=posterior.cov.dtype)
        draws = posterior.mean + z @ chol.T
    return rank_intervals_from_draws(draws if among is None else draws[:, among], level=level)


def rank_intervals_from_draws(draws: Tensor | np.ndarray, *, level: float = 0.95) -> RankIntervals:
    """Rank credible intervals from posterior draws of the scores ``(S, N)`` (rank 1 = highest):
    mean rank, shortest intervals holding ``level`` of each candidate's rank mass, rank probabilities
    (:func:`orchestrator.poe.ranks.rank_interval_arrays`, as tensors). Serves the Laplace
    posterior, the simplex model's MCMC draws and RAEE's normal approximation."""
    values = draws.detach().to(torch.float64).cpu().numpy() if isinstance(draws, Tensor) else np.asarray(draws, dtype=np.float64)
    mean_rank, lower, upper, rank_probs = rank_interval_arrays(values, level)
    return RankIntervals(
        torch.from_numpy(mean_rank),
        torch.from_numpy(lower),
        torch.from_numpy(upper),
        level,
        None if rank_probs is None else torch.from_numpy(rank_probs),
    )


def ranking_order(mean: Tensor, names: list[str]) -> list[int]:
    """Candidate indices, best first. Means equal to 1e-9 tie on the name, so two fits of the same
    judgments (in any order, warm or cold) give the same ranking."""
    values = [round(float(m), 9) for m in mean]
    return sorted(range(len(names)), key=lambda c: (-values[c], names[c]))


@dataclass(frozen=True)
class StopDecision:
    """Outcome of the stopping rule."""

    stop: bool
    """Whether to stop asking."""
    reason: str
    """Human-readable reason (empty when not stopping)."""
    max_adjacent_reorder: float
    """Largest probability of reordering among neighbours in the ranking."""
    entropy: float
    """Entropy of the score posterior."""


def stopping_rule(posterior: Posterior, *, max_adjacent_reorder: float | None = None, entropy_target: float | None = None) -> StopDecision:
    """Stop when every adjacent pair is reordered with probability below ``max_adjacent_reorder``
    or when the posterior entropy is below ``entropy_target`` (either rule may be None)."""
    _, adj = adjacent_reorder_probabilities(posterior)
    worst = float(adj.max()) if adj.numel() else 0.0
    ent = posterior_entropy(posterior)
    if max_adjacent_reorder is not None and worst < max_adjacent_reorder:
        return StopDecision(True, f"max adjacent reorder probability {worst:.4f} < {max_adjacent_reorder}", worst, ent)
    if entropy_target is not None and ent < entropy_target:
        return StopDecision(True, f"entropy {ent:.3f} < target {entropy_target}", worst, ent)
    return StopDecision(False, "", worst, ent)


def temperature_scale(p: Tensor | np.ndarray, temperature: float) -> Tensor:
    """PoE Appendix B: ``p^{1/T} / (p^{1/T} + (1−p)^{1/T})`` (computed as ``σ(logit(p)/T)``)."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    p = torch.as_tensor(p, dtype=torch.float64).clamp(1e-12, 1 - 1e-12)
    return torch.sigmoid(torch.logit(p) / temperature)


def expected_calibration_error(p: Tensor | np.ndarray, outcome: Tensor | np.ndarray, n_bins: int = 10) -> float:
    """Expected calibration error of binary predictions (PoE Appendix B).

    Confidence is ``max(p, 1−p)``; a prediction is correct when ``(p > ½) == outcome``.
    Bins are equal-width over ``[½, 1]``; the error is the bin-size-weighted mean
    ``|accuracy − confidence|``.
    """
    p = torch.as_tensor(p, dtype=torch.float64)
    y = torch.as_tensor(outcome, dtype=torch.float64)
    if p.numel() == 0:
        raise ValueError("expected_calibration_error needs at least one prediction")
    conf = torch.maximum(p, 1 - p)
    correct = ((p > 0.5).to(torch.float64) == y).to(torch.float64)
    edges = torch.linspace(0.5, 1.0, n_bins + 1, dtype=torch.float64)
    idx = torch.bucketize(conf, edges[1:-1], right=True)
    total = 0.0
    for b in range(n_bins):
        mask = idx == b
        if mask.any():
            total += float(mask.sum()) * abs(float(correct[mask].mean() - conf[mask].mean()))
    return total / p.numel()


def fit_temperature(p: Tensor | np.ndarray, outcome: Tensor | np.ndarray, *, method: str = "ece") -> float:
    """Temperature ``T`` that calibrates the judge probabilities (PoE Appendix B).

    ``method="ece"`` minimises the expected calibration error over a log-spaced grid (as the
    paper does); ``"nll"`` minimises the binary log-loss (smooth, unique optimum).
    Temperature scaling never changes which candidate a comparison favours, and for soft
    Bradley–Terry it rescales the fitted scores by ``1/T`` (Appendix B), leaving the ranking.
    """
    p = torch.as_tensor(p, dtype=torch.float64)
    y = torch.as_tensor(outcome, dtype=torch.float64)
    grid = torch.logspace(math.log10(0.05), math.log10(20.0), 400, dtype=torch.float64)
    if method == "ece":
        errors = torch.tensor([expected_calibration_error(temperature_scale(p, float(t)), y) for t in grid])
    elif method == "nll":
        errors = torch.stack([torch.nn.functional.binary_cross_entropy(temperature_scale(p, float(t)), y) for t in grid])
    else:
        raise ValueError(f"method must be 'ece' or 'nll', got {method!r}")
    return float(grid[int(torch.argmin(errors))])
