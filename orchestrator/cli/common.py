"""The CLI's shared parts: the Typer app, the consoles, option checks and progress displays."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console, ConsoleDimensions
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import OrchestratorError

app = typer.Typer(
    rich_markup_mode=None,  # help texts are plain: "[compare]" is a config section, not markup
    add_completion=False,
    no_args_is_help=True,
    help="Active-learning orchestrator for LLM judges: rank outputs on a budget with honest uncertainty.",
)


def _plain_help_types() -> None:
    """Help in plain words. Recent typer releases print each option's Python type (``<bool>`` on
    every flag, ``<path>``, ``<list[path]>``) and a required argument as ``{config}``; show what
    click always showed instead: nothing for a flag, ``PATH``, ``INTEGER``, ``PATH...``, ``CONFIG``.
    Typer releases without these hooks are left as they are."""
    from typer import core

    for cls in (getattr(core, "TyperOption", None), getattr(core, "TyperArgument", None)):
        original = getattr(cls, "display_type_rich", None)
        if cls is None or original is None:
            continue

        def display(self, ctx, _original=original):
            if getattr(self, "is_flag", False):
                return None
            text = _original(self, ctx)
            if not isinstance(text, str) or not (text.startswith("<") and text.endswith(">")):
                return text
            inner = text[1:-1]
            plural = inner.startswith("list[") and inner.endswith("]")
            inner = inner[5:-1] if plural else inner
            word = inner if "|" in inner else {"int": "INTEGER", "str": "TEXT", "float": "NUMBER"}.get(inner, inner.upper())
            return word + ("..." if plural else "")

        cls.display_type_rich = display  # type: ignore[union-attr]
    argument = getattr(core, "TyperArgument", None)
    if argument is not None and hasattr(argument, "_usage_display_name"):

        def usage_name(self) -> str:
            name = self.display_name_raw.upper()
            name = name if self.required else f"[{name}]"
            return name + ("..." if self.nargs != 1 else "")

        argument._usage_display_name = usage_name


_plain_help_types()


# Names, texts and messages shown come from users and judges: never read them as rich markup or
# emoji codes ("[bold]", "[/]" or ":smile:" in a candidate's name are shown as written).
class _Console(Console):
    """A console that wraps and truncates only on a terminal: off one (a log, CI, a pipe) rich
    would cut lines at 80 columns, splitting a printed command over two lines and shortening
    names in tables, so there every line is printed whole."""

    LOG_WIDTH = 100_000

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._width = kwargs.get("width")  # not $COLUMNS frozen at import: a terminal's width is read when printing

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        return size if self.is_terminal or self._width is not None else ConsoleDimensions(self.LOG_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


err_console = _Console(stderr=True, markup=False, emoji=False, highlight=False)
out_console = _Console(markup=False, emoji=False, highlight=False)


def existing(what: str):
    """A typer callback: the path (or each path of a list) names an existing file, else one line
    and exit 2 — checked while the arguments are parsed, before a command imports the modelling
    stack (seconds on a busy machine) only to find its input missing."""

    def check(value):
        for path in value if isinstance(value, (list, tuple)) else [value]:
            if path is not None and not Path(path).is_file():
                raise OrchestratorError(f"{path}: no such {what}" if not Path(path).is_dir() else f"{path}: a folder, not a {what}")
        return value

    return check


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


_IN_ANNOTATED: Any = object()
"""The default of an option declared inside ``Annotated[...]`` (typer takes it from the signature)."""


def _option(default: Any, flag: str, **kwargs) -> Any:
    return typer.Option(flag, **kwargs) if default is _IN_ANNOTATED else typer.Option(default, flag, **kwargs)


def file_option(flag: str, help: str, *, what: str = "file", default: Any = _IN_ANNOTATED) -> Any:
    """An option naming a file that must exist (:func:`existing`): the flag and its check in one place."""
    return _option(default, flag, help=help, callback=existing(what))


def number_option(flag: str, help: str, *, default: Any = _IN_ANNOTATED) -> Any:
    """A float option that refuses NaN and ±inf (:func:`_finite`, whose error names the flag)."""
    return _option(default, flag, help=help, parser=_finite(flag))


def run_argument(help: str = "Run file (runs/<name>.sqlite).") -> Any:
    """A run file argument that must exist (checked while the arguments are parsed); required
    unless the signature gives it a default (inside ``Annotated``)."""
    return typer.Argument(..., help=help, callback=existing("run file"))


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


PROGRESS_LINE_EVERY_S = 10.0
"""When the output is not a terminal (a log file, CI, a notebook cell), progress is a line at most
once per this many seconds (``$ORCHESTRATOR_PROGRESS_EVERY_S`` sets another), the first one after
that long: never silence for half an hour, and work that ends in seconds (or an error's one line)
prints nothing more than it did."""


class ProgressLines:
    """Progress as plain lines on stderr for output that is not a terminal, throttled to one per
    :data:`PROGRESS_LINE_EVERY_S`; a forced line (model loading, the last line) always shows."""

    def __init__(self, every_s: float | None = None):
        if every_s is None:
            try:
                every_s = float(os.environ.get("ORCHESTRATOR_PROGRESS_EVERY_S", PROGRESS_LINE_EVERY_S))
            except ValueError:
                every_s = PROGRESS_LINE_EVERY_S
            if not math.isfinite(every_s) or every_s < 0:  # NaN would silence every line
                every_s = PROGRESS_LINE_EVERY_S
        self.every_s = every_s
        self.started = time.monotonic()
        self.last: float = self.started

    def elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60}:{seconds % 60:02d}"

    def line(self, text: str, *, force: bool = False) -> bool:
        """Print ``text`` unless a line was printed less than ``every_s`` ago; whether it was."""
        now = time.monotonic()
        if force or now - self.last >= self.every_s:
            self.last = now
            err_console.print(f"[{self.elapsed()}] {text}", soft_wrap=True)
            return True
        return False


class _Progress(Progress):
    """A rich progress bar on a terminal; elsewhere :class:`ProgressLines` (unless quiet)."""

    def __init__(self, *columns, lines: ProgressLines | None, **kwargs):
        super().__init__(*columns, **kwargs)
        self.lines = lines

    def update(self, task_id, *, completed=None, total=None, description=None, **kwargs) -> None:  # type: ignore[override]
        super().update(task_id, completed=completed, total=total, description=description, **kwargs)
        if self.lines is not None:
            task = self._tasks[task_id]
            done = task.completed
            of = f"/{int(task.total)}" if task.total else ""
            self.lines.line(f"{task.description}: {int(done)}{of}", force=bool(task.total) and done >= (task.total or 0))


def _progress(quiet: bool) -> Progress:
    terminal = err_console.is_terminal
    return _Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=quiet or not terminal,
        lines=None if quiet or terminal else ProgressLines(),
    )


def _plot_curve(report, path: Path, inputs: list) -> None:
    from ..api import presentation

    presentation.replay_curve_plot(report, path, inputs=inputs)
