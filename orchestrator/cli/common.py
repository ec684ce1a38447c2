"""The CLI's shared parts: the Typer app, the consoles, option checks and progress displays."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import OrchestratorError

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
        bounds = (
            f"between {low} and {high}"
            if low is not None and high is not None
            else f"at least {low}"
            if low is not None
            else f"at most {high}"
        )
        raise OrchestratorError(f"{name} must be {bounds} (got {value})")


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
    from ..plotting import pyplot, save

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
