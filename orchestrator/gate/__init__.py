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

from .designs import ANYTIME_INFLATION, ASSUMED_SPREAD, DESIGNS, GatePlan, gate_decision, plan, reachable
from .group_sequential import group_sequential_bounds, inflation, obrien_fleming_spending, repeated_intervals
from .sequence import DECISIONS, REQUIRE, Decision, SequenceBounds, confidence_sequence, decide

__all__ = [
    "ANYTIME_INFLATION",
    "ASSUMED_SPREAD",
    "DECISIONS",
    "DESIGNS",
    "REQUIRE",
    "Decision",
    "GatePlan",
    "SequenceBounds",
    "confidence_sequence",
    "decide",
    "gate_decision",
    "group_sequential_bounds",
    "inflation",
    "obrien_fleming_spending",
    "plan",
    "reachable",
    "repeated_intervals",
]
