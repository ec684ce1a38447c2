"""How many more comparisons until the indifference-zone rule stops a ranking: a
forecast with its spread, from the current posterior, so a user can plan calls, tokens and USD.

For each neighbour pair that matters (:mod:`.stopping`), with posterior gap ``N(μ, v)``:

1. draw the pair's true gap ``d ~ N(μ, v)`` (``S`` draws; the run's later posterior centres on it);
2. after ``k`` more comparisons of the pair its variance is ``v_k = 1 / (1/v + k c(|d|))``, with ``c``
   the expert's expected curvature at ``|d|`` (the Fisher information of one comparison, through the
   panel's typical sharpness as in :func:`~.stopping.neighbour_status`);
3. the pair is settled at the least ``k`` on a geometric grid where the stopping rule's test holds at
   gap ``|d|`` and variance ``v_k``: error ``E < max_error``, or a near pair (``|d| < δ``) whose next
   call would gain less than ``min_gain``.

The comparisons of a draw are the sum over pairs; the draws give the mean and the 90th percentile.
Approximations, stated: pairs are treated as independent (a comparison informs only its pair,
while in a run it also sharpens its neighbours: the forecast errs high there) and selection is
assumed to spend its comparisons on unsettled neighbour pairs (it mostly does: they have the largest
reordering probabilities). ``benchmarks/validity/estimate_accuracy.py`` measures forecast against actual.
"""

from __future__ import annotations

import numpy as np
import torch

from .experts import Expert, expected_curvature, soft_bradley_terry
from .laplace import Posterior
from .stopping import IndifferenceZone, error_and_gain, neighbour_gaps

__all__ = ["MAX_COMPARISONS_PER_PAIR", "comparisons_to_settle"]

MAX_COMPARISONS_PER_PAIR = 4096
"""A pair not settled by this many more comparisons counts this many (the forecast says "at least")."""

_GRID = torch.tensor(
    [0, 1, 2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128, 181, 256, 362, 512, 724, 1024, 1448, 2048, 2896, 4096], dtype=torch.float64
)


def comparisons_to_settle(
    posterior: Posterior, zone: IndifferenceZone = IndifferenceZone(), expert: Expert | None = None, *, draws: int = 200, seed: int = 0
) -> np.ndarray:
    """``(draws,)`` forecasts of the comparisons still needed before every neighbour pair that
    matters is settled (module docstring). A posterior with one candidate needs none."""
    scale, order, gap, v = neighbour_gaps(posterior)
    delta_s, max_error, min_gain, top_k = zone.delta / scale, zone.max_error, zone.min_gain, zone.top_k
    if order.numel() < 2:
        return np.zeros(draws)
    upto = order.numel() - 1 if top_k is None else min(max(top_k, 1), order.numel() - 1)
    gap, v = gap[:upto], v[:upto]
    generator = torch.Generator().manual_seed(seed)
    true_gap = (gap[None, :] + v.sqrt()[None, :] * torch.randn(draws, upto, generator=generator, dtype=torch.float64)).abs()
    c = (scale**2 * expected_curvature(expert or soft_bradley_terry(), scale * true_gap)).clamp_min(1e-9)
    # every (draw, pair, k): the variance after k more comparisons, and the rule's test there
    v_k = 1.0 / (1.0 / v[None, :, None] + _GRID[None, None, :] * c[:, :, None])
    g = true_gap[:, :, None].expand_as(v_k)
    error, gain = error_and_gain(g, v_k, c[:, :, None].expand_as(v_k), delta_s)
    settled = (error < max_error) | ((g < delta_s) & (gain < min_gain))
    first = torch.where(settled.any(-1), settled.float().argmax(-1), torch.tensor(len(_GRID) - 1))
    needed = _GRID[first]
    return needed.sum(-1).numpy()
