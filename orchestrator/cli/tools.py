"""Commands around logs and judges: replay, simulate, judge serve, record, judges (against people), import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table
from rich.text import Text

from ..errors import OrchestratorError
from .common import _check_range, _plot_curve, _progress, app, err_console, file_option, out_console
from .display import people_table
from .fit_options import AsJson, Family, Run
from .options import (
    ReplayBatch,
    ReplayBudget,
    ReplayControl,
    ReplayDebias,
    ReplayExpert,
    ReplayHuman,
    ReplayJudge,
    ReplayLog,
    ReplayPanel,
    ReplayPlot,
    ReplayPosterior,
    ReplayReliability,
    ReplayResponses,
    ReplayScope,
    ReplaySeed,
    ReplaySeeds,
    ReplayStrategy,
    ReplayTruth,
    ReplayWithAbsolute,
)


@app.command()
def replay(
    log: ReplayLog,
    responses: ReplayResponses = None,
    truth: ReplayTruth = None,
    strategy: ReplayStrategy = "lookahead",
    scope: ReplayScope = "per_prompt",
    expert: ReplayExpert = "soft_bt",
    debias: ReplayDebias = "none",
    batch: ReplayBatch = 1,
    seeds: ReplaySeeds = 1,
    seed: ReplaySeed = 0,
    budget: ReplayBudget = None,
    judge: ReplayJudge = None,
    with_absolute: ReplayWithAbsolute = False,
    reliability: ReplayReliability = True,
    panel: ReplayPanel = "cost_aware",
    posterior: ReplayPosterior = "auto",
    control: ReplayControl = None,
    family: Family = None,
    human: ReplayHuman = None,
    as_json: AsJson = False,
    plot: ReplayPlot = None,
) -> None:
    """Replay a selection strategy on a recorded log: Spearman after every comparison, k90, k_self90."""
    from .. import api
    from ..api.settings import ReplaySettings
    from ..outputs import check_output

    _check_range(seed, "--seed", 0, 2**32 - 1)

    if plot is not None:
        check_output(plot, option="--plot", inputs=[log, responses])

    with _progress(as_json) as progress:
        task = progress.add_task("replaying", total=None)
        settings = ReplaySettings(  # the options, checked there in one line naming each
            strategy=strategy,
            scope=scope,
            expert=expert,
            debias=debias,
            batch=batch,
            budget=budget,
            seeds=seeds,
            seed=seed,
            with_absolute=with_absolute,
            judge_reliability=reliability,
            panel=panel,
            posterior=posterior,
            control=tuple(control or ()),
            families=tuple(family or ()),  # type: ignore[arg-type]  # NAME=FAMILY entries, parsed by the settings
        )
        report = api.replay(
            log,
            responses=responses,
            truth=truth,
            settings=settings,
            judge=judge,
            progress=lambda done, total: progress.update(task, completed=done, total=total),
            human=human,
        )
    if plot is not None:
        _plot_curve(report, plot, [log, responses])
    if as_json:
        print(json.dumps(report.to_json()))
        return
    _print_replay(report, with_truth=truth is not None)
    for key, people in list(report.people.items())[:5]:
        out_console.print(people_table(key, people, "95%"))


def _print_replay(report, *, with_truth: bool) -> None:
    """A replay's summary table (and the ranking of a single group), or the first rankings when
    there is no truth to measure against."""
    if not with_truth:
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
    calls = report.curve[-1][0]
    never = f"not reached in any group within {calls} calls" + (" (all-pairs Spearman ≤ 0)" if report.full_spearman <= 0 else "")
    table.add_row("k90 (calls to 90% of all-pairs)", never if report.k90 is None else fmt(report.k90, report.k90_sd))
    table.add_row("groups without k90 (all-pairs ≤ 0 or not reached)", str(report.k90_undefined))
    table.add_row(
        "k_self90 (calls to 0.9 with own all-pairs)",
        f"not reached within {calls} calls" if report.k_self90 is None else fmt(report.k_self90, report.k_self90_sd),
    )
    table.add_row("calls used (per group)", str(report.curve[-1][0]))
    out_console.print(table)
    if report.n_groups == 1:
        out_console.print(_ranking_table(report.groups[0]))


def _ranking_table(result, *, with_truth: bool = True, title: str = "") -> Table:
    """The final ranking of a replayed group, with 95% rank intervals."""
    from ..api import presentation

    table = Table(title=f"{title}ranking after {result.curve[-1][0]} calls (rank 1 = best)")
    columns = (("rank", "right"), ("candidate", "left"), ("score", "right"), ("± sd", "right"), ("95% rank interval", "center"))
    for name, justify in columns + ((("truth", "right"),) if with_truth else ()):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in presentation.replay_ranking(result):
        cells = [str(row["rank"]), row["candidate"], f"{row['score']:+.3f}", f"{row['sd']:.3f}", f"{row['rank_low']}–{row['rank_high']}"]
        table.add_row(*(cells + ([f"{row['truth']:.3f}"] if with_truth else [])))
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
    from .. import api

    n_records, n_rows = api.simulate(out_log, out_responses, prompts=prompts, candidates=candidates, judge=judge, seed=seed)
    err_console.print(f"wrote {n_records} judgments to {out_log} and {n_rows} responses to {out_responses} (truth field: quality)")


judge_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True, help="Judges: run the embedded local judge.")
app.add_typer(judge_app, name="judge")


@judge_app.command("serve")
def judge_serve(
    model: str = typer.Option("qwen1.5b", "--model", help="Embedded model: qwen1.5b | gemma270m."),
    port: int = typer.Option(8080, "--port", help="Port on 127.0.0.1."),
    threads: Optional[int] = typer.Option(None, "--threads", help="CPU threads (default: all cores)."),
) -> None:
    """Serve an embedded llama.cpp judge on 127.0.0.1 (OpenAI-compatible) until Ctrl-C."""
    import time as _time

    from .. import api

    _check_range(port, "--port", 1, 65535)
    _check_range(threads, "--threads", 1, 1024)
    with api.embedded_judge(model, port=port, threads=threads) as server:
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
    from .. import api

    ids = [p.strip() for p in prompt_ids.split(",") if p.strip()] if prompt_ids else None
    with _progress(False) as progress:
        task = progress.add_task(f"recording with {judge}", total=None)
        counts = api.record(
            prompts,
            responses,
            out=out,
            judge=judge,
            prompt_ids=ids,
            first=first,
            pairwise_template=pairwise_template or None,
            absolute_template=absolute_template or None,
            attribute=attribute,
            concurrency=concurrency,
            api_base=api_base,
            progress=lambda done, total: progress.update(task, completed=done, total=total),
        )
    err_console.print(
        f"planned {counts['planned']}, already recorded {counts['skipped']}, written {counts['written']}, failed {counts['failed']} → {out}"
    )
    if counts["failed"]:
        raise typer.Exit(1)


@app.command("judges")
def judges_cmd(
    run: Run = None,
    log: Optional[Path] = file_option("--log", "A judgment-log JSONL instead of a run.", default=None),
    human: Optional[Path] = file_option(
        "--human", "People's labels (JSONL, docs/human-labels.md); default: a run file's own (orchestrator label).", default=None
    ),
    responses: Optional[Path] = file_option("--responses", "The answers' texts, for the length column (a run has them).", default=None),
    margin: float = typer.Option(0.02, "--margin", help="Recommend the cheapest judge within this much agreement of the best."),
    as_json: AsJson = False,
) -> None:
    """Judges against people: agreement, rank correlation, position and length effects, calibration, price."""
    from .. import api
    from ..api import presentation

    if (run is None) == (log is None):
        raise OrchestratorError("give a run file or --log FILE.jsonl (exactly one)")
    board = api.judges(run, log=log, human=human, responses=responses, margin=margin)
    if as_json:
        print(json.dumps(board))
        return
    out_console.print(Text(presentation.format_judge_board(board)), soft_wrap=True)


@app.command("import")
def import_cmd(
    fmt: str = typer.Argument(..., help="alpacaeval | mtbench | arenahard | csv"),
    paths: list[Path] = typer.Argument(
        ...,
        help="alpacaeval: model_outputs.json file(s); mtbench/arenahard: the folder with question.jsonl and model_answer/; csv: CSV file(s).",
    ),
    out: Path = typer.Option(..., "--out", help="Folder for prompts.jsonl and responses.jsonl (created)."),
    encoding: Optional[str] = typer.Option(
        None, "--encoding", help="Text encoding of the inputs (default: UTF-8, with or without BOM, or UTF-16 with BOM), e.g. cp1252."
    ),
) -> None:
    """Turn AlpacaEval, MT-Bench, arena-hard or CSV data into prompts.jsonl + responses.jsonl for a run config."""
    from .. import api

    written = api.import_data(fmt, list(paths), out=out, encoding=encoding)
    candidates = written["candidates"]
    err_console.print(
        f"wrote {written['prompts']} ({written['n_prompts']} prompts) and {written['responses']} ({written['n_responses']} responses of "
        f"{len(candidates)} candidates: {', '.join(candidates[:8])}{' …' if len(candidates) > 8 else ''})"
    )
