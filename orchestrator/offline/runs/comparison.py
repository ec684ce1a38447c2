"""The decision of a ``[compare]`` run, as ``orchestrator compare``, ``rank`` and
``status`` report it: the candidate's win rate over the baseline with its anytime-valid interval,
the decision against the margin, the exit code a pipeline acts on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...records.config import RunConfig
from ...run.planners.compare import comparison_order, decision_of, describe, prompt_outcomes
from ...run.planners.compare_anchor import anchor_name, anchored_decision, anchored_order, anchored_outcomes, describe_anchored, shares
from ...store import RunStore, open_run

__all__ = ["EXIT_CODES", "comparison", "comparison_in", "exit_code"]

EXIT_CODES = {"better": 0, "worse": 10, "equivalent": 11, "not yet known": 12}
"""``orchestrator compare``'s exit code per decision (``--require not-worse``: ``equivalent`` is 0
too); 2 is bad input or a run whose judge calls all failed, as for every command."""

CONSTRUCTION = (
    "anytime-valid confidence sequence for the mean of the per-prompt win shares (hedged betting capital, "
    "Waudby-Smith & Ramdas 2024, JRSS-B, Theorem 3): it holds at every look with the stated level"
)


def _after(found, prompts: list[str], order: list[str]) -> str:
    """``after N of M prompts``: the prompts the figures read (the decision's, when one was reached
    before the round's last prompt was judged: those are counted but not read)."""
    extra = f" ({len(prompts)} judged; the figures are those the decision read)" if found.at != len(prompts) else ""
    return f"after {found.at} of {len(order)} prompts{extra}"


def exit_code(decision: str, require: str = "better") -> int:
    """The exit code of a decision (:data:`EXIT_CODES`); ``require = "not-worse"`` passes equivalence."""
    if require == "not-worse" and decision == "equivalent":
        return 0
    return EXIT_CODES[decision]


def comparison(path: str | Path, *, require: str | None = None) -> dict[str, Any]:
    """The decision of the compare run at ``path`` (read-only); ``require``: what passes (default:
    the run's own ``compare.require``)."""
    with open_run(path, write=False) as store:
        return comparison_in(store, require=require)


def comparison_in(store: RunStore, *, require: str | None = None) -> dict[str, Any]:
    """:func:`comparison` of an open run file."""
    config = RunConfig.from_stored(store.config)
    section = config.compare
    assert section is not None
    require = require or section.require
    if section.anchor is not None:
        return _anchored(store, config, require)
    dataset = store.dataset()
    order = comparison_order(dataset, section.candidate, section.baseline, config.seed)
    prompts, outcomes = prompt_outcomes(order, list(store.judgments()), section.candidate, section.baseline)
    found = decision_of(outcomes, section.margin, section.alpha)
    return {
        "candidate": section.candidate,
        "baseline": section.baseline,
        "margin": section.margin,
        "alpha": section.alpha,
        "win_rate": round(50 + found.difference, 3) if prompts else None,
        "win_rate_low": round(50 + found.low, 3),
        "win_rate_high": round(50 + found.high, 3),
        **_decided(found, prompts, order, require),
        "sentence": f"{section.candidate} is {describe(found, section.margin, section.baseline)}, {_after(found, prompts, order)}",
        "construction": CONSTRUCTION,
    }


def _decided(found, prompts: list[str], order: list[str], require: str) -> dict[str, Any]:
    """The fields every comparison reports of its decision."""
    return {
        "prompts_judged": len(prompts),
        "prompts_available": len(order),
        "difference": round(found.difference, 3) if prompts else None,
        "difference_low": round(found.low, 3),
        "difference_high": round(found.high, 3),
        "decision": found.decision,
        "decided_after": found.at if found.decision != "not yet known" else None,
        "require": require,
        "exit_code": exit_code(found.decision, require),
    }


CONSTRUCTION_ANCHORED = (
    "anytime-valid confidence sequence for the difference of the two systems' win rates against the anchor (hedged "
    "betting capital on X = (1 + w_candidate − w_baseline)/2 per prompt, each w a win share against the anchor, the "
    "difference 100 (2 X̄ − 1); Waudby-Smith & Ramdas 2024, JRSS-B, Theorem 3): it holds at every look with the stated level"
)


def _anchored(store: RunStore, config: RunConfig, require: str) -> dict[str, Any]:
    """:func:`comparison_in` of a comparison through an anchor
    (:mod:`orchestrator.run.planners.compare_anchor`): the difference of the two win rates against it."""
    section = config.compare
    assert section is not None and section.anchor is not None
    anchor = anchor_name(section.anchor)
    kept = store.attachment("baseline")
    rows = list(store.judgments())
    baseline_rows = kept["payload"]["judgments"] if kept else rows
    order = anchored_order(config, store.dataset(), kept["payload"]["judgments"] if kept else None)
    prompts, x, wc, wb = anchored_outcomes(order, shares(rows, section.candidate, anchor), shares(baseline_rows, section.baseline, anchor))
    found = anchored_decision(x, section.margin, section.alpha)
    said = describe_anchored(found, section.margin, section.baseline, anchor)
    return {
        "candidate": section.candidate,
        "baseline": section.baseline,
        "anchor": anchor,
        "baseline_run": kept["source"] if kept else None,
        "margin": section.margin,
        "alpha": section.alpha,
        "win_rate": None,
        "win_rate_low": None,
        "win_rate_high": None,
        # on the prompts the decision read (a round may judge a few more after it)
        "candidate_win_rate": round(100 * float(wc[: found.at].mean()), 3) if prompts else None,
        "baseline_win_rate": round(100 * float(wb[: found.at].mean()), 3) if prompts else None,
        **_decided(found, prompts, order, require),
        "sentence": f"{section.candidate} is {said}, {_after(found, prompts, order)}",
        "construction": CONSTRUCTION_ANCHORED,
    }
