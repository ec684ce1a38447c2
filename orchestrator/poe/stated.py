"""A judge's stated confidence, read as a probability only through a calibration (pure functions).

A template with a ``confidence_marker`` asks the judge for its verdict and how sure it is ("Verdict: A",
"Confidence: 80"). What a model says about its own certainty is not its probability: verbalised
confidence is typically overconfident and coarse (Xiong et al. 2024; Tian et al. 2023). So a stated
confidence never enters the fit at face value. It becomes a probability through a calibration fitted
on **the judge's own sampled verdicts**: where the same shown pair on the same prompt was asked more
than once (``sampling = "adaptive"`` re-asks, or ``repeats``), each verdict ``v`` with stated
confidence ``c`` is scored by the share of the *other* verdicts of that request that agree with it.
If the judge answers ``v`` with probability ``q_v``, another draw agrees with probability ``q_v``, so

    E[agree | c] = E[q_v | c],

the judge's own probability of the option it chose, given what it said. The calibration is the
monotone logistic curve

    π(c) = σ(a + b · logit(c)),   b ≥ 0,

fitted by weighted binomial cross-entropy (a 2-parameter Platt scaling, Platt 1999). A calibrated
verdict then stands for the probabilities ``{v: π(c), others: (1 − π(c)) / (n − 1)}``, fitted as the
shares of verdicts are (:mod:`orchestrator.poe.verdicts`: the judge's precision κ and the prior's scale
are estimated from the data). With fewer than :data:`MIN_CALIBRATION` scored verdicts the confidence
is not used: the judgment stays one verdict. Human labels are not used to calibrate (they measure
agreement with people, not the judge's own probability).

References:
    Platt, J. (1999). Probabilistic outputs for support vector machines and comparisons to
    regularized likelihood methods.
    Xiong, M. et al. (2024). Can LLMs express their uncertainty? ICLR 2024.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Protocol, Sequence, TypeVar

import numpy as np
from scipy.optimize import minimize

__all__ = ["MIN_CALIBRATION", "StatedCalibration", "apply_calibration", "calibrate_stated", "fit_calibration", "scored_verdicts"]

MIN_CALIBRATION = 20
"""Scored verdicts (with at least one other verdict of the same request) a calibration needs."""

_EDGE = 0.01
"""Stated confidences are clipped to [1 %, 99 %] before the logit (a judge that says 100 % is not infinitely sure)."""


class _Row(Protocol):
    """What a judgment needs for these functions (a stored record, a log record): read-only."""

    @property
    def judge(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def prompt_id(self) -> str: ...
    @property
    def candidates(self) -> Sequence[str]: ...
    @property
    def probs(self) -> Sequence[dict[str, float]]: ...
    @property
    def stated(self) -> float | None: ...
    @property
    def method(self) -> str | None: ...


Row = TypeVar("Row", bound=_Row)


@dataclass(frozen=True)
class StatedCalibration:
    """One judge's map from stated confidence to the probability of the option it chose."""

    a: float
    """Intercept of π(c) = σ(a + b · logit(c))."""
    b: float
    """Slope (≥ 0: a higher stated confidence never means a lower probability); 1 with a = 0 is face value."""
    n: int
    """Scored verdicts it was fitted on."""
    agreement: float
    """Mean share of agreeing other verdicts over those verdicts (what the judge's verdicts repeat)."""
    stated_mean: float
    """Mean stated confidence over the same verdicts (above ``agreement``: an overconfident judge)."""

    def probability(self, stated: float) -> float:
        """π(c), the calibrated probability of the chosen option."""
        c = min(max(stated, _EDGE), 1 - _EDGE)
        return 1.0 / (1.0 + math.exp(-(self.a + self.b * math.log(c / (1 - c)))))


def _choice(row: _Row) -> str:
    probs = row.probs[0]
    return max(probs, key=lambda o: probs[o])


def scored_verdicts(rows: Sequence[_Row]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(stated, agree, weight)`` over one judge's one-hot verdicts with a stated confidence whose request
    (prompt, shown pair, kind) has other verdicts: ``agree`` is the share of those others that
    chose the same option; ``weight`` how many there are."""
    units: dict[tuple, list[_Row]] = defaultdict(list)
    for row in rows:
        if row.probs and row.method == "verdict":  # one-hot: the option it chose is unambiguous
            units[(row.kind, row.prompt_id, tuple(row.candidates))].append(row)
    stated, agree, weight = [], [], []
    for unit in units.values():
        if len(unit) < 2:
            continue
        choices = [_choice(r) for r in unit]
        for k, row in enumerate(unit):
            if row.stated is None:
                continue
            others = choices[:k] + choices[k + 1 :]
            stated.append(row.stated)
            agree.append(sum(c == choices[k] for c in others) / len(others))
            weight.append(len(others))
    return np.asarray(stated, float), np.asarray(agree, float), np.asarray(weight, float)


def fit_calibration(stated: np.ndarray, agree: np.ndarray, weight: np.ndarray) -> StatedCalibration | None:
    """The monotone logistic calibration (module docstring) by weighted cross-entropy; None with
    fewer than :data:`MIN_CALIBRATION` scored verdicts."""
    if len(stated) < MIN_CALIBRATION:
        return None
    c = np.clip(stated, _EDGE, 1 - _EDGE)
    x = np.log(c / (1 - c))

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = theta[0] + theta[1] * x
        log_p, log_q = -np.logaddexp(0.0, -z), -np.logaddexp(0.0, z)
        p = np.exp(log_p)
        value = -np.sum(weight * (agree * log_p + (1 - agree) * log_q))
        residual = weight * (p - agree)
        # a weak ridge keeps the fit finite when every stated value is the same
        return float(value + 1e-3 * theta @ theta), np.array([residual.sum(), residual @ x]) + 2e-3 * theta

    best = minimize(loss, np.array([0.0, 0.5]), jac=True, method="L-BFGS-B", bounds=[(None, None), (0.0, None)])
    a, b = (float(v) for v in best.x)
    return StatedCalibration(a, b, len(stated), float(np.average(agree, weights=weight)), float(np.mean(stated)))


def _replaced(row: Row, changes: dict) -> Row:
    """``row`` with ``changes``: a pydantic record's copy (the store's), else a dataclass's."""
    copy = getattr(row, "model_copy", None)
    return copy(update=changes) if copy is not None else dataclasses.replace(row, **changes)  # type: ignore[type-var]


def apply_calibration(rows: Sequence[Row], calibration: StatedCalibration) -> list[Row]:
    """Rows whose stated confidence is read through ``calibration``: probabilities ``{v: π(c), others:
    (1 − π(c)) / (n − 1)}``, ``method = "stated"``; rows without a stated confidence unchanged."""
    out = []
    for row in rows:
        if row.stated is None or row.method != "verdict" or not row.probs:  # calibrated once, never twice
            out.append(row)
            continue
        choice, options = _choice(row), list(row.probs[0])
        pi = calibration.probability(row.stated)
        rest = (1 - pi) / max(len(options) - 1, 1)
        probs = {o: (pi if o == choice else rest) for o in options}
        changes: dict = {"probs": [probs], "method": "stated"}
        if hasattr(row, "p_first") and row.kind in ("pairwise", "reference"):
            changes["p_first"] = probs.get("A", 0.0) + 0.5 * probs.get("C", 0.0)
        out.append(_replaced(row, changes))
    return out


def calibrate_stated(rows: Sequence[Row]) -> tuple[list[Row], dict[str, StatedCalibration | None]]:
    """Every judge's stated confidences calibrated on its own sampled verdicts where it has enough
    of them (:func:`fit_calibration`); ``(rows, {judge: calibration or None})`` for the judges that
    stated any. Rows of judges without a calibration keep their one-hot verdicts."""
    by_judge: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        if row.stated is not None:
            by_judge[row.judge].append(row)
    if not by_judge:
        return list(rows), {}
    calibrations = {judge: fit_calibration(*scored_verdicts([r for r in rows if r.judge == judge])) for judge in by_judge}
    usable = {judge: c for judge, c in calibrations.items() if c is not None}
    if not usable:
        return list(rows), calibrations
    out = []
    for row in rows:
        calibration = usable.get(row.judge)
        out.append(apply_calibration([row], calibration)[0] if calibration is not None and row.stated is not None else row)
    return out, calibrations
