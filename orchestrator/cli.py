"""Command line: a thin shell over the public API. User errors print one line, exit code 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .errors import OrchestratorError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Active-learning orchestrator for LLM judges: rank outputs on a budget with honest uncertainty.",
)
err_console = Console(stderr=True)
out_console = Console()


@app.command()
def replay(
    log: Path = typer.Argument(..., help="Judgment-log JSONL (one judgment per line)."),
    responses: Path = typer.Option(..., "--responses", help="responses.jsonl with human scores."),
    truth: str = typer.Option(..., "--truth", help="Field of 'human' holding the ground truth."),
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
    from .replay import replay_files

    with _progress(as_json) as progress:
        task = progress.add_task("replaying", total=None)
        report = replay_files(
            log,
            responses,
            truth,
            strategy,
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
        _plot_curve(report, plot)
    if as_json:
        print(json.dumps(report.to_json()))
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


def _ranking_table(result) -> Table:
    """The final ranking of a single-group replay, with 95% rank intervals."""
    from .poe import rank_intervals

    post = result.final
    intervals = rank_intervals(post)
    sd = post.cov.diagonal().sqrt()
    table = Table(title=f"ranking after {result.curve[-1][0]} calls (rank 1 = best)")
    for name, justify in (("rank", "right"), ("candidate", "left"), ("score", "right"), ("± sd", "right"),
                          ("95% rank interval", "center"), ("truth", "right")):
        table.add_column(name, justify=justify)
    order = sorted(range(post.n), key=lambda c: -float(post.mean[c]))
    for rank, c in enumerate(order, start=1):
        table.add_row(str(rank), result.names[c], f"{float(post.mean[c]):+.3f}", f"{float(sd[c]):.3f}",
                      f"{int(intervals.lower[c])}–{int(intervals.upper[c])}", f"{float(result.truth[c]):.3f}")
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
    if prompts < 1 or candidates < 2:
        raise OrchestratorError("--prompts must be >= 1 and --candidates >= 2")
    records, rows = simulate_dataset(prompts, candidates, JUDGE_PRESETS[judge], seed=seed)
    for path, items in ((out_log, records), (out_responses, rows)):
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as fh:
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
            progress=lambda done, total: progress.update(task, completed=done, total=total),
        ))
    err_console.print(f"planned {counts['planned']}, already recorded {counts['skipped']}, written {counts['written']}, failed {counts['failed']} → {out}")
    if counts["failed"]:
        raise typer.Exit(1)


def _progress(quiet: bool) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=quiet or not err_console.is_terminal,
    )


def _plot_curve(report, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OrchestratorError("--plot needs matplotlib: pip install 'llm-judge-orchestrator[plot]'") from None
    ks = [k for k, _, _ in report.curve]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(ks, [s for _, s, _ in report.curve], label="Spearman vs truth")
    ax.plot(ks, [s for _, _, s in report.curve], label="Spearman vs own all-pairs", linestyle="--")
    ax.axhline(0.9 * report.full_spearman, color="grey", linewidth=0.8, label="90% of all-pairs")
    ax.set_xlabel("judge calls (per group)")
    ax.set_ylabel("Spearman")
    ax.set_title(f"{report.strategy} · {report.scope} · debias={report.debias}")
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as exc:
        raise OrchestratorError(f"--plot {path}: {exc.strerror}") from None
    finally:
        plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning :class:`OrchestratorError` into one line and exit 2."""
    try:
        app(args=argv, standalone_mode=False)
    except OrchestratorError as exc:
        # Text, not markup: messages quote user data such as "[[rating]]" or "['X']".
        err_console.print(Text.assemble(("error: ", "bold red"), str(exc)), soft_wrap=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except Exception as exc:  # click usage errors arrive here in non-standalone mode
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
