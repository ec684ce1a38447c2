"""Selection over a candidate set of pairs, for posteriors too large to score all ``N²`` pairs
(the metrics are PoE §4.2's, :mod:`orchestrator.poe.selection`).

The pairs worth asking are few and predictable: the probability of reordering (Eq. 5) is large
only where the means are close, so **neighbours in the current ranking** (up to ``window`` places
apart) hold nearly all of the batch. To that are added wider neighbourhoods of the **most uncertain
items** (an item with a large variance may be far from where its mean puts it) and **random
pairs** (so no region of the ranking is starved, and ``random`` still means random). Pairs may be
restricted to ``blocks`` (the ``items`` scope compares responses only within their prompt): then
neighbours are neighbours within the block. ``O(N log N + M)`` for ``M`` candidates, and the
variance of each candidate comes from :func:`~orchestrator.poe.laplace.pair_variances`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .laplace import Posterior, marginal_variances, pair_variances

__all__ = ["candidate_pairs", "rank_candidates", "ORDER_IJ", "ORDER_JI"]

ORDER_IJ = 1
"""Bit of a candidate's availability: ``i`` shown first may still be asked."""
ORDER_JI = 2
"""Bit: ``j`` shown first may still be asked."""


def candidate_pairs(
    posterior: Posterior,
    *,
    blocks: Tensor | None = None,
    window: int = 4,
    uncertain: int = 0,
    uncertain_window: int = 16,
    n_random: int = 0,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Unordered pairs ``(M, 2)`` (``i < j``, unique) worth scoring (module docstring).

    Args:
        posterior: the current posterior (means for the ranking, variances for the uncertain).
        blocks: ``(N,)`` long: pairs only within a block (None: one block).
        window: neighbours up to this many places apart in the ranking.
        uncertain: this many items of the largest variance get ``uncertain_window`` neighbours.
        n_random: random pairs (within blocks) on top.
    """
    n = posterior.n
    generator = generator or torch.Generator().manual_seed(0)
    if n < 2:
        return torch.zeros(0, 2, dtype=torch.long)
    blocks = torch.zeros(n, dtype=torch.long) if blocks is None else blocks
    order = torch.argsort(-posterior.mean, stable=True)
    order = order[torch.argsort(blocks[order], stable=True)]  # by block, best first within it
    block_of = blocks[order]
    position = torch.empty(n, dtype=torch.long)
    position[order] = torch.arange(n)
    parts = []
    for gap in range(1, min(window, n - 1) + 1):
        same = block_of[:-gap] == block_of[gap:]
        parts.append(torch.stack([order[:-gap][same], order[gap:][same]], 1))
    if uncertain > 0:
        var = marginal_variances(posterior)
        top = torch.topk(var, min(uncertain, n)).indices
        offsets = torch.cat([torch.arange(-uncertain_window, -window), torch.arange(window + 1, uncertain_window + 1)])
        at = position[top][:, None] + offsets[None, :]
        ok = (at >= 0) & (at < n)
        first = top[:, None].expand_as(at)[ok]
        other = order[at[ok]]
        same = blocks[first] == blocks[other]
        parts.append(torch.stack([first[same], other[same]], 1))
    if n_random > 0:
        # a random member, then a random member of its block (blocks are contiguous in `order`)
        starts = torch.searchsorted(block_of, block_of, right=False)
        ends = torch.searchsorted(block_of, block_of, right=True)
        pick = torch.randint(0, n, (n_random,), generator=generator)
        size = ends[pick] - starts[pick]
        other_pos = starts[pick] + (torch.rand(n_random, generator=generator, dtype=torch.float64) * size).long().clamp(max=size - 1)
        parts.append(torch.stack([order[pick], order[other_pos]], 1))
    pairs = torch.cat(parts) if parts else torch.zeros(0, 2, dtype=torch.long)
    lo, hi = pairs.min(1).values, pairs.max(1).values
    keep = lo != hi
    keys = torch.unique(lo[keep] * n + hi[keep])
    return torch.stack([keys // n, keys % n], 1)


def rank_candidates(posterior: Posterior, key_of, candidates: Tensor, batch_size: int, *, diverse: bool = False) -> tuple[Tensor, Tensor]:
    """The best ``batch_size`` candidate pairs by ``key_of(dmu, v)`` (larger = ask first).

    ``candidates`` is ``(M, 2)`` (or ``(M, 3)`` with availability bits, which are ignored here).
    With ``diverse`` a batch takes each item at most ``⌈2b/N⌉`` times (the dense ``diverse``
    updates ``Σ`` after each pick; a sparse posterior has no ``Σ`` to update, and capping how
    often one item recurs is what that update mostly did).

    Returns:
        ``(rows, keys)``: indices into ``candidates``, best first, and their keys.
    """
    if candidates.numel() == 0:
        empty = torch.zeros(0, dtype=torch.long)
        return empty, torch.zeros(0, dtype=torch.float64)
    a, b = candidates[:, 0], candidates[:, 1]
    dmu = posterior.mean[a] - posterior.mean[b]
    v = pair_variances(posterior, a, b)
    key = key_of(dmu, v)
    if not diverse:
        k = min(batch_size, key.numel())
        top = torch.topk(key, k)
        keep = torch.isfinite(top.values)
        return top.indices[keep], top.values[keep]
    cap = max(1, math.ceil(2 * batch_size / max(posterior.n, 1)))
    ranked = torch.argsort(key, descending=True)
    uses: dict[int, int] = {}
    chosen: list[int] = []
    for row in ranked.tolist():
        if len(chosen) >= batch_size or not math.isfinite(float(key[row])):
            break
        i, j = int(a[row]), int(b[row])
        if uses.get(i, 0) >= cap or uses.get(j, 0) >= cap:
            continue
        uses[i] = uses.get(i, 0) + 1
        uses[j] = uses.get(j, 0) + 1
        chosen.append(row)
    rows = torch.tensor(chosen, dtype=torch.long)
    return rows, key[rows]
