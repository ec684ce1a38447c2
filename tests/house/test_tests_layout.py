"""The tests mirror the package: a folder per part of the house (``poe/``, ``raee/``, ``simplex/``,
``run/``, ``judging/``, ``generation/``, ``offline/``, ``people/``, ``reliability/``, ``house/``), shared kits at the
top, and no test module over 400 lines (a longer one is two concerns)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
FOLDERS = {"poe", "raee", "simplex", "run", "judging", "generation", "offline", "people", "reliability", "house"}


def test_every_test_module_lives_in_the_folder_of_what_it_tests():
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []  # none left at the top
    folders = {p.parent.name for p in TESTS.rglob("test_*.py")}
    assert folders == FOLDERS
    names = [p.name for p in TESTS.rglob("test_*.py")]
    assert len(names) == len(set(names))  # module names stay unique (pytest imports them by basename)


def test_no_test_module_over_400_lines():
    long = {str(p.relative_to(TESTS)): n for p in TESTS.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}
