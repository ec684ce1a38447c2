"""Whether a judge's verdicts carry information about the answers at all.

A judge that picks the first-shown answer whatever it says (the 270M model does, P(A) ≈ 0.85 every
time) still yields a fitted ranking: the posterior orders candidates by which one happened to be
shown first more often. Before naming a leader the product asks the judge's own log-odds
``y = logit(P(first shown better))`` whether the answers explain any of them beyond a constant:

    null (position only):    y_r = Δ + ε_r
    content:                 y_r = Δ + s_first(r) − s_second(r) + ε_r

(least squares over the judge's comparisons; ``s`` one value per answer unit — a candidate, or a
candidate within its group — identified up to a constant). The F statistic
``((RSS₀ − RSS₁) / df₁) / (RSS₁ / df₂)`` with ``df₁`` = the rank of the content columns and
``df₂ = n − df₁ − 1`` tests it; a judge whose log-odds do not vary at all carries none. This is
the position-only model of PoE §3 (``d = s_i − s_j − Δ``) with the scores switched off.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import fdtrc

__all__ = ["ALPHA", "InformationTest", "content_test"]

ALPHA = 0.05
"""A judge whose content test has a p-value at least this large shows no detectable information."""

MAX_UNITS = 3000
"""Above this many answer units the dense least-squares test is skipped (a large ``items`` scope)."""


@dataclass(frozen=True)
class InformationTest:
    judgments: int
    """Comparisons the test read."""
    p_value: float | None
    """Of the F test that the answers explain none of the judge's log-odds (None: too few to tell)."""
    first_share: float | None
    """Share of its decisive verdicts (P ≠ ½) that picked the first-shown answer."""
    first_probability: float | None = None
    """Its mean P(first shown better): the same in expectation for a judge read from its
    log-probabilities and for verdicts drawn from them (a share of decisive verdicts is not: a
    probability of 0.6 counts as a whole win there, a verdict drawn from it as 0.6 of one)."""

    @property
    def informative(self) -> bool | None:
        """False: no detectable information; None: too few comparisons to tell."""
        return None if self.p_value is None else self.p_value < ALPHA

    def reason(self) -> str:
        """Why the verdicts carry no information, in words."""
        share = self.first_share
        if share is not None and share >= 0.95:
            return f"its choices are explained by position alone (the first-shown answer won {share:.0%} of its verdicts)"
        if share is not None and share <= 0.05:
            return f"its choices are explained by position alone (the second-shown answer won {1 - share:.0%} of its verdicts)"
        return "its preferences do not follow the answers more than chance would (the answers explain none of its verdicts)"


def content_test(first: Sequence[Hashable], second: Sequence[Hashable], p_first: Sequence[float]) -> InformationTest:
    """The content test of the module docstring on one judge's comparisons: ``first[r]`` and
    ``second[r]`` name the answer units shown first and second, ``p_first[r]`` the judge's
    P(first shown better) (clipped to [0.01, 0.99] before the logit: a hard verdict is not infinite)."""
    p = np.clip(np.asarray(p_first, dtype=float), 0.01, 0.99)
    n = len(p)
    decisive = p[np.abs(p - 0.5) > 1e-9]
    share = float(np.mean(decisive > 0.5)) if decisive.size else None
    mean_first = float(np.mean(np.asarray(p_first, dtype=float))) if n else None
    if n == 0:
        return InformationTest(0, None, share)
    y = np.log(p / (1 - p))
    rss0 = float(np.sum((y - y.mean()) ** 2))
    index: dict[Hashable, int] = {}
    rows_first = np.array([index.setdefault(u, len(index)) for u in first])
    rows_second = np.array([index.setdefault(u, len(index)) for u in second])
    if len(index) > MAX_UNITS:
        return InformationTest(n, None, share, mean_first)
    design = np.zeros((n, len(index) + 1))
    design[:, 0] = 1.0
    design[np.arange(n), rows_first + 1] += 1.0
    design[np.arange(n), rows_second + 1] -= 1.0
    coef, _, rank, _ = np.linalg.lstsq(design, y, rcond=None)
    rss1 = float(np.sum((y - design @ coef) ** 2))
    df1, df2 = int(rank) - 1, n - int(rank)
    if df1 <= 0 or df2 <= 0:  # too few comparisons to tell the answers from the position
        return InformationTest(n, None, share, mean_first)
    if rss0 <= 1e-9 * n:  # the same verdict whatever the answers
        return InformationTest(n, 1.0, share, mean_first)
    statistic = ((rss0 - rss1) / df1) / max(rss1 / df2, 1e-300)
    return InformationTest(n, float(fdtrc(df1, df2, statistic)), share, mean_first)
