"""``fit raee --responses R [--control length]``: flagged candidates and length-controlled win
rates on a RAEE report. Reads the answers' texts (their lengths, their repeats), fits
:func:`orchestrator.raee.control.length_controlled` per anchor and judge, and writes the results
into the report's rows, ``judge_biases``, ``flags`` and ``warnings``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...errors import OrchestratorError
from ...raee import JudgeBias, RaeeReport, RaeeRow, ReferenceJudgments, item_matrix
from ...raee.control import candidate_flags, length_controlled
from ...raee.settings import RAEE_CONTROLS
from ...records.log import load_responses

if TYPE_CHECKING:
    from ...store import RunStore

__all__ = [
    "CONTROLS",
    "FLAG_SHIFT",
    "apply_controls",
    "controlled_report",
    "extreme_shift",
    "format_length_control",
    "response_texts",
    "run_texts",
]

CONTROLS = RAEE_CONTROLS
FLAG_SHIFT = 10.0
"""Win-rate points a candidate may move under control before it is flagged (with a quarter of the
way to the bound, whichever is larger: AlpacaEval's ``get_is_extreme_changes``)."""


def extreme_shift(raw: float, controlled: float, points: float = FLAG_SHIFT) -> bool:
    """A controlled win rate below ``min(raw − raw/4, raw − points)`` or above
    ``max(raw + (100 − raw)/4, raw + points)``: control changed the verdict, not the decimals."""
    return controlled < min(raw - raw / 4, raw - points) or controlled > max(raw + (100 - raw) / 4, raw + points)


def response_texts(path: str | Path) -> dict[tuple[str, str], str]:
    """``(prompt_id, candidate) → text`` of a responses file (validated, one line on a bad row)."""
    return {(row.prompt_id, row.candidate): row.text for _, row in load_responses(path)}


def run_texts(source: str | Path, store: RunStore | None = None) -> dict[tuple[str, str], str]:
    """``(prompt_id, candidate) → text`` of a run's stored dataset, the anchors' texts included
    (``store``: the run file already open)."""
    from ...records.config import RunConfig
    from ...store import open_run

    if store is None:
        with open_run(source, write=False) as opened:
            return run_texts(source, opened)
    dataset = store.dataset()
    config = RunConfig.from_stored(store.config)
    texts = {(p, c): r.text for p, by in dataset.responses.items() for c, r in by.items()}
    if config.reference is not None and config.reference.anchor == "dataset":
        from ...run.planners.reference import DATASET_ANCHOR

        for prompt, row in dataset.prompts.items():
            if row.reference:
                texts.setdefault((prompt, DATASET_ANCHOR), row.reference)
    return texts


def _missing_texts(texts, anchor: str, candidates: list[str], prompts: list[str], y: np.ndarray, source: str) -> None:
    missing = [(anchor, p) for p in prompts if (p, anchor) not in texts]
    missing += [(candidates[m], prompts[i]) for m, i in zip(*np.nonzero(~np.isnan(y))) if (prompts[i], candidates[m]) not in texts]
    if missing:
        who, prompt = missing[0]
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise OrchestratorError(
            f"{source}: no text for {who!r} on prompt {prompt!r}{more}; --control length needs the text of every judged "
            "answer, the anchor's included ({prompt_id, candidate, text} rows)"
        )


def apply_controls(
    report: RaeeReport,
    data: ReferenceJudgments,
    texts: dict[tuple[str, str], str],
    *,
    source: str,
    length: bool,
    soft: bool,
    flag_shift: float = FLAG_SHIFT,
) -> RaeeReport:
    """The report with the flagged candidates (from the texts) and, with ``length``, ``win_rate``,
    ``win_rate_controlled`` (interval) and ``length_slope`` on every per-judge row and each judge's
    length effect.

    ``texts``: ``(prompt_id, candidate) → text`` (:func:`response_texts`, :func:`run_texts`), named
    ``source`` in messages.

    Raises:
        OrchestratorError: a judged answer (or the anchor's) without text.
    """
    rows = {(r.anchor, r.judge, r.candidate): r for r in report.rows}
    biases: list[JudgeBias] = []
    shifts: dict[str, list[str]] = {}
    for anchor in dict.fromkeys(data.anchor.tolist()) if length else []:
        for judge in dict.fromkeys(data.judge[data.anchor == anchor].tolist()):
            subset = data.select((data.anchor == anchor) & (data.judge == judge))
            candidates, prompts, y = item_matrix(subset, anchor, soft=soft)
            _missing_texts(texts, anchor, candidates, prompts, y, source)
            lengths = np.array([[len(texts.get((p, c), "")) for p in prompts] for c in candidates], dtype=float)
            anchor_lengths = np.array([len(texts[(p, anchor)]) for p in prompts], dtype=float)
            fit = length_controlled(y, lengths, anchor_lengths, level=report.level)
            biases.append(
                JudgeBias(
                    anchor=anchor,
                    judge=judge,
                    bias="length",
                    effect=fit.length_effect,
                    low=fit.length_effect_low,
                    high=fit.length_effect_high,
                    points_per_sd=fit.points_per_sd,
                    candidates=len(candidates),
                )
            )
            for m, candidate in enumerate(candidates):
                row = rows.get((anchor, judge, candidate))
                if row is None or np.isnan(fit.controlled[m]):
                    continue
                rows[(anchor, judge, candidate)] = row.model_copy(
                    update={
                        "win_rate": float(fit.win_rate[m]),
                        "win_rate_controlled": float(fit.controlled[m]),
                        "win_rate_controlled_low": float(fit.controlled_low[m]),
                        "win_rate_controlled_high": float(fit.controlled_high[m]),
                        "length_slope": float(fit.slope[m]),
                    }
                )
                raw, controlled = float(fit.win_rate[m]), float(fit.controlled[m])
                if extreme_shift(raw, controlled, flag_shift):
                    shifts.setdefault(candidate, []).append(
                        f"win rate moves {controlled - raw:+.1f} points under length control ({judge} vs {anchor}; "
                        f"flagged beyond {flag_shift:g} points or a quarter of the way to 0 or 100)"
                    )
    judged = set(data.candidate.tolist()) - set(data.anchor.tolist())
    answers: dict[str, list[str]] = {}
    for (_, candidate), text in texts.items():
        if candidate in judged:
            answers.setdefault(candidate, []).append(text)
    flags = candidate_flags(answers)
    for candidate, reasons in shifts.items():
        flags.setdefault(candidate, []).extend(reasons)
    warnings = list(report.warnings) + [f"{c} flagged: {'; '.join(r)}" for c, r in sorted(flags.items())]
    return controlled_report(report, rows, biases, flags, warnings)


def controlled_report(
    report: RaeeReport, rows: dict[tuple[str, str, str], RaeeRow], biases: list[JudgeBias], flags: dict[str, list[str]], warnings: list[str]
) -> RaeeReport:
    """``report`` with a control's rows (by ``(anchor, judge, candidate)``, kept in the report's
    order), judge biases, flags and warnings (the length and the self control both end here)."""
    return report.model_copy(
        update={
            "rows": [rows[(r.anchor, r.judge, r.candidate)] for r in report.rows],
            "judge_biases": biases,
            "flags": flags,
            "warnings": warnings,
        }
    )


def format_length_control(report: RaeeReport) -> list[str]:
    """The text section: each judge's length and self-preference effects, then raw vs controlled
    win rates per judge."""
    if not report.judge_biases:
        return []
    explained = {
        "length": "length control (AlpacaEval's GLM, the judge's length slope shared by its candidates)",
        "self": "self-preference control (each judge's taste for its model family, told from quality beside a neutral judge)",
    }
    lines = ["", "; ".join(explained[kind] for kind in dict.fromkeys(b.bias for b in report.judge_biases)) + ":"]
    for bias in report.judge_biases:
        if bias.bias == "self":
            lines.append(
                f"  {bias.anchor} / {bias.judge}: prefers answers of its own family by {bias.effect:+.2f} [{bias.low:+.2f}, {bias.high:+.2f}] "
                f"log-odds ({bias.points_per_sd:+.1f} points at an even match; {bias.candidates} candidates of its family)"
            )
        else:
            lines.append(
                f"  {bias.anchor} / {bias.judge}: length effect {bias.effect:+.2f} [{bias.low:+.2f}, {bias.high:+.2f}] log-odds "
                f"per unit of tanh(Δlength / sd); an answer one sd longer gains {bias.points_per_sd:+.1f} points at an even match"
            )
    for anchor, judge in dict.fromkeys((b.anchor, b.judge) for b in report.judge_biases):
        rows = [r for r in report.rows if r.anchor == anchor and r.judge == judge and r.win_rate_controlled is not None]
        lines.append(f"  {anchor} / {judge}:")
        lines.append(f"    {'candidate':<28} {'win rate %':>10} {'controlled % (interval)':>26} {'shift':>7}")
        for r in sorted(rows, key=lambda r: -(r.win_rate_controlled or 0.0)):
            assert r.win_rate is not None and r.win_rate_controlled is not None
            interval = f"{r.win_rate_controlled:.1f} [{r.win_rate_controlled_low:.1f}, {r.win_rate_controlled_high:.1f}]"
            mark = "  flagged" if r.candidate in report.flags else ""
            lines.append(f"    {r.candidate:<28.28} {r.win_rate:>10.1f} {interval:>26} {r.win_rate_controlled - r.win_rate:>+7.1f}{mark}")
    return lines
