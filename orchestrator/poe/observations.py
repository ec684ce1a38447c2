"""The judgments of one PoE fit as tensors (:class:`Observations`): comparisons with their judge,
weight, covariates and graded verdicts, and absolute judgments moment-matched (PoE §3.2)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

__all__ = ["DTYPE", "Observations"]

DTYPE = torch.float64


@dataclass(frozen=True)
class Observations:
    """Judgments as tensors; indices refer to candidates ``0..n-1``."""

    n: int
    """Number of candidates."""
    first: Tensor
    """``(K,)`` long: the candidate shown first (A) in each comparison."""
    second: Tensor
    """``(K,)`` long: the candidate shown second (B)."""
    prob: Tensor
    """``(K,)`` judge probability that the first-shown candidate is better."""
    abs_item: Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    """``(A,)`` long: candidate of each absolute judgment."""
    abs_mean: Tensor = field(default_factory=lambda: torch.zeros(0, dtype=DTYPE))
    """``(A,)`` moment-matched mean of the judge's score distribution (PoE §3.2)."""
    abs_var: Tensor = field(default_factory=lambda: torch.zeros(0, dtype=DTYPE))
    """``(A,)`` moment-matched variance (floored)."""
    judge: Tensor | None = None
    """``(K,)`` long: the judge of each comparison (``0..n_judges-1``); None: all judge 0."""
    abs_judge: Tensor | None = None
    """``(A,)`` long: the judge of each absolute judgment; None: all judge 0."""
    n_judges: int = 1
    """Number of judges: with per-judge parameters each gets its own Δ, sharpness and link."""
    weight: Tensor | None = None
    """``(K,)`` weight of each comparison's log-density (a judge's precision ``κ_j``: how many
    Bernoulli trials one of its probabilities is worth); None: 1."""
    covariates: Tensor | None = None
    """``(K, C)`` covariates of each comparison, first-shown minus second-shown (length and style:
    :mod:`orchestrator.poe.covariates`), in the order of :attr:`PoEConfig.controls`; None: none."""
    abs_covariates: Tensor | None = None
    """``(A, C)`` covariates of each absolute judgment's answer against the prompt's typical answer
    (:func:`~orchestrator.poe.covariates.answer_covariates`), in the order of
    :attr:`PoEConfig.controls`; None: none."""
    grades: Tensor | None = None
    """``(K, 5)`` graded verdict probabilities (:data:`~orchestrator.records.log.GRADES` order) of
    the comparisons that have one, NaN rows for the rest; they are read by the graded expert
    (:mod:`orchestrator.poe.graded`) instead of :attr:`PoEConfig.expert`. None: none graded."""
    cuts: Tensor | None = None
    """``(J, 2)`` each judge's graded cut-points ``(c1, c2)``; None: the defaults."""

    @staticmethod
    def from_lists(
        n: int,
        comparisons: list[tuple] | None = None,
        absolutes: list[tuple] | None = None,
        *,
        n_judges: int = 1,
        grades: dict[int, list[float]] | None = None,
    ) -> "Observations":
        """Build from ``(first, second, p[, judge[, *covariates]])`` and ``(item, mean, var[, judge[,
        *covariates]])`` tuples; ``grades`` maps a comparison's index to its five graded verdict probabilities."""
        comparisons = comparisons or []
        absolutes = absolutes or []
        first = torch.tensor([c[0] for c in comparisons], dtype=torch.long)
        second = torch.tensor([c[1] for c in comparisons], dtype=torch.long)
        prob = torch.tensor([c[2] for c in comparisons], dtype=DTYPE)
        judge = torch.tensor([c[3] if len(c) > 3 else 0 for c in comparisons], dtype=torch.long)
        abs_item = torch.tensor([a[0] for a in absolutes], dtype=torch.long)
        abs_mean = torch.tensor([a[1] for a in absolutes], dtype=DTYPE)
        abs_var = torch.tensor([a[2] for a in absolutes], dtype=DTYPE)
        abs_judge = torch.tensor([a[3] if len(a) > 3 else 0 for a in absolutes], dtype=torch.long)
        used = int(max(judge.max() if judge.numel() else 0, abs_judge.max() if abs_judge.numel() else 0)) + 1
        width = min((len(c) for c in comparisons), default=0) - 4
        covariates = torch.tensor([list(c[4 : 4 + width]) for c in comparisons], dtype=DTYPE) if width > 0 else None
        abs_width = min((len(a) for a in absolutes), default=0) - 4
        abs_covariates = torch.tensor([list(a[4 : 4 + abs_width]) for a in absolutes], dtype=DTYPE) if abs_width > 0 else None
        graded = None
        if grades:
            graded = torch.full((len(comparisons), 5), float("nan"), dtype=DTYPE)
            for k, vector in grades.items():
                graded[k] = torch.tensor(vector, dtype=DTYPE)
        return Observations(
            n,
            first,
            second,
            prob,
            abs_item,
            abs_mean,
            abs_var,
            judge,
            abs_judge,
            max(n_judges, used),
            covariates=covariates,
            abs_covariates=abs_covariates,
            grades=graded,
        )

    def judges_of_comparisons(self) -> Tensor:
        return self.judge if self.judge is not None else torch.zeros_like(self.first)

    def judges_of_absolutes(self) -> Tensor:
        return self.abs_judge if self.abs_judge is not None else torch.zeros_like(self.abs_item)

    @property
    def n_comparisons(self) -> int:
        return int(self.first.numel())

    @property
    def has_absolute(self) -> bool:
        return self.abs_item.numel() > 0
