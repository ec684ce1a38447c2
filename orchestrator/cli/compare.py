"""``orchestrator compare``: a gate for CI — the candidate against the baseline, a decision valid at
every look, and an exit code a pipeline acts on (docs/compare.md)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Iterator, Optional

import typer

from ..errors import OrchestratorError
from ..outputs import check_output, open_output
from .common import _check_range, app, err_console, existing, file_option, out_console
from .display import run_display
from .options import (
    CompareDesign,
    CompareEffect,
    CompareFromLog,
    ComparePlan,
    CompareRequire,
    CompareSpread,
    CompareSpreadFrom,
    RunAnswersFrom,
    RunNoCache,
    RunRunsDir,
)


@app.command("compare")
def compare_cmd(
    config: Path = typer.Argument(..., help="Run config (TOML) with a [compare] section.", callback=existing("config file")),
    margin: Optional[float] = typer.Option(
        None, "--margin", "--min-effect", help="Win-rate points the decision is about (default: the config's)."
    ),
    alpha: Optional[float] = typer.Option(
        None, "--alpha", help="Chance of any wrong decision at the looks the design decides at (default: the config's, 0.05)."
    ),
    max_calls: Optional[int] = typer.Option(None, "--max-calls", help="Paid completions at most (default: the config's budget)."),
    require: CompareRequire = None,
    design: CompareDesign = None,
    plan: ComparePlan = False,
    effect: CompareEffect = None,
    spread: CompareSpread = None,
    spread_from: CompareSpreadFrom = None,
    json_out: bool = typer.Option(False, "--json", help="Print the decision as JSON."),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Also write the decision as JUnit XML to this file."),
    runs_dir: RunRunsDir = None,
    no_cache: RunNoCache = False,
    baseline: Optional[Path] = file_option(
        "--baseline",
        "An earlier reference run holding the baseline's judgments against the anchor: only the candidate is judged.",
        what="run file",
        default=None,
    ),
    from_log: CompareFromLog = None,
    answers_from: RunAnswersFrom = None,
) -> None:
    """Is the candidate better than the baseline? Judge both head to head until the decision is known.

    Exit codes: 0 better (with --require not-worse: also equivalent or not worse), 10 worse, 11
    equivalent within the margin, 12 not known within the budget, 13 not better by the margin; 2 bad
    input or a run whose judge calls all failed."""
    from .. import api
    from ..api.compare import junit_xml

    _check_range(max_calls, "--max-calls", 1)
    if not plan and (effect is not None or spread is not None or spread_from is not None):
        raise OrchestratorError("--effect, --spread and --spread-from go with --plan (they size a plan; a run reads its own outcomes)")
    if plan:
        _print_plan(config, runs_dir, margin, alpha, max_calls, require, design, baseline, effect, spread, spread_from, json_out)
        return
    cfg = api.load_config(config, runs_dir)
    if junit is not None:  # before anything is paid: never onto the config, the data or the run file
        check_output(junit, option="--junit", inputs=[config, cfg.data.prompts, cfg.data.responses, cfg.run_path, from_log, baseline])
    display, on_event = run_display(max_calls or cfg.budget.max_calls)
    with display, _interrupt_says(cfg.run_path):
        path, result = api.compare(
            cfg,
            margin=margin,
            alpha=alpha,
            max_calls=max_calls,
            require=require,
            design=design,
            progress=on_event,
            from_log=from_log,
            answers_from=answers_from,
            cache=False if no_cache else None,
            baseline_run=baseline,
        )
    if junit is not None:
        with open_output(junit, option="--junit", inputs=[config, path]) as fh:
            fh.write(junit_xml(result))
    if json_out:
        out_console.print_json(json.dumps(result.model_dump(mode="json", exclude_unset=True)))
    else:
        out_console.print(result.sentence + f" (α = {result.alpha:g}; exit {result.exit_code})", soft_wrap=True)
        holds = "whenever the run is looked at" if result.design == "anytime" else "at the ends of rounds (its planned looks)"
        err_console.print(f"run file: {path}; the interval holds {holds} ({result.construction.split(' (')[0]})", soft_wrap=True)
    raise typer.Exit(result.exit_code)


def _print_plan(config, runs_dir, margin, alpha, max_calls, require, design, baseline, effect, spread, spread_from, json_out) -> None:
    """``compare --plan``: what the comparison needs, nothing paid."""
    from .. import api

    said = api.compare_plan(
        config,
        runs_dir=runs_dir,
        margin=margin,
        alpha=alpha,
        max_calls=max_calls,
        require=require,
        design=design,
        baseline_run=baseline,
        effect=3.0 if effect is None else effect,
        spread=spread,
        spread_from=spread_from,
    )
    if json_out:
        out_console.print_json(json.dumps(said))
    else:
        out_console.print(said["sentence"], soft_wrap=True)


@contextlib.contextmanager
def _interrupt_says(run: Path) -> Iterator[None]:
    """A Ctrl-C during a comparison: one line that says how to go on (when the run file exists), exit 130."""
    try:
        yield
    except KeyboardInterrupt:
        more = f"; continue with: orchestrator resume {run}" if run.exists() else " before the run file was written"
        err_console.print(f"interrupted{more}", soft_wrap=True)
        raise typer.Exit(130) from None
