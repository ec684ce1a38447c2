"""Temperature scaling of judges (PoE App. B): each judge's temperature ``T`` against reference
scores, its expected calibration error before and after, and the reliability bins — for
``orchestrator calibrate``, the report, and ``model.temperature`` in a run."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import torch

from ..poe import expected_calibration_error, fit_temperature, temperature_scale
from ..records.dataset import Dataset
from ..store import JudgmentRecord

__all__ = ["Calibration", "MIN_LABELLED", "calibrate", "labelled_comparisons", "truth_scores", "temperatures_for"]

MIN_LABELLED = 5
"""Comparisons with distinct truth a judge needs before its temperature is fitted (else ``T = 1``)."""


@dataclass(frozen=True)
class Calibration:
    judge: str
    n: int
    """Labelled comparisons (the truth tells the two candidates apart)."""
    temperature: float
    """Fitted by binary log-loss (smooth, one optimum)."""
    ece: float
    ece_after: float
    bins: list[tuple[float, float, int]]
    """``(mean confidence, accuracy, count)`` per confidence bin over [½, 1]."""
    bins_after: list[tuple[float, float, int]]


def truth_scores(dataset: Dataset, truth: str | None) -> dict[tuple[str, str], float]:
    """``(prompt, candidate)`` → the dataset's reference score ``truth`` (where it has one)."""
    out: dict[tuple[str, str], float] = {}
    if not truth:
        return out
    for p, by in dataset.responses.items():
        for c, r in by.items():
            value = r.human.get(truth)
            if value is not None:
                out[(p, c)] = float(value)
    return out


def labelled_comparisons(rows: list[JudgmentRecord], truth: dict[tuple[str, str], float]) -> dict[str, tuple[list[float], list[float]]]:
    """Per judge: P(first shown better) of its pairwise judgments and whether the first shown is
    better by the truth (ties in the truth are left out)."""
    out: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for r in rows:
        if r.status != "ok" or r.kind != "pairwise" or r.p_first is None:
            continue
        ta, tb = truth.get((r.prompt_id, r.candidates[0])), truth.get((r.prompt_id, r.candidates[1]))
        if ta is None or tb is None or ta == tb:
            continue
        p, y = out[r.judge]
        p.append(float(r.p_first))
        y.append(1.0 if ta > tb else 0.0)
    return dict(out)


def _bins(p: torch.Tensor, y: torch.Tensor, n_bins: int) -> list[tuple[float, float, int]]:
    conf = torch.maximum(p, 1 - p)
    correct = ((p > 0.5).to(torch.float64) == y).to(torch.float64)
    edges = torch.linspace(0.5, 1.0, n_bins + 1, dtype=torch.float64)
    idx = torch.bucketize(conf, edges[1:-1], right=True)
    out = []
    for b in range(n_bins):
        mask = idx == b
        if mask.any():
            out.append((float(conf[mask].mean()), float(correct[mask].mean()), int(mask.sum())))
    return out


def calibrate(rows: list[JudgmentRecord], truth: dict[tuple[str, str], float], *, n_bins: int = 8) -> list[Calibration]:
    """Every judge with at least :data:`MIN_LABELLED` labelled comparisons, by name."""
    out = []
    for judge, (p, y) in sorted(labelled_comparisons(rows, truth).items()):
        if len(p) < MIN_LABELLED:
            continue
        pt, yt = torch.tensor(p, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)
        temperature = fit_temperature(pt, yt, method="nll")
        scaled = temperature_scale(pt, temperature)
        out.append(
            Calibration(
                judge,
                len(p),
                temperature,
                expected_calibration_error(pt, yt),
                expected_calibration_error(scaled, yt),
                _bins(pt, yt, n_bins),
                _bins(scaled, yt, n_bins),
            )
        )
    return out


def temperatures_for(setting, rows: list[JudgmentRecord], dataset: Dataset, truth: str | None) -> dict[str, float] | None:
    """``model.temperature`` as judge → ``T`` (``"*"`` for every judge); None when unset."""
    if setting is None:
        return None
    if isinstance(setting, (int, float)):
        return {"*": float(setting)}
    if isinstance(setting, dict):
        return {str(k): float(v) for k, v in setting.items()}
    return {c.judge: c.temperature for c in calibrate(rows, truth_scores(dataset, truth))}
