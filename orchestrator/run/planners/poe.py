"""PoE pair selection (PoE paper §4): refit each group's posterior on the committed judgments, stop
when the stopping rule holds, otherwise pick the next batch of comparisons across all groups by the
selection strategy (probability of reordering by default); an optional absolute warm start scores
every candidate first (combined PoE, §3.2)."""

from __future__ import annotations

import functools
import random

import torch

from ...errors import OrchestratorError
from ...failpoints import failpoint
from ...poe import (
    IndifferenceDecision,
    IndifferenceZone,
    PoEConfig,
    Posterior,
    adjacent_reorder_probabilities,
    get_expert,
    indifference_stop,
    neighbour_status,
    pair_metric,
    parse_strategy,
    posterior_entropy,
    ranking_order,
    select_across,
    stopping_rule,
    threads_for,
)
from ...poe.covariates import expand_controls
from ...records.config import RunConfig
from ...records.dataset import Dataset
from ...store import JudgmentRecord, PlannedRequest
from ..calibration import temperatures_for
from ..groups import build_groups_for, fit_group, judge_names
from ..requests import PlanContext, seeded_hash
from .base import Plan
from .candidates import CandidateAvailability
from .pair_slots import PairSlots
from .panel import PanelRounds

__all__ = ["PoEPlanner", "poe_config", "stop_decision"]


def poe_config(config: RunConfig) -> PoEConfig:
    """The PoE model of a run's config (the same for the planner, ``rank`` and replay)."""
    m = config.model
    return PoEConfig(
        expert=get_expert(m.expert),
        home_advantage=m.debias == "home",
        judge_sharpness=m.judge_reliability,
        judge_precision=m.judge_reliability,
        posterior=m.posterior,
        controls=expand_controls(m.control),
        families=dict(m.families),
    )


def tie_blocks(posterior: Posterior, delta: float, expert) -> list[frozenset[int]]:
    """The ranking as blocks of practically tied neighbours, best first (rank stability compares
    these: the order inside a tie may flip with every answer without the ranking changing)."""
    status = neighbour_status(posterior, IndifferenceZone(delta), expert)
    order = [int(c) for c in status.order]
    blocks: list[set[int]] = [{order[0]}] if order else []
    for r in range(len(order) - 1):
        if bool(status.tied[r]):
            blocks[-1].add(order[r + 1])
        else:
            blocks.append({order[r + 1]})
    return [frozenset(b) for b in blocks]


def stop_decision(posterior: Posterior, stopping, expert) -> IndifferenceDecision:
    """Every stopping rule the config enables, on one posterior: the first that holds stops."""
    s = stopping
    if s.max_adjacent_reorder is not None or s.entropy_target is not None:
        legacy = stopping_rule(posterior, max_adjacent_reorder=s.max_adjacent_reorder, entropy_target=s.entropy_target)
        if legacy.stop:
            return IndifferenceDecision(True, legacy.reason, [], legacy.max_adjacent_reorder, legacy.entropy)
    if s.rule == "budget":
        return IndifferenceDecision(False, "")
    return indifference_stop(posterior, IndifferenceZone.of(s), expert)


class PoEPlanner:
    """A unit is one comparison for every judge (and both orders with permutation debiasing), or
    one absolute score for every judge during the warm start; in cost-aware rounds (a panel, or
    ``selection.kinds = "mixed"``, :mod:`.panel`) one comparison or absolute score for one judge."""

    kind, role, done = "poe", "pairwise", "every comparison has been asked"

    def __init__(self, ctx: PlanContext):
        config = ctx.config
        self.ctx = ctx
        self.groups = build_groups_for(ctx.dataset, config.data.scope)
        self.poe = poe_config(config)
        self.strategy = parse_strategy(config.selection.strategy)
        self.ordered = config.model.debias != "permutation"
        self.slots = PairSlots(ctx, self.ordered)
        self.posteriors: list[Posterior | None] = [None] * len(self.groups)
        self._dirty = set(range(len(self.groups)))
        self._fit_count = [-1] * len(self.groups)
        self._fit_cutoff: list[int | None] = [None] * len(self.groups)
        self._judgments: list[list[JudgmentRecord]] = [[] for _ in self.groups]
        self._fit_judges: list[list[str]] = [[] for _ in self.groups]
        self._where = {g.key: k for k, g in enumerate(self.groups)}
        self._avail: list[torch.Tensor | None] | None = None  # built at the first selection, then updated
        self._candidates: list[CandidateAvailability | None] = [None] * len(self.groups)  # sparse groups
        self._avail_disabled: set[str] = set()
        self._panel = PanelRounds(self, mix_absolute=config.selection.kinds == "mixed")
        self._stable = 0  # rank stability (stopping.stable_rounds)
        self._last_orders: list[list[frozenset[int]]] | None = None

    # -- what the run needs before it starts -----------------------------------------------------
    @staticmethod
    def roles(config: RunConfig) -> dict[str, str]:
        roles = {"pairwise": config.judging.pairwise_template}
        if config.model.absolute_warm_start or config.selection.kinds == "mixed":
            roles["absolute"] = config.judging.absolute_template
        return roles

    @staticmethod
    def check(config: RunConfig, dataset: Dataset, templates: dict) -> None:
        if templates["pairwise"].kind != "pairwise":
            raise OrchestratorError(f"judging.pairwise_template: {templates['pairwise'].name!r} is a {templates['pairwise'].kind} template")
        if "absolute" in templates and templates["absolute"].kind != "absolute":
            raise OrchestratorError(f"judging.absolute_template: {templates['absolute'].name!r} is a {templates['absolute'].kind} template")
        build_groups_for(dataset, config.data.scope)

    @staticmethod
    def unit_calls(config: RunConfig, n_judges: int) -> tuple[str, int]:
        if config.model.absolute_warm_start or config.selection.kinds == "mixed":
            return "absolute", 1 if config.selection.kinds == "mixed" else n_judges
        return "pairwise", n_judges * (2 if config.model.debias == "permutation" else 1)

    @staticmethod
    def possible_requests(config: RunConfig, dataset: Dataset, n_judges: int) -> int:
        groups = build_groups_for(dataset, config.data.scope)
        pairs = 0
        for group in groups:
            if group.key == "global":
                pairs += sum(len(ps) * 2 for ps in group.prompts.values())
            else:  # per prompt, and items (compared only within their prompt)
                pairs += sum(len(by) * (len(by) - 1) for p, by in dataset.responses.items() if group.member(p, next(iter(by))) is not None)
        n_abs = sum(len(g.names) for g in groups) if config.model.absolute_warm_start or config.selection.kinds == "mixed" else 0
        return n_judges * (pairs + n_abs)

    @staticmethod
    def shown_texts(config: RunConfig, dataset: Dataset, prompt_id: str) -> list[tuple[str, str]]:
        by = dataset.responses[prompt_id]
        cands = sorted(by)
        return [(by[a].text, by[b].text) for a, b in zip(cands, cands[1:])]

    # -- the log ---------------------------------------------------------------------------------
    def add(self, row: JudgmentRecord) -> None:
        if row.kind == "reference":
            return
        k = 0 if len(self.groups) == 1 else self._where.get(row.prompt_id)
        if k is None:
            return
        self._judgments[k].append(row)
        self._dirty.add(k)

    def refit(self, cutoff: int | None = None) -> list[Posterior]:
        """Posteriors on the committed judgments of rounds ``<= cutoff`` (all when None).

        Cold fits (the canonical posterior of :func:`~orchestrator.run.groups.fit_group`, the same
        in a live run, a resumed one and ``orchestrator rank``); a group is refit only when its set
        of judgments changed since its last fit.
        """
        temperatures = None
        if self.ctx.config.model.temperature is not None:
            every = [r for rows in self._judgments for r in rows if cutoff is None or r.round <= cutoff]
            temperatures = temperatures_for(self.ctx.config.model.temperature, every, self.ctx.dataset, self.ctx.config.data.truth)
        with threads_for(self.largest_fit):
            for k in range(len(self.groups)):
                if k not in self._dirty and cutoff == self._fit_cutoff[k]:
                    continue
                rows = [r for r in self._judgments[k] if cutoff is None or r.round <= cutoff]
                if self.posteriors[k] is not None and len(rows) == self._fit_count[k]:
                    continue  # the same judgments as the last fit
                self.posteriors[k] = fit_group(
                    self.groups[k], rows, self.poe, debias=self.ctx.config.model.debias, temperatures=temperatures
                )
                self._fit_judges[k] = judge_names(rows)  # the index order of the fit's per-judge parameters
                self._fit_count[k] = len(rows)
                self._fit_cutoff[k] = cutoff
                failpoint("refit")
        self._dirty.clear()
        return self.posteriors  # type: ignore[return-value]

    @property
    def largest_fit(self) -> int:
        return max(len(g.names) for g in self.groups)

    def posteriors_for_forecast(self, cutoff: int | None) -> list[Posterior] | None:
        """The posteriors of the last refit (rounds ``<= cutoff``), or a refit on everything at the
        end of a run (``cutoff`` None); None before every group has been fitted."""
        if not self.posteriors or any(p is None for p in self.posteriors):
            return None
        return self.refit() if cutoff is None else self.posteriors  # type: ignore[return-value]

    # -- planning --------------------------------------------------------------------------------
    def stop_before(self, cutoff: int) -> str:
        posteriors = self.refit(cutoff)
        s = self.ctx.config.stopping
        if s.stable_rounds is not None:
            orders = [tie_blocks(p, s.tie_delta, self.poe.expert) for p in posteriors]
            self._stable = self._stable + 1 if orders == self._last_orders else 0
            self._last_orders = orders
            if self._stable >= s.stable_rounds and all(p.n_comparisons for p in posteriors):
                return f"stopping rule: the ranking has not changed for {self._stable} rounds"
        if s.max_adjacent_reorder is None and s.entropy_target is None and s.rule == "budget":
            return ""
        reasons, ties = [], 0
        for p in posteriors:
            if p.n_comparisons == 0:
                return ""
            decision = stop_decision(p, s, self.poe.expert)
            if not decision.stop:
                return ""
            reasons.append(decision.reason)
            ties += len(decision.tied)
        if len(reasons) == 1:
            return "stopping rule: " + reasons[0]
        return f"stopping rule: met in all {len(reasons)} groups" + (f" ({ties} practical ties)" if ties else "")

    def next_round(self, round_no: int, cutoff: int) -> Plan | str:
        units = self._warm_start_units() if self.ctx.config.model.absolute_warm_start else []
        if units:
            selected = [[u[0].prompt_id, u[0].prompt_id, u[0].candidates[0]] for u in units]
            return Plan("absolute", units, selected)
        units, selected = self._comparison_units(round_no, self.posteriors)  # type: ignore[arg-type]
        if not units:
            return self.done
        kinds = {u[0].kind for u in units}
        return Plan(kinds.pop() if len(kinds) == 1 else "mixed", units, selected)

    def _cost_aware(self) -> bool:
        """Requests chosen by value per cost (:mod:`.panel`): a panel, or absolute scores mixed in."""
        s = self.ctx.config.selection
        judges = [j for j in self.ctx.profiles if j not in self.ctx.disabled]
        return s.kinds == "mixed" or (s.panel == "cost_aware" and len(judges) > 1)

    def planned(self, rows: list[PlannedRequest]) -> None:
        """Update the availability of the pairs the new requests touch."""
        for r in rows:
            cands = r.candidates
            if len(cands) != 2:
                continue
            k = 0 if len(self.groups) == 1 else self._where[r.prompt_id]
            group = self.groups[k]
            a, b = (group.member(r.prompt_id, c) for c in cands)
            if a is None or b is None:
                continue
            i, j = group.index[a], group.index[b]
            self._panel.planned(k, i, j)
            sparse = self._candidates[k]
            if sparse is not None:
                sparse.touched(i, j)
            avail = self._avail[k] if self._avail is not None else None
            if avail is not None:
                avail[i, j] = self.slots.pair_open(group, i, j)
                avail[j, i] = self.slots.pair_open(group, j, i)

    def summary(self, cutoff: int | None) -> dict:
        posteriors = self.refit() if cutoff is None else self.posteriors
        ent = [posterior_entropy(p) for p in posteriors]  # type: ignore[arg-type]
        worst = 0.0
        for p in posteriors:
            _, adj = adjacent_reorder_probabilities(p)  # type: ignore[arg-type]
            if adj.numel():
                worst = max(worst, float(adj.max()))
        first = self.groups[0]
        top = [first.names[c] for c in ranking_order(posteriors[0].mean, first.names)[:5]]  # type: ignore[union-attr]
        return {"entropy": float(sum(ent) / len(ent)), "max_adjacent_reorder": worst, "top": top}

    def _warm_start_units(self) -> list[list[PlannedRequest]]:
        """One absolute request per candidate and judge, unless the warm start was planned already."""
        ctx = self.ctx
        if any(len(c) == 1 for _, _, c in ctx.asked):
            return []
        use = ctx.prompt_use()
        units = []
        for group in self.groups:
            for name in group.names:
                candidate = group.candidate(name)
                prompts = [p for p in group.absolute_prompts(name, ctx.dataset) if ctx.judges_for(p, (candidate,), "absolute")]
                if not prompts:  # no judge can score it (a replayed log without its absolute judgment)
                    continue
                prompt = min(prompts, key=lambda p: (use[p], seeded_hash(ctx.seed, p, name)))
                use[prompt] += 1
                units.append([ctx.request(j, "absolute", prompt, [candidate]) for j in ctx.judges_for(prompt, (candidate,), "absolute")])
        random.Random(ctx.seed).shuffle(units)  # a budget too small for all spreads over groups
        return units

    def _comparison_units(self, round_no: int, posteriors: list[Posterior]) -> tuple[list[list[PlannedRequest]], list[list]]:
        ctx = self.ctx
        batch = ctx.config.selection.batch
        if self._cost_aware() and all(p.cov is not None for p in posteriors):
            # (a sparse posterior has no Σ for the panel's value of every pair and judge: a large
            # ranking asks each selected comparison of every judge instead; README "Scaling up")
            return self._panel.units(round_no, posteriors, batch)
        if self._avail is None or self._avail_disabled != ctx.disabled:
            # (re)built at the first selection and when a judge was stopped: a pair open only for it is
            # closed. A group with a sparse posterior gets candidate pairs each round instead of a matrix.
            self._avail = [None if p.cov is None else self.slots.available(g) for g, p in zip(self.groups, posteriors)]
            for k, group in enumerate(self.groups):
                if self._avail[k] is None:
                    if self._candidates[k] is None:
                        self._candidates[k] = CandidateAvailability(ctx, group, functools.partial(self.slots.pair_open, group))
                    self._candidates[k].reset()  # type: ignore[union-attr]
            self._avail_disabled = set(ctx.disabled)
        generator = torch.Generator().manual_seed(ctx.seed * 1_000_003 + round_no)
        available = [
            avail if avail is not None else self._candidates[k].candidates(posteriors[k], batch, generator)  # type: ignore[union-attr]
            for k, avail in enumerate(self._avail)
        ]
        picks = select_across(
            posteriors, self.strategy, available, batch, ordered=self.ordered, generator=generator, expert=self.poe.expert
        )
        by_group: dict[int, list[tuple[int, int]]] = {}
        for g, i, j in picks:
            by_group.setdefault(g, []).append((i, j))
        metric: dict[int, dict[tuple[int, int], float]] = {}  # the strategy's metric of each pick, per group
        for g, ps in by_group.items():
            values = pair_metric(posteriors[g], self.strategy, torch.tensor([p[0] for p in ps]), torch.tensor([p[1] for p in ps]))
            metric[g] = dict(zip(ps, values.tolist()))
        units, selected = [], []
        use = ctx.prompt_use()
        for g, i, j in picks:
            group = self.groups[g]
            a, b = group.names[i], group.names[j]
            ca, cb = group.candidate(a), group.candidate(b)
            prompt = self.slots.prompt_for(group, a, b, use)
            if prompt is None:
                continue
            use[prompt] += 1
            orders = [(ca, cb)] if self.ordered else [(ca, cb), (cb, ca)]
            units.append(
                [
                    ctx.request(
                        jn,
                        "pairwise",
                        prompt,
                        list(o),
                        ctx.asked.get((jn, prompt, o), 0),
                        completions=1 if self.slots.ceiling(jn) > 1 else None,
                    )
                    for jn in self.slots.askable(prompt, ca, cb)
                    for o in orders
                ]
            )
            selected.append([group.key, prompt, a, b, round(float(metric[g][(i, j)]), 6)])
        return units, selected
