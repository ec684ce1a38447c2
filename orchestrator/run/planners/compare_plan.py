"""What a comparison fixes before it pays: the most prompts it can read (its horizon), and whether
any decision is within reach of it — refused in one line when none is, said when only some are."""

from __future__ import annotations

import warnings

from ...errors import OrchestratorError, OrchestratorWarning
from ...judging.profiles import JudgeProfile
from ...raee.gate import plan, reachable
from ...records.config import RunConfig
from ...records.dataset import Dataset

__all__ = ["available_prompts", "fix_plan", "prompt_calls"]


def available_prompts(config: RunConfig, dataset: Dataset) -> list[str]:
    """The prompts the comparison can read, in the order it reads them."""
    section = config.compare
    assert section is not None
    if section.anchor is None:
        from .compare import comparison_order

        return comparison_order(dataset, section.candidate, section.baseline, config.seed)
    from .compare_anchor import anchor_name, anchored_order, baseline_snapshot, kept_judgments

    snapshot = None
    if section.baseline_run is not None:
        snapshot = kept_judgments(baseline_snapshot(section.baseline_run, section.baseline, anchor_name(section.anchor)))
    return anchored_order(config, dataset, snapshot)


def prompt_calls(config: RunConfig, profiles: dict[str, JudgeProfile], available: int, possible: int) -> int:
    """Paid completions one prompt takes at most: its requests (every judge, every shown order)
    times the most completions a judge without log-probabilities asks per request."""
    per_prompt = -(-possible // max(available, 1))
    samples = max([1] + [p.samples for p in profiles.values() if not p.logprobs])
    return max(1, per_prompt) * samples


def fix_plan(config: RunConfig, dataset: Dataset, profiles: dict[str, JudgeProfile], possible: int, *, check: bool = True) -> RunConfig:
    """``config`` with ``compare.max_prompts`` fixed: the prompts available, and as many as
    ``max_calls`` pays for (``possible``: the requests the campaign could ask at most), and at most
    a ``max_prompts`` the config gives. Stored with the run, so the sequence's stakes and the planned
    design's spending never change under it.

    Raises:
        OrchestratorError: no decision can be reached within that many prompts (one line: what the
            budget allows and what would help); ``check = False`` (a plan asked for, nothing run):
            neither refused nor warned."""
    section = config.compare
    assert section is not None
    available = len(available_prompts(config, dataset))
    calls = prompt_calls(config, profiles, available, possible)
    most = available if config.budget.max_calls is None else min(available, config.budget.max_calls // calls)
    if section.max_prompts is not None:
        most = min(most, section.max_prompts)
    if most < 1:
        raise OrchestratorError(
            f"compare: max_calls = {config.budget.max_calls} cannot pay for one prompt ({calls} calls: every judge, both shown orders)"
        )
    fixed = config.model_copy(update={"compare": section.model_copy(update={"max_prompts": most})})
    if not check:
        return fixed
    found = reachable(
        margin=section.margin / (2.0 if section.anchor is not None else 1.0),
        alpha=section.alpha,
        require=section.require,
        design=section.design,
        max_prompts=most,
        batch=max(1, config.selection.batch),
    )
    limit = f"{most} prompts ({'max_calls = ' + str(config.budget.max_calls) + ' at ' + str(calls) + ' calls a prompt' if most < available else 'every prompt available'})"
    if not found:
        raise OrchestratorError(
            f"compare: no decision can be reached within {limit} at α = {section.alpha:g}, even if one system won every prompt: "
            "raise max_calls, give more prompts, or raise alpha (`orchestrator compare CONFIG --plan` says what is needed)"
        )
    if "better" not in found:
        warnings.warn(
            OrchestratorWarning(
                f"compare: 'better' by {section.margin:g} points cannot be reached within {limit}, even if the candidate won every "
                f"prompt; the run can only say {', '.join(repr(d) for d in found)}"
            ),
            stacklevel=2,
        )
    return fixed


def gate_plan_report(config: RunConfig, *, effect: float, spread: float | None, spread_from: str) -> dict:
    """``compare --plan``'s answer for a config whose horizon :func:`fix_plan` has fixed: the prompts
    each design needs for a power of 0.8 at ``effect`` points beyond the margin (:func:`~orchestrator.raee.gate.plan`),
    the most this run can read, and whether that reaches them and any decision at all."""
    section = config.compare
    assert section is not None and section.max_prompts is not None
    batch = max(1, config.selection.batch)
    scale = 2.0 if section.anchor is not None else 1.0  # through an anchor the outcomes' mean moves half the difference
    needed = plan(
        effect=effect / scale, alpha=section.alpha, available=section.max_prompts, spread=spread, looks=-(-section.max_prompts // batch)
    )
    within = needed.anytime if section.design == "anytime" else needed.planned
    decisions = reachable(
        margin=section.margin / scale,
        alpha=section.alpha,
        require=section.require,
        design=section.design,
        max_prompts=section.max_prompts,
        batch=batch,
    )
    return {
        "candidate": section.candidate,
        "baseline": section.baseline,
        "design": section.design,
        "alpha": section.alpha,
        "margin": section.margin,
        "require": section.require,
        "effect": effect,
        "spread": round(needed.spread, 4),
        "spread_from": spread_from,
        "fixed_test_prompts": needed.fixed,
        "anytime_prompts": needed.anytime,
        "planned_prompts": needed.planned,
        "max_prompts": section.max_prompts,
        "power_reached": section.max_prompts >= within,
        "reachable": decisions,
        "sentence": (
            f"A fixed-size paired test needs {needed.fixed} prompts for a power of 0.8 at a true difference of {effect:g} points "
            f"beyond the margin of {section.margin:g} (spread {needed.spread:.3f}, {spread_from}); the {section.design} design needs "
            f"at most {within} (the {'planned' if section.design == 'anytime' else 'anytime'} one "
            f"{needed.planned if section.design == 'anytime' else needed.anytime}). This run can read at most {section.max_prompts} "
            + ("prompts: enough." if section.max_prompts >= within else "prompts: not enough for that power")
            + (
                f"; it can still reach: {', '.join(decisions)}."
                if decisions and section.max_prompts < within
                else (" No decision can be reached at all." if not decisions else "")
            )
        ),
    }
