"""The decision of a ``[compare]`` run, as ``orchestrator compare``, ``rank`` and
``status`` report it: the candidate's win rate over the baseline with its anytime-valid interval,
the decision against the margin, the exit code a pipeline acts on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..records.config import RunConfig
from ..run.planners.compare import comparison_order, decision_of, describe, prompt_outcomes
from ..store import RunStore, open_run

__all__ = ["EXIT_CODES", "comparison", "comparison_in", "exit_code"]

EXIT_CODES = {"better": 0, "worse": 10, "equivalent": 11, "not yet known": 12}
"""``orchestrator compare``'s exit code per decision (``--require not-worse``: ``equivalent`` is 0
too); 2 is bad input or a run whose judge calls all failed, as for every command."""

CONSTRUCTION = (
    "anytime-valid confidence sequence for the mean of the per-prompt win shares (hedged betting capital, "
    "Waudby-Smith & Ramdas 2024, JRSS-B, Theorem 3): it holds at every look with the stated level"
)


def exit_code(decision: str, require: str = "better") -> int:
    """The exit code of a decision (:data:`EXIT_CODES`); ``require = "not-worse"`` passes equivalence."""
    if require == "not-worse" and decision == "equivalent":
        return 0
    return EXIT_CODES[decision]


def comparison(path: str | Path, *, require: str = "better") -> dict[str, Any]:
    """The decision of the compare run at ``path`` (read-only)."""
    with open_run(path, write=False) as store:
        return comparison_in(store, require=require)


def comparison_in(store: RunStore, *, require: str = "better") -> dict[str, Any]:
    """:func:`comparison` of an open run file."""
    config = RunConfig.from_stored(store.config)
    section = config.compare
    assert section is not None
    dataset = store.dataset()
    order = comparison_order(dataset, section.candidate, section.baseline, config.seed)
    prompts, outcomes = prompt_outcomes(order, list(store.judgments()), section.candidate, section.baseline)
    found = decision_of(outcomes, section.margin, section.alpha)
    return {
        "candidate": section.candidate,
        "baseline": section.baseline,
        "margin": section.margin,
        "alpha": section.alpha,
        "prompts_judged": len(prompts),
        "prompts_available": len(order),
        "win_rate": round(50 + found.difference, 3) if prompts else None,
        "win_rate_low": round(50 + found.low, 3),
        "win_rate_high": round(50 + found.high, 3),
        "difference": round(found.difference, 3) if prompts else None,
        "difference_low": round(found.low, 3),
        "difference_high": round(found.high, 3),
        "decision": found.decision,
        "decided_after": found.at if found.decision != "not yet known" else None,
        "require": require,
        "exit_code": exit_code(found.decision, require),
        "sentence": f"{section.candidate} is {describe(found, section.margin, section.baseline)}, after {len(prompts)} of {len(order)} prompts",
        "construction": CONSTRUCTION,
    }
