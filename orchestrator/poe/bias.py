"""Position bias (PoE §3.3): permutation debiasing; the home advantage Δ lives in the objective."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["DEBIAS_MODES", "permutation_debias"]

DEBIAS_MODES = ("none", "permutation", "home")
"""``none``: use each order as asked; ``permutation``: ask both orders and combine them;
``home``: fit a home advantage Δ jointly with the scores."""


def permutation_debias(p_ij: Tensor | float, p_ji: Tensor | float) -> Tensor:
    """PoE §3.3: ``p̃_ij = ½ (p_ij + 1 − p_ji)``, which satisfies ``p̃_ij = 1 − p̃_ji``.

    Args:
        p_ij: probability that i is better when i is shown first.
        p_ji: probability that j is better when j is shown first.
    """
    p_ij = torch.as_tensor(p_ij, dtype=torch.float64)
    p_ji = torch.as_tensor(p_ji, dtype=torch.float64)
    return 0.5 * (p_ij + 1.0 - p_ji)
