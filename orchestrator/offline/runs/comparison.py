"""The decision of a ``[compare]`` run, as ``orchestrator compare``, ``rank`` and
``status`` report it: the candidate's win rate over the baseline with its anytime-valid interval,
the decision against the margin, the exit code a pipeline acts on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...errors import OrchestratorError
from ...records.compare_config import CompareConfig
from ...records.config import RunConfig
from ...run.planners.compare import (
    LOST_RULE,
    comparison_order,
    completed_rounds,
    decision_of,
    describe,
    lost_counts,
    lost_outcomes,
    prompt_outcomes,
    round_looks,
)
from ...run.planners.compare_anchor import (
    AnchorJudgment,
    anchor_name,
    anchored_decision,
    anchored_order,
    anchored_outcomes,
    kept_judgments,
    shares,
)
from ...store import RunStore, open_run

__all__ = ["EXIT_CODES", "comparison", "comparison_in", "exit_code", "outcome_spread"]

EXIT_CODES = {"better": 0, "worse": 10, "equivalent": 11, "not yet known": 12, "not better": 13, "not worse": 0}
"""``orchestrator compare``'s exit code per decision (``--require not-worse``: ``equivalent`` is 0
too; ``not worse`` is its own pass); 2 is bad input or a run whose judge calls all failed, as for
every command."""


def construction(section: CompareConfig, anchor: str | None = None) -> str:
    """How the interval is built, and its reference."""
    of = (
        "the difference of the two systems' win rates against the anchor (X = (1 + w_candidate − w_baseline)/2 per prompt, "
        "each w a win share against the anchor, the difference 100 (2 X̄ − 1))"
        if anchor is not None
        else "the mean of the per-prompt win shares"
    )
    horizon = f", its stakes sized for {section.max_prompts} prompts" if section.max_prompts else ""
    if section.design == "planned":
        return (
            f"repeated confidence intervals for {of} of a group-sequential design over {section.max_prompts} planned prompts, "
            "O'Brien–Fleming-type alpha spending (Lan & DeMets 1983; Jennison & Turnbull 1989), read at the ends of rounds"
        )
    return f"anytime-valid confidence sequence for {of} (hedged betting capital, Waudby-Smith & Ramdas 2024, JRSS-B, Theorem 3{horizon})"


def guarantee(section: CompareConfig) -> str:
    """Which guarantee the interval holds, in one sentence."""
    if section.design == "planned":
        return (
            f"the chance of any wrong decision is at most α = {section.alpha:g} at the planned looks (the ends of rounds) "
            f"with at most {section.max_prompts} prompts; between looks the interval is shown, not decided on"
        )
    return f"the chance of any wrong decision is at most α = {section.alpha:g} at every look, whenever the run is looked at or stopped"


def _after(found, prompts: list[str], order: list[str]) -> str:
    """``after N of M prompts``: the prompts the figures read (the decision's, when one was reached
    before the round's last prompt was judged: those are counted but not read)."""
    extra = f" ({len(prompts)} judged; the figures are those the decision read)" if found.at != len(prompts) else ""
    return f"after {found.at} of {len(order)} prompts{extra}"


def exit_code(decision: str, require: str = "better") -> int:
    """The exit code of a decision (:data:`EXIT_CODES`); ``require = "not-worse"`` passes equivalence
    (and ``not worse``, its own decision)."""
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
    order, prompts, x, rows, anchored = _outcomes(store, config)
    lost = {p: v for p, v in lost_in(store, section).items() if p in prompts}
    if anchored is not None:
        return _anchored(config, require, order, prompts, x, rows, anchored, lost)
    found = decision_of(x, section.model_copy(update={"require": require}), round_looks(prompts, completed_rounds(rows, lost)))
    step = _to_decide(found, config, prompts, order, x, rows, anchored=False)
    return {
        "candidate": section.candidate,
        "baseline": section.baseline,
        "margin": section.margin,
        "alpha": section.alpha,
        "win_rate": round(50 + found.difference, 3) if prompts else None,
        "win_rate_low": round(50 + found.low, 3),
        "win_rate_high": round(50 + found.high, 3),
        **_decided(found, prompts, order, require, section),
        "sentence": f"{section.candidate} is {describe(found, section)}, {_after(found, prompts, order)}{_lost_said(lost, section)}"
        + (f"; {step['sentence']}" if step else ""),
        "construction": construction(section),
        **_lost_field(lost, section),
        **({"to_decide": step} if step else {}),
    }


def _to_decide(found, config: RunConfig, prompts: list[str], order: list[str], x: np.ndarray, rows: list, *, anchored: bool) -> dict | None:
    """:func:`~orchestrator.run.planners.compare_plan.next_step` of a comparison not yet known
    after reading some prompts, from its own outcomes' spread and the judge calls its prompts took."""
    from ...records.judgments import UNASKED
    from ...run.planners.compare_plan import next_step

    section = config.compare
    assert section is not None
    if found.decision != "not yet known" or not prompts:
        return None
    read = set(prompts)
    calls = sum(1 for r in rows if r.prompt_id in read and r.error_type not in UNASKED)
    return next_step(
        difference=found.difference,
        margin=section.margin,
        spread=float(np.std(x, ddof=1)) if len(x) >= 2 else None,
        alpha=section.alpha,
        design=section.design,
        batch=config.selection.batch,
        calls_per_prompt=max(1, -(-calls // len(prompts))),
        available=len(order),
        anchored=anchored,
    )


def _lost_said(lost: dict[str, tuple[float, int]], section: CompareConfig) -> str:
    """`` (N prompt(s) counted as lost by X …)``: what the decision read of the answers that failed."""
    counted = lost_counts(lost, section.candidate, section.baseline)
    said = "; ".join(f"{n} prompt(s) counted as lost by {who} (no answer could be generated)" for who, n in counted.items() if n)
    return f" ({said})" if said else ""


def _lost_field(lost: dict[str, tuple[float, int]], section: CompareConfig) -> dict[str, Any]:
    """The record's ``lost`` field (absent when nothing was lost)."""
    return {"lost": {"rule": LOST_RULE, **lost_counts(lost, section.candidate, section.baseline)}} if lost else {}


def _outcomes(store: RunStore, config: RunConfig) -> tuple[list[str], list[str], np.ndarray, list, tuple | None]:
    """``(order, prompts read, outcomes, judgments, anchored)`` of a comparison's run file;
    ``anchored``: through an anchor, ``(anchor, kept baseline run, w_candidate, w_baseline)``."""
    section = config.compare
    assert section is not None
    rows = list(store.judgments())
    lost = lost_in(store, section)
    if section.design == "planned":  # a planned design reads only its looks: rounds answered whole
        pending = [r.round for r in store.pending_requests()]
        if pending:
            rows = [r for r in rows if r.round < min(pending)]
            lost = {p: v for p, v in lost.items() if v[1] < min(pending)}
    if section.anchor is None:
        order = comparison_order(store.dataset(), section.candidate, section.baseline, config.seed)
        prompts, x = prompt_outcomes(order, rows, section.candidate, section.baseline, lost)
        return order, prompts, x, rows, None
    anchor = anchor_name(section.anchor)
    kept = store.attachment("baseline")
    mine = [AnchorJudgment.of_record(r) for r in rows]
    kept_rows = kept_judgments(kept)
    order = anchored_order(config, store.dataset(), kept_rows)
    baseline_rows = kept_rows if kept_rows is not None else mine
    prompts, x, wc, wb = anchored_outcomes(
        order, shares(mine, section.candidate, anchor), shares(baseline_rows, section.baseline, anchor), lost
    )
    return order, prompts, x, rows, (anchor, kept, wc, wb)


def lost_in(store: RunStore, section: CompareConfig) -> dict[str, tuple[float, int]]:
    """The prompts a comparison's systems lost for want of an answer (:func:`lost_outcomes`)."""
    from ...store.answers import stored_answers

    failed = {key: record.round for key, record in stored_answers(store).items() if record.status == "failed"}
    return lost_outcomes(failed, section.candidate, section.baseline)


def outcome_spread(path: str | Path) -> tuple[float, int]:
    """``(standard deviation, prompts)`` of the per-prompt outcomes of a comparison's run file — a
    pilot or an earlier comparison of the same kind — for a plan (``compare --plan --spread-from RUN``).

    Raises:
        OrchestratorError: not a comparison's run file, or fewer than 2 prompts read."""
    with open_run(path, write=False) as store:
        config = RunConfig.from_stored(store.config)
        if config.compare is None:
            raise OrchestratorError(f"--spread-from {path}: not a comparison's run file (orchestrator compare writes one)")
        _, prompts, x, _, _ = _outcomes(store, config)
    if len(prompts) < 2:
        raise OrchestratorError(f"--spread-from {path}: {len(prompts)} prompt(s) read; a spread needs 2 or more")
    return float(np.std(x, ddof=1)), len(prompts)


def _decided(found, prompts: list[str], order: list[str], require: str, section: CompareConfig) -> dict[str, Any]:
    """The fields every comparison reports of its decision."""
    return {
        "design": section.design,
        "max_prompts": section.max_prompts,
        "guarantee": guarantee(section),
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


def _anchored(
    config: RunConfig, require: str, order: list[str], prompts: list[str], x: np.ndarray, rows: list, anchored: tuple, lost: dict
) -> dict[str, Any]:
    """:func:`comparison_in` of a comparison through an anchor
    (:mod:`orchestrator.run.planners.compare_anchor`): the difference of the two win rates against it."""
    section = config.compare
    assert section is not None
    anchor, kept, wc, wb = anchored
    found = anchored_decision(x, section.model_copy(update={"require": require}), round_looks(prompts, completed_rounds(rows, lost)))
    said = describe(found, section, anchor)
    step = _to_decide(found, config, prompts, order, x, rows, anchored=True)
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
        **_decided(found, prompts, order, require, section),
        "sentence": f"{section.candidate} is {said}, {_after(found, prompts, order)}{_lost_said(lost, section)}"
        + (f"; {step['sentence']}" if step else ""),
        "construction": construction(section, anchor),
        **_lost_field(lost, section),
        **({"to_decide": step} if step else {}),
    }
