"""The PoE planner's cost-aware rounds: every (pair or candidate, judge, kind) a judge can
still be asked, valued by :mod:`.cost`, the ``batch`` of most value per unit of cost asked.

Availability is tracked per judge (a pair the cheap judge has asked is still open for the others),
so the round is chosen over everything a judge could add, not only over the pairs with the highest
selection score. Costs are a representative unit's per (group, judge, kind): the prices are fixed,
only the texts' lengths vary.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any, Protocol

import torch

from ...poe import Posterior, absolute_moments, selection_scores
from ...records.log import level_distribution
from ...store import JudgmentRecord, PlannedRequest
from ..groups import Group
from ..requests import seeded_hash
from .cost import absolute_values, judge_parameters, pairwise_values, request_cost, value_parameters
from .pair_slots import PairSlots

if TYPE_CHECKING:
    from ...poe import PoEConfig
    from ..requests import PlanContext


class PanelHost(Protocol):
    """What the panel's rounds read of the PoE planner that owns them (:class:`~.poe.PoEPlanner`
    is one): its groups and their last fits' judges and cutoffs, its committed judgments, whether a
    pair is asked in one order, its selection strategy and the judges a prompt's pair can ask. A
    protocol here, so that the planner imports the panel and not the other way round."""

    ctx: PlanContext
    groups: list[Group]
    ordered: bool
    poe: PoEConfig
    strategy: Any
    _fit_cutoff: list[int | None]
    _fit_judges: list[list[str]]
    _judgments: list[list[JudgmentRecord]]
    slots: PairSlots
    """Which comparisons can still be asked (:mod:`.pair_slots`)."""


__all__ = ["PanelRounds", "DEFAULT_ABSOLUTE_VARIANCE"]

SHORTLIST = 1
"""Pairs weighed per round: ``SHORTLIST × batch × judges`` of highest selection score."""

DEFAULT_ABSOLUTE_VARIANCE = 1.0
"""σ² (in levels²) assumed for a judge's absolute score before it has given one."""


class PanelRounds:
    """Per-judge availability and the cost-aware choice of a round's units for a PoE planner (:class:`PanelHost`)."""

    def __init__(self, planner: PanelHost, mix_absolute: bool):
        self.planner = planner
        self.ctx = planner.ctx
        self.mix_absolute = mix_absolute
        self._avail: list[dict[str, torch.Tensor]] | None = None
        self._disabled: set[str] = set()
        self._costs: dict[tuple[int, str, str], float] = {}
        self._priced = any(price != (0.0, 0.0) for price in self.ctx.prices.values())

    # -- availability ------------------------------------------------------------------------------
    def _judges(self) -> list[str]:
        return [j for j in self.ctx.profiles if j not in self.ctx.disabled]

    def _pair_judges(self, group: Group, i: int, j: int) -> set[str]:
        a, b = group.names[i], group.names[j]
        ca, cb = group.candidate(a), group.candidate(b)
        return {judge for p in group.pair_prompts(a, b) for judge in self.planner.slots.askable(p, ca, cb)}

    def _build(self) -> list[dict[str, torch.Tensor]]:
        out = []
        for group in self.planner.groups:
            n = len(group.names)
            avail = {judge: torch.zeros(n, n, dtype=torch.bool) for judge in self._judges()}
            for i in range(n):
                for j in range(n):
                    if i != j:
                        for judge in self._pair_judges(group, i, j):
                            avail[judge][i, j] = True
            out.append(avail)
        return out

    def availability(self) -> list[dict[str, torch.Tensor]]:
        if self._avail is None or self._disabled != self.ctx.disabled:
            self._avail = self._build()
            self._disabled = set(self.ctx.disabled)
        return self._avail

    def planned(self, k: int, i: int, j: int) -> None:
        """A request on the pair ``(i, j)`` of group ``k`` was planned: update its availability."""
        if self._avail is None:
            return
        group = self.planner.groups[k]
        for a, b in ((i, j), (j, i)):
            open_for = self._pair_judges(group, a, b)
            for judge, avail in self._avail[k].items():
                avail[a, b] = judge in open_for

    # -- value -------------------------------------------------------------------------------------
    def _unit(self, group: Group, judge: str, kind: str, prompt: str, members: tuple[str, ...]) -> list[PlannedRequest]:
        cands = [group.candidate(m) for m in members]
        if kind == "absolute":
            return [self.ctx.request(judge, "absolute", prompt, cands)]
        orders = [cands] if self.planner.ordered else [cands, cands[::-1]]
        return [self.ctx.request(judge, "pairwise", prompt, o) for o in orders]

    def _cost(self, k: int, judge: str, kind: str) -> float:
        """A representative unit's cost (the group's first pair or candidate)."""
        key = (k, judge, kind)
        if key not in self._costs:
            group = self.planner.groups[k]
            if kind == "absolute":
                name = group.names[0]
                prompt = group.absolute_prompts(name, self.ctx.dataset)[0]
                self._costs[key] = request_cost(self._unit(group, judge, kind, prompt, (name,)), self._priced)
            else:
                a, b = next(((a, b) for a in group.names for b in group.names if a != b and group.pair_prompts(a, b)), group.names[:2])
                prompts = group.pair_prompts(a, b) or [group.absolute_prompts(a, self.ctx.dataset)[0]]
                self._costs[key] = request_cost(self._unit(group, judge, kind, prompts[0], (a, b)), self._priced)
        return self._costs[key]

    def _absolute_curvature(self, post: Posterior, fitted_judges: list[str], rows: list[JudgmentRecord], judge: str) -> float:
        """``a_j² / σ_j²``: the judge's link slope (its prior mean before any absolute score) over the
        median variance of its absolute scores so far."""
        slope = 1.0
        slopes = post.judges.get("slope")
        if slopes is not None and judge in fitted_judges and fitted_judges.index(judge) < slopes.numel():
            slope = float(slopes[fitted_judges.index(judge)])
        variances = []
        for r in rows:
            if r.kind == "absolute" and r.judge == judge and r.probs:
                levels, weights = level_distribution(r.probs[0])
                _, var = absolute_moments(torch.tensor([weights], dtype=torch.float64), torch.tensor(levels, dtype=torch.float64))
                variances.append(float(var[0]))
        variance = statistics.median(variances) if variances else DEFAULT_ABSOLUTE_VARIANCE
        return slope**2 / variance

    def _absolute_options(self, group: Group) -> dict[tuple[str, str], list[str]]:
        """``(member, judge)`` → the prompts on which the judge can still score the member alone."""
        options: dict[tuple[str, str], list[str]] = {}
        for name in group.names:
            cand = group.candidate(name)
            for p in group.absolute_prompts(name, self.ctx.dataset):
                for judge in self.ctx.judges_for(p, (cand,), "absolute"):
                    if (judge, p, (cand,)) not in self.ctx.asked:
                        options.setdefault((name, judge), []).append(p)
        return options

    def units(self, round_no: int, posteriors: list[Posterior], batch: int) -> tuple[list[list[PlannedRequest]], list[list]]:
        """The round's ``batch`` units of most value per cost (module docstring)."""
        planner = self.planner
        availability = self.availability()
        judges = self._judges()
        shortlist: list[tuple[float, int, str, str, int, int]] = []
        scores_of: dict[int, torch.Tensor] = {}
        absolute_options: dict[int, dict[tuple[str, str], list[str]]] = {}
        for k, (group, post) in enumerate(zip(planner.groups, posteriors)):
            scores = scores_of[k] = selection_scores(post, planner.strategy)
            shortlist += self._pairwise_shortlist(round_no, k, post, scores, availability[k], judges, batch)
            if self.mix_absolute:
                absolute_options[k] = self._absolute_options(group)
                shortlist += self._absolute_shortlist(round_no, k, post, scores, absolute_options[k], judges, batch)
        shortlist.sort(key=lambda u: -u[0])
        return self._take(round_no, shortlist, batch, availability, absolute_options, scores_of)

    def _tie_break(self, round_no: int, values: torch.Tensor, *names: str) -> torch.Tensor:
        """Seeded offsets of relative size ≤ 1e-9 that do not depend on what else is open (a
        replay, which can ask less, breaks ties as the run did)."""
        generator = torch.Generator().manual_seed(int(seeded_hash(self.ctx.seed, str(round_no), *names)[:15], 16))
        return values + values.abs() * torch.rand(values.shape, generator=generator, dtype=values.dtype) * 1e-9

    def _pairwise_shortlist(
        self, round_no: int, k: int, post: Posterior, scores: torch.Tensor, availability: dict, judges: list[str], batch: int
    ) -> list[tuple[float, int, str, str, int, int]]:
        """Group ``k``'s best ``batch`` comparisons per judge by value per cost, among the pairs
        most worth deciding (the strategy's shortlist): judges compete on the same pairs, which is
        also what lets their reliabilities be told apart."""
        planner = self.planner
        group = planner.groups[k]
        costs = {judge: self._cost(k, judge, "pairwise") for judge in judges}
        params = value_parameters(judge_parameters(post, planner._fit_judges[k]), costs)
        n = len(group.names)
        upper = torch.ones(n, n, dtype=torch.bool).triu(1)
        open_for = {
            judge: ((avail | avail.T) if planner.ordered else (avail & avail.T)) & upper
            for judge, avail in availability.items()
            if judge in judges
        }
        any_open = torch.stack(list(open_for.values())).any(0) if open_for else upper & False
        key = self._tie_break(round_no, scores, group.key).masked_fill(~any_open, -torch.inf)
        width = min(SHORTLIST * batch * len(judges), int(any_open.sum()))
        worth_deciding = torch.zeros(n * n, dtype=torch.bool)
        worth_deciding[torch.topk(key.view(-1), width).indices] = True
        worth_deciding = worth_deciding.view(n, n)
        shortlist = []
        for judge in judges:
            eligible = open_for[judge] & worth_deciding
            if not bool(eligible.any()):
                continue
            t, kappa = params[judge]
            value = self._tie_break(
                round_no,
                pairwise_values(post.mean, post.dense_cov(), scores, t, kappa, planner.poe.expert) / costs[judge],
                group.key,
                judge,
            )
            value = value.masked_fill(~eligible, -torch.inf).view(-1)
            top = torch.topk(value, min(batch, int(eligible.sum())))
            shortlist += [(float(v), k, judge, "pairwise", int(x) // n, int(x) % n) for v, x in zip(top.values, top.indices)]
        return shortlist

    def _absolute_shortlist(
        self, round_no: int, k: int, post: Posterior, scores: torch.Tensor, options: dict, judges: list[str], batch: int
    ) -> list[tuple[float, int, str, str, int, int]]:
        """Group ``k``'s best ``batch`` absolute scores per judge by value per cost."""
        planner = self.planner
        group = planner.groups[k]
        # the judgments the posterior was fitted on: later rounds may be half committed when this
        # round is planned (pipeline depth 2), and the plan must not depend on timing
        cutoff = planner._fit_cutoff[k]
        rows = [r for r in planner._judgments[k] if cutoff is None or r.round <= cutoff]
        shortlist = []
        for judge in judges:
            open_items = torch.tensor([(name, judge) in options for name in group.names])
            if not bool(open_items.any()):
                continue
            cost = self._cost(k, judge, "absolute")
            value = absolute_values(post.dense_cov(), scores, self._absolute_curvature(post, planner._fit_judges[k], rows, judge)) / cost
            value = self._tie_break(round_no, value, group.key, judge, "absolute")
            value = value.masked_fill(~open_items, -torch.inf)
            top = torch.topk(value, min(batch, int(open_items.sum())))
            shortlist += [(float(v), k, judge, "absolute", int(x), -1) for v, x in zip(top.values, top.indices)]
        return shortlist

    def _take(
        self,
        round_no: int,
        shortlist: list[tuple[float, int, str, str, int, int]],
        batch: int,
        availability: list,
        absolute_options: dict[int, dict[tuple[str, str], list[str]]],
        scores_of: dict[int, torch.Tensor],
    ) -> tuple[list[list[PlannedRequest]], list[list]]:
        """The first ``batch`` units of the sorted shortlist that can be asked: each on its
        least-used prompt, a pair in the order the judge can be asked (a seeded coin when both),
        never both orders of a pair in one round."""
        planner, ctx = self.planner, self.ctx
        use = ctx.prompt_use()
        units: list[list[PlannedRequest]] = []
        selected: list[list] = []
        taken: set[tuple[str, str, tuple[str, ...]]] = set()
        for worth, k, judge, kind, i, j in shortlist:
            if len(units) == batch:
                break
            group = planner.groups[k]
            if kind == "absolute":
                name = group.names[i]
                prompts = absolute_options[k].get((name, judge), [])
                if not prompts:
                    continue
                prompt = min(prompts, key=lambda p: (use[p], seeded_hash(ctx.seed, p, name)))
                members: tuple[str, ...] = (name,)
            else:
                avail = availability[k][judge]
                if planner.ordered and not bool(avail[i, j]):
                    i, j = j, i
                elif (
                    planner.ordered
                    and bool(avail[j, i])
                    and int(seeded_hash(ctx.seed, str(round_no), judge, group.names[i], group.names[j])[-1], 16) % 2
                ):
                    i, j = j, i
                a, b = group.names[i], group.names[j]
                ca, cb = group.candidate(a), group.candidate(b)
                prompts = [p for p in group.pair_prompts(a, b) if judge in planner.slots.askable(p, ca, cb)]
                if not prompts:
                    continue
                prompt = min(prompts, key=lambda p: (use[p], seeded_hash(ctx.seed, p, a, b)))
                members = (a, b)
            requests = self._unit(group, judge, kind, prompt, members)
            keys = {(r.judge, r.prompt_id, tuple(r.candidates)) for r in requests}
            if keys & taken:  # the other order of a pair already taken this round
                continue
            taken |= keys
            use[prompt] += 1
            units.append(requests)
            score = round(float(scores_of[k][i, j]), 6) if kind == "pairwise" else None
            selected.append([group.key, prompt, *members, *([] if kind == "pairwise" else [None]), score, judge, kind, round(worth, 9)])
        return units, selected
