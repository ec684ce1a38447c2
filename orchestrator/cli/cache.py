"""``orchestrator cache``: the judgment cache shared by runs — stats, prune, import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from .common import app, err_console, number_option, out_console
from .fit_options import AsJson

cache_app = typer.Typer(
    rich_markup_mode=None,  # help texts are plain: "[compare]" is a config section, not markup
    no_args_is_help=True,
    help="The judgment cache shared by runs: a request asked before (same judge, parameters, template, messages, repeat) is not paid again.",
)
app.add_typer(cache_app, name="cache")

_CACHE_OPTION = typer.Option(None, "--cache", help="Cache file (default: $ORCHESTRATOR_JUDGMENT_CACHE or the user cache directory).")


@cache_app.command("stats")
def stats_cmd(cache: Optional[Path] = _CACHE_OPTION, as_json: AsJson = False) -> None:
    """Entries, hits and what the cached judgments were paid (and saved), per model."""
    from .. import api

    stats = api.cache_stats(cache)
    if as_json:
        out_console.print_json(json.dumps(stats))
        return
    table = Table(title=f"judgment cache {stats['path']} · {stats['entries']} entries · {stats['bytes'] / 1e6:.1f} MB")
    for name in ("model", "entries", "hits", "paid USD", "saved USD"):
        table.add_column(name, justify="left" if name == "model" else "right")
    for m in stats["models"]:
        table.add_row(m["model"], str(m["entries"]), str(m["hits"]), f"{m['paid_usd']:.4f}", f"{m['saved_usd']:.4f}")
    out_console.print(table)


@cache_app.command("prune")
def prune_cmd(
    cache: Optional[Path] = _CACHE_OPTION,
    older_than: Optional[float] = number_option("--older-than", "Remove entries not used for this many days.", default=None),
    model: Optional[str] = typer.Option(None, "--model", help="Remove the entries of this model (litellm model string)."),
    everything: bool = typer.Option(False, "--all", help="Remove every entry."),
) -> None:
    """Remove entries (by age or model, or all) and give the space back."""
    from .. import api

    path, removed, left = api.cache_prune(cache, older_than=older_than, model=model, everything=everything)
    err_console.print(f"removed {removed} entries from {path}; {left} left")


@cache_app.command("import")
def import_cmd(
    source: Path = typer.Argument(..., help="A run file (.sqlite) or a judgment log (.jsonl: a `record` log or an export)."),
    cache: Optional[Path] = _CACHE_OPTION,
    judge: Optional[str] = typer.Option(None, "--judge", help="Logs: the judge profile whose judgments they are."),
    prompts: Optional[Path] = typer.Option(None, "--prompts", help="Logs: the prompts file the judgments were asked on."),
    responses: Optional[Path] = typer.Option(None, "--responses", help="Logs: the responses file."),
    attribute: Optional[str] = typer.Option(None, "--attribute", help="Logs: the template attribute (when the lines name none)."),
    template: Optional[str] = typer.Option(None, "--template", help="Logs: the template of lines that name none."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="Logs: the judge's address, as the run's dispatch.api_base."),
) -> None:
    """Fill the cache from an old run file or a judgment log, so later runs do not pay for those requests again."""
    from .. import api

    result = api.cache_import(
        source, cache, judge=judge, prompts=prompts, responses=responses, attribute=attribute, template=template, api_base=api_base
    )
    what = "judgments replayed from a log, answered by no model" if result.from_run else "lines of other judges"
    skipped = f" ({result.skipped} {what} skipped)" if result.skipped else ""
    err_console.print(f"{source}: {result.read} judgments read, {result.added} added to {result.path}{skipped}")
