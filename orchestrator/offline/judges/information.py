"""Headlines true for the judge you have: which judges' verdicts carry no detectable
information about the answers (:mod:`orchestrator.poe.information`), and the plain warnings
``rank``, ``status``, a run's closing paragraph and the report put first. When no judge carries
information, no leader is named."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable

from ...poe.information import InformationTest, content_test

__all__ = ["GUIDE", "information_warnings", "judge_information"]

GUIDE = "docs/own-data.md, 'A judge that carries no information'"


def judge_information(comparisons: Iterable[tuple[str, Hashable, Hashable, float]]) -> dict[str, InformationTest]:
    """``(judge, first unit, second unit, P(first better))`` rows → each judge's content test."""
    by_judge: dict[str, tuple[list, list, list]] = defaultdict(lambda: ([], [], []))
    for judge, first, second, p in comparisons:
        rows = by_judge[judge]
        rows[0].append(first)
        rows[1].append(second)
        rows[2].append(p)
    return {judge: content_test(*rows) for judge, rows in sorted(by_judge.items())}


def information_warnings(tests: dict[str, InformationTest]) -> tuple[list[str], bool]:
    """The warnings to show first, and whether a leader may be named (False when every judge that
    could be tested carries no detectable information)."""
    empty = [j for j, t in tests.items() if t.informative is False]
    if not empty:
        return [], True
    tested = [j for j, t in tests.items() if t.informative is not None]
    if len(empty) == len(tested):
        who = f"The judge {empty[0]}'s verdicts" if len(empty) == 1 else f"None of the {len(empty)} judges' verdicts"
        reason = tests[empty[0]].reason() if len(empty) == 1 else "; ".join(f"{j}: {tests[j].reason()}" for j in empty)
        verb = "carry" if len(empty) == 1 else "carries"
        return [
            f"{who} {verb} no detectable information about the answers: {reason}. No leader is named: the order below "
            f"says nothing about quality. Try another judge or template ({GUIDE})."
        ], False
    return [
        f"The judge {j}'s verdicts carry no detectable information about the answers: {tests[j].reason()}; "
        "the ranking rests on the other judges."
        for j in empty
    ], True
