"""Docs that stay true: every link between the README and docs/ points at a file
that exists and, with an anchor, at a heading that exists; every "README, \"Section\"" citation names a
section of the README."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
CITATION = re.compile(r"README(?:'s)?,? \"([^\"]+)\"")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(path) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    inside = False
    out = set()
    for line in lines:
        if line.startswith("```"):
            inside = not inside
        elif not inside and line.startswith("#"):
            out.add(line.lstrip("#").strip())
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_points_at_a_file_and_heading_that_exist(page):
    text = page.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.name}: link to {target!r}: no such file"
        if anchor and file.suffix == ".md":
            assert anchor in {slug(h) for h in headings(file)}, f"{page.name}: link to {target!r}: no such heading in {file.name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_readme_citation_names_a_readme_section(page):
    sections = headings(ROOT / "README.md")
    for name in CITATION.findall(page.read_text(encoding="utf-8")):
        assert name in sections, f"{page.name} cites README section {name!r}, which does not exist ({sorted(sections)})"


def _suite_phrase(quick: bool) -> str:
    """``≈ N tests, about M min`` from the newest harness record of the suite as the README runs it
    (``python -m benchmarks.reliability.suite --workers 3``, with ``--quick``: the fast subset)."""
    import json

    command = "python -m benchmarks.reliability.suite --workers 3" + (" --quick" if quick else "")
    records = [json.loads(line) for line in (ROOT / "benchmarks" / "results" / "reliability.suite.jsonl").read_text().splitlines()]
    latest = [r for r in records if r["command"] == command][-1]
    f = latest["figures"]
    tests = f.get("passed", 0) + f.get("skipped", 0) + f.get("failed", 0)
    return f"≈ {round(tests, -1):,} tests, about {max(1, round(f['seconds'] / 60))} min"


@pytest.mark.parametrize("quick", [False, True])
def test_the_readme_says_of_the_suite_what_the_harness_measured(quick):
    """The suite's size and time in the README are read from the harness's newest record, never typed:
    a new record of the suite (`python -m benchmarks.reliability.suite --workers 3 [--quick]`) means
    the README says its figures."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    phrase = _suite_phrase(quick)
    assert phrase in readme, f"README should say {phrase!r} (benchmarks/results/reliability.suite.jsonl)"


def test_the_readme_says_how_long_a_test_may_run():
    """No "never for being slow" while every test has pytest-timeout's limit: the README names it."""
    import tomllib

    limit = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["timeout"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "never for being slow" not in readme
    assert f"`timeout = {limit}`" in readme
