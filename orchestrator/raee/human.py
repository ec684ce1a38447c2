"""A judge's win rate corrected by a few people's labels: prediction-powered
inference, PPI++ (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient Prediction-Powered
Inference", §2 mean estimation) — pure functions on arrays.

A candidate's outcomes against the anchor on N prompts: the judge's ``f_i`` on every prompt, and on
a labelled subset of n prompts people's verdict ``Y_i`` (1 the candidate, 0 the anchor, ½ a tie).
The people's win rate θ = E[Y] is estimated from both:

    θ̂_λ = (1/n) Σ_labelled (Y_i − λ f_i) + λ (1/N_u) Σ_unlabelled f_j,                       (PPI++ Eq. 3)
    Var(θ̂_λ) = Var(Y − λ f) / n + λ² Var(f) / N_u,
    λ̂ = Cov(Y, f) / ((1 + n / N_u) Var(f))   (the variance-minimising weight, Eq. 6), clipped to [0, 1];
    interval θ̂ ± t_{n−1} · sd (Student's t rather than the normal: a handful of labels per candidate).

The first term is the rectifier: the judge's bias on this candidate (how far its verdicts sit from
people's on the same prompts) is measured on the labelled prompts and removed, so the interval
covers the people's win rate, not the judge's; λ = 0 is the people's labels alone, λ = 1 plain PPI.
Unbiased when the labelled prompts are a random subset of the judged ones (the labelling page's
choice is not random: docs/human-labels.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import stdtrit

from .estimates import outcomes
from .records import ReferenceJudgments

__all__ = ["PpiEstimate", "people_estimates", "ppi_mean"]


@dataclass(frozen=True)
class PpiEstimate:
    estimate: float
    se: float
    low: float
    high: float
    weight: float
    """λ̂: how much the judge's verdicts on the unlabelled prompts count (0: people's labels alone)."""
    labelled: int
    unlabelled: int


def ppi_mean(f: np.ndarray, y: np.ndarray, *, level: float = 0.95) -> PpiEstimate | None:
    """PPI++ mean of people's outcomes ``y`` (NaN where unlabelled) with the judge's ``f`` on the same
    prompts (module docstring); None without at least two labelled prompts. The interval is clipped
    to [0, 1]."""
    f, y = np.asarray(f, dtype=float), np.asarray(y, dtype=float)
    labelled = ~np.isnan(y)
    n, n_u = int(labelled.sum()), int((~labelled).sum())
    if n < 2:
        return None
    y_l, f_l, f_u = y[labelled], f[labelled], f[~labelled]
    if n_u == 0:
        weight = 0.0
    else:
        var_f = float(np.var(np.concatenate([f_l, f_u]), ddof=1))
        cov = float(np.cov(y_l, f_l, ddof=1)[0, 1]) if n > 1 else 0.0
        weight = float(np.clip(cov / ((1 + n / n_u) * var_f), 0.0, 1.0)) if var_f > 0 else 0.0
    rectifier = y_l - weight * f_l
    estimate = float(rectifier.mean() + (weight * f_u.mean() if n_u else 0.0))
    # a few labels that all agree have no spread: floor the people's part at a Jeffreys-smoothed
    # binomial variance, so that two wins out of two is not certainty
    smoothed = (float(y_l.sum()) + 0.5) / (n + 1)
    spread = max(float(np.var(rectifier, ddof=1)), (1 - weight) ** 2 * smoothed * (1 - smoothed))
    variance = spread / n + (weight**2 * float(np.var(f_u, ddof=1)) / n_u if n_u > 1 else 0.0)
    se = float(np.sqrt(max(variance, 0.0)))
    z = float(stdtrit(n - 1, 0.5 + level / 2))  # Student's t on the n labels: few labels, wider
    return PpiEstimate(estimate, se, max(0.0, estimate - z * se), min(1.0, estimate + z * se), weight, n, n_u)


def people_estimates(
    data: ReferenceJudgments, preference: Callable[[str, str, str], float | None], *, soft: bool, level: float = 0.95
) -> dict[tuple[str, str, str], PpiEstimate]:
    """:func:`ppi_mean` per ``(anchor, judge, candidate)`` and per ``(anchor, "pooled", candidate)``
    (the judges' outcomes averaged per prompt): ``f`` the judge's outcome per prompt (repeats
    averaged, Eq. 5), ``y`` ``preference(prompt, candidate, anchor)`` (people's 1/0/½, None: no label)."""
    s = outcomes(data.win, data.tie, data.loss, soft=soft)
    sums: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for anchor, judge, candidate, prompt, value in zip(data.anchor, data.judge, data.candidate, data.prompt, s):
        sums[(str(anchor), str(judge), str(candidate))][str(prompt)].append(float(value))
    per_judge = {key: {p: float(np.mean(v)) for p, v in prompts.items()} for key, prompts in sums.items()}
    pooled: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (anchor, _, candidate), prompts in per_judge.items():
        for prompt, value in prompts.items():
            pooled[(anchor, "pooled", candidate)][prompt].append(value)
    cells = {**per_judge, **{key: {p: float(np.mean(v)) for p, v in prompts.items()} for key, prompts in pooled.items()}}
    out: dict[tuple[str, str, str], PpiEstimate] = {}
    for (anchor, judge, candidate), prompts in cells.items():
        names = sorted(prompts)
        people = [preference(p, candidate, anchor) for p in names]
        y = np.array([np.nan if v is None else v for v in people], dtype=float)
        estimate = ppi_mean(np.array([prompts[p] for p in names]), y, level=level)
        if estimate is not None:
            out[(anchor, judge, candidate)] = estimate
    return out
