"""The tests mirror the package: a folder per part of the package (``poe/``, ``raee/``, ``simplex/``, ``gate/``,
``run/``, ``judging/``, ``generation/``, ``offline/``, ``people/``, ``reliability/``, ``house/``), shared kits at the
top, and no test module over 400 lines (a longer one is two concerns)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
FOLDERS = {"poe", "raee", "simplex", "gate", "run", "judging", "generation", "offline", "people", "reliability", "house"}


def test_every_test_module_lives_in_the_folder_of_what_it_tests():
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []  # none left at the top
    folders = {p.parent.name for p in TESTS.rglob("test_*.py")}
    assert folders == FOLDERS
    names = [p.name for p in TESTS.rglob("test_*.py")]
    assert len(names) == len(set(names))  # module names stay unique (pytest imports them by basename)


def test_no_test_module_over_400_lines():
    long = {str(p.relative_to(TESTS)): n for p in TESTS.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}


def test_no_module_or_test_file_is_named_for_the_order_it_was_written_in():
    """Names say what a file holds: no number (``catalog3``, ``cases2``) and no campaign or round
    (``first_campaign``, ``round6``) in a module's or a test file's name."""
    import re

    root = TESTS.parent
    files = [p for folder in ("orchestrator", "tests") for p in (root / folder).rglob("*.py")]
    ordered = [
        str(p.relative_to(root))
        for p in files
        if re.search(r"\d|(first|second|third|fourth|fifth|sixth|next|new|old)_(campaign|round)", p.stem)
    ]
    assert ordered == []
