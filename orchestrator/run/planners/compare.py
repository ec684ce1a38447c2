"""Two systems compared head to head (``[compare]``): the candidate against the baseline
on the prompts both answered, in a seeded random order, both shown orders per prompt and judge;
after every round the anytime-valid confidence sequence of the candidate's win rate
(:mod:`orchestrator.gate.sequence`) is read, and the run stops as soon as it supports a decision
(better / worse by at least the margin, equivalent within it) or the budget ends."""

from __future__ import annotations

import numpy as np

from ...errors import OrchestratorError
from ...gate.sequence import Decision
from ...records.compare_config import CompareConfig
from ...records.config import RunConfig
from ...records.dataset import Dataset
from ...store import JudgmentRecord
from ..requests import PlanContext, seeded_hash
from .base import Plan, PlannerBase, no_summary

__all__ = [
    "LOST_RULE",
    "ComparePlanner",
    "common_prompts",
    "comparison_order",
    "decision_of",
    "lost_counts",
    "lost_outcomes",
    "prompt_outcomes",
]


def common_prompts(dataset: Dataset, candidate: str, baseline: str) -> list[str]:
    """The prompts both systems answered."""
    return [p for p, by in dataset.responses.items() if candidate in by and baseline in by]


def comparison_order(dataset: Dataset, candidate: str, baseline: str, seed: int) -> list[str]:
    """The prompts in the order they are asked: seeded and random, so the outcomes read at any stop
    are a random sample of the prompts (an estimate unbiased whenever the run stops)."""
    return sorted(common_prompts(dataset, candidate, baseline), key=lambda p: seeded_hash(seed, "compare-order", p))


LOST_RULE = "a prompt on which a system's answer could not be generated counts as lost by that system (both: a tie)"
"""What a comparison does with a prompt whose answer is missing: it never leaves the comparison
(a system that fails on the hard prompts is not compared on the easy ones only)."""


def lost_outcomes(
    failed: dict[tuple[str, str], int], candidate: str, baseline: str, cutoff: int | None = None
) -> dict[str, tuple[float, int]]:
    """``prompt → (the candidate's outcome, round)`` of every prompt on which an answer of either
    system could not be generated (``failed``: ``(prompt, system) → the round that needed it``;
    rounds ``<= cutoff`` only): 0 when the candidate's failed, 1 when the baseline's, ½ when both
    (:data:`LOST_RULE`)."""
    out: dict[str, tuple[float, int]] = {}
    for prompt in {p for p, s in failed if s in (candidate, baseline)}:
        mine, theirs = failed.get((prompt, candidate)), failed.get((prompt, baseline))
        at = max(r for r in (mine, theirs) if r is not None)
        if cutoff is None or at <= cutoff:
            out[prompt] = (0.5 if mine is not None and theirs is not None else 0.0 if mine is not None else 1.0, at)
    return out


def lost_counts(lost: dict[str, tuple[float, int]], candidate: str, baseline: str) -> dict[str, int]:
    """Prompts lost by each system for want of an answer (a prompt both lost counts for both)."""
    return {candidate: sum(1 for x, _ in lost.values() if x <= 0.5), baseline: sum(1 for x, _ in lost.values() if x >= 0.5)}


def prompt_outcomes(
    order: list[str], rows: list[JudgmentRecord], candidate: str, baseline: str, lost: dict[str, tuple[float, int]] | None = None
) -> tuple[list[str], np.ndarray]:
    """``(prompts, X)``: per prompt whose every judge answered both shown orders, in ``order``, the
    candidate's win share ``X = mean over judges of ½ (P(c first better) + 1 − P(b first better))``
    (position bias cancels; a tie counts half). Prompts with a failed order are left out; a prompt
    in ``lost`` (:func:`lost_outcomes`) is read with the outcome its rule gives."""
    shares: dict[tuple[str, str], dict[bool, float]] = {}
    for row in rows:
        if row.kind != "pairwise" or row.p_first is None or set(row.candidates) != {candidate, baseline}:
            continue
        shares.setdefault((row.prompt_id, row.judge), {})[row.candidates[0] == candidate] = row.p_first
    by_prompt: dict[str, list[float]] = {}
    for (prompt, _), orders in shares.items():
        if len(orders) == 2:
            by_prompt.setdefault(prompt, []).append(0.5 * (orders[True] + 1.0 - orders[False]))
    for prompt, (x, _) in (lost or {}).items():
        by_prompt[prompt] = [x]
    prompts = [p for p in order if p in by_prompt]
    return prompts, np.array([float(np.mean(by_prompt[p])) for p in prompts])


def decision_of(outcomes: np.ndarray, section: CompareConfig, looks: list[int] | None = None, *, scale: float = 1.0) -> Decision:
    """The decision the outcomes read so far support under the section's design, margin, α and
    requirement (:func:`orchestrator.gate.designs.gate_decision`); ``looks``: the prompts read at the
    end of each round (a planned design decides there only); ``scale``: points of the decision per
    point of the outcomes' mean (2 through an anchor: a difference of two win rates)."""
    from ...gate.designs import gate_decision  # (scipy's statistics only where a comparison is read)

    found = gate_decision(
        outcomes,
        margin=section.margin / scale,
        alpha=section.alpha,
        require=section.require,
        design=section.design,
        max_prompts=section.max_prompts,
        looks=looks,
    )
    return found if scale == 1 else Decision(found.decision, scale * found.difference, scale * found.low, scale * found.high, found.at)


def round_looks(prompts: list[str], completed: dict[str, int]) -> list[int]:
    """The looks of a run: after each round, how many of ``prompts`` (the outcomes' order) had been
    read — ``completed`` gives the round in which each prompt's last judgment came."""
    rounds = sorted({completed[p] for p in prompts if p in completed})
    return [sum(1 for p in prompts if completed.get(p, 1 << 30) <= r) for r in rounds]


def completed_rounds(rows: list[JudgmentRecord], lost: dict[str, tuple[float, int]] | None = None) -> dict[str, int]:
    """``prompt → the round of its last judgment`` (a prompt is read once every judgment is in; a
    lost one, in the round that needed the answer that could not be had)."""
    out: dict[str, int] = {}
    for row in rows:
        out[row.prompt_id] = max(out.get(row.prompt_id, -1), row.round)
    for prompt, (_, at) in (lost or {}).items():
        out[prompt] = at
    return out


class ComparePlanner(PlannerBase):
    """The next ``selection.batch`` prompts of the seeded order, each a unit of both shown orders for
    every judge; stops when the decision is reached."""

    kind, role, done = "compare", "pairwise", "every prompt both systems answered has been judged"

    section: CompareConfig

    def __init__(self, ctx: PlanContext):
        super().__init__(ctx)
        self.order = comparison_order(ctx.dataset, self.section.candidate, self.section.baseline, ctx.seed)

    @staticmethod
    def roles(config: RunConfig) -> dict[str, str]:
        assert config.compare is not None
        return {"pairwise": config.compare.template or config.judging.pairwise_template}

    @staticmethod
    def check(config: RunConfig, dataset: Dataset, templates: dict) -> None:
        section = config.compare
        assert section is not None
        template = templates["pairwise"]
        if template.kind != "pairwise":
            raise OrchestratorError(f"compare.template: {template.name!r} is a {template.kind} template, not a pairwise one")
        systems = sorted({c for by in dataset.responses.values() for c in by})
        for field in ("candidate", "baseline"):
            name = getattr(section, field)
            if name not in systems:
                raise OrchestratorError(f"compare.{field}: {name!r} has no responses (candidates: {', '.join(systems[:8])})")
        if not common_prompts(dataset, section.candidate, section.baseline):
            raise OrchestratorError(f"compare: {section.candidate!r} and {section.baseline!r} answered no prompt in common")

    @staticmethod
    def unit_calls(config: RunConfig, n_judges: int) -> tuple[str, int]:
        return "pairwise", 2 * n_judges

    @staticmethod
    def possible_requests(config: RunConfig, dataset: Dataset, n_judges: int) -> int:
        assert config.compare is not None
        return 2 * n_judges * len(common_prompts(dataset, config.compare.candidate, config.compare.baseline))

    @staticmethod
    def shown_texts(config: RunConfig, dataset: Dataset, prompt_id: str) -> list[tuple[str, str]]:
        assert config.compare is not None
        by = dataset.responses[prompt_id]
        c, b = config.compare.candidate, config.compare.baseline
        return [(by[c].text, by[b].text)] if c in by and b in by else []

    def add(self, row: JudgmentRecord) -> None:
        if row.kind == "pairwise":
            self.rows.append(row)

    def decision(self, cutoff: int | None = None) -> Decision:
        """The decision on the judgments of rounds ``<= cutoff`` (None: all)."""
        rows = self.rows if cutoff is None else [r for r in self.rows if r.round <= cutoff]
        c, b = self.section.candidate, self.section.baseline
        lost = lost_outcomes(self.ctx.answers.failure_rounds, c, b, cutoff) if self.ctx.answers is not None else {}
        prompts, outcomes = prompt_outcomes(self.order, rows, c, b, lost)
        return decision_of(outcomes, self.section, round_looks(prompts, completed_rounds(rows, lost)))

    def stop_before(self, cutoff: int) -> str:
        found = self.decision(cutoff)
        if found.decision == "not yet known":
            return ""
        return f"decided after {found.at} prompts: {self.section.candidate} is {describe(found, self.section)}"

    def next_round(self, round_no: int, cutoff: int) -> Plan | str:
        ctx = self.ctx
        c, b = self.section.candidate, self.section.baseline

        def unit(prompt: str) -> list:
            return [
                ctx.request(j, "pairwise", prompt, list(shown))
                for j in ctx.judges_for(prompt, (c, b), "pairwise")
                for shown in ((c, b), (b, c))
                if (j, prompt, shown) not in ctx.asked
            ]

        done = done_words(self.order, self.section, self.done)
        return prompt_batch(planned_order(self.order, self.section), unit, "pairwise", ctx.config.selection.batch, (c, b), done)

    def summary(self, cutoff: int | None) -> dict:
        return decision_summary(self.decision(cutoff).decision, self.section.candidate, self.section.baseline)


def planned_order(order: list[str], section: CompareConfig) -> list[str]:
    """The prompts a comparison may ask: a planned design stops at its planned maximum (its error is
    spent there, whatever budget is left); the anytime sequence may read on."""
    return order[: section.max_prompts] if section.design == "planned" and section.max_prompts else order


def done_words(order: list[str], section: CompareConfig, done: str) -> str:
    """Why a comparison has nothing left to ask: ``done``, or, when its plan stops short of the data
    (the prompts ``max_calls`` pays for), that those have been judged."""
    planned = planned_order(order, section)
    if len(planned) < len(order):
        return f"the {len(planned)} prompts the plan reads (what max_calls pays for) have been judged; the data hold {len(order)}"
    return done


def prompt_batch(order: list[str], unit_for, kind: str, batch: int, systems: tuple[str, str], done: str) -> Plan | str:
    """A comparison's next round: the next ``batch`` prompts of ``order`` with something left to ask,
    one unit (``unit_for(prompt)``) each; ``done`` when none is left."""
    units, selected = [], []
    for prompt in order:
        unit = unit_for(prompt)
        if unit:
            units.append(unit)
            selected.append([prompt, prompt, *systems])
            if len(units) == batch:
                break
    return Plan(kind, units, selected) if units else done


def decision_summary(decision: str, candidate: str, baseline: str) -> dict:
    """A comparison's round summary: the system ahead once a decision names one."""
    return no_summary([candidate] if decision == "better" else [baseline] if decision == "worse" else [])


NO_PROMPT_READ = (
    "no prompt has been judged in both shown orders by every judge yet (a prompt counts once both orders are answered; "
    "a log that holds one shown order per prompt cannot decide)"
)
"""What a comparison says before any prompt can be read."""


def describe(found: Decision, section: CompareConfig, anchor: str | None = None) -> str:
    """``better than BASELINE by at least M points: …``: the decision in words, with its interval and
    the guarantee it holds (head to head: the win rate over the baseline; through an ``anchor``: the
    difference of the two win rates against it)."""
    baseline, margin = section.baseline, section.margin
    if found.at == 0:  # no prompt read yet: nothing to state
        return f"not yet known against {baseline}: " + (
            NO_PROMPT_READ if anchor is None else f"no prompt has both systems judged against {anchor} yet"
        )
    level = f"{100 * (1 - section.alpha):g}%"
    valid = "valid whenever the run is looked at" if section.design == "anytime" else "valid at the ends of rounds"
    if anchor is None:
        span = (
            f"win rate over {baseline} {50 + found.difference:.1f}% ({level} interval {50 + found.low:.1f}–{50 + found.high:.1f}%, {valid})"
        )
    else:
        span = (
            f"{found.difference:+.1f} points of win rate against {anchor} compared with {baseline} "
            f"({level} interval {found.low:+.1f} to {found.high:+.1f} points, {valid})"
        )
    by = f" by at least {margin:g} points" if margin else ""
    words = {
        "better": f"better than {baseline}{by}",
        "worse": f"worse than {baseline}{by}",
        "equivalent": f"equivalent to {baseline} within {margin:g} points",
        "not better": f"not better than {baseline} by {margin:g} points or more",
        "not worse": f"not worse than {baseline} by {margin:g} points or more",
    }
    return f"{words.get(found.decision, f'not yet known against {baseline}')}: {span}"
