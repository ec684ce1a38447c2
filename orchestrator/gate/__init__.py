"""The two-system decision: is the candidate better than the baseline? Pure functions on the
per-prompt outcomes ``X_i ∈ [0, 1]`` (the candidate's win share against the baseline, or the
difference of two win rates against a shared anchor mapped to ``(1 + d)/2``).

- :mod:`.sequence`: the anytime-valid confidence sequence for the mean outcome (hedged betting
  capital, Waudby-Smith & Ramdas 2024, JRSS-B, Theorem 3 and Eq. 26) and the decision it supports
  against a margin at every look (better, worse, equivalent, not better, not worse, not yet known);
- :mod:`.group_sequential`: the planned design — Lan–DeMets O'Brien–Fleming boundaries by recursive
  numerical integration (Armitage, McPherson & Rowe 1969; Jennison & Turnbull 2000, ch. 19),
  repeated confidence intervals (Jennison & Turnbull 1989), a design's maximum against a fixed test;
- :mod:`.designs`: a gate's decision under its design (anytime or planned), the plan of what a
  comparison needs for a power of 0.8 (``compare --plan``) and the decisions a horizon can reach.

Pure: imports numpy and scipy only — never the judging layer, the run engine, the store or the
CLI. The run's side (which prompts, in what order, what a lost answer counts as) is
:mod:`orchestrator.run.planners.compare`.
"""

import importlib
from typing import Any

_SOURCES = {
    **dict.fromkeys(("ANYTIME_INFLATION", "ASSUMED_SPREAD", "DESIGNS", "GatePlan", "gate_decision", "plan", "reachable"), "designs"),
    **dict.fromkeys(("group_sequential_bounds", "inflation", "obrien_fleming_spending", "repeated_intervals"), "group_sequential"),
    **dict.fromkeys(("DECISIONS", "REQUIRE", "Decision", "SequenceBounds", "confidence_sequence", "decide"), "sequence"),
}
"""Name → the submodule defining it: loaded on first use (PEP 562), so reading a decision does not
import scipy's statistics, which only the planned design and the plan need."""

__all__ = sorted(_SOURCES)


def __getattr__(name: str) -> Any:
    if name not in _SOURCES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_SOURCES[name]}", __name__), name)
