"""``orchestrator fit``: offline fits on an accumulated judgment log (a run file or a JSONL log).

The imperative shell around :mod:`orchestrator.raee.report`: load reference-anchored judgments,
fit, format a table, draw plots.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ...errors import OrchestratorError
from ...raee import (
    MID_REGION,
    SE_CURVE_SIZES,
    RaeeReport,
    RaeeRow,
    ReferenceJudgments,
    item_outcomes,
    known,
    leaderboard,
    raee_report,
    reference_wtl,
    se_calibration,
)
from ...raee.settings import RaeeSettings
from ...records.config import RunConfig
from ...records.log import load_log
from ...run.planners import reference_items
from ...store import RunStore, open_run
from ..judges.human_labels import HumanLabels
from ..plotting import pyplot, save
from .people import fmt as _fmt
from .people import format_people, with_people

__all__ = ["load_reference_judgments", "RaeeSettings", "fit_raee", "format_raee", "plot_raee", "se_curve", "plot_se_curve"]


def _from_store(path: Path, store: RunStore | None = None) -> tuple[ReferenceJudgments, dict]:
    if store is None:
        with open_run(path, write=False) as opened:
            return _from_store(path, opened)
    config = RunConfig.from_stored(store.config)
    rows = list(store.judgments(kind="reference"))
    dataset = store.dataset()
    info: dict = {"population": len(dataset.prompts), "candidates": None}
    anchor = None
    if config.reference is not None:
        anchor, cands, order, _ = reference_items(dataset, config.reference.anchor, config.seed)
        info = {"population": len(order), "candidates": cands}
    out = []
    for row in rows:
        cands = row.candidates
        this_anchor = anchor if anchor in cands else cands[0]
        cand, w, t, lo, swapped = reference_wtl(cands, this_anchor, row.probs[0])
        if w + t + lo > 0:
            out.append((this_anchor, row.judge, cand, row.prompt_id, row.repeat, w, t, lo, swapped))
    return ReferenceJudgments.from_rows(out), info


def _from_log(path: Path) -> ReferenceJudgments:
    out = []
    for _, rec in load_log(path):
        if rec.kind != "reference":
            continue
        anchor = rec.reference or rec.candidates[0]
        cand, w, t, lo, swapped = reference_wtl(rec.candidates, anchor, rec.probs)
        out.append((anchor, rec.judge, cand, rec.prompt_id, rec.repeat, w, t, lo, swapped))
    return ReferenceJudgments.from_rows(out)


def load_reference_judgments(source: str | Path, *, log: bool, store: RunStore | None = None) -> tuple[ReferenceJudgments, dict]:
    """Reference-anchored judgments of a run file (``log=False``; ``store``: that file already
    open) or a JSONL judgment log, and what the source knows about the population (prompt pool
    size, expected candidates)."""
    path = Path(source)
    if log:
        return _from_log(path), {"population": None, "candidates": None}
    return _from_store(path, store)


def fit_raee(
    source: str | Path,
    options: RaeeSettings = RaeeSettings(),
    *,
    log: bool = False,
    responses: str | Path | None = None,
    loaded: tuple[ReferenceJudgments, dict] | None = None,
    read_texts: bool = True,
    human: HumanLabels | None = None,
    store: RunStore | None = None,
    human_source: str | Path = "the labels",
) -> RaeeReport:
    """RAEE report of a run file or log (see :func:`orchestrator.raee.report.raee_report`).

    A run's population size defaults to its prompts with an anchor text (so the FPC applies when a
    budget stopped the campaign early); a log has no population unless one is given. ``loaded``:
    what :func:`load_reference_judgments` returned for ``source`` when the caller has it already.
    The answers' texts (``responses``; a run's own dataset by default) add the flags of degenerate
    candidates, and with ``options.control`` length-controlled win rates
    (:func:`orchestrator.offline.raee.length_control.apply_controls`); ``read_texts=False`` skips a
    run's texts when neither is asked (``rank`` flags candidates itself). ``human``: people's labels,
    which add each candidate's people's win rate (:func:`with_people`); labels of no judged answer
    are refused in one line, naming ``human_source``. ``store``: the run file
    already open (its judgments and texts are read from it, not opened again).
    """
    from .length_control import FLAG_SHIFT, apply_controls, response_texts, run_texts

    options.check_source(log=log, responses=responses)
    data, info = loaded if loaded is not None else load_reference_judgments(source, log=log, store=None if log else store)
    if len(data) == 0:
        what = "judgment log" if log else "run"
        raise OrchestratorError(
            f"{source}: this {what} has no reference-anchored judgments (kind 'reference'); "
            "RAEE needs candidates judged against a reference (a run with a [reference] section, "
            "or `orchestrator record --template raee-...`)"
        )
    judges = list(options.judges) or None
    report = raee_report(
        data,
        soft=options.soft,
        level=options.level,
        population=options.population if options.population is not None else info["population"],
        icc_threshold=options.icc_threshold,
        abstain_sd=options.abstain_sd,
        pool_all=options.pool_all,
        judges=judges,
        candidates=info["candidates"],
    )
    if human is not None:
        from ..judges.human_labels import refuse_unmatched

        answers = {*zip(data.prompt.tolist(), data.candidate.tolist()), *zip(data.prompt.tolist(), data.anchor.tolist())}
        refuse_unmatched(human, answers, human_source, f"judged in {source}")
        report = with_people(report, data if not judges else data.select(np.isin(data.judge, judges)), human, soft=options.soft)
    chosen = data if not judges else data.select(np.isin(data.judge, judges))
    flag_shift = FLAG_SHIFT if options.flag_shift is None else options.flag_shift
    if responses is not None or (not log and (read_texts or "length" in options.control)):
        texts = response_texts(responses) if responses is not None else run_texts(source, store)
        report = apply_controls(
            report,
            chosen,
            texts,
            source=str(responses if responses is not None else source),
            length="length" in options.control,
            soft=options.soft,
            flag_shift=flag_shift,
        )
    if "self" in options.control:
        from .self_control import apply_self_control, run_families

        families = dict(options.families) or ({} if log else run_families(source, store))
        report = apply_self_control(
            report, chosen, families, soft=options.soft, flag_shift=flag_shift, source="flags" if options.families else "config"
        )
    return report


def format_raee(report: RaeeReport) -> str:
    """The report as text: one table per anchor, judges' screens, diagnostics, warnings."""
    label = (
        "hard outcomes (judge's argmax; ties count ½)"
        if report.outcome == "hard"
        else "soft outcomes (P(win) + ½·P(tie) from the logits; our extension)"
    )
    lines = [
        f"RAEE — {label}; {report.level:.0%} intervals; "
        + (f"FPC with M = {report.population}" if report.population else "no finite-population correction")
    ]
    anchors = list(dict.fromkeys(r.anchor for r in report.rows))
    header = (
        f"{'judge':<18} {'candidate':<22} {'N':>5} {'W':>5} {'T':>4} {'L':>5} {'p̂':>6} {'p̄':>6} "
        f"{'p interval':>15} {'Elo':>7} {'Elo interval':>17} {'SE raw':>7} {'SE FPC':>7} {'SE κ':>7} {'SE sprd':>7} {'SE Elo':>7} {'SE pool':>7}"
    )
    for anchor in anchors:
        lines += [
            "",
            f"anchor: {anchor}   (mid-region coverage {report.mid_region_coverage.get(anchor, float('nan')):.0%} "
            f"of p̄ in [{MID_REGION[0]}, {MID_REGION[1]}]; κ factor "
            f"{_fmt(report.kappa_factor.get(anchor), '.3f')})",
            header,
        ]
        rows = [r for r in report.rows if r.anchor == anchor]
        judges = sorted({r.judge for r in rows} - {"pooled", "-"}) + (["pooled"] if any(r.judge == "pooled" for r in rows) else [])
        for judge in judges:
            for r in sorted((r for r in rows if r.judge == judge), key=lambda r: math.inf if r.elo is None else -r.elo):
                lines.append(
                    f"{judge:<18.18} {r.candidate:<22.22} {r.n:>5} {r.wins:>5} {r.ties:>4} {r.losses:>5} "
                    f"{_fmt(r.p_hat, '.3f'):>6} {_fmt(r.p_bar, '.3f'):>6} "
                    f"{'[' + _fmt(r.p_low, '.3f') + ', ' + _fmt(r.p_high, '.3f') + ']':>15} {_fmt(r.elo, '+.1f'):>7} "
                    f"{'[' + _fmt(r.elo_low, '+.1f') + ', ' + _fmt(r.elo_high, '+.1f') + ']':>17} "
                    f"{_fmt(r.se_p_raw, '.4f'):>7} {_fmt(r.se_p_fpc, '.4f'):>7} {_fmt(r.se_p_kappa, '.4f'):>7} "
                    f"{_fmt(r.se_p_spread, '.4f'):>7} {_fmt(r.se_elo_raw, '.1f'):>7} {_fmt(r.se_elo, '.1f'):>7}"
                )
        for r in rows:
            if r.judge == "-":
                lines.append(f"{'-':<18} {r.candidate:<22.22} {0:>5}  (no judgments)")
    lines += [
        "",
        "SE raw: Eq. (4), Jeffreys–Beta; SE FPC: × √((M − n)/(M − 1)); SE κ: × κ factor; SE sprd: from the "
        "outcomes' own spread (pooled over the judge's candidates). SE Elo — the one SE of the Elo gap, the sd "
        "`rank` and `status` show: delta method on SE raw (hard outcomes) or SE sprd (soft), the uncertainty "
        "about the candidate on prompts like these. SE pool: on the most corrected of raw/FPC/κ, the uncertainty "
        "about this pool of prompts only (0 once every prompt of the pool is judged).",
        f"judge screen (ICC(3,k) ≥ {report.icc_threshold:g} = strong):",
    ]
    for sc in report.judges:
        icc = f"ICC(3,{sc.runs}) = {sc.icc:.3f}" if sc.icc is not None else "ICC not computable (needs ≥ 2 runs of ≥ 2 items)"
        lines.append(
            f"  {sc.anchor} / {sc.judge}: {sc.items} items, {icc}"
            f"{' strong' if sc.strong else ''}{'; ' + sc.note if sc.note else ''}"
            + (f"; abstention keeps {sc.coverage:.1%}" if report.abstain_sd is not None else "")
        )
    if any(r.judge == "pooled" for r in report.rows):
        lines.append("  pooled rows: mean Elo gap over the strong judges, SE from σ²_Δ(ρ_k + (1 − ρ_k)/J) (Eq. 9)")
    for sw in report.anchor_swaps:
        tau = "not computable (fewer than 2 candidates, or one ranking constant)" if sw.kendall_tau is None else f"{sw.kendall_tau:.3f}"
        lines.append(
            f"anchor swap {sw.anchors[0]} ↔ {sw.anchors[1]}: Kendall τ = {tau} over {sw.candidates} candidates, "
            f"mean |centred Elo shift| = {sw.mean_abs_centered_elo_shift:.1f}"
        )
    lines += format_people(report)
    from .length_control import format_length_control

    lines += format_length_control(report)
    lines += [f"warning: {w}" for w in report.warnings]
    return "\n".join(lines)


def plot_raee(report: RaeeReport, out_dir: str | Path) -> list[Path]:
    """One leaderboard PNG per anchor: each candidate's Elo gap with its interval, per judge (and pooled)."""
    plt = pyplot()
    out = Path(out_dir)  # created by plotting.save, which turns a folder it cannot create into one line
    paths = []
    for anchor in dict.fromkeys(r.anchor for r in report.rows):
        rows: list[RaeeRow] = [r for r in report.rows if r.anchor == anchor and r.elo is not None]
        board = leaderboard(report.rows, anchor)
        order = sorted(board, key=lambda c: board[c])
        judges = sorted({r.judge for r in rows} - {"pooled"}) + (["pooled"] if any(r.judge == "pooled" for r in rows) else [])
        fig, ax = plt.subplots(figsize=(7, 0.35 * len(order) + 1.5))
        offsets = np.linspace(-0.3, 0.3, len(judges)) if len(judges) > 1 else [0.0]
        for off, judge in zip(offsets, judges):
            # rows without judgments (no Elo) are not drawn
            mine = {r.candidate: r for r in rows if r.judge == judge and r.elo is not None}
            ys = [k + off for k, c in enumerate(order) if c in mine]
            elo = {c: (known(r.elo_low), known(r.elo), known(r.elo_high)) for c, r in mine.items()}
            xs = [elo[c][1] for c in order if c in mine]
            lo = [elo[c][1] - elo[c][0] for c in order if c in mine]
            hi = [elo[c][2] - elo[c][1] for c in order if c in mine]
            ax.errorbar(
                xs,
                ys,
                xerr=[lo, hi],
                fmt="D" if judge == "pooled" else "o",
                ms=4,
                capsize=2,
                label=judge,
                color="black" if judge == "pooled" else None,
            )
        ax.axvline(0, color="grey", lw=0.8, ls="--")
        ax.set_yticks(range(len(order)), order)
        ax.set_xlabel(f"Elo gap to the anchor {anchor} ({report.level:.0%} interval, {report.outcome} outcomes)")
        ax.legend(fontsize=7, loc="lower right")
        paths.append(save(fig, out / f"raee-leaderboard-{_safe(anchor)}.png"))
    return paths


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def se_curve(
    source: str | Path, *, log: bool = False, judges: list[str] | None = None, draws: int = 2000, sizes: tuple[int, ...] = SE_CURVE_SIZES
) -> dict[str, dict[str, dict[int, np.ndarray]]]:
    """Analytic vs empirical SE on the log's own items (RAEE §4): for hard and soft outcomes, per
    subsample size ``n``, the ratios analytic/empirical (``raw`` and ``FPC``) over the
    (anchor, judge, candidate) cells that have more than ``n`` items, and ``spread FPC`` (the SE
    from the outcomes' own spread, with FPC) (see :func:`orchestrator.raee.se_calibration`; the
    cell's items are the population)."""
    data, _ = load_reference_judgments(source, log=log)
    if judges:
        data = data.select(np.isin(data.judge.astype(str), judges))
    if len(data) == 0:
        raise OrchestratorError(f"{source}: no reference-anchored judgments for the SE curve")
    curves: dict[str, dict[str, dict[int, np.ndarray]]] = {}
    rng = np.random.default_rng(0)
    for kind in ("hard", "soft"):
        ratios: dict[str, dict[int, list[float]]] = {"raw": {}, "FPC": {}, "spread FPC": {}}
        for s in item_outcomes(data, soft=kind == "soft").values():
            for n, r in se_calibration(s, sizes, draws=draws, rng=rng).items():
                if r["empirical"] > 0:
                    ratios["raw"].setdefault(n, []).append(r["analytic_raw"] / r["empirical"])
                    ratios["FPC"].setdefault(n, []).append(r["analytic_fpc"] / r["empirical"])
                    ratios["spread FPC"].setdefault(n, []).append(r["analytic_spread_fpc"] / r["empirical"])
        curves[kind] = {name: {n: np.array(v) for n, v in sorted(by.items())} for name, by in ratios.items()}
    if not any(curves[k]["raw"] for k in curves):
        smallest = min(sizes)
        raise OrchestratorError(f"the SE curve needs a candidate with more than {smallest} judged prompts (and outcomes that vary)")
    return curves


def plot_se_curve(curves: dict[str, dict[str, dict[int, np.ndarray]]], path: str | Path, *, title: str) -> Path:
    """Median analytic/empirical SE ratio over cells against n (inter-quartile band), raw and with
    the finite-population correction, one panel per outcome kind, with the paper's ±12% band."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 4), sharey=True, squeeze=False)
    for ax, (kind, by) in zip(axes[0], curves.items()):
        ax.axhspan(0.88, 1.12, color="green", alpha=0.1, label="±12%")
        ax.axhline(1.0, color="grey", lw=0.8)
        for name, style in (("raw", "o--"), ("FPC", "s-"), ("spread FPC", "^:")):
            sizes = sorted(by.get(name, {}))
            if not sizes:
                continue
            q1, med, q3 = (np.array([np.quantile(by[name][n], q) for n in sizes]) for q in (0.25, 0.5, 0.75))
            ax.plot(sizes, med, style, label=f"analytic {name} (median)")
            ax.fill_between(sizes, q1, q3, alpha=0.2)
            ax.set_xscale("log", base=2)
            ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.set_xlabel("n prompts (subsample without replacement)")
        ax.set_title(f"{kind} outcomes" + (" (paper)" if kind == "hard" else " (our extension)"))
    axes[0][0].set_ylabel("analytic SE / subsampling SD")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title)
    return save(fig, path)
