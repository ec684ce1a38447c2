"""Which pairs a large group may still ask, without an ``N × N`` availability matrix.

A group whose posterior is sparse (:mod:`orchestrator.poe.sparse`) is offered candidate pairs each
round (:func:`~orchestrator.poe.candidates.candidate_pairs`: ranking neighbours, the uncertain
items' wider neighbourhoods, random pairs; plus every pair a replayed log can answer) with their
availability bits. A pair's availability is looked up once and cached: it changes only when a
request for it is planned (:meth:`CandidateAvailability.touched`) or a judge is stopped (the whole
cache is dropped), so a round checks only pairs it has not seen.
"""

from __future__ import annotations

from typing import Callable

import torch

from ...poe import ORDER_IJ, ORDER_JI, Posterior, candidate_pairs
from ..groups import ITEMS, Group
from ..requests import PlanContext

__all__ = ["CandidateAvailability"]

WINDOW = 4
"""Ranking neighbours up to this many places apart are candidates."""
UNCERTAIN_WINDOW = 12
"""The most uncertain items' neighbourhoods reach this far."""


class CandidateAvailability:
    """Candidate pairs ``[i, j, bits]`` of one group (module docstring)."""

    def __init__(self, ctx: PlanContext, group: Group, pair_open: Callable[[int, int], bool]):
        self.ctx = ctx
        self.group = group
        self.pair_open = pair_open
        self._open: dict[tuple[int, int], bool] = {}
        self._hints: torch.Tensor | None = None
        self._blocks: torch.Tensor | None = None
        if group.key == ITEMS:  # responses are compared only within their prompt
            prompt_ids: dict[str, int] = {}
            self._blocks = torch.tensor([prompt_ids.setdefault(group.origin[name][0], len(prompt_ids)) for name in group.names])

    def touched(self, i: int, j: int) -> None:
        """A request for the pair was planned: look its availability up again."""
        self._open.pop((i, j), None)
        self._open.pop((j, i), None)

    def reset(self) -> None:
        """A judge was stopped: every cached availability may be stale."""
        self._open.clear()

    def candidates(self, posterior: Posterior, batch: int, generator: torch.Generator) -> torch.Tensor:
        """``(M, 3)`` long ``[i, j, bits]`` of the open candidate pairs (``i < j``)."""
        n = posterior.n
        pairs = candidate_pairs(
            posterior,
            blocks=self._blocks,
            window=WINDOW,
            uncertain=min(n // 10, batch),
            uncertain_window=UNCERTAIN_WINDOW,
            n_random=max(batch, 256),
            generator=generator,
        )
        hints = self._known()
        if hints.numel():
            keys = torch.unique(torch.cat([pairs[:, 0] * n + pairs[:, 1], hints[:, 0] * n + hints[:, 1]]))
            pairs = torch.stack([keys // n, keys % n], 1)
        out = []
        is_open = self._is_open
        for i, j in pairs.tolist():
            bits = (ORDER_IJ if is_open(i, j) else 0) | (ORDER_JI if is_open(j, i) else 0)
            if bits:
                out.append((i, j, bits))
        return torch.tensor(out, dtype=torch.long) if out else torch.zeros(0, 3, dtype=torch.long)

    def _is_open(self, i: int, j: int) -> bool:
        found = self._open.get((i, j))
        if found is None:
            found = self._open[(i, j)] = self.pair_open(i, j)
        return found

    def _known(self) -> torch.Tensor:
        """``(H, 2)`` unordered pairs (``i < j``) a replayed log can answer in this group."""
        if self._hints is None:
            found: set[tuple[int, int]] = set()
            if self.ctx.known_pairs is not None:
                group = self.group
                for prompt, cands in self.ctx.known_pairs():
                    if len(cands) != 2:
                        continue
                    a, b = (group.member(prompt, c) for c in cands)
                    if a is None or b is None or a == b:
                        continue
                    i, j = group.index[a], group.index[b]
                    found.add((min(i, j), max(i, j)))
            self._hints = torch.tensor(sorted(found), dtype=torch.long) if found else torch.zeros(0, 2, dtype=torch.long)
        return self._hints
