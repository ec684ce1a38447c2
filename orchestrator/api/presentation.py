"""The public API's presentation: the text and the plots the commands print and write, from what
the analysis functions return (so a notebook shows what the CLI shows). Plots need matplotlib."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def format_raee(report: Any) -> str:
    """``fit raee``'s report as text."""
    from ..offline.raee.fit import format_raee as text

    return text(report)


def raee_plots(report: Any, folder: str | Path) -> list[Path]:
    """``fit raee --plot DIR``: the Elo intervals per anchor and judge."""
    from ..offline.raee.fit import plot_raee

    return plot_raee(report, Path(folder))


def raee_se_curve_plot(source: str | Path, out: str | Path, *, log: bool, judges: list[str] | None = None) -> Path:
    """``fit raee --se-curve FILE``: the analytic SE against the empirical one as prompts grow."""
    from ..offline.raee.fit import plot_se_curve, se_curve

    source = Path(source)
    curves = se_curve(source, log=log, judges=judges)
    return plot_se_curve(curves, Path(out), title=f"RAEE analytic vs empirical SE: {source.name}")


def truth_scores(responses: str | Path, truth: str) -> dict[str, float]:
    """Each candidate's mean human score ``human[truth]`` in a responses file (``--responses/--truth``)."""
    from ..offline.simplex.fit import truth_scores as scores

    return scores(responses, truth)


def format_simplex(report: Any) -> str:
    """``fit simplex``'s report as text."""
    from ..offline.simplex.text import format_simplex as text

    return text(report)


def simplex_plots(folder: str | Path, report: Any, fit: Any, data: Any, collapse: list[int] | None = None) -> list[Path]:
    """``fit simplex --plot DIR``: the rank intervals, the judges' triangles and (after a sweep) the
    sensitivity plot."""
    from ..offline.simplex.plots import rank_plot, sensitivity_plot, simplex_plot

    folder = Path(folder)
    paths = [rank_plot(report, folder / "simplex-ranks.png"), simplex_plot(fit, data, folder / "simplex-judges.png", collapse=collapse)]
    if report.sensitivity:
        paths.append(sensitivity_plot(report, folder / "simplex-sensitivity.png"))
    return paths


def format_calibration(found: list) -> str:
    """``calibrate``'s table as text."""
    from ..offline.judges.calibrate import format_calibration as text

    return text(found)


def calibration_plot(found: list, out: str | Path, *, inputs: list) -> Path:
    """``calibrate --plot FILE``: the reliability diagrams."""
    from ..offline.judges.calibrate import plot_calibration

    return plot_calibration(found, Path(out), inputs=inputs)


def format_judge_board(board: dict) -> str:
    """``judges``' table as text."""
    from ..offline.judges.board import format_judge_board as text

    return text(board)


def replay_ranking(result: Any) -> list[dict]:
    """A replayed group's final ranking, best first: score, its sd, the 95% rank interval, truth."""
    from ..poe import marginal_variances, rank_intervals, ranking_order

    post = result.final
    intervals = rank_intervals(post)
    sd = marginal_variances(post).sqrt()
    return [
        {
            "rank": rank,
            "candidate": result.names[c],
            "score": float(post.mean[c]),
            "sd": float(sd[c]),
            "rank_low": int(intervals.lower[c]),
            "rank_high": int(intervals.upper[c]),
            "truth": float(result.truth[c]),
        }
        for rank, c in enumerate(ranking_order(post.mean, result.names), start=1)
    ]


def replay_curve_plot(report: Any, out: str | Path, *, inputs: list) -> None:
    """``replay --plot FILE``: Spearman with the truth and with the judge's own all-pairs ranking
    against judge calls."""
    from ..offline.plotting import pyplot, save

    plt = pyplot()
    ks = [k for k, _, _ in report.curve]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(ks, [s for _, s, _ in report.curve], label="Spearman vs truth")
    ax.plot(ks, [s for _, _, s in report.curve], label="Spearman vs own all-pairs", linestyle="--")
    ax.axhline(0.9 * report.full_spearman, color="grey", linewidth=0.8, label="90% of all-pairs")
    ax.set_xlabel("judge calls (per group)")
    ax.set_ylabel("Spearman")
    ax.set_title(f"{report.strategy} · {report.scope} · debias={report.debias}")
    ax.legend()
    save(fig, Path(out), inputs=inputs)


def bias_covariates() -> tuple[str, ...]:
    """The names of the judge-bias covariates a fit may report (``model.control``)."""
    from ..poe.covariates import COVARIATES

    return tuple(COVARIATES)


def failure_advice(code: str | None, judge: str, template: str) -> str:
    """What to change when a judge's answers fail with the failure code ``code`` (``""``: nothing to
    say): the words a dry run's smoke call and a run's closing paragraph add after the failure."""
    from ..judging.extract import failure_advice as advice

    return advice(code, judge, template)
