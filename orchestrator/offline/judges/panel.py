"""What a ranking says about its judges and its ties: per-judge reliability from the PoE posterior
(sharpness ``t_j``, position bias ``Δ_j``, absolute link) with the judge's agreement with the panel,
and the neighbour pairs the indifference zone treats as practical ties."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...poe import Posterior, neighbour_status
from ...poe.stated import fit_calibration, scored_verdicts
from ...poe.stopping import MAX_ERROR, IndifferenceZone
from ...run.groups import Group, judge_names
from ...store import JudgmentRecord

__all__ = ["judge_summary", "practical_ties"]

JUDGE_PARAMETERS = (
    *("sharpness", "sharpness_low", "sharpness_high", "precision", "delta", "delta_sd"),
    *(f"{name}{sd}" for name in ("length", "headers", "lists", "bold", "self") for sd in ("", "_sd")),
    *("slope", "intercept", "tie_cut", "strong_cut"),
    *(f"{name}_absolute{sd}" for name in ("length", "headers", "lists", "bold", "self") for sd in ("", "_sd")),
)
"""What each judge's entry carries from the posterior (``*_absolute``: the weights of its absolute judgments' covariates)."""


def read_as(judgments: list[JudgmentRecord], run_judgments: list[JudgmentRecord] | None = None) -> dict[str, Any]:
    """How a judge's probabilities were read: ``method`` (the most common: ``logprobs``,
    ``verdict``, ``samples``, ``log``, or ``unknown``), ``samples`` (verdicts per call, the most
    common k) and ``completions`` (paid answers behind its judgments: k each for sampled verdicts);
    ``stated``, for a judge that stated its confidence: how many, their mean, and the calibration on
    its own repeated verdicts over the whole run (``run_judgments``, as the fit does; ``calibrated_on``
    None: too few to fit one, the confidence is unused)."""
    methods = Counter(r.method or "unknown" for r in judgments)
    method = methods.most_common(1)[0][0] if methods else "unknown"
    ks = Counter(r.samples for r in judgments if r.samples)
    k = ks.most_common(1)[0][0] if ks else (1 if method == "verdict" else None)
    completions = sum((r.samples or 1) for r in judgments if not r.cached)
    out: dict[str, Any] = {"method": "verdict" if method == "stated" else method, "samples": k, "completions": completions}
    stated = [r.stated for r in judgments if r.stated is not None]
    if stated:  # what it said of its certainty, and what that is worth on its own repeated verdicts
        calibration = fit_calibration(*scored_verdicts(run_judgments if run_judgments is not None else judgments))
        out["stated"] = {"judgments": len(stated), "mean": round(sum(stated) / len(stated), 4), "calibrated_on": None}
        if calibration is not None:
            out["stated"].update(
                calibrated_on="its own repeated verdicts",
                scored=calibration.n,
                agreement=round(calibration.agreement, 4),
                a=round(calibration.a, 4),
                b=round(calibration.b, 4),
                at_mean=round(calibration.probability(sum(stated) / len(stated)), 4),
            )
    return out


def judge_summary(
    group: Group, judgments: list[JudgmentRecord], posterior: Posterior, run_judgments: list[JudgmentRecord] | None = None
) -> list[dict[str, Any]]:
    """One entry per judge of the group: its judgments, fitted parameters (in the judge index order
    of :func:`~orchestrator.run.groups.fit_group`) and ``agreement``: the share of its pairwise
    verdicts (P(first) ≠ ½) that prefer the candidate the panel's posterior ranks higher — 1 for a
    judge that always sides with the panel, ½ for a coin; ``agreement_probability``: the mean
    probability it puts on that side (the same in expectation for verdicts drawn from its
    probabilities, so noise is not rewarded); ``read_as``: how its probabilities were read (a stated
    confidence's calibration on ``run_judgments``, the whole run, as the fit has it)."""
    mean = posterior.mean
    out = []
    for k, name in enumerate(judge_names(judgments)):
        mine = [r for r in judgments if r.judge == name]
        agree = votes = 0
        side, sided = 0.0, 0
        for r in mine:
            if r.kind != "pairwise" or r.p_first is None:
                continue
            a, b = (group.member(r.prompt_id, c) for c in r.candidates)
            if a is None or b is None:
                continue
            first_higher = float(mean[group.index[a]]) - float(mean[group.index[b]])
            if first_higher == 0.0:
                continue
            # the probability it puts on the ranking's side (every judgment, ½ included) ...
            sided += 1
            side += r.p_first if first_higher > 0 else 1.0 - r.p_first
            if r.p_first != 0.5:  # ... and whether a decisive verdict sides with it
                votes += 1
                agree += (r.p_first > 0.5) == (first_higher > 0)
        entry: dict[str, Any] = {
            "judge": name,
            "judgments": len(mine),
            "agreement": round(agree / votes, 4) if votes else None,
            "agreement_probability": round(side / sided, 4) if sided else None,
            "read_as": read_as(mine, [r for r in run_judgments if r.judge == name] if run_judgments is not None else None),
        }
        for key in JUDGE_PARAMETERS:
            if key in posterior.judges:
                entry[key] = round(float(posterior.judges[key][k]), 4)
        out.append(entry)
    return out


def practical_ties(
    group: Group, posterior: Posterior, delta: float, max_error: float = MAX_ERROR
) -> tuple[list[list[str]], list[list[str]]]:
    """Neighbour pairs of the ranking more likely within ``±δ`` than not (``P(|d| < δ) > ½``), in
    two lists: ``(ties, close)`` — ties whose order is not known, and pairs whose order is settled
    (``P(d > 0) ≥ 1 − max_error``) although their gap is below ``δ``."""
    if posterior.n_comparisons == 0 and posterior.link is None:
        return [], []
    status = neighbour_status(posterior, IndifferenceZone(delta))
    ordered = status.ordered(max_error)
    order = [int(c) for c in status.order]
    pairs = [(r, [group.names[order[r]], group.names[order[r + 1]]]) for r in range(len(order) - 1) if bool(status.tied[r])]
    return [pair for r, pair in pairs if not bool(ordered[r])], [pair for r, pair in pairs if bool(ordered[r])]
