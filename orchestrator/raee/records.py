"""RAEE's records: the columnar reference-anchored judgments a report is computed from, and the
report's rows (:class:`RaeeRow`, :class:`JudgeScreen`, :class:`AnchorSwap`, :class:`RaeeReport`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel

__all__ = [
    "AnchorSwap",
    "JudgeBias",
    "JudgeScreen",
    "MID_REGION",
    "MID_REGION_TARGET",
    "RaeeReport",
    "RaeeRow",
    "ReferenceJudgments",
    "known",
    "reference_wtl",
]


def known(value: float | None) -> float:
    """A row statistic that is set wherever it is used (rows with judgments)."""
    assert value is not None
    return value


MID_REGION = (0.2, 0.8)
MID_REGION_TARGET = 0.95
"""App. E.1: a suitable anchor keeps at least 95% of the p̄ within [0.2, 0.8]."""


@dataclass(frozen=True)
class ReferenceJudgments:
    """Reference-anchored judgments as columns (one entry per judgment).

    ``win``/``tie``/``loss`` are the candidate's option probabilities against the anchor (any
    positive scale; a hard verdict is a one-hot row).
    """

    anchor: np.ndarray
    judge: np.ndarray
    candidate: np.ndarray
    prompt: np.ndarray
    repeat: np.ndarray
    win: np.ndarray
    tie: np.ndarray
    loss: np.ndarray

    swapped: np.ndarray | None = None
    """True where the anchor was shown second (option B); with both orders asked, a run of an item
    is a (repeat, order) pair. None: the anchor was always shown first."""

    @classmethod
    def from_rows(cls, rows: list[tuple]) -> "ReferenceJudgments":
        """From ``(anchor, judge, candidate, prompt, repeat, win, tie, loss[, swapped])`` tuples."""
        cols: list[tuple] = list(zip(*rows)) if rows else [()] * 8
        names, numbers = (np.array(c, dtype=object) for c in cols[:4]), (np.array(c, dtype=float) for c in cols[5:8])
        anchor, judge, candidate, prompt = names
        win, tie, loss = numbers
        swapped = np.array(cols[8], dtype=bool) if len(cols) > 8 and any(cols[8]) else None
        return cls(anchor, judge, candidate, prompt, np.array(cols[4], dtype=np.int64), win, tie, loss, swapped)

    def __len__(self) -> int:
        return int(self.win.size)

    def select(self, mask: np.ndarray) -> "ReferenceJudgments":
        columns: dict[str, Any] = {f: None if getattr(self, f) is None else getattr(self, f)[mask] for f in self.__dataclass_fields__}
        return ReferenceJudgments(**columns)

    def run_index(self) -> np.ndarray:
        """Index of a judgment among the runs of its item: ``2·repeat + swapped`` when both orders
        were asked, else ``repeat`` (ICC columns must be the same kind of run for every item)."""
        return self.repeat if self.swapped is None else 2 * self.repeat + self.swapped.astype(np.int64)


def reference_wtl(candidates: list[str], anchor: str, probs: dict[str, float]) -> tuple[str, float, float, float, bool]:
    """``(candidate, P(win), P(tie), P(loss), swapped)`` of one reference judgment (options A/B/C,
    C = tie), whichever side the anchor was shown on (``swapped``: the anchor was option B)."""
    swapped = candidates[0] != anchor
    cand = candidates[0] if swapped else candidates[1]
    a, b, c = probs.get("A", 0.0), probs.get("B", 0.0), probs.get("C", 0.0)
    return (cand, a, c, b, True) if swapped else (cand, b, c, a, False)


class RaeeRow(BaseModel):
    """One line of the table: a candidate under one anchor, by one judge (or ``pooled``)."""

    anchor: str
    judge: str
    candidate: str
    n: int
    """Prompts (run-averaged items) behind the estimate; 0 = no judgments."""
    judgments: int = 0
    """Individual judgments behind the row (every run and repeat of every prompt)."""
    wins: int = 0
    ties: int = 0
    losses: int = 0
    """Argmax counts over the individual judgments."""
    p_hat: float | None = None
    """Empirical win rate against the anchor, ``(W + T/2)/N`` over prompts."""
    p_bar: float | None = None
    """Jeffreys-smoothed win rate ``(W + T/2 + 1/2)/(N + 1)``: the point estimate the Elo reads."""
    p_low: float | None = None
    p_high: float | None = None
    """Equal-tailed credible interval of the win rate (Beta quantiles)."""
    elo: float | None = None
    elo_low: float | None = None
    elo_high: float | None = None
    """Elo gap to the anchor and the image of the interval."""
    se_p_raw: float | None = None
    """Posterior sd of the win rate, without corrections."""
    se_p_fpc: float | None = None
    """With the finite-population correction (None without a population size)."""
    se_p_kappa: float | None = None
    """FPC (when given) times the κ factor (None with fewer than two judges)."""
    se_elo: float | None = None
    """Delta method on the most corrected SE available; for pooled rows Eq. (9)."""
    se_p_spread: float | None = None
    """SE from the outcomes' own spread (variance pooled over the judge's candidates, no FPC;
    :func:`orchestrator.raee.spread_se`): for soft outcomes the Beta SE assumes win/loss outcomes
    and can overstate the error many times."""
    se_elo_raw: float | None = None
    """Delta method on the superpopulation SE — ``se_p_raw`` for hard outcomes, ``se_p_spread``
    for soft ones (pooled rows: Eq. (9) on these σ²): uncertainty about the candidate on prompts
    like these, not only on this pool. Rankings use it, because with every prompt of the pool
    judged the FPC drives ``se_elo`` to 0."""
    win_rate: float | None = None
    """100·p̂, set with ``--control length`` (beside the controlled win rate)."""
    win_rate_controlled: float | None = None
    """Length-controlled win rate in percent (:mod:`orchestrator.raee.control`, Eq. 2); per judge only."""
    win_rate_controlled_low: float | None = None
    win_rate_controlled_high: float | None = None
    length_slope: float | None = None
    """φ_m of Eq. (1): this candidate's length slope (log-odds per unit of tanh(Δ/sd))."""
    people: float | None = None
    """With ``--human``: people's win rate against the anchor, the judge's outcomes rectified by the
    labels (PPI++, :mod:`orchestrator.raee.human`), with its interval."""
    people_low: float | None = None
    people_high: float | None = None
    people_labels: int = 0
    """Prompts of this candidate with a people's verdict against the anchor."""
    people_weight: float | None = None
    """PPI++'s λ̂: how much the judge's verdicts on unlabelled prompts count (0: labels alone)."""


class JudgeScreen(BaseModel):
    anchor: str
    judge: str
    runs: int
    """k: repeated runs per item used for ICC(3, k) (1 = no repeats)."""
    items: int
    """(candidate, prompt) items the judge scored."""
    icc: float | None = None
    strong: bool = False
    note: str = ""
    coverage: float = 1.0
    """Share of items kept by the abstention filter."""


class JudgeBias(BaseModel):
    """A judge's taste under one anchor: ``effect`` in log-odds per unit of the bias
    feature (length: tanh of the standardised length difference; self: the answer is of the
    judge's model family) with its interval, and ``points_per_sd``: win-rate points the taste is
    worth against an even match (length: an answer one sd longer; self: an answer of its family);
    ``candidates``: the candidates fitted (self: those of the judge's family)."""

    anchor: str
    judge: str
    bias: str
    effect: float
    low: float
    high: float
    points_per_sd: float
    candidates: int


class AnchorSwap(BaseModel):
    anchors: tuple[str, str]
    candidates: int
    kendall_tau: float | None
    mean_abs_centered_elo_shift: float


class RaeeReport(BaseModel):
    outcome: str
    """``hard`` (argmax, ties ½) or ``soft`` (P(win) + ½P(tie))."""
    level: float
    population: int | None
    icc_threshold: float
    abstain_sd: float | None
    rows: list[RaeeRow]
    judges: list[JudgeScreen]
    kappa_factor: dict[str, float | None]
    """Per anchor: sqrt(mean pairwise Cohen's κ) of the judges' hard verdicts on common items."""
    mid_region_coverage: dict[str, float]
    anchor_swaps: list[AnchorSwap]
    warnings: list[str]
    judge_biases: list[JudgeBias] = []
    """With ``--control length``: each judge's length effect per anchor."""
    human_labels: int = 0
    """With ``--human``: the labels that speak to a candidate and its anchor on a judged prompt."""
    flags: dict[str, list[str]] = {}
    """Candidates that look degenerate or gamed (constant, empty or copied answers; a win rate
    that moves more than ``--flag-shift`` points under control), with the reasons."""
