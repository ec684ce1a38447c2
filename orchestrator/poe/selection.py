"""Batches of comparisons from the selection metrics (PoE §4.2; the metrics and strategies are
in :mod:`orchestrator.poe.metrics`): top-k without repeats, ``diverse`` batches with rank-one
expected-curvature updates, ``lookahead`` batches (:mod:`orchestrator.poe.lookahead`), and one
batch shared by several posteriors (``per_prompt`` scope)."""

from __future__ import annotations

import heapq
import math

import torch
from torch import Tensor

from .candidates import ORDER_IJ, ORDER_JI, rank_candidates
from .experts import Expert, expected_curvature, soft_bradley_terry
from .laplace import Posterior, pair_variances
from .lookahead import LOOKAHEAD_CANDIDATES, LookaheadPool
from .metrics import TINY, Strategy, mean_differences, pair_variance, parse_strategy, ranking_key, with_tie_break

__all__ = ["select_pairs", "select_across"]


def select_pairs(
    posterior: Posterior,
    strategy: Strategy | str,
    available: Tensor,
    batch_size: int,
    *,
    ordered: bool = True,
    generator: torch.Generator | None = None,
    expert: Expert | None = None,
) -> list[tuple[int, int]]:
    """Pick the next ``batch_size`` comparisons.

    Args:
        posterior: the current Laplace posterior.
        strategy: a :class:`Strategy` or its text form (see :data:`STRATEGIES`).
        available: ``(N, N)`` bool; ``available[i, j]`` means the comparison with ``i`` shown
            first and ``j`` second may still be asked. Or, for a large posterior, candidate pairs
            ``(M, 3)`` long ``[i, j, bits]`` (:func:`~orchestrator.poe.candidates.candidate_pairs`;
            bit ``ORDER_IJ``: ``i`` first may be asked, ``ORDER_JI``: ``j`` first): only these
            are scored.
        batch_size: the most pairs to return (fewer when fewer are available).
        ordered: True when each order is its own comparison (no debiasing, or home advantage):
            an unordered pair is eligible while either order is available, and the order is
            the one still available (seeded coin when both are). False for permutation
            debiasing: a pair ``(i, j)`` with ``i < j`` is eligible only while both orders are
            available, and the caller asks both.
        generator: seeded generator for tie-breaks, orientation and ``random``.
        expert: the comparative expert, for the expected curvature of ``diverse`` and
            ``lookahead`` picks.

    Returns:
        Distinct pairs ``(first, second)``, best first; never an unavailable or repeated one,
        and at most one order of an unordered pair per batch.
    """
    pairs, _, _ = _ranked_pairs(posterior, strategy, available, batch_size, ordered, generator, expert)
    return pairs


def select_across(
    posteriors: list[Posterior],
    strategy: Strategy | str,
    available: list[Tensor],
    batch_size: int,
    *,
    ordered: bool = True,
    generator: torch.Generator | None = None,
    expert: Expert | None = None,
) -> list[tuple[int, int, int]]:
    """One batch for several independent posteriors sharing one budget (``per_prompt`` scope).

    Each group proposes its best ``batch_size`` pairs with their metric; the batch is the best
    ``batch_size`` of all proposals, so the budget flows to the prompts whose rankings are most
    likely wrong. The metrics are comparable across groups (a probability of reordering, a
    variance). Returns ``(group, first, second)`` triples.
    """
    generator = generator or torch.Generator().manual_seed(0)
    strategy = parse_strategy(strategy) if isinstance(strategy, str) else strategy
    if strategy.name == "lookahead" and all(a.dtype == torch.bool for a in available):
        return _lookahead_across(posteriors, available, batch_size, ordered, generator, expert)
    proposals: list[tuple[float, int, int, int, int | None]] = []
    for g, (post, avail) in enumerate(zip(posteriors, available)):
        pairs, keys, bits = _ranked_pairs(post, strategy, avail, batch_size, ordered, generator, expert, orient=False)
        proposals += [(key, g, i, j, None if bits is None else bits[k]) for k, (key, (i, j)) in enumerate(zip(keys, pairs))]
    proposals.sort(key=lambda t: -t[0])
    # orient only the winners (most proposals lose; orienting them all dominated the cost)
    return [
        (g, *(_orient(i, j, available[g], ordered, generator) if b is None else _orient_bits(i, j, b, ordered, generator)))
        for _, g, i, j, b in proposals[:batch_size]
    ]


def _ranked_pairs(
    posterior: Posterior,
    strategy: Strategy | str,
    available: Tensor,
    batch_size: int,
    ordered: bool,
    generator: torch.Generator | None,
    expert: Expert | None,
    *,
    orient: bool = True,
) -> tuple[list[tuple[int, int]], list[float], list[int] | None]:
    strategy = parse_strategy(strategy) if isinstance(strategy, str) else strategy
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
    n = posterior.n
    generator = generator or torch.Generator().manual_seed(0)
    if available.dtype != torch.bool:
        return _ranked_candidates(posterior, strategy, available, batch_size, ordered, generator, orient)
    if available.shape != (n, n):
        raise ValueError(f"available must be ({n}, {n}), got {tuple(available.shape)}")
    available = available.clone()
    available.fill_diagonal_(False)
    upper = torch.ones(n, n, dtype=torch.bool).triu(1)
    eligible = (available | available.T) if ordered else (available & available.T)
    eligible &= upper
    if not bool(eligible.any()):
        return [], [], None

    dmu = mean_differences(posterior.mean)
    if posterior.cov is not None:
        v = pair_variance(posterior.cov)
    else:  # a sparse posterior asked about every pair (a small one, e.g. in tests)
        grid = torch.arange(n)
        v = pair_variances(posterior, grid.repeat_interleave(n), grid.repeat(n)).view(n, n)
    key = ranking_key(strategy, dmu, v, generator)
    key = with_tie_break(key, generator) if strategy.name != "random" else key
    key = key.masked_fill_(~eligible, -math.inf).view(-1)
    k = min(batch_size, int(eligible.sum()))
    if strategy.name == "diverse":
        pairs = _diverse_batch(posterior, dmu, v, key, k, expert or soft_bradley_terry())
        keys = [float(key[i * n + j]) for i, j in pairs]
    elif strategy.name == "lookahead":
        pool = _lookahead_pool(posterior, key, k, expert)
        picks = [pool.take() for _ in range(min(k, pool.pool.numel()))]
        pairs, keys = [p for p, _ in picks], [g for _, g in picks]
    else:
        top = torch.topk(key, k)
        pairs = [(int(t) // n, int(t) % n) for t in top.indices]
        keys = top.values.tolist()
    if not orient:
        return pairs, keys, None
    return [_orient(i, j, available, ordered, generator) for i, j in pairs], keys, None


def _lookahead_pool(posterior: Posterior, key: Tensor, batch_size: int, expert: Expert | None) -> LookaheadPool:
    """The eligible pairs best by the reorder ``key`` (flat ``N·N``, −inf where not eligible),
    scored by :class:`~orchestrator.poe.lookahead.LookaheadPool`."""
    n = posterior.n
    short = torch.topk(key, min(int(torch.isfinite(key).sum()), LOOKAHEAD_CANDIDATES)).indices.tolist()
    sharpness, precision = (_judge_mean(posterior, name) for name in ("sharpness", "precision"))
    pairs = [(t // n, t % n) for t in short]
    return LookaheadPool(posterior.mean, posterior.dense_cov(), pairs, batch_size, expert or soft_bradley_terry(), sharpness, precision)


def _lookahead_across(
    posteriors: list[Posterior], available: list[Tensor], batch_size: int, ordered: bool, generator: torch.Generator, expert: Expert | None
) -> list[tuple[int, int, int]]:
    """:func:`select_across` for ``lookahead``: each group's pool is scored once, then the batch
    takes, pick by pick, from whichever group's best comparison gains most (a pick re-scores
    only its own group), so a round costs one scoring per group plus one per pick."""
    strategy = Strategy("lookahead")
    eligible: dict[int, Tensor] = {}
    for g, (post, avail) in enumerate(zip(posteriors, available)):
        avail = avail.clone()
        avail.fill_diagonal_(False)
        mask = ((avail | avail.T) if ordered else (avail & avail.T)) & torch.ones(post.n, post.n, dtype=torch.bool).triu(1)
        if bool(mask.any()):
            eligible[g] = mask
    # a group's pool is sized, capped and re-scored for its share of the batch
    share = math.ceil(batch_size / max(1, len(eligible)))
    heap: list[tuple[float, int]] = []
    pools: dict[int, LookaheadPool] = {}
    for g, mask in eligible.items():
        post = posteriors[g]
        key = with_tie_break(ranking_key(strategy, mean_differences(post.mean), pair_variance(post.dense_cov()), generator), generator)
        pools[g] = _lookahead_pool(post, key.masked_fill_(~mask, -math.inf).view(-1), share, expert)
        peeked = pools[g].peek()
        if peeked is not None:
            heapq.heappush(heap, (-peeked[0], g))
    picks: list[tuple[int, int, int]] = []
    while heap and len(picks) < batch_size:
        _, g = heapq.heappop(heap)
        (i, j), _ = pools[g].take()
        picks.append((g, *_orient(i, j, available[g], ordered, generator)))
        peeked = pools[g].peek()
        if peeked is not None:
            heapq.heappush(heap, (-peeked[0], g))
    return picks


def _judge_mean(posterior: Posterior, name: str) -> float:
    """The judges' mean fitted ``name`` (sharpness t, precision κ); 1 where it is not fitted."""
    values = posterior.judges.get(name)
    return 1.0 if values is None or values.numel() == 0 else float(values.mean())


def _ranked_candidates(
    posterior: Posterior, strategy: Strategy, candidates: Tensor, batch_size: int, ordered: bool, generator: torch.Generator, orient: bool
) -> tuple[list[tuple[int, int]], list[float], list[int] | None]:
    """:func:`_ranked_pairs` over candidate pairs ``[i, j, bits]`` (a sparse posterior); the third
    list is the picks' availability bits, to orient them later (``orient=False``)."""
    if candidates.ndim != 2 or candidates.shape[1] != 3:
        raise ValueError(f"candidate pairs must be (M, 3) [i, j, bits], got {tuple(candidates.shape)}")
    bits = candidates[:, 2]
    eligible = (bits != 0) if ordered else (bits == ORDER_IJ | ORDER_JI)
    cands = candidates[eligible & (candidates[:, 0] != candidates[:, 1])]

    def key_of(dmu: Tensor, v: Tensor) -> Tensor:
        key = ranking_key(strategy, dmu, v, generator)
        return key if strategy.name == "random" else with_tie_break(key, generator)

    rows, keys = rank_candidates(posterior, key_of, cands, batch_size, diverse=strategy.name == "diverse")
    chosen = cands[rows]
    pairs = [(int(i), int(j)) for i, j in chosen[:, :2].tolist()]
    pick_bits: list[int] = chosen[:, 2].tolist()
    if not orient:
        return pairs, keys.tolist(), pick_bits
    return [_orient_bits(i, j, b, ordered, generator) for (i, j), b in zip(pairs, pick_bits)], keys.tolist(), pick_bits


def _orient_bits(i: int, j: int, bits: int, ordered: bool, generator: torch.Generator) -> tuple[int, int]:
    """:func:`_orient` for a candidate pair's availability bits."""
    if not ordered:
        return (i, j)
    if bits == ORDER_IJ | ORDER_JI:
        return (i, j) if float(torch.rand((), generator=generator)) < 0.5 else (j, i)
    return (i, j) if bits & ORDER_IJ else (j, i)


def _orient(i: int, j: int, available: Tensor, ordered: bool, generator: torch.Generator) -> tuple[int, int]:
    if not ordered:
        return (i, j)
    can_ij, can_ji = bool(available[i, j]), bool(available[j, i])
    if can_ij and can_ji:
        return (i, j) if float(torch.rand((), generator=generator)) < 0.5 else (j, i)
    return (i, j) if can_ij else (j, i)


def _diverse_batch(
    posterior: Posterior, dmu: Tensor, v: Tensor, key: Tensor, batch_size: int, expert: Expert, shortlist_factor: int = 20
) -> list[tuple[int, int]]:
    """Greedy reorder picks with a rank-one covariance update after each (expected curvature).

    Observing ``d = s_i − s_j`` with curvature ``c`` adds ``c uuᵀ`` to the precision
    (``u = e_i − e_j``); by Sherman–Morrison ``Σ' = Σ − c Σu uᵀΣ / (1 + c uᵀΣu)``, so with
    ``w = Σu``: ``V'_kl = V_kl − c (w_k − w_l)² / (1 + c V_ij)``. Σ itself is never rebuilt:
    ``Σ'u`` is the original ``Σu`` minus the stored rank-one corrections. Updates only ever lower
    a pair's variance, so the batch is drawn from the ``shortlist_factor · b`` pairs ranked
    highest before any update, which keeps a batch O(N·b + b²·factor) instead of O(N²·b).
    """
    cov = posterior.dense_cov()
    n = cov.shape[0]
    finite = int(torch.isfinite(key).sum())
    short = torch.topk(key, min(finite, max(batch_size * shortlist_factor, batch_size))).indices
    rows, cols = short // n, short % n
    v_short = v[rows, cols].clone()
    dmu2_short = dmu[rows, cols] ** 2
    tie = key[short] - (-(dmu2_short / v_short.clamp_min(TINY)))  # keep the seeded tie-break
    taken = torch.zeros(short.numel(), dtype=torch.bool)
    corrections: list[tuple[Tensor, float]] = []
    pairs: list[tuple[int, int]] = []
    for _ in range(batch_size):
        score = -(dmu2_short / v_short.clamp_min(TINY)) + tie
        pick = int(torch.argmax(score.masked_fill(taken, -math.inf)))
        taken[pick] = True
        i, j = int(rows[pick]), int(cols[pick])
        pairs.append((i, j))
        w = cov[:, i] - cov[:, j]
        for w_k, coef_k in corrections:
            w = w - coef_k * (w_k[i] - w_k[j]) * w_k
        v_ij = float(w[i] - w[j])
        c = float(expected_curvature(expert, dmu[i, j].reshape(1))[0])
        coef = c / (1.0 + c * max(v_ij, 0.0))
        corrections.append((w, coef))
        v_short = (v_short - coef * (w[rows] - w[cols]) ** 2).clamp_min(0.0)
    return pairs
