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
from .common import _finite, app, err_console, existing, out_console

fit_app = typer.Typer(no_args_is_help=True, help="Offline fits on an accumulated judgment log (a run file or a JSONL log).")
app.add_typer(fit_app, name="fit")


def _one_source(run: Path | None, log: Path | None) -> None:
    if (run is None) == (log is None):
        raise OrchestratorError("give a run file or --log FILE.jsonl (exactly one)")


@fit_app.command("raee")
def fit_raee_cmd(
    run: Optional[Path] = typer.Argument(None, help="Run file (runs/<name>.sqlite); or give --log.", callback=existing("run file")),
    log: Optional[Path] = typer.Option(
        None, "--log", help="Fit a judgment-log JSONL (an export or a foreign log) instead.", callback=existing("file")
    ),
    judge: Optional[list[str]] = typer.Option(None, "--judge", help="Only this judge (repeatable)."),
    soft: bool = typer.Option(False, "--soft", help="Soft outcomes P(win) + ½P(tie) from the logits (default: the argmax)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    level: float = typer.Option(0.95, "--level", help="Credible-interval level.", parser=_finite("--level")),
    population: Optional[int] = typer.Option(
        None,
        "--population",
        help="Prompt pool size M for the finite-population correction (a run: its prompts with an anchor; a log: none).",
    ),
    icc_threshold: float = typer.Option(
        0.9, "--icc-threshold", help="Strong judges have ICC(3,k) at least this.", parser=_finite("--icc-threshold")
    ),
    abstain_sd: Optional[float] = typer.Option(
        None, "--abstain-sd", help="Drop items whose outcome SD across runs exceeds this.", parser=_finite("--abstain-sd")
    ),
    pool_all: bool = typer.Option(
        False, "--pool-all", help="Pool every judge (ρ from between-judge correlation) when there are no repeated runs to screen them."
    ),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write leaderboard PNGs (one per anchor) to this directory."),
    se_curve_png: Optional[Path] = typer.Option(
        None, "--se-curve", help="Also write the analytic-vs-empirical SE curve (subsampling each candidate's prompts) to this PNG."
    ),
    control: Optional[list[str]] = typer.Option(
        None,
        "--control",
        help="Control a judge's taste: 'length' (AlpacaEval's length-controlled win rate; needs --responses), "
        "'self' (its preference for answers of its own model family; needs --family or the run's model.families).",
    ),
    family: Optional[list[str]] = typer.Option(
        None,
        "--family",
        metavar="NAME=FAMILY",
        help="The model family of a judge or a candidate, for --control self (repeat: every judge, and the candidates of a judge's family).",
    ),
    responses: Optional[Path] = typer.Option(
        None,
        "--responses",
        help="The answers' texts ({prompt_id, candidate, text} rows, the anchor's included): flags constant, empty or copied answers; needed by --control.",
        callback=existing("file"),
    ),
    flag_shift: Optional[float] = typer.Option(
        None,
        "--flag-shift",
        help="Flag a candidate whose win rate moves more than this many points (or a quarter of the way to 0 or 100) under control (default 10).",
        parser=_finite("--flag-shift"),
    ),
    human: Optional[Path] = typer.Option(
        None,
        "--human",
        help="People's labels (JSONL, docs/human-labels.md): adds each candidate's people's win rate, the judge's outcomes rectified by them (PPI++).",
        callback=existing("file"),
    ),
) -> None:
    """RAEE: reference-anchored Elo per candidate and judge, judge screening, pooled rows, anchor diagnostics;
    with --control length, AlpacaEval's length-controlled win rates and flagged candidates; with --control self,
    each judge's preference for its own model family and the win rates without it; with --human,
    people's win rates."""
    from .. import api

    _one_source(run, log)
    _check_outputs(se_curve_png, plot, [run, log])
    settings = api.RaeeSettings(
        soft=soft,
        judges=tuple(judge or ()),
        level=level,
        population=population,
        icc_threshold=icc_threshold,
        abstain_sd=abstain_sd,
        pool_all=pool_all,
        control=tuple(control or ()),
        flag_shift=flag_shift,
        families=tuple(family or ()),
    )
    report = api.fit_raee(run, log=log, settings=settings, responses=responses, human=human)

    def plots() -> list[Path]:
        paths = api.raee_plots(report, plot) if plot is not None else []
        if se_curve_png is not None:
            source = run if run is not None else log
            assert source is not None  # (_one_source)
            paths.append(api.raee_se_curve_plot(source, se_curve_png, log=log is not None, judges=judge or None))
        return paths

    _print_report(report.model_dump(mode="json"), lambda: api.format_raee(report), plots, as_json)


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
    run: Optional[Path] = typer.Argument(None, help="Run file (runs/<name>.sqlite); or give --log.", callback=existing("run file")),
    log: Optional[Path] = typer.Option(
        None, "--log", help="Fit a judgment-log JSONL (an export or a foreign log) instead.", callback=existing("file")
    ),
    levels: int = typer.Option(..., "--levels", help="Scale size M: scores are the integers 1..M."),
    omega: str = typer.Option(
        "1",
        "--omega",
        help="Random-effect strength ω ≥ 0 (0 = constancy, no random effects; default 1: relaxed, expected magnitude ≈ 0.5) "
        "or 'prior' (integrate over ω ~ U(0.1, 8)).",
    ),
    beta_max: str = typer.Option(
        "5",
        "--beta-max",
        help="Judge-discrimination prior β_max ≥ 0 (default 5, the paper's base value), or 'prior' (integrate over β_max ~ U(0, 20)).",
    ),
    count_weight: str = typer.Option(
        "auto",
        "--count-weight",
        help="Weight of each judge score in the likelihood: 'auto' (1/design effect of judges scoring the same answers) or a number in (0, 1]; 1 = the paper's model.",
    ),
    likelihood: str = typer.Option(
        "counts",
        "--likelihood",
        help="'counts' (the paper's Eq. B.3) or 'answers' (one latent true score per answer, shared by the judges who scored it).",
    ),
    delta: Optional[str] = typer.Option(
        None,
        "--delta",
        help="Dirichlet direction of the random effects, M numbers (e.g. 1,4,10 looks for score inflation); default all ones.",
    ),
    self_judging: Optional[str] = typer.Option(
        None, "--self-judging", help="Judge → its model family's candidates: 'judge=cand1,cand2;judge2=cand3'."
    ),
    self_preference: str = typer.Option(
        "exclude",
        "--self-preference",
        help="Self-judging scores: 'exclude' (the paper's default) or 'shift' (kept, with a fitted self-preference shift).",
    ),
    soft: bool = typer.Option(
        False, "--soft", help="Count the judges' option probabilities (fractional counts) instead of their argmax scores."
    ),
    judge: Optional[list[str]] = typer.Option(None, "--judge", help="Only this judge (repeatable)."),
    sweep: bool = typer.Option(
        False,
        "--sweep",
        help="Sensitivity analysis: ω ∈ {0,1,2,4,8} at β_max = 5 and "
        "β_max ∈ {0,1,5,10,20} at ω = 0, Spearman with the base fit (10 more fits).",
    ),
    human: Optional[Path] = typer.Option(
        None,
        "--human",
        help="Human labels JSONL (docs/human-labels.md): absolute scores on the 1..M scale, read as the true level of each labelled answer.",
        callback=existing("file"),
    ),
    fallback: bool = typer.Option(
        True,
        "--fallback/--no-fallback",
        help="When the chains disagree on the ranking, refit with constancy (ω = 0) and report that fit, saying so.",
    ),
    chains: int = typer.Option(4, "--chains"),
    warmup: int = typer.Option(1000, "--warmup", help="Warm-up iterations per chain."),
    draws: int = typer.Option(1000, "--draws", help="Posterior draws per chain."),
    seed: int = typer.Option(0, "--seed"),
    responses: Optional[Path] = typer.Option(
        None,
        "--responses",
        help="responses.jsonl with human scores, to compare the ranking with the truth (a run uses its own data.truth).",
    ),
    truth: Optional[str] = typer.Option(None, "--truth", help="Human score field in --responses."),
    level: float = typer.Option(0.95, "--level", help="Credible level of the intervals.", parser=_finite("--level")),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write rank-interval, simplex (and sensitivity) PNGs here."),
    collapse: Optional[str] = typer.Option(
        None, "--collapse", help="Map the M levels to 3 for the simplex plot, e.g. 1,1,2,2,3 (default for M = 5)."
    ),
) -> None:
    """Bayesian simplex model: judges' confusion matrices, expected true scores, rank credible intervals."""
    from .. import api

    _one_source(run, log)
    _check_outputs(None, plot, [run, log])
    if (responses is None) != (truth is None):
        raise OrchestratorError("--responses and --truth go together")
    mapping = _collapse(collapse, levels)
    settings = api.SimplexSettings(  # every choice checked there, in one line naming it
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
    known_truth = api.truth_scores(responses, truth) if responses is not None and truth is not None else None
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
    plots = lambda: api.simplex_plots(plot, report, fit, data, mapping) if plot is not None else []  # noqa: E731
    _print_report(report.model_dump(mode="json"), lambda: api.format_simplex(report), plots, as_json)


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
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write the reliability diagrams to this PNG."),
) -> None:
    """Each judge's temperature against reference scores (PoE App. B), ECE before and after, reliability diagram."""
    from dataclasses import asdict

    from .. import api

    _one_source(run, log)
    _check_outputs(None, None, [run, log, responses])
    if plot is not None:
        from ..outputs import check_output

        check_output(plot, option="--plot", inputs=[run, log, responses])
    found = api.calibrate(run, log=log, responses=responses, truth=truth)

    def plots() -> list[Path]:
        return [api.calibration_plot(found, plot, inputs=[run, log, responses])] if plot is not None else []

    _print_report({"judges": [asdict(c) for c in found]}, lambda: api.format_calibration(found), plots, as_json)
