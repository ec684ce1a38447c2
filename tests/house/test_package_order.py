"""The packages' order, strict: each package of ``orchestrator/`` imports only packages below it
in :data:`ORDER`, counting imports inside functions and those under ``if TYPE_CHECKING:`` too (a
type named from a layer above is an arrow up all the same). Two packages that need each other
are one concern, or share a piece below both."""

from __future__ import annotations

from test_layout import MODULES, imports

ORDER = (
    # rules every layer applies
    "errors", "paths", "secrets", "failpoints", "outputs",
    # records (pydantic at the boundaries), then the pure math on them
    "records", "poe", "raee", "simplex", "gate",
    # the shell, bottom up: the run file, judges, people, candidate models, the run, reading runs, reports
    "store", "judging", "people", "generation", "run", "offline", "report",
    # the front doors
    "api", "cli", "__main__",
)  # fmt: skip


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None  # (orchestrator/__init__.py itself re-exports the api)


def test_every_package_is_in_the_order():
    assert {p for name in MODULES if (p := _package(name))} == set(ORDER)


def test_no_package_imports_one_above_it():
    rank = {name: k for k, name in enumerate(ORDER)}
    upward = sorted(
        f"{name} -> {target}"
        for name, path in MODULES.items()
        if (here := _package(name)) is not None
        for target in imports(path, type_only=True)
        if target.startswith("orchestrator.") and (there := _package(target)) not in (None, here) and rank[there] > rank[here]
    )
    assert upward == []
