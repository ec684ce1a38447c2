"""The package's layering: no import cycle between any two modules, and the pure math
(``poe/``, ``raee/``, ``simplex/``, ``gate/``) imports neither the judging layer, the run engine, the store,
the CLI, the report nor plotting. Imports are read from the source (function-level ones included);
imports under ``if TYPE_CHECKING:`` are for the type checker only and never run, so they do not count."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "orchestrator"
PURE = ("poe", "raee", "simplex", "gate")
NOT_IN_PURE = (
    "orchestrator.judging",
    "orchestrator.run",
    "orchestrator.people",
    "orchestrator.store",
    "orchestrator.cli",
    "orchestrator.api",
    "orchestrator.offline.plotting",
    "orchestrator.offline",
    "matplotlib",
)


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(path: Path, *, type_only: bool = False) -> set[str]:
    """Every module ``path`` imports at run time (absolute names; ``from pkg import mod`` names the
    submodule when there is one)."""
    name = _name(path)
    return imports_in(path.read_text(), name if path.name == "__init__.py" else name.rpartition(".")[0], type_only=type_only)


def imports_in(source: str, package: str, *, type_only: bool = False) -> set[str]:
    """The run-time imports of module text whose package is ``package`` (``type_only``: those under
    ``if TYPE_CHECKING:`` too)."""
    tree = ast.parse(source)
    skipped = (
        set()
        if type_only
        else {
            id(node)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for node in ast.walk(block)
        }
    )
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            submodules = {f"{base}.{alias.name}" for alias in node.names} & MODULES.keys()
            found.update(submodules)
            if len(submodules) < len(node.names):  # names defined in the module itself
                found.add(base)
    return found


@pytest.mark.parametrize("type_only", [False, True], ids=["run-time imports", "type-checking imports too"])
def test_no_import_cycle_between_any_two_modules(type_only):
    """No cycle among the modules, counting imports under ``if TYPE_CHECKING:`` too (two
    modules that name each other's types are one concern, or share a piece both can import)."""
    graph = {name: {m for m in imports(path, type_only=type_only) if m in MODULES and m != name} for name, path in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    assert cycles == [], cycles


def test_the_pure_math_imports_no_judging_engine_store_cli_or_plotting():
    leaks = {
        name: sorted(m for m in imports(path) if m.startswith(NOT_IN_PURE))
        for name, path in MODULES.items()
        if name.count(".") and name.split(".")[1] in PURE
    }
    assert {k: v for k, v in leaks.items() if v} == {}


ABOVE = ("orchestrator.cli", "orchestrator.api", "orchestrator.report")
LAYERS_BELOW = {
    # a layer: what it may not import (everything above it); poe/, simplex/, raee/ are checked above
    "offline": ABOVE,
    "run": ABOVE + ("orchestrator.offline",),
    # the people's side of a run: the labelling page, its session, which items people are
    # asked; the engine asks it, it reads judges, the store and records, never the engine
    "people": ABOVE + ("orchestrator.offline", "orchestrator.run"),
    "judging": ABOVE + ("orchestrator.offline", "orchestrator.run", "orchestrator.people"),
    "store": ABOVE + ("orchestrator.offline", "orchestrator.run", "orchestrator.people", "orchestrator.judging"),
    "records": ABOVE + ("orchestrator.offline", "orchestrator.run", "orchestrator.people", "orchestrator.judging", "orchestrator.store"),
}


def test_every_layer_imports_only_the_layers_below_it():
    """Issue #29 (docs/architecture.md): cli → api → offline → run → people → judging → store → records.
    ``records/`` (config, datasets, templates, the judgment and log records) is under both
    ``judging/`` and ``store/``; the store maps records to SQL and knows no judge."""
    leaks = {
        name: sorted(m for m in imports(path) if m.startswith(LAYERS_BELOW[name.split(".")[1]]))
        for name, path in MODULES.items()
        if name.count(".") and name.split(".")[1] in LAYERS_BELOW
    }
    assert {k: v for k, v in leaks.items() if v} == {}


def test_the_package_top_holds_only_the_rules_every_layer_shares():
    """Issue #29: no loose modules beside the role folders — the top keeps the entry point and the
    error, output, redaction, path and failpoint rules every layer imports."""
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert top == ["__init__", "__main__", "errors", "failpoints", "outputs", "paths", "secrets"]


def test_the_walker_reads_function_level_and_relative_imports_and_skips_type_only_ones():
    source = (
        "from typing import TYPE_CHECKING\n"
        "from .objective import DTYPE\n"
        "def f():\n    from ..judging import client\n"
        "if TYPE_CHECKING:\n    from ..store import RunStore\n"
    )
    found = imports_in(source, "orchestrator.poe")
    assert {"orchestrator.poe.objective", "orchestrator.judging.client"} <= found
    assert not any(m.startswith("orchestrator.store") for m in found)


ROOT = PACKAGE.parent


def test_no_function_in_the_package_over_80_lines():
    """A function that long does several things; a command whose length is its options declares
    them as annotated types (``cli/options.py``, ``cli/fit_options.py``)."""
    long = sorted(
        f"{name}.{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (node.end_lineno or 0) - node.lineno + 1 > 80
    )
    assert long == []


def test_no_module_over_400_lines_and_the_readme_is_a_front_door():
    """Issue #29: modules are split by concern before they grow past ~400 lines; the README (what it
    is for, the two commands, a tour, which campaign, links) stays within 250 lines, the reference in
    ``docs/`` — and every page it links to exists."""
    long = {name: n for name, path in MODULES.items() if (n := len(path.read_text().splitlines())) > 400}
    assert long == {}
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    links = re.findall(r"\]\(((?:docs|benchmarks)/[^)#]+)\)", readme)
    assert len(links) >= 10 and [link for link in links if not (ROOT / link).exists()] == []


CLI_MAY_IMPORT = {
    "orchestrator.api",
    "orchestrator.api.compare",
    "orchestrator.api.lifecycle",
    "orchestrator.api.presentation",
    "orchestrator.api.settings",
    "orchestrator.errors",
    "orchestrator.outputs",
    "orchestrator.secrets",
}


def test_the_cli_imports_only_the_public_api():
    """The CLI is a thin shell over the public API: besides ``api`` it imports only the
    error, output and redaction rules every layer applies — parsing, calling and printing."""
    used = {
        m
        for name, path in MODULES.items()
        if name.startswith("orchestrator.cli")
        for m in imports(path)
        if m in MODULES and not m.startswith("orchestrator.cli")
    }
    assert used - CLI_MAY_IMPORT == set()
    assert "orchestrator.api" in used


def test_the_poe_package_loads_each_name_from_the_submodule_its_type_only_imports_name():
    """``orchestrator.poe`` loads its names on first use (PEP 562) so that a numpy-only helper does
    not import torch: the names it lists, the imports type checkers see and what it hands out agree."""
    import importlib

    import orchestrator.poe as poe

    sources = poe._sources()
    assert sorted(sources) == sorted(poe.__all__) and len(set(poe.__all__)) == len(poe.__all__)
    for name, module in sources.items():
        assert getattr(poe, name) is getattr(importlib.import_module(f"orchestrator.poe.{module}"), name)
    try:
        poe.not_a_name  # noqa: B018
    except AttributeError as error:
        assert "not_a_name" in str(error)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_every_goal_in_the_results_table_names_a_command_that_exists():
    """Issue #53 item 4: each goal of the table in benchmarks/RESULTS.md names the command that
    measures it, and that command exists: a benchmark module, a test file of the suite, a subcommand
    of ``orchestrator`` — a renamed script cannot leave a figure behind. Records carried over from the
    hand-written table name theirs in words; those are checked the same way."""
    import re

    from typer.main import get_command

    from benchmarks.goals import GOALS, latest
    from orchestrator.cli import app

    subcommands_known = set(get_command(app).commands)  # type: ignore[attr-defined]
    assert len(GOALS) >= 10 and len({g.key for g in GOALS}) == len(GOALS)
    for goal in GOALS:
        commands = [goal.command(), goal.command(quick=True)]
        record = latest(goal)
        if record is not None:
            commands.append(record["command"])
        script = ROOT / "benchmarks" / (goal.script.replace(".", "/") + ".py")
        assert "harness.parser(__doc__, quick=" in script.read_text(), f"{goal.key}: its script has no --quick for reviewers"
        for command in commands:
            modules = re.findall(r"python -m (benchmarks\.[\w.]+)", command)
            tests = re.findall(r"(tests/(?:\w+/)*test_\w+\.py)", command)
            subcommands = re.findall(r"orchestrator ([a-z][a-z-]*)", command)
            assert modules or tests or subcommands or ".ci/run" in command, f"{goal.key}: no command named in {command[:100]}"
            for module in modules:
                path = ROOT / (module.replace(".", "/") + ".py")
                assert path.is_file(), f"{module} (named by goal {goal.key}) does not exist"
            for path in tests:
                assert (ROOT / path).is_file(), f"{path} (named by goal {goal.key}) does not exist"
            for sub in subcommands:
                assert sub in subcommands_known, f"`orchestrator {sub}` (named by goal {goal.key}) is not a command"


def test_the_goal_table_in_results_md_is_what_the_json_records_say():
    """Issue #53: no figure of the goal table is typed by hand — the table in benchmarks/RESULTS.md
    equals what ``python -m benchmarks table`` builds from benchmarks/results/*.jsonl."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "benchmarks", "table", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + done.stdout


def test_every_benchmark_script_records_its_figures_as_json():
    """Issue #53 item 1: every script under benchmarks/ goes through the harness — it records its figures
    (``harness.record``) or its printed tables and lines (``harness.run``) — and takes the common options."""
    skip = {"__init__.py", "__main__.py", "harness.py", "goals.py", "simjudge.py"}
    scripts = [p for p in (ROOT / "benchmarks").rglob("*.py") if p.name not in skip and "def main" in p.read_text()]
    assert len(scripts) >= 35
    for path in scripts:
        text = path.read_text()
        assert "harness.record(" in text or "harness.run(main, __file__)" in text, f"{path.relative_to(ROOT)} records nothing"
        assert "harness.parser(" in text, f"{path.relative_to(ROOT)} does not take the harness's options"
        assert path.parent.parent == ROOT / "benchmarks", f"{path.relative_to(ROOT)}: scripts live in one folder per question"
    for path in (ROOT / "benchmarks").rglob("*.py"):
        assert len(path.read_text().splitlines()) <= 400, f"{path.relative_to(ROOT)} is over 400 lines: split it by concern"


def test_a_broken_benchmark_record_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    """A hand-edited or truncated line in benchmarks/results/ stops the table with one line naming
    the file and line (exit 2), never a traceback or a table read from half the records."""
    import pytest

    from benchmarks import harness

    monkeypatch.setattr(harness, "RESULTS", tmp_path)
    good = (
        '{"script": "speed.rebuild", "command": "python -m benchmarks.speed.rebuild", "date": "2026-11-27", '
        '"machine": {}, "summary": "s", "figures": {}}'
    )
    for bad, said in (
        ("{broken", "not a JSON record"),
        ("[1]", "not a benchmark record"),
        ('{"date": 1}', "not a benchmark record"),
        (good.replace('"machine": {}, ', ""), "no 'machine'"),  # a missing key
        (good.replace('"figures": {}', '"figures": []'), "'figures' is list"),
        (good.replace('"s"', '"caf\xe9"').encode("latin-1").decode("latin-1"), "not UTF-8"),  # a Latin-1 line
    ):
        (tmp_path / "speed.rebuild.jsonl").write_bytes((good + "\n").encode() + bad.encode("latin-1") + b"\n")
        with pytest.raises(SystemExit) as stop:
            harness.records("speed.rebuild")
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "speed.rebuild.jsonl:2" in err and said in err
    (tmp_path / "speed.rebuild.jsonl").write_text(good + "\n\n")
    assert [r["date"] for r in harness.records("speed.rebuild")] == ["2026-11-27"]


def test_refused_arguments_and_help_record_nothing(tmp_path, monkeypatch, capsys):
    """A benchmark run whose arguments are refused (zero seeds, a word for a number) or that only
    prints --help measured nothing: one line and exit 2 (0 for --help), and no record — before, the
    harness appended a record of "(no output)" that the goal table could have read."""
    import sys

    import pytest

    from benchmarks import harness

    monkeypatch.setattr(harness, "RESULTS", tmp_path)

    def main() -> None:
        parser = harness.parser("a test script")
        parser.add_argument("--seeds", type=harness.count, default=3)
        print(f"| seeds |\n|---|\n| {parser.parse_args().seeds} |")

    for argv in (["--seeds", "0"], ["--seeds", "x"]):
        monkeypatch.setattr(sys, "argv", ["script.py", *argv])
        with pytest.raises(SystemExit) as stop:
            harness.run(main, str(harness.ROOT / "benchmarks" / "group" / "script.py"))
        assert stop.value.code == 2
        assert not list(tmp_path.glob("*.jsonl")), argv
    monkeypatch.setattr(sys, "argv", ["script.py", "--help"])
    harness.run(main, str(harness.ROOT / "benchmarks" / "group" / "script.py"))  # the help, exit 0
    assert not list(tmp_path.glob("*.jsonl"))
    assert "0 draws measure nothing" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["script.py", "--seeds", "2"])
    harness.run(main, str(harness.ROOT / "benchmarks" / "group" / "script.py"))
    assert [r["figures"]["tables"] for r in harness.records("group.script")] == [[[{"seeds": "2"}]]]


def test_the_package_says_what_and_why_now_not_which_issue():
    """Docstrings and comments say what the code does and why; the history (issue numbers, the
    figures of the day) lives in benchmarks/history/ and the goals' entries: at most 5 issue references
    in the package (there are none now; 125 before)."""
    cited = [
        f"{path.relative_to(ROOT)}:{k}"
        for path in PACKAGE.rglob("*.py")
        for k, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bissues? #\d+", line)
    ]
    assert len(cited) <= 5, cited


OFFLINE_PARTS = {"runs", "raee", "simplex", "replay", "judges", "cache"}


def test_the_read_side_is_folders_by_concern_not_flat_modules():
    """``offline/`` holds its folders (one concern each, a docstring saying what is in it) and the one
    shared plotting module — no flat modules grouped by name prefixes."""
    offline = PACKAGE / "offline"
    flat = {p.name for p in offline.glob("*.py")} - {"__init__.py", "plotting.py"}
    assert flat == set()
    folders = {p.name for p in offline.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == OFFLINE_PARTS
    for folder in folders:
        init = offline / folder / "__init__.py"
        assert init.exists() and ast.get_docstring(ast.parse(init.read_text())), f"offline/{folder}/ says what it holds"
        names = [p.stem for p in (offline / folder).glob("*.py")]
        assert not any(n.startswith(f"{folder}_") or n.startswith(f"{folder.rstrip('s')}_") for n in names), names
