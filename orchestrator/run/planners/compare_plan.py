"""What a comparison fixes before it pays: the most prompts it can read (its horizon), and whether
any decision is within reach of it — refused in one line when none is, said when only some are."""

from __future__ import annotations

import warnings

from ...errors import OrchestratorError, OrchestratorWarning
from ...gate.designs import plan, reachable
from ...judging.profiles import JudgeProfile
from ...records.config import RunConfig
from ...records.dataset import Dataset

__all__ = ["available_prompts", "fix_plan", "fixed_comparison", "next_step", "prompt_calls", "prompt_costs"]


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


def prompt_costs(config: RunConfig, dataset: Dataset, profiles: dict[str, JudgeProfile], possible: int) -> tuple[int, int]:
    """``(prompts the comparison can read in the data, judge calls one prompt takes at most)``."""
    available = len(available_prompts(config, dataset))
    return available, prompt_calls(config, profiles, available, possible)


def fixed_comparison(
    config: RunConfig, dataset: Dataset, profiles: dict[str, JudgeProfile], possible: int, *, check: bool = True
) -> tuple[RunConfig, tuple[int, int]]:
    """:func:`fix_plan`'s config, and :func:`prompt_costs` (what a plan's ``max_calls`` is made of),
    once the judges of a ``baseline_run`` are found to be the ones that answered it.

    Raises:
        OrchestratorError: as :func:`fix_plan` and :func:`~.compare_anchor.check_baseline_judges`."""
    assert config.compare is not None
    if config.compare.baseline_run is not None:
        from ...judging.cache import judge_identity
        from .compare_anchor import check_baseline_judges

        check_baseline_judges(config, {name: judge_identity(p, config.dispatch.api_base) for name, p in profiles.items()})
    costs = prompt_costs(config, dataset, profiles, possible)
    return fix_plan(config, dataset, profiles, possible, check=check, costs=costs), costs


def budget_words(prompts: int, calls_per_prompt: int, available: int) -> str:
    """``max_calls = N (P prompts × C calls a prompt); the data hold A prompts``, or that they hold
    too few: the budget and the data a plan of ``prompts`` prompts needs."""
    said = f"max_calls = {prompts * calls_per_prompt} ({prompts} prompts × {calls_per_prompt} judge calls a prompt)"
    if prompts > available:
        return f"{said}, but the data hold only {available} prompts the comparison can read: give at least {prompts - available} more"
    return f"{said}; the data hold {available} prompts"


def next_step(
    *,
    difference: float,
    margin: float,
    spread: float | None,
    alpha: float,
    design: str,
    batch: int,
    calls_per_prompt: int,
    available: int,
    anchored: bool,
) -> dict:
    """What would decide a comparison that is not yet known: the prompts a plan needs for a power
    of 0.8 if the true difference is the one seen, as a ``max_calls`` to set, beside the prompts
    the data hold (:func:`~orchestrator.gate.designs.plan` with the outcomes' own spread). The
    distance that matters is from the seen difference to the nearest edge a decision turns on
    (the margin on either side, or 0 without one); under half a point, no practical budget
    decides it, and the record says so."""
    edges = [margin, -margin] if margin else [0.0]
    effect = min(abs(difference - e) for e in edges)
    if effect < 0.5:
        return {
            "effect": round(effect, 3),
            "sentence": (
                f"the difference seen ({difference:+.1f} points) is within half a point of where the decision turns "
                f"({', '.join(f'{e:+g}' for e in edges)}): no practical budget decides it; a wider --margin would"
            ),
        }
    scale = 2.0 if anchored else 1.0  # through an anchor the outcomes' mean moves half the difference
    needed = plan(effect=effect / scale, alpha=alpha, available=available, spread=spread, looks=-(-available // max(1, batch)))
    prompts = needed.anytime if design == "anytime" else needed.planned
    return {
        "effect": round(effect, 3),
        "prompts": prompts,
        "max_calls": prompts * calls_per_prompt,
        "prompts_available": available,
        "sentence": f"to decide a difference like the one seen ({difference:+.1f} points) with power 0.8: {budget_words(prompts, calls_per_prompt, available)}",
    }


def fix_plan(
    config: RunConfig,
    dataset: Dataset,
    profiles: dict[str, JudgeProfile],
    possible: int,
    *,
    check: bool = True,
    costs: tuple[int, int] | None = None,
) -> RunConfig:
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
    available, calls = costs or prompt_costs(config, dataset, profiles, possible)  # (``costs``: computed by the caller already)
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


def gate_plan_report(
    config: RunConfig, *, effect: float, spread: float | None, spread_from: str, costs: tuple[int, int] | None = None
) -> dict:
    """``compare --plan``'s answer for a config whose horizon :func:`fix_plan` has fixed: the prompts
    each design needs for a power of 0.8 at ``effect`` points beyond the margin (:func:`~orchestrator.gate.designs.plan`),
    the most this run can read, whether that reaches them and any decision at all, and (``costs``:
    :func:`prompt_costs`) the ``max_calls`` to set and the prompts the data hold."""
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
    to_set = f" To reach that power: {budget_words(within, costs[1], costs[0])}." if costs is not None else ""
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
        **({"max_calls_needed": within * costs[1], "prompts_in_data": costs[0]} if costs is not None else {}),
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
            + to_set
        ),
    }
