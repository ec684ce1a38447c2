"""Absolute-scoring campaigns for the Bayesian simplex model (simplex paper §5): every judge scores
every candidate's answer to every prompt on a 1..M scale; ``orchestrator fit simplex`` ranks."""

from __future__ import annotations

from collections import defaultdict

from ...errors import OrchestratorError
from ...records.config import AbsoluteConfig, RunConfig
from ...records.dataset import Dataset
from ...records.log import level_distribution
from ...store import JudgmentRecord
from ..requests import PlanContext, seeded_hash
from .base import Plan, PlannerBase, no_summary

__all__ = ["AbsolutePlanner"]


class AbsolutePlanner(PlannerBase):
    """Every candidate on the next ``selection.batch`` prompts (seeded order); a unit is one answer
    for every judge and repeat."""

    kind, role, done = "absolute", "absolute", "every candidate has been judged on every prompt"

    section: AbsoluteConfig

    def __init__(self, ctx: PlanContext):
        super().__init__(ctx)
        self.order = sorted(ctx.dataset.responses, key=lambda p: seeded_hash(ctx.seed, "absolute-order", p))

    @staticmethod
    def check(config: RunConfig, dataset: Dataset, templates: dict) -> None:
        template = templates["absolute"]
        if template.kind != "absolute":
            raise OrchestratorError(f"absolute.template: {template.name!r} is a {template.kind} template, not an absolute one")
        if template.options != [str(m) for m in range(1, len(template.options) + 1)]:
            raise OrchestratorError(
                f"absolute.template: {template.name!r} has options {template.options}; the simplex model needs the levels 1..M"
            )

    @staticmethod
    def unit_calls(config: RunConfig, n_judges: int) -> tuple[str, int]:
        assert config.absolute is not None
        return "absolute", n_judges * config.absolute.repeats

    @staticmethod
    def possible_requests(config: RunConfig, dataset: Dataset, n_judges: int) -> int:
        assert config.absolute is not None
        return n_judges * config.absolute.repeats * dataset.n_responses

    @staticmethod
    def shown_texts(config: RunConfig, dataset: Dataset, prompt_id: str) -> list[tuple[str, str]]:
        by = dataset.responses[prompt_id]
        return [("", by[c].text) for c in sorted(by)]

    def add(self, row: JudgmentRecord) -> None:
        if row.kind == "absolute":
            self.rows.append(row)

    def next_round(self, round_no: int, cutoff: int) -> Plan | str:
        ctx = self.ctx
        asked = {(p, cands[0]) for _, p, cands in ctx.asked if len(cands) == 1}  # every judge is asked at once
        units, selected, taken = [], [], 0
        for prompt in self.order:
            todo = [c for c in sorted(ctx.dataset.responses[prompt]) if (prompt, c) not in asked]
            if not todo:
                continue
            for cand in todo:
                judges = ctx.judges_for(prompt, (cand,), "absolute")
                units.append([ctx.request(jn, "absolute", prompt, [cand], r) for jn in judges for r in range(self.section.repeats)])
                selected.append([prompt, prompt, cand])
            taken += 1
            if taken == ctx.config.selection.batch:
                break
        return Plan("absolute", units, selected) if units else self.done

    def summary(self, cutoff: int | None) -> dict:
        """The five candidates with the highest mean expected level so far (a progress display;
        the ranking is ``orchestrator fit simplex``)."""
        scores: dict[str, list[float]] = defaultdict(list)
        for row in self.rows:
            levels, probs = level_distribution(row.probs[0])
            scores[row.candidates[0]].append(sum(lv * p for lv, p in zip(levels, probs)))
        return no_summary(sorted(scores, key=lambda c: (-sum(scores[c]) / len(scores[c]), c))[:5])
