"""What every benchmark repeats: where the shared data lies, the machine it ran on, and writing its
figures as JSON next to the human-readable line (issue #53).

Every script is run as a module from the project root (``python -m benchmarks.GROUP.NAME``), takes
``--quick`` (a run of minutes for reviewers: fewer seeds or sizes, never other code) and appends one
record per run to ``benchmarks/results/GROUP.NAME.jsonl``::

    {"script": "leaderboards.board_placement", "command": "python -m benchmarks.leaderboards.board_placement --seeds 20",
     "date": "2026-11-27", "machine": {...}, "quick": false, "commit": "26fbc38", "seconds": 812.4,
     "summary": "within range MAE 1.34 at 100 prompts ...", "figures": {...}}

``python -m benchmarks table`` builds the goal table of ``benchmarks/RESULTS.md`` from these records
(``benchmarks/goals.py`` says which record and which figures answer each goal).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import io
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"

_STARTED = time.time()


def shared(*parts: str) -> Path:
    """A path under ``../shared/data``; one clear line and exit 2 when the clone has no shared data."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        sys.exit(f"error: this benchmark reads {path}, the validation data beside the clone (../shared/data), which is not there")
    return path


class _Parser(argparse.ArgumentParser):
    """Keeps the arguments it parsed, for :func:`run` to record them."""

    parsed: argparse.Namespace | None = None

    def parse_args(self, *a: Any, **k: Any) -> argparse.Namespace:  # type: ignore[override]
        _Parser.parsed = super().parse_args(*a, **k)
        return _Parser.parsed


def count(text: str) -> int:
    """An argument that counts draws (``--seeds``, ``--draws``): a whole number ≥ 1 — zero draws
    give a record of NaNs that reads like a measurement."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} draws measure nothing: give 1 or more")
    return value


def parser(doc: str | None, quick: str | None = None) -> argparse.ArgumentParser:
    """The script's argument parser with the options every benchmark has. ``quick`` says what
    ``--quick`` changes (shown in ``--help``); every goal's script has one."""
    p = _Parser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if quick:
        p.add_argument("--quick", action="store_true", help=f"a run of minutes for reviewers: {quick}")
    p.add_argument("--no-record", action="store_true", help="print only; do not append to benchmarks/results/")
    return p


class _Tee(io.TextIOBase):
    def __init__(self, stream: Any) -> None:
        self.stream, self.buffer = stream, io.StringIO()

    def write(self, text: str) -> int:
        self.buffer.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


def tables(text: str) -> list[list[dict[str, str]]]:
    """The Markdown tables a script printed, each as rows of {column: cell}."""
    found: list[list[dict[str, str]]] = []
    block: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|") and line.rstrip().endswith("|"):
            block.append([cell.strip() for cell in line.strip().strip("|").split("|")])
            continue
        if len(block) >= 3 and set("".join(block[1])) <= set("-: "):
            found.append([dict(zip(block[0], row)) for row in block[2:]])
        block = []
    return found


def run(main: Callable[[], Any], file: str) -> None:
    """Run a script's ``main`` and record what it printed: its Markdown tables as rows, its other lines
    as text, its exit status (for scripts whose figures are their printed tables)."""
    tee = _Tee(sys.stdout)
    sys.stdout = tee  # type: ignore[assignment]
    _Parser.parsed = None
    code: int | str | None = 0
    try:
        main()
    except SystemExit as stop:
        code = stop.code
    finally:
        sys.stdout = tee.stream
    text = tee.buffer.getvalue()
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("|")]
    figures = {"tables": tables(text), "lines": lines, "exit_code": code if isinstance(code, int) else 1}
    if _Parser.parsed is not None:  # refused arguments or --help: nothing was measured, nothing to record
        record(file, _Parser.parsed, lines[-1] if lines else "(no output)", figures)
    if code not in (0, None):
        sys.exit(code)


def machine() -> dict[str, Any]:
    """The machine a figure was measured on: cores, CPU model, memory, Python and torch."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = None
    try:
        memory = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)
    except (ValueError, OSError, AttributeError):
        pass
    try:  # the installed version, without importing torch only to name it
        torch_version: str | None = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = None
    return {"cores": os.cpu_count(), "cpu": cpu, "memory_gib": memory, "python": platform.python_version(), "torch": torch_version}


def machine_line(m: dict[str, Any]) -> str:
    """One short line for the goal table."""
    if "line" in m:
        return str(m["line"])
    parts = [f"{m.get('cores')} cores", f"{m.get('memory_gib')} GiB", f"Python {m.get('python')}"]
    if m.get("torch"):
        parts.append(f"torch {m['torch']}")
    return ", ".join(parts)


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def script_name(file: str) -> str:
    """``benchmarks/leaderboards/board_placement.py`` → ``leaderboards.board_placement``."""
    path = Path(file).resolve().relative_to(ROOT / "benchmarks")
    return ".".join(path.with_suffix("").parts)


def record(file: str, args: argparse.Namespace, summary: str, figures: dict[str, Any]) -> Path | None:
    """Print the human-readable line and append the run's figures to its JSON-lines results file.

    ``file`` is the script's ``__file__``; ``args`` its parsed arguments (``--quick`` and
    ``--no-record`` read from them); ``figures`` plain JSON (numbers, strings, lists, dicts)."""
    name = script_name(file)
    print(f"RESULT {name}: {summary}")
    if os.environ.get("BENCHMARK_FIGURES_TO"):  # a driver (speed/trees.py) reads the figures of a run it started
        Path(os.environ["BENCHMARK_FIGURES_TO"]).write_text(json.dumps(figures, default=_plain))
    if getattr(args, "no_record", False):
        return None
    entry = {
        "script": name,
        "command": " ".join(["python -m benchmarks." + name, *map(shlex.quote, sys.argv[1:])]).strip(),
        "date": dt.date.today().isoformat(),
        "machine": machine(),
        "quick": bool(getattr(args, "quick", False)),
        "commit": _commit(),
        "seconds": round(time.time() - _STARTED, 1),
        "summary": summary,
        "figures": figures,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.jsonl"
    with path.open("a") as out:
        out.write(json.dumps(entry, default=_plain) + "\n")
    print(f"(appended to {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path})")
    return path


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as JSON."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")


def _refuse(message: str) -> None:
    """Bad input: one line on stderr, exit 2."""
    print(f"error: benchmarks/results/{message}", file=sys.stderr)
    raise SystemExit(2)


def records(name: str) -> list[dict[str, Any]]:
    """Every record of one script, oldest first."""
    path = RESULTS / f"{name}.jsonl"
    if not path.exists():
        return []
    out = []
    for number, raw in enumerate(path.read_bytes().splitlines(), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            _refuse(
                f"{path.name}:{number}: not UTF-8 text (byte {raw[error.start]:#04x} at column {error.start + 1}); fix or remove that line"
            )
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            _refuse(f"{path.name}:{number}: not a JSON record ({error.msg}); fix or remove that line")
        problem = record_problem(record)
        if problem:
            _refuse(f"{path.name}:{number}: not a benchmark record ({problem}); fix or remove that line")
        out.append(record)
    return out


RECORD_KEYS = {"command": str, "date": str, "machine": dict, "summary": str}
"""What every record has, of which type (what the goal table reads of each)."""


def record_problem(record: Any) -> str | None:
    """Why ``record`` is not a benchmark record the table can read (None: it is)."""
    if not isinstance(record, dict):
        return f"a JSON object is needed, not {type(record).__name__}"
    wanted = dict(RECORD_KEYS, **({"source": str} if record.get("migrated") else {"figures": dict}))
    for key, kind in wanted.items():
        if key not in record:
            return f"no {key!r}"
        if not isinstance(record[key], kind):
            return f"{key!r} is {type(record[key]).__name__}, not {kind.__name__}"
    return None
