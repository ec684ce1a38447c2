"""Offline fits: fit raee, fit simplex."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Callable, Optional, cast

import typer
from rich.text import Text

from ..errors import OrchestratorError
from .common import _finite, app, err_console, out_console
from .fit_options import (
    AsJson,
    Family,
    Judge,
    Log,
    RaeeAbstainSd,
    RaeeControl,
    RaeeFlagShift,
    RaeeHuman,
    RaeeIccThreshold,
    RaeeLevel,
    RaeePlot,
    RaeePoolAll,
    RaeePopulation,
    RaeeResponses,
    RaeeSeCurvePng,
    RaeeSoft,
    Run,
    SimplexBetaMax,
    SimplexChains,
    SimplexCollapse,
    SimplexCountWeight,
    SimplexDelta,
    SimplexDraws,
    SimplexFallback,
    SimplexHuman,
    SimplexLevel,
    SimplexLevels,
    SimplexLikelihood,
    SimplexOmega,
    SimplexPlot,
    SimplexResponses,
    SimplexSeed,
    SimplexSelfJudging,
    SimplexSelfPreference,
    SimplexSoft,
    SimplexSweep,
    SimplexTruth,
    SimplexWarmup,
)

fit_app = typer.Typer(
    rich_markup_mode=None, no_args_is_help=True, help="Offline fits on an accumulated judgment log (a run file or a JSONL log)."
)
app.add_typer(fit_app, name="fit")


def _one_source(run: Path | None, log: Path | None) -> None:
    if (run is None) == (log is None):
        raise OrchestratorError("give a run file or --log FILE.jsonl (exactly one)")


@fit_app.command("raee")
def fit_raee_cmd(
    run: Run = None,
    log: Log = None,
    judge: Judge = None,
    soft: RaeeSoft = False,
    as_json: AsJson = False,
    level: RaeeLevel = 0.95,
    population: RaeePopulation = None,
    icc_threshold: RaeeIccThreshold = 0.9,
    abstain_sd: RaeeAbstainSd = None,
    pool_all: RaeePoolAll = False,
    plot: RaeePlot = None,
    se_curve_png: RaeeSeCurvePng = None,
    control: RaeeControl = None,
    family: Family = None,
    responses: RaeeResponses = None,
    flag_shift: RaeeFlagShift = None,
    human: RaeeHuman = None,
) -> None:
    """RAEE: reference-anchored Elo per candidate and judge, judge screening, pooled rows, anchor diagnostics;
    with --control length, AlpacaEval's length-controlled win rates and flagged candidates; with --control self,
    each judge's preference for its own model family and the win rates without it; with --human,
    people's win rates."""
    from .. import api
    from ..api import presentation
    from ..api.settings import RaeeSettings

    _one_source(run, log)
    _check_outputs(se_curve_png, plot, [run, log])
    settings = RaeeSettings(
        soft=soft,
        judges=tuple(judge or ()),
        level=level,
        population=population,
        icc_threshold=icc_threshold,
        abstain_sd=abstain_sd,
        pool_all=pool_all,
        control=tuple(control or ()),
        flag_shift=flag_shift,
        families=tuple(family or ()),  # type: ignore[arg-type]  # NAME=FAMILY entries, parsed by the settings
    )
    report = api.fit_raee(run, log=log, settings=settings, responses=responses, human=human)

    def plots() -> list[Path]:
        paths = presentation.raee_plots(report, plot) if plot is not None else []
        if se_curve_png is not None:
            source = run if run is not None else log
            assert source is not None  # (_one_source)
            paths.append(presentation.raee_se_curve_plot(source, se_curve_png, log=log is not None, judges=judge or None))
        return paths

    _print_report(report.model_dump(mode="json"), lambda: presentation.format_raee(report), plots, as_json)


def _check_outputs(png: Path | None, folder: Path | None, inputs: list) -> None:
    """Refuse plot outputs that would write over an input, before any fitting (one line, exit 2)."""
    from ..outputs import check_output

    if png is not None:
        check_output(png, option="--se-curve", inputs=inputs)
    if folder is not None and folder.exists() and not folder.is_dir():
        raise OrchestratorError(f"--plot {folder}: is a file; give a folder for the plots")


def _json_safe(value):
    """NaN/±inf (an R-hat with one chain, a statistic of nothing) as null: --json stays valid JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _print_report(data: dict, text: Callable[[], str], plots: Callable[[], list[Path]], as_json: bool) -> None:
    """A fit report as JSON (with its plot paths) or as text, the plots named on stderr. The plots
    are drawn after the results are out (text) or their failure is part of the JSON: a plot that
    cannot be written never discards a fit that took minutes; the command then exits 2."""
    error: OrchestratorError | None = None
    if not as_json:
        out_console.print(Text(text()), soft_wrap=True)
    try:
        paths = plots()
    except OrchestratorError as exc:
        paths, error = [], exc
    if as_json:
        extra = {"plot_error": str(error)} if error is not None else {}
        print(json.dumps(_json_safe({**data, "plots": [str(p) for p in paths], **extra}), allow_nan=False))
    else:
        for path in paths:
            err_console.print(f"wrote {path}")
    if error is not None:
        raise error


def _hyper(value: str, name: str) -> float | None:
    """A fixed value, or ``prior`` (integrate over the hyperprior)."""
    if value.strip().lower() == "prior":
        return None
    try:
        number = float(value)
    except ValueError:
        raise OrchestratorError(f"{name} must be a number ≥ 0 or 'prior' (got {value!r})") from None
    if not number >= 0 or number == float("inf"):
        raise OrchestratorError(f"{name} must be a number ≥ 0 or 'prior' (got {value!r})")
    return number


def _numbers(value: str | None, name: str, kind=float) -> list | None:
    if value is None:
        return None
    try:
        numbers = [kind(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise OrchestratorError(f"{name} must be comma-separated numbers (got {value!r})") from None
    if not all(math.isfinite(x) for x in numbers):
        raise OrchestratorError(f"{name} must be comma-separated finite numbers (got {value!r})")
    return numbers


@fit_app.command("simplex")
def fit_simplex_cmd(
    run: Run = None,
    log: Log = None,
    *,
    levels: SimplexLevels,
    omega: SimplexOmega = "1",
    beta_max: SimplexBetaMax = "5",
    count_weight: SimplexCountWeight = "auto",
    likelihood: SimplexLikelihood = "counts",
    delta: SimplexDelta = None,
    self_judging: SimplexSelfJudging = None,
    self_preference: SimplexSelfPreference = "exclude",
    soft: SimplexSoft = False,
    judge: Judge = None,
    sweep: SimplexSweep = False,
    human: SimplexHuman = None,
    fallback: SimplexFallback = True,
    chains: SimplexChains = 4,
    warmup: SimplexWarmup = 1000,
    draws: SimplexDraws = 1000,
    seed: SimplexSeed = 0,
    responses: SimplexResponses = None,
    truth: SimplexTruth = None,
    level: SimplexLevel = 0.95,
    as_json: AsJson = False,
    plot: SimplexPlot = None,
    collapse: SimplexCollapse = None,
) -> None:
    """Bayesian simplex model: judges' confusion matrices, expected true scores, rank credible intervals."""
    from .. import api
    from ..api import presentation
    from ..api.settings import SimplexSettings

    _one_source(run, log)
    _check_outputs(None, plot, [run, log])
    if (responses is None) != (truth is None):
        raise OrchestratorError("--responses and --truth go together")
    mapping = _collapse(collapse, levels)
    settings = SimplexSettings(  # every choice checked there, in one line naming it
        omega=_hyper(omega, "--omega"),
        beta_max=_hyper(beta_max, "--beta-max"),
        delta=tuple(_numbers(delta, "--delta") or ()) or None,
        self_preference=cast(Any, self_preference),
        soft=soft,
        chains=chains,
        warmup=warmup,
        draws=draws,
        seed=seed,
        count_weight=None if count_weight == "auto" else _finite("--count-weight")(count_weight),
        likelihood=cast(Any, likelihood),
    )
    known_truth = presentation.truth_scores(responses, truth) if responses is not None and truth is not None else None
    interactive = sys.stderr.isatty() and not as_json
    report, fit, data, _ = api.fit_simplex(
        run,
        log=log,
        levels=levels,
        settings=settings,
        self_judging=self_judging,
        judge=judge,
        sweep=sweep,
        truth=known_truth,
        truth_field=truth,
        level=level,
        progress=interactive,
        sweep_progress=(lambda msg: err_console.print(f"sensitivity: {msg}")) if not as_json else None,
        fallback=fallback,
        human=human,
    )
    plots = lambda: presentation.simplex_plots(plot, report, fit, data, mapping) if plot is not None else []  # noqa: E731
    _print_report(report.model_dump(mode="json"), lambda: presentation.format_simplex(report), plots, as_json)


def _collapse(collapse: str | None, levels: int) -> list[int] | None:
    """``--collapse``, checked before the fit (not after minutes of sampling, when the plot is drawn)."""
    mapping = _numbers(collapse, "--collapse", int)
    if mapping is not None:
        if any(v not in (1, 2, 3) for v in mapping):
            raise OrchestratorError("--collapse must map every level to 1, 2 or 3 (three levels for the triangle)")
        if levels is not None and len(mapping) != levels:
            raise OrchestratorError(f"--collapse needs one number per level ({levels}), got {len(mapping)}")
    return mapping


@app.command("calibrate")
def calibrate_cmd(
    run: Optional[Path] = typer.Argument(None, help="Run file (its data.truth, or --truth); or give --log."),
    log: Optional[Path] = typer.Option(None, "--log", help="A judgment-log JSONL instead (needs --responses and --truth)."),
    responses: Optional[Path] = typer.Option(None, "--responses", help="With --log: the responses JSONL holding the reference scores."),
    truth: Optional[str] = typer.Option(None, "--truth", help="The reference score field (default: the run's data.truth)."),
    as_json: AsJson = False,
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write the reliability diagrams to this PNG."),
) -> None:
    """Each judge's temperature against reference scores (PoE App. B), ECE before and after, reliability diagram."""
    from dataclasses import asdict

    from .. import api
    from ..api import presentation

    _one_source(run, log)
    _check_outputs(None, None, [run, log, responses])
    if plot is not None:
        from ..outputs import check_output

        check_output(plot, option="--plot", inputs=[run, log, responses])
    found = api.calibrate(run, log=log, responses=responses, truth=truth)

    def plots() -> list[Path]:
        return [presentation.calibration_plot(found, plot, inputs=[run, log, responses])] if plot is not None else []

    _print_report({"judges": [asdict(c) for c in found]}, lambda: presentation.format_calibration(found), plots, as_json)
