"""Commands on runs: run, resume, status, rank, export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, TypeVar

import typer
from rich.table import Table
from rich.text import Text

from ..errors import OrchestratorError
from .common import _check_range, app, err_console, number_option, out_console, run_argument
from .display import print_ranking, run_display
from .fit_options import AsJson
from .options import RunAnswersFrom, RunCache, RunConfigPath, RunDryRun, RunFromLog, RunNoCache, RunOffline, RunPilot, RunReport, RunRunsDir
from .status_view import print_status

if TYPE_CHECKING:
    from ..records.reports import Comparison

T = TypeVar("T")


@app.command("run")
def run_cmd(
    config: RunConfigPath,
    dry_run: RunDryRun = False,
    offline: RunOffline = False,
    runs_dir: RunRunsDir = None,
    from_log: RunFromLog = None,
    report: RunReport = True,
    cache: RunCache = None,
    no_cache: RunNoCache = False,
    pilot: RunPilot = None,
    answers_from: RunAnswersFrom = None,
) -> None:
    """Start a live evaluation from a config: select, judge, commit every judgment to runs/<name>.sqlite."""
    from .. import api
    from ..api import presentation

    _check_range(pilot, "--pilot", 1)
    if pilot is not None and dry_run:
        raise OrchestratorError("--pilot spends calls; --dry-run spends none: use one of them")
    if offline and not dry_run:
        # a run sends requests by definition: never let --offline look like a promise it cannot keep
        raise OrchestratorError("--offline only goes with --dry-run (a run asks its judges)")
    cfg = api.load_config(config, runs_dir)
    if dry_run:
        estimate = api.dry_run(cfg, smoke=not offline)
        smoke = estimate.pop("smoke", [])
        generation = estimate.pop("generation", [])
        table = Table(title=f"dry run: {config} ({'nothing sent' if offline else 'one smoke call per judge and template'})")
        table.add_column("item")
        table.add_column("value", justify="right")
        for k, v in estimate.items():
            table.add_row(k.replace("_", " "), str(v))
        out_console.print(table)
        _print_generation(generation)
        if smoke:
            calls = Table(title="smoke call: each judge's parsed answer to one request")
            for name in ("judge", "template", "answer"):
                calls.add_column(name)
            for row in smoke:
                answer = ", ".join(f"{k}: {v}" for k, v in row["answer"].items()) if "answer" in row else f"FAILED: {row['error']}"
                calls.add_row(row["judge"], row["template"], answer)
            out_console.print(calls)
            failed = [row for row in smoke if "answer" not in row]
            if failed:
                first = failed[0]
                said = presentation.failure_advice(first.get("error_type"), first["judge"], first["template"])
                advice = f"; {said}" if said else ""
                raise OrchestratorError(f"judge {first['judge']!r} did not answer template {first['template']!r}: {first['error']}{advice}")
        return
    cached = _cache_setting(cache, no_cache)
    path, reason = _live(
        cfg.run_path,
        lambda on: api.start(cfg, progress=on, from_log=from_log, cache=cached, pilot=pilot, answers_from=answers_from),
        cfg.budget.max_calls,
    )
    if pilot is not None and getattr(reason, "kind", None) == "pilot":
        err_console.print(
            f"{reason}: continue with `orchestrator resume {path}`; `orchestrator status {path}` shows the forecast", soft_wrap=True
        )
        return
    _finished(path, f"finished: {reason}. Inspect with `orchestrator rank {path}`", report)


def _print_generation(rows: list[dict]) -> None:
    """The dry run's one generation per candidate model; the first that failed is one line, exit 2."""
    if not rows:
        return
    table = Table(title="each candidate model's answer to one prompt")
    for name in ("candidate", "model", "answer"):
        table.add_column(name)
    for row in rows:
        table.add_row(row["candidate"], row["model"], row.get("answer") or f"FAILED: {row['error']}")
    out_console.print(table)
    failed = [row for row in rows if row["status"] == "failed"]
    if failed:
        names = ", ".join(repr(row["candidate"]) for row in failed)
        raise OrchestratorError(f"candidate model(s) {names} did not answer: {failed[0]['error']}")


@app.command("resume")
def resume_cmd(
    run: Path = run_argument(),
    api_base: Optional[str] = typer.Option(
        None, "--api-base", help="The judges' address, when the run's dispatch.api_base carried credentials (they are not stored)."
    ),
    report: RunReport = True,
    cache: RunCache = None,
    no_cache: RunNoCache = False,
    answers_from: RunAnswersFrom = None,
    allow_changed: bool = typer.Option(
        False,
        "--allow-changed-candidates",
        help="Go on although a candidate model's settings changed since its answers were generated (each answer keeps its own).",
    ),
) -> None:
    """Continue an interrupted run: re-ask pending requests, then go on; nothing committed is asked again.

    A comparison's run (orchestrator compare) prints its decision and exits with its code."""
    from .. import api

    cached = _cache_setting(cache, no_cache)
    reason = _live(
        run,
        lambda on: api.resume(run, progress=on, api_base=api_base, cache=cached, answers_from=answers_from, allow_changed=allow_changed),
    )
    if reason is None:
        err_console.print(f"{run}: the run has already finished ({api.status(run).stop_reason}); nothing to do")
    else:
        _finished(run, f"finished: {reason}", report)
    _exit_with_comparison(api.ranking(run).comparison, say=True)


def _exit_with_comparison(comparison: Comparison | None, *, say: bool = False) -> None:
    """A command that reports on a comparison's run file exits with the comparison's own code
    (docs/compare.md), so a pipeline that looks again reads the same answer; ``say``: print the
    decision first (a resume's output would otherwise not show it)."""
    if comparison is None:
        return
    if say:
        out_console.print(comparison.sentence + f" (α = {comparison.alpha:g}; exit {comparison.exit_code})", soft_wrap=True)
    if comparison.exit_code:
        raise typer.Exit(comparison.exit_code)


@app.command("extend")
def extend_cmd(
    run: Path = run_argument("Run file (runs/<name>.sqlite), finished or not."),
    responses: Path = typer.Option(..., "--responses", help="responses.jsonl with the new candidates (and/or answers to new prompts)."),
    prompts: Optional[Path] = typer.Option(None, "--prompts", help="prompts.jsonl with new prompts, if the responses answer any."),
    add_calls: Optional[int] = typer.Option(None, "--add-calls", help="Raise budget.max_calls by this many calls for the newcomers."),
    add_usd: Optional[float] = number_option("--add-usd", "Raise budget.max_usd by this many USD.", default=None),
    add_tokens: Optional[int] = typer.Option(None, "--add-tokens", help="Raise budget.max_tokens by this many tokens."),
    report: RunReport = True,
    cache: RunCache = None,
    no_cache: RunNoCache = False,
) -> None:
    """Grow a leaderboard: add candidates or prompts to a run and pay only for the comparisons that place them."""
    from .. import api

    _check_range(add_calls, "--add-calls", 1)
    _check_range(add_tokens, "--add-tokens", 1)
    if add_usd is not None and add_usd <= 0:
        raise OrchestratorError(f"--add-usd must be more than 0 (got {add_usd})")
    more = {"add_calls": add_calls, "add_usd": add_usd, "add_tokens": add_tokens, "cache": _cache_setting(cache, no_cache)}
    added, reason = _live(run, lambda on: api.extend(run, responses=responses, prompts=prompts, progress=on, **more))
    _finished(run, f"extended with {', '.join(added) or 'new prompts'}; finished: {reason}", report)


def _live(run: Path | str, work: Callable[[Callable], T], max_calls: int | None = None) -> T:
    """``work(on_event)`` under the live progress display; Ctrl-C says how to go on and exits 130."""
    display, on_event = run_display(max_calls)
    try:
        with display:
            return work(on_event)
    except KeyboardInterrupt:
        err_console.print(f"interrupted; continue with: orchestrator resume {run}")
        raise typer.Exit(130)


def _finished(run: Path, said: str, report: bool) -> None:
    """The end of a run, resumed or extended: what stopped it, the top of the ranking, the summary."""
    from .. import api

    err_console.print(said, soft_wrap=True)
    print_ranking(api.ranking(run), limit_groups=3)
    _summarise(run, report)


def _cache_setting(cache: Path | None, no_cache: bool) -> Path | bool | None:
    if cache is not None and no_cache:
        raise OrchestratorError("--cache and --no-cache exclude each other")
    return False if no_cache else cache


def _summarise(run: Path, report: bool) -> None:
    """The end of a run: one paragraph on what it found, what is uncertain and what it spent, and
    the HTML report beside the run file. A run that finished is never reported as failed because of
    either."""
    from .. import api
    from ..api import lifecycle

    try:
        text, data = lifecycle.summary(run)
        out_console.print(Text(text), soft_wrap=True)
        if report:
            out = Path(run).with_suffix(".html")
            api.report(run, out=out, data=data)
            err_console.print(f"report: {out}")
    except (OrchestratorError, OSError) as exc:
        err_console.print(f"report not written: {exc}")


@app.command("report")
def report_cmd(
    run: Path = run_argument("Run file."),
    out: Optional[Path] = typer.Option(None, "--out", help="HTML file to write (default: beside the run file, .html); - = stdout."),
) -> None:
    """Write one self-contained HTML report of a run: ranking, efficiency, spend, judges, every judgment."""
    from .. import api

    target = out if out is not None else Path(run).with_suffix(".html")
    api.report(run, out=target)
    if str(target) != "-":
        err_console.print(f"wrote {target}")


@app.command("status")
def status_cmd(run: Path = run_argument("Run file."), as_json: AsJson = False) -> None:
    """Budget spent, rounds, requests, failures, current ranking and its uncertainty.

    A comparison's run file (orchestrator compare) exits with the comparison's own code."""
    from .. import api

    summary = api.status(run)
    if as_json:
        print(json.dumps(summary.model_dump(mode="json", exclude_unset=True)))
    else:
        print_status(summary)
    _exit_with_comparison(summary.comparison)


@app.command("rank")
def rank_cmd(
    run: Path = run_argument("Run file."),
    as_json: AsJson = False,
    show_all: bool = typer.Option(False, "--all", help="Every group (default: the first 5)."),
    level: float = number_option("--level", "Rank interval level.", default=0.95),
    details: bool = typer.Option(
        False,
        "--details",
        help="The model's figures too: scores (log-strength), entropy, each judge's sharpness, precision, position bias.",
    ),
) -> None:
    """The ranking with rank intervals (PoE posterior on every committed judgment).

    A comparison's run file (orchestrator compare) exits with the comparison's own code."""
    from .. import api

    if not 0 < level < 1:
        raise OrchestratorError(f"--level must be in (0, 1) (got {level})")
    report = api.ranking(run, level=level)
    if as_json:
        print(json.dumps(report.model_dump(mode="json", exclude_unset=True)))
    else:
        print_ranking(report, limit_groups=None if show_all else 5, details=details)
    _exit_with_comparison(report.comparison)


@app.command("export")
def export_cmd(
    run: Path = run_argument("Run file."),
    fmt: str = typer.Option(
        "jsonl", "--format", help="jsonl (judgment log for replay) | csv | parquet | answers (the candidate models' generated answers)"
    ),
    out: Path = typer.Option(..., "--out", help="Output file; - writes to standard output (jsonl, csv)."),
    include_failed: bool = typer.Option(False, "--include-failed", help="csv/parquet: also the permanent failures."),
    with_text: bool = typer.Option(False, "--with-text", help="csv/parquet: add the judge's own words (column text)."),
) -> None:
    """Export the judgments: JSONL judgment log (what `orchestrator replay` reads), or tidy CSV / Parquet
    (one row per judgment: prompt_id, first, second, winner or score, a prob_ column per option, the judge)."""
    from .. import api

    n = api.export(run, out=out, fmt=fmt, include_failed=include_failed, with_text=with_text)
    err_console.print(f"wrote {n} {'generated answers' if fmt == 'answers' else 'judgments'} to {out}")
