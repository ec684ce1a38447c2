"""Command line: a thin shell over the public API. User errors print one line, exit code 2."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .errors import OrchestratorError
from .secrets import redact

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Active-learning orchestrator for LLM judges: rank outputs on a budget with honest uncertainty.",
)
# Names, texts and messages shown come from users and judges: never read them as rich markup or
# emoji codes ("[bold]", "[/]" or ":smile:" in a candidate's name are shown as written).
err_console = Console(stderr=True, markup=False, emoji=False, highlight=False)
out_console = Console(markup=False, emoji=False, highlight=False)


def _finite(option: str):
    """A parser for a float option that refuses NaN and ±inf (they pass Python's ``float()``)."""
    def parse(value) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise OrchestratorError(f"{option} must be a number (got {value!r})") from None
        if not math.isfinite(number):
            raise OrchestratorError(f"{option} must be a finite number (got {value!r})")
        return number

    return parse


def _check_range(value: int | float | None, name: str, low: float | None = None, high: float | None = None) -> None:
    """One line (exit 2) for an option outside ``[low, high]``."""
    if value is None:
        return
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = (f"between {low} and {high}" if low is not None and high is not None
                  else f"at least {low}" if low is not None else f"at most {high}")
        raise OrchestratorError(f"{name} must be {bounds} (got {value})")


@app.command()
def replay(
    log: Path = typer.Argument(..., help="Judgment-log JSONL (one judgment per line)."),
    responses: Optional[Path] = typer.Option(None, "--responses", help="responses.jsonl with human scores."),
    truth: Optional[str] = typer.Option(None, "--truth", help="Field of 'human' holding the ground truth (omit both to only rank)."),
    strategy: str = typer.Option("reorder", "--strategy", help="reorder | variance | min_uncertainty | random | eps:<x> | diverse"),
    scope: str = typer.Option("per_prompt", "--scope", help="per_prompt | global | items"),
    expert: str = typer.Option("soft_bt", "--expert", help="soft_bt | beta:<a>,<b> | ngaussian | linear"),
    debias: str = typer.Option("none", "--debias", help="none | permutation | home"),
    batch: int = typer.Option(1, "--batch", help="Comparisons selected per posterior update."),
    seeds: int = typer.Option(1, "--seeds", help="Number of seeds to average (tie-breaks, random)."),
    budget: Optional[int] = typer.Option(None, "--budget", help="Judge calls per group (default: all logged)."),
    judge: Optional[str] = typer.Option(None, "--judge", help="Only use judgments by this judge."),
    with_absolute: bool = typer.Option(False, "--with-absolute", help="Warm start with one absolute judgment per candidate (combined PoE)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write the Spearman curve to this PNG."),
) -> None:
    """Replay a selection strategy on a recorded log: Spearman after every comparison, k90, k_self90."""
    from .api import replay as replay_api
    from .outputs import check_output

    if plot is not None:
        check_output(plot, option="--plot", inputs=[log, responses])

    with _progress(as_json) as progress:
        task = progress.add_task("replaying", total=None)
        report = replay_api(
            log,
            responses=responses,
            truth=truth,
            strategy=strategy,
            scope=scope,
            judge=judge,
            expert=expert,
            debias=debias,
            batch=batch,
            budget=budget,
            seeds=seeds,
            with_absolute=with_absolute,
            progress=lambda done, total: progress.update(task, completed=done, total=total),
        )
    if plot is not None:
        _plot_curve(report, plot, [log, responses])
    if as_json:
        print(json.dumps(report.to_json()))
        return
    if truth is None:
        for result in report.groups[:5]:
            out_console.print(_ranking_table(result, with_truth=False, title=f"{result.key}: "))
        if report.n_groups > 5:
            out_console.print(f"… and {report.n_groups - 5} more groups (use --json)")
        return
    table = Table(title=f"replay: {report.strategy} ({report.scope}, {report.expert}, debias={report.debias}, batch={report.batch})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    fmt = lambda x, sd=None: "n/a" if x is None else (f"{x:.1f} ± {sd:.1f}" if sd is not None else f"{x:.4f}")  # noqa: E731
    table.add_row("groups", str(report.n_groups))
    table.add_row("all-pairs Spearman vs truth", fmt(report.full_spearman))
    table.add_row("final Spearman vs truth", fmt(report.curve[-1][1]))
    table.add_row("k90 (calls to 90% of all-pairs)", fmt(report.k90, report.k90_sd))
    table.add_row("groups without k90 (all-pairs ≤ 0 or not reached)", str(report.k90_undefined))
    table.add_row("k_self90 (calls to 0.9 with own all-pairs)", fmt(report.k_self90, report.k_self90_sd))
    table.add_row("calls used (per group)", str(report.curve[-1][0]))
    out_console.print(table)
    if report.n_groups == 1:
        out_console.print(_ranking_table(report.groups[0]))


def _ranking_table(result, *, with_truth: bool = True, title: str = "") -> Table:
    """The final ranking of a replayed group, with 95% rank intervals."""
    from .poe import rank_intervals, ranking_order

    post = result.final
    intervals = rank_intervals(post)
    sd = post.cov.diagonal().sqrt()
    table = Table(title=f"{title}ranking after {result.curve[-1][0]} calls (rank 1 = best)")
    columns = (("rank", "right"), ("candidate", "left"), ("score", "right"), ("± sd", "right"), ("95% rank interval", "center"))
    for name, justify in columns + ((("truth", "right"),) if with_truth else ()):
        table.add_column(name, justify=justify)
    for rank, c in enumerate(ranking_order(post.mean, result.names), start=1):
        cells = [str(rank), result.names[c], f"{float(post.mean[c]):+.3f}", f"{float(sd[c]):.3f}",
                 f"{int(intervals.lower[c])}–{int(intervals.upper[c])}"]
        table.add_row(*(cells + ([f"{float(result.truth[c]):.3f}"] if with_truth else [])))
    return table


@app.command()
def simulate(
    out_log: Path = typer.Option(..., "--out-log", help="Where to write the judgment-log JSONL."),
    out_responses: Path = typer.Option(..., "--out-responses", help="Where to write responses.jsonl."),
    prompts: int = typer.Option(10, "--prompts", help="Number of prompts."),
    candidates: int = typer.Option(16, "--candidates", help="Candidates per prompt."),
    judge: str = typer.Option("llm", "--judge", help="Judge preset: good | llm | weak."),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Write a simulated exhaustive judgment log (every ordered pair and absolute score) and its responses."""
    from .simulate import JUDGE_PRESETS, simulate_dataset

    if judge not in JUDGE_PRESETS:
        raise OrchestratorError(f"unknown judge preset {judge!r}; choose one of {', '.join(JUDGE_PRESETS)}")
    _check_range(seed, "--seed", 0, 2**32 - 1)
    _check_range(prompts, "--prompts", 1, 100_000)
    _check_range(candidates, "--candidates", 2, 10_000)
    from .outputs import check_output, open_output, same_file

    if str(out_log) == str(out_responses) or same_file(out_log, out_responses):
        raise OrchestratorError("--out-log and --out-responses must be two different files")
    for path, option in ((out_log, "--out-log"), (out_responses, "--out-responses")):
        if str(path) != "-":
            path.parent.mkdir(parents=True, exist_ok=True)
        check_output(path, option=option)
    records, rows = simulate_dataset(prompts, candidates, JUDGE_PRESETS[judge], seed=seed)
    for path, items, option in ((out_log, records, "--out-log"), (out_responses, rows, "--out-responses")):
        with open_output(path, option=option) as fh:
            for item in items:
                fh.write(json.dumps(item) + "\n")
    err_console.print(f"wrote {len(records)} judgments to {out_log} and {len(rows)} responses to {out_responses} (truth field: quality)")


judge_app = typer.Typer(no_args_is_help=True, help="Judges: run the embedded local judge.")
app.add_typer(judge_app, name="judge")


@judge_app.command("serve")
def judge_serve(
    model: str = typer.Option("qwen1.5b", "--model", help="Embedded model: qwen1.5b | gemma270m."),
    port: int = typer.Option(8080, "--port", help="Port on 127.0.0.1."),
    threads: Optional[int] = typer.Option(None, "--threads", help="CPU threads (default: all cores)."),
) -> None:
    """Serve an embedded llama.cpp judge on 127.0.0.1 (OpenAI-compatible) until Ctrl-C."""
    import time as _time

    from .judging.embedded import EmbeddedServer

    _check_range(port, "--port", 1, 65535)
    _check_range(threads, "--threads", 1, 1024)
    with EmbeddedServer(model, port=port, threads=threads) as server:
        err_console.print(f"embedded judge {model!r} serving at {server.api_base} (litellm model 'openai/{model}'); Ctrl-C stops it")
        try:
            while True:
                _time.sleep(1)
        except KeyboardInterrupt:
            err_console.print("stopped")


@app.command("record")
def record_cmd(
    prompts: Path = typer.Option(..., "--prompts", help="prompts.jsonl ({id, text})."),
    responses: Path = typer.Option(..., "--responses", help="responses.jsonl ({prompt_id, candidate, text})."),
    out: Path = typer.Option(..., "--out", help="Judgment-log JSONL to append to (resumable)."),
    judge: str = typer.Option("qwen1.5b", "--judge", help="Judge profile (judges/<name>.toml)."),
    prompt_ids: Optional[str] = typer.Option(None, "--prompt-ids", help="Comma-separated prompt ids."),
    first: Optional[int] = typer.Option(None, "--first", help="Use the first N prompts instead of --prompt-ids."),
    pairwise_template: str = typer.Option("poe-pairwise", "--pairwise-template", help="Template for every ordered pair ('' to skip)."),
    absolute_template: str = typer.Option("poe-absolute", "--absolute-template", help="Template for every response ('' to skip)."),
    attribute: str = typer.Option("coherence", "--attribute", help="Attribute for ${attribute} templates."),
    concurrency: int = typer.Option(1, "--concurrency", help="Judge calls in flight."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="Override the judge's address (e.g. a running `judge serve`)."),
) -> None:
    """Ask one judge every ordered pair and every absolute score of chosen prompts; write the judgment log."""
    import asyncio
    import contextlib

    from .judging.client import LiteLLMJudge, get_profile
    from .judging.embedded import EmbeddedServer
    from .judging.templates import get_template
    from .record import load_prompts, plan_recording, record

    from .outputs import check_output

    _check_range(first, "--first", 1)
    _check_range(concurrency, "--concurrency", 1, 1024)
    check_output(out, option="--out", inputs=[prompts, responses])
    profile = get_profile(judge)
    prompt_rows = load_prompts(prompts)
    if prompt_ids:
        ids = [p.strip() for p in prompt_ids.split(",") if p.strip()]
    elif first:
        ids = list(prompt_rows)[:first]
    else:
        raise OrchestratorError("choose prompts with --prompt-ids or --first")
    plan = plan_recording(
        prompt_rows, responses, ids, profile.name,
        pairwise=get_template(pairwise_template) if pairwise_template else None,
        absolute=get_template(absolute_template) if absolute_template else None,
        attribute=attribute, prefill=profile.prefill,
    )
    server = EmbeddedServer(profile.embedded) if profile.embedded and not api_base else contextlib.nullcontext()
    with server as running, _progress(False) as progress:
        base = api_base or (running.api_base if running is not None else None)
        task = progress.add_task(f"recording with {profile.name}", total=len(plan.requests))
        counts = asyncio.run(record(
            plan, LiteLLMJudge(profile, api_base=base), out, attribute=attribute, concurrency=concurrency,
            progress=lambda done, total: progress.update(task, completed=done, total=total), inputs=(prompts, responses),
        ))
    err_console.print(f"planned {counts['planned']}, already recorded {counts['skipped']}, written {counts['written']}, failed {counts['failed']} → {out}")
    if counts["failed"]:
        raise typer.Exit(1)


def _run_display(total: int | None):
    """A rich progress display for a run; returns (context manager, event callback)."""
    progress = Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}", markup=False),
        console=err_console,
        transient=False,
        disable=not err_console.is_terminal,
    )
    task = progress.add_task("round 0", total=total, info="")
    state = {"entropy": None, "top": [], "max_adj": None}

    def on_event(event) -> None:
        if event.kind == "draining":
            err_console.print(f"interrupted: finishing the {event.planned_requests} call(s) in flight so nothing paid for "
                              "is lost; press Ctrl-C again to stop at once")
            return
        if event.entropy is not None:
            state.update(entropy=event.entropy, top=event.top, max_adj=event.max_adjacent_reorder)
        spend = event.spend
        info = f"{spend.tokens} tok"
        if spend.usd:
            info += f" ${spend.usd:.4f}"
        if event.failed:
            info += f" · {event.failed} failed"
        if state["entropy"] is not None:
            info += f" · entropy {state['entropy']:.2f} · max reorder {state['max_adj']:.2f} · top {' > '.join(state['top'][:3])}"
        progress.update(task, description=f"round {event.round}", completed=spend.calls, info=info)
        if event.kind == "stop" and not err_console.is_terminal:
            err_console.print(f"stopped after round {event.round}: {event.reason} ({spend.calls} calls, {spend.tokens} tokens)")

    return progress, on_event


def _print_ranking(report: dict, limit_groups: int | None = None) -> None:
    groups = report["groups"]
    for entry in groups[:limit_groups]:
        title = (f"{entry['group']} · {entry['comparisons']} comparisons · entropy {entry['entropy']}" if entry["entropy"] is not None
                 else f"{entry['group']} · {entry['comparisons']} judgments · RAEE Elo gap (pooled or mean over judges)")
        if "spearman_vs_truth" in entry:
            title += f" · Spearman vs truth {entry['spearman_vs_truth']}"
        table = Table(title=title)
        has_truth = any("truth" in r for r in entry["ranking"])
        for name, justify in (("rank", "right"), ("candidate", "left"), ("score", "right"), ("± sd", "right"),
                              (f"{int(report['level'] * 100)}% rank interval", "center")) + ((("truth", "right"),) if has_truth else ()):
            table.add_column(name, justify=justify)
        for r in entry["ranking"]:
            cells = [str(r["rank"]), r["candidate"], f"{r['score']:+.3f}", f"{r['sd']:.3f}", f"{r['rank_low']}–{r['rank_high']}"]
            if has_truth:
                cells.append("" if r.get("truth") is None else f"{r['truth']:.3f}")
            table.add_row(*cells)
        out_console.print(table)
    if limit_groups is not None and len(groups) > limit_groups:
        out_console.print(f"… and {len(groups) - limit_groups} more groups (use --all or --json)")


@app.command("run")
def run_cmd(
    config: Path = typer.Argument(..., help="Run config (TOML)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the estimated calls, tokens and cost; send nothing."),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", help="Override the config's runs_dir."),
) -> None:
    """Start a live evaluation from a config: select, judge, commit every judgment to runs/<name>.sqlite."""
    from . import api
    from .config import load_config

    cfg = load_config(config)
    if runs_dir is not None:
        cfg = cfg.model_copy(update={"runs_dir": runs_dir})
    if dry_run:
        estimate = api.dry_run(cfg)
        table = Table(title=f"dry run: {config} (nothing sent)")
        table.add_column("item")
        table.add_column("value", justify="right")
        for k, v in estimate.items():
            table.add_row(k.replace("_", " "), str(v))
        out_console.print(table)
        return
    display, on_event = _run_display(cfg.budget.max_calls)
    try:
        with display:
            path, reason = api.start(cfg, progress=on_event)
    except KeyboardInterrupt:
        err_console.print(f"interrupted; continue with: orchestrator resume {cfg.run_path}")
        raise typer.Exit(130)
    err_console.print(f"finished: {reason}. Inspect with `orchestrator rank {path}`")
    _print_ranking(api.ranking(path), limit_groups=3)


@app.command("resume")
def resume_cmd(
    run: Path = typer.Argument(..., help="Run file (runs/<name>.sqlite)."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="The judges' address, when the run's "
                                           "dispatch.api_base carried credentials (they are not stored)."),
) -> None:
    """Continue an interrupted run: re-ask pending requests, then go on; nothing committed is asked again."""
    from . import api

    display, on_event = _run_display(None)
    try:
        with display:
            reason = api.resume(run, progress=on_event, api_base=api_base)
    except KeyboardInterrupt:
        err_console.print(f"interrupted; continue with: orchestrator resume {run}")
        raise typer.Exit(130)
    if reason is None:
        err_console.print(f"{run}: the run has already finished ({api.status(run)['stop_reason']}); nothing to do")
        return
    err_console.print(f"finished: {reason}")
    _print_ranking(api.ranking(run), limit_groups=3)


@app.command("status")
def status_cmd(
    run: Path = typer.Argument(..., help="Run file."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Budget spent, rounds, requests, failures, current ranking and its uncertainty."""
    from . import api

    summary = api.status(run)
    if as_json:
        print(json.dumps(summary))
        return
    table = Table(title=f"{summary['name']} ({summary['state']})")
    table.add_column("item")
    table.add_column("value")
    budget = summary["budget"]
    spent = summary["spent"]
    fmt = lambda used, cap: f"{used}" + (f" of {cap}" if cap is not None else "")  # noqa: E731
    rows = [
        ("stop reason", summary["stop_reason"] or "-"),
        ("rounds", str(summary["rounds"])),
        ("requests", ", ".join(f"{k} {v}" for k, v in sorted(summary["requests"].items())) or "none"),
        ("failures", ", ".join(f"{k} {v}" for k, v in sorted(summary["failures"].items())) or "none"),
        ("calls", fmt(spent["calls"], budget["calls"])),
        ("tokens", fmt(spent["tokens"], budget["tokens"])),
        ("USD", fmt(spent["usd"], budget["usd"])),
        ("groups", str(summary["groups"])),
    ]
    if summary["mean_entropy"] is not None:
        rows += [("mean entropy", str(summary["mean_entropy"])),
                 ("max adjacent reorder probability", str(summary["max_adjacent_reorder"]))]
    if "mean_spearman_vs_truth" in summary:
        rows.append(("mean Spearman vs truth", str(summary["mean_spearman_vs_truth"])))
    for group, top in summary["top"].items():
        rows.append((f"top of {group[:40]}", " > ".join(top)))
    for k, v in rows:
        table.add_row(k, v)
    out_console.print(table)


@app.command("rank")
def rank_cmd(
    run: Path = typer.Argument(..., help="Run file."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    show_all: bool = typer.Option(False, "--all", help="Every group (default: the first 5)."),
    level: float = typer.Option(0.95, "--level", help="Rank interval level.", parser=_finite("--level")),
) -> None:
    """The ranking with rank intervals (PoE posterior on every committed judgment)."""
    from . import api

    if not 0 < level < 1:
        raise OrchestratorError(f"--level must be in (0, 1) (got {level})")
    report = api.ranking(run, level=level)
    if as_json:
        print(json.dumps(report))
        return
    _print_ranking(report, limit_groups=None if show_all else 5)


@app.command("export")
def export_cmd(
    run: Path = typer.Argument(..., help="Run file."),
    fmt: str = typer.Option("jsonl", "--format", help="jsonl (judgment log for replay) | csv | parquet"),
    out: Path = typer.Option(..., "--out", help="Output file."),
    include_failed: bool = typer.Option(False, "--include-failed", help="csv/parquet: also the permanent failures."),
) -> None:
    """Export the judgments: JSONL judgment log (what `orchestrator replay` reads), CSV or Parquet."""
    from . import api

    n = api.export(run, out=out, fmt=fmt, include_failed=include_failed)
    err_console.print(f"wrote {n} judgments to {out}")


fit_app = typer.Typer(no_args_is_help=True, help="Offline fits on an accumulated judgment log (a run file or a JSONL log).")
app.add_typer(fit_app, name="fit")


def _one_source(run: Path | None, log: Path | None) -> None:
    if (run is None) == (log is None):
        raise OrchestratorError("give a run file or --log FILE.jsonl (exactly one)")


@fit_app.command("raee")
def fit_raee_cmd(
    run: Optional[Path] = typer.Argument(None, help="Run file (runs/<name>.sqlite); or give --log."),
    log: Optional[Path] = typer.Option(None, "--log", help="Fit a judgment-log JSONL (an export or a foreign log) instead."),
    judge: Optional[list[str]] = typer.Option(None, "--judge", help="Only this judge (repeatable)."),
    soft: bool = typer.Option(False, "--soft", help="Soft outcomes P(win) + ½P(tie) from the logits (default: the argmax)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    level: float = typer.Option(0.95, "--level", help="Credible-interval level.", parser=_finite("--level")),
    population: Optional[int] = typer.Option(None, "--population", help="Prompt pool size M for the finite-population "
                                             "correction (a run: its prompts with an anchor; a log: none)."),
    icc_threshold: float = typer.Option(0.9, "--icc-threshold", help="Strong judges have ICC(3,k) at least this.",
                                        parser=_finite("--icc-threshold")),
    abstain_sd: Optional[float] = typer.Option(None, "--abstain-sd", help="Drop items whose outcome SD across runs exceeds this.",
                                               parser=_finite("--abstain-sd")),
    pool_all: bool = typer.Option(False, "--pool-all", help="Pool every judge (ρ from between-judge correlation) "
                                  "when there are no repeated runs to screen them."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write leaderboard PNGs (one per anchor) to this directory."),
    se_curve_png: Optional[Path] = typer.Option(None, "--se-curve", help="Also write the analytic-vs-empirical SE "
                                                "curve (subsampling each candidate's prompts) to this PNG."),
) -> None:
    """RAEE: reference-anchored Elo per candidate and judge, judge screening, pooled rows, anchor diagnostics."""
    from . import api
    from .fit import format_raee, plot_raee, plot_se_curve, se_curve

    _one_source(run, log)
    _check_outputs(se_curve_png, plot, [run, log])
    report = api.fit_raee(run, log=log, judge=judge, soft=soft, level=level, population=population,
                          icc_threshold=icc_threshold, abstain_sd=abstain_sd, pool_all=pool_all)
    paths = plot_raee(report, plot) if plot is not None else []
    if se_curve_png is not None:
        curves = se_curve(run or log, log=log is not None, judges=judge or None)
        paths.append(plot_se_curve(curves, se_curve_png, title=f"RAEE analytic vs empirical SE: {(run or log).name}"))
    _print_report(report, format_raee, paths, as_json)


def _check_outputs(png: Path | None, folder: Path | None, inputs: list) -> None:
    """Refuse plot outputs that would write over an input, before any fitting (one line, exit 2)."""
    from .outputs import check_output

    if png is not None:
        check_output(png, option="--se-curve", inputs=inputs)
    if folder is not None and folder.exists() and not folder.is_dir():
        raise OrchestratorError(f"--plot {folder}: is a file; give a folder for the plots")


def _print_report(report, format_text, paths: list[Path], as_json: bool) -> None:
    """A fit report as JSON (with its plot paths) or as text, the plots named on stderr."""
    if as_json:
        print(json.dumps({**report.model_dump(mode="json"), "plots": [str(p) for p in paths]}))
        return
    out_console.print(Text(format_text(report)), soft_wrap=True)
    for path in paths:
        err_console.print(f"wrote {path}")


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
    run: Optional[Path] = typer.Argument(None, help="Run file (runs/<name>.sqlite); or give --log."),
    log: Optional[Path] = typer.Option(None, "--log", help="Fit a judgment-log JSONL (an export or a foreign log) instead."),
    levels: int = typer.Option(..., "--levels", help="Scale size M: scores are the integers 1..M."),
    omega: str = typer.Option("0", "--omega", help="Random-effect strength ω ≥ 0 (0 = constancy, no random effects) "
                              "or 'prior' (integrate over ω ~ U(0.1, 8))."),
    beta_max: str = typer.Option("prior", "--beta-max", help="Judge-discrimination prior β_max ≥ 0, or 'prior' "
                                 "(integrate over β_max ~ U(0, 20))."),
    delta: Optional[str] = typer.Option(None, "--delta", help="Dirichlet direction of the random effects, M numbers "
                                        "(e.g. 1,4,10 looks for score inflation); default all ones."),
    self_judging: Optional[str] = typer.Option(None, "--self-judging", help="Judge → its model family's candidates: "
                                               "'judge=cand1,cand2;judge2=cand3'."),
    self_preference: str = typer.Option("exclude", "--self-preference", help="Self-judging scores: 'exclude' (the "
                                        "paper's default) or 'shift' (kept, with a fitted self-preference shift)."),
    soft: bool = typer.Option(False, "--soft", help="Count the judges' option probabilities (fractional counts) "
                              "instead of their argmax scores."),
    judge: Optional[list[str]] = typer.Option(None, "--judge", help="Only this judge (repeatable)."),
    sweep: bool = typer.Option(False, "--sweep", help="Sensitivity analysis: ω ∈ {0,1,2,4,8} at β_max = 5 and "
                               "β_max ∈ {0,1,5,10,20} at ω = 0, Spearman with the base fit (10 more fits)."),
    chains: int = typer.Option(4, "--chains"),
    warmup: int = typer.Option(1000, "--warmup", help="Warm-up iterations per chain."),
    draws: int = typer.Option(1000, "--draws", help="Posterior draws per chain."),
    seed: int = typer.Option(0, "--seed"),
    responses: Optional[Path] = typer.Option(None, "--responses", help="responses.jsonl with human scores, to compare "
                                             "the ranking with the truth (a run uses its own data.truth)."),
    truth: Optional[str] = typer.Option(None, "--truth", help="Human score field in --responses."),
    level: float = typer.Option(0.95, "--level", help="Credible level of the intervals.", parser=_finite("--level")),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write rank-interval, simplex (and sensitivity) PNGs here."),
    collapse: Optional[str] = typer.Option(None, "--collapse", help="Map the M levels to 3 for the simplex plot, "
                                           "e.g. 1,1,2,2,3 (default for M = 5)."),
) -> None:
    """Bayesian simplex model: judges' confusion matrices, expected true scores, rank credible intervals."""
    from . import api
    from .offline.fit_simplex import format_simplex, truth_scores

    _one_source(run, log)
    _check_outputs(None, plot, [run, log])
    if self_preference not in ("exclude", "shift"):
        raise OrchestratorError(f"--self-preference must be 'exclude' or 'shift' (got {self_preference!r})")
    if (responses is None) != (truth is None):
        raise OrchestratorError("--responses and --truth go together")
    mapping = _numbers(collapse, "--collapse", int)
    omega_value, beta_max_value = _hyper(omega, "--omega"), _hyper(beta_max, "--beta-max")
    delta_value = tuple(_numbers(delta, "--delta") or ()) or None
    known_truth = truth_scores(responses, truth) if responses is not None else None
    interactive = sys.stderr.isatty() and not as_json
    report, fit, data, _ = api.fit_simplex(
        run, log=log, levels=levels, omega=omega_value, beta_max=beta_max_value, delta=delta_value, self_judging=self_judging,
        self_preference=self_preference, soft=soft, judge=judge, sweep=sweep, chains=chains, warmup=warmup,
        draws=draws, seed=seed, truth=known_truth, truth_field=truth, level=level, progress=interactive,
        sweep_progress=(lambda msg: err_console.print(f"sensitivity: {msg}")) if not as_json else None)
    paths = []
    if plot is not None:
        from .simplex.plots import rank_plot, sensitivity_plot, simplex_plot

        paths.append(rank_plot(report, plot / "simplex-ranks.png"))
        paths.append(simplex_plot(fit, data, plot / "simplex-judges.png", collapse=mapping))
        if report.sensitivity:
            paths.append(sensitivity_plot(report, plot / "simplex-sensitivity.png"))
    _print_report(report, format_simplex, paths, as_json)


def _progress(quiet: bool) -> Progress:
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=quiet or not err_console.is_terminal,
    )


def _plot_curve(report, path: Path, inputs: list) -> None:
    from .plotting import pyplot, save

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
    save(fig, path, inputs=inputs)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning :class:`OrchestratorError` into one line and exit 2."""
    import warnings

    from .errors import OrchestratorWarning

    default_show = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, OrchestratorWarning):
            err_console.print(Text.assemble(("warning: ", "bold yellow"), redact(str(message)) or ""), soft_wrap=True)
        else:
            default_show(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        code = app(args=argv, standalone_mode=False)
        # in non-standalone mode click returns (not raises) the code of a typer.Exit
        if isinstance(code, int) and code != 0:
            sys.exit(code)
    except OrchestratorError as exc:
        # Text, not markup: messages quote user data such as "[[rating]]" or "['X']".
        err_console.print(Text.assemble(("error: ", "bold red"), redact(str(exc)) or ""), soft_wrap=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("interrupted")
        sys.exit(130)
    except Exception as exc:  # click usage errors arrive here in non-standalone mode
        if isinstance(exc, _click_exceptions()):
            exc.show()
            sys.exit(exc.exit_code)
        storage = _storage_error(exc)
        if storage:
            err_console.print(Text.assemble(("error: ", "bold red"), redact(storage) or ""), soft_wrap=True)
            sys.exit(2)
        # a bug: one line here, the traceback (redacted: it may quote a key) in a log file
        import traceback

        where = _write_crash_log(redact("".join(traceback.format_exception(exc))) or "")
        message = redact(f"{type(exc).__name__}: {exc}".splitlines()[0][:300]) or ""
        err_console.print(Text.assemble(("error: ", "bold red"), f"internal error ({message}); traceback in {where}. "
                                        "`orchestrator status RUN` shows what a run has committed"), soft_wrap=True)
        sys.exit(1)
    finally:
        warnings.showwarning = default_show


def _storage_error(exc: BaseException) -> str | None:
    """One line for a run file or folder that cannot be read or written: a full disk, read-only
    storage, a damaged database. Nothing claims the file is consistent: SQLite rolled back the
    transaction in progress, and ``PRAGMA integrity_check`` is the way to know more."""
    import errno
    import sqlite3

    if isinstance(exc, sqlite3.DatabaseError):
        text = str(exc)
        if "full" in text or "disk I/O" in text:
            return (f"the run file could not be written ({text}); the last transaction was rolled back. Free space, "
                    "then `orchestrator resume RUN`")
        if "readonly" in text or "read-only" in text:
            return f"the run file is on read-only storage ({text}); copy it somewhere writable to resume it"
        if "malformed" in text or "not a database" in text or "corrupt" in text:
            return (f"the run file is damaged ({text}); check it with `sqlite3 RUN 'PRAGMA integrity_check'` and restore "
                    "it from a copy")
        return f"the run file could not be used ({text})"
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EACCES,
                                                   errno.EPERM, errno.EIO):
        return f"{exc.filename or 'a file'}: {exc.strerror or exc}"
    return None


def _write_crash_log(text: str) -> str:
    """Write a traceback to a log file (``$ORCHESTRATOR_LOG_DIR`` or the temp folder); its path."""
    import os
    import tempfile
    import time

    folder = Path(os.environ.get("ORCHESTRATOR_LOG_DIR") or tempfile.gettempdir())
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f"orchestrator-crash-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".log",
                                    dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return name
    except OSError:
        sys.stderr.write(text)
        return "the lines above"


def _click_exceptions() -> tuple[type, ...]:
    """Click's exception class, from click itself and from the copy newer typer releases vendor."""
    classes = []
    try:
        import click

        classes.append(click.ClickException)
    except ImportError:  # pragma: no cover - typer without a separate click
        pass
    try:
        from typer._click.exceptions import ClickException

        classes.append(ClickException)
    except ImportError:  # typer that uses click directly
        pass
    return tuple(classes)


if __name__ == "__main__":
    main()
