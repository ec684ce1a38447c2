"""Two systems compared head to head (``[compare]``): the candidate against the baseline
on the prompts both answered, in a seeded random order, both shown orders per prompt and judge;
after every round the anytime-valid confidence sequence of the candidate's win rate
(:mod:`orchestrator.raee.sequence`) is read, and the run stops as soon as it supports a decision
(better / worse by at least the margin, equivalent within it) or the budget ends."""

from __future__ import annotations

import numpy as np

from ...errors import OrchestratorError
from ...raee.sequence import Decision, confidence_sequence, decide
from ...records.compare_config import CompareConfig
from ...records.config import RunConfig
from ...records.dataset import Dataset
from ...store import JudgmentRecord
from ..requests import PlanContext, seeded_hash
from .base import Plan, PlannerBase, no_summary

__all__ = ["ComparePlanner", "common_prompts", "comparison_order", "prompt_outcomes", "decision_of"]


def common_prompts(dataset: Dataset, candidate: str, baseline: str) -> list[str]:
    """The prompts both systems answered."""
    return [p for p, by in dataset.responses.items() if candidate in by and baseline in by]


def comparison_order(dataset: Dataset, candidate: str, baseline: str, seed: int) -> list[str]:
    """The prompts in the order they are asked: seeded and random, so the outcomes read at any stop
    are a random sample of the prompts (an estimate unbiased whenever the run stops)."""
    return sorted(common_prompts(dataset, candidate, baseline), key=lambda p: seeded_hash(seed, "compare-order", p))


def prompt_outcomes(order: list[str], rows: list[JudgmentRecord], candidate: str, baseline: str) -> tuple[list[str], np.ndarray]:
    """``(prompts, X)``: per prompt whose every judge answered both shown orders, in ``order``, the
    candidate's win share ``X = mean over judges of ½ (P(c first better) + 1 − P(b first better))``
    (position bias cancels; a tie counts half). Prompts with a failed order are left out."""
    shares: dict[tuple[str, str], dict[bool, float]] = {}
    for row in rows:
        if row.kind != "pairwise" or row.p_first is None or set(row.candidates) != {candidate, baseline}:
            continue
        shares.setdefault((row.prompt_id, row.judge), {})[row.candidates[0] == candidate] = row.p_first
    by_prompt: dict[str, list[float]] = {}
    for (prompt, _), orders in shares.items():
        if len(orders) == 2:
            by_prompt.setdefault(prompt, []).append(0.5 * (orders[True] + 1.0 - orders[False]))
    prompts = [p for p in order if p in by_prompt]
    return prompts, np.array([float(np.mean(by_prompt[p])) for p in prompts])


def decision_of(outcomes: np.ndarray, margin: float, alpha: float) -> Decision:
    """The decision the outcomes read so far support (:func:`orchestrator.raee.sequence.decide`)."""
    return decide(confidence_sequence(outcomes, alpha), margin)


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
        _, outcomes = prompt_outcomes(self.order, rows, self.section.candidate, self.section.baseline)
        return decision_of(outcomes, self.section.margin, self.section.alpha)

    def stop_before(self, cutoff: int) -> str:
        found = self.decision(cutoff)
        if found.decision == "not yet known":
            return ""
        return (
            f"decided after {found.at} prompts: {self.section.candidate} is {describe(found, self.section.margin, self.section.baseline)}"
        )

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

        return prompt_batch(self.order, unit, "pairwise", ctx.config.selection.batch, (c, b), self.done)

    def summary(self, cutoff: int | None) -> dict:
        return decision_summary(self.decision(cutoff).decision, self.section.candidate, self.section.baseline)


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


def describe(found: Decision, margin: float, baseline: str) -> str:
    """``better than BASELINE by at least M points (…)``: the decision in words, with its interval."""
    if found.at == 0:  # no prompt read yet: no win rate to state
        return f"not yet known against {baseline}: {NO_PROMPT_READ}"
    span = f"win rate over {baseline} {50 + found.difference:.1f}% (anytime-valid interval {50 + found.low:.1f}–{50 + found.high:.1f}%)"
    if found.decision == "better":
        return f"better than {baseline}" + (f" by at least {margin:g} points" if margin else "") + f": {span}"
    if found.decision == "worse":
        return f"worse than {baseline}" + (f" by at least {margin:g} points" if margin else "") + f": {span}"
    if found.decision == "equivalent":
        return f"equivalent to {baseline} within {margin:g} points: {span}"
    return f"not yet known against {baseline}: {span}"
