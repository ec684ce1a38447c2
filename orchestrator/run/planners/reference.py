"""Reference-anchored campaigns (RAEE paper, Algorithm 1): every candidate judged against one fixed
anchor — each prompt's reference text or a designated candidate — on all prompts in a seeded order,
or adaptively (``allocation = "adaptive"``): every candidate walks the same seeded prompt order and
each round deepens the candidates where one more prompt lowers the expected misordered pairs and
interval width most (:mod:`orchestrator.raee.allocation`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import numpy as np

from ...errors import OrchestratorError
from ...raee import outcomes, raee_arrays, reference_wtl
from ...raee.allocation import (
    SETTLED_Z,
    allocation_gains,
    claim_z,
    leaderboard_state,
    lockstep_choice,
    settled_leaderboard,
    slice_gains,
    stratified_order,
)
from ...records.config import ReferenceConfig, RunConfig
from ...records.dataset import Dataset
from ...store import JudgmentRecord, PlannedRequest
from ..requests import DATASET_ANCHOR, PlanContext, seeded_hash
from .base import Plan, PlannerBase, no_summary
from .reference_board import BoardWatch

__all__ = ["ReferencePlanner", "reference_items"]


def reference_items(dataset: Dataset, anchor: str, seed: int) -> tuple[str, list[str], list[str], dict[str, list[str]]]:
    """A reference campaign's ``(anchor name, candidates, prompts in seeded order, candidate → its
    prompts in that order)``: the prompts with an anchor text, the candidates that answered them.

    Raises:
        OrchestratorError: the anchor has no text anywhere, or nothing is left to judge.
    """
    if anchor == "dataset":
        name = DATASET_ANCHOR
        prompts = [p for p, row in dataset.prompts.items() if row.reference]
        if not prompts:
            raise OrchestratorError(
                'reference.anchor = "dataset" but no prompt has a "reference" text; '
                "add one to prompts.jsonl or name a candidate as the anchor"
            )
        cands = sorted({c for p in prompts for c in dataset.responses.get(p, {})})
        if DATASET_ANCHOR in cands:
            raise OrchestratorError(f"a candidate is named {DATASET_ANCHOR!r}, the name of the dataset's reference anchor; rename it")
    else:
        name = anchor
        prompts = [p for p, by in dataset.responses.items() if anchor in by]
        if not prompts:
            raise OrchestratorError(f'reference.anchor: {anchor!r} is neither "dataset" nor a candidate with responses')
        cands = sorted({c for p in prompts for c in dataset.responses[p]} - {anchor})
    if not cands:
        raise OrchestratorError("reference campaign: no candidate answered a prompt that has an anchor text")
    shuffled = sorted(prompts, key=lambda p: seeded_hash(seed, "reference-order", p))
    # every prefix of the order holds each prompt category in proportion (a cut leaderboard, and
    # each per-category one, sees every category); one category or none: the shuffled order
    category = {p: dataset.prompts[p].category for p in prompts if p in dataset.prompts}
    offsets = {c: int(seeded_hash(seed, "reference-stratum", c)[:8], 16) / 16**8 for c in set(category.values())}
    order = stratified_order(shuffled, category, offsets)
    per_candidate = {c: [p for p in order if c in dataset.responses.get(p, {})] for c in cands}
    return name, cands, order, per_candidate


class ReferencePlanner(PlannerBase):
    """A unit is one (prompt, candidate) for every judge, repeat and (with ``both_orders``) order."""

    kind, role, done = "reference", "reference", "every candidate has been judged on every prompt"

    section: ReferenceConfig

    def __init__(self, ctx: PlanContext):
        super().__init__(ctx)
        self.anchor, self.candidates, self.order, self.prompts = reference_items(ctx.dataset, self.section.anchor, ctx.seed)
        self._values: list[tuple[int, str, str, float]] = []
        self._slices: tuple[dict[str, int], np.ndarray, np.ndarray] | None = None  # prompt → category index, per column, per candidate
        # with a board and the adaptive allocation, the stopping claims are about the board's models
        kept = ctx.attachment("board") if ctx.attachment is not None and self.section.board is not None else None
        self._board = (
            BoardWatch(kept["payload"], self.prompts, self.section.warmup_prompts, self.section.resolution)
            if kept is not None and self.section.allocation == "adaptive"
            else None
        )

    @staticmethod
    def check(config: RunConfig, dataset: Dataset, templates: dict) -> None:
        assert config.reference is not None
        template = templates["reference"]
        if template.kind != "reference":
            raise OrchestratorError(f"reference.template: {template.name!r} is a {template.kind} template, not a reference-anchored one")
        reference_items(dataset, config.reference.anchor, config.seed)

    @staticmethod
    def unit_calls(config: RunConfig, n_judges: int) -> tuple[str, int]:
        ref = config.reference
        assert ref is not None
        return "reference", n_judges * ref.repeats * (2 if ref.both_orders else 1)

    @staticmethod
    def possible_requests(config: RunConfig, dataset: Dataset, n_judges: int) -> int:
        ref = config.reference
        assert ref is not None
        _, _, _, per_candidate = reference_items(dataset, ref.anchor, config.seed)
        return n_judges * ref.repeats * (2 if ref.both_orders else 1) * sum(len(ps) for ps in per_candidate.values())

    @staticmethod
    def shown_texts(config: RunConfig, dataset: Dataset, prompt_id: str) -> list[tuple[str, str]]:
        assert config.reference is not None
        anchor = reference_items(dataset, config.reference.anchor, config.seed)[0]
        by = dataset.responses[prompt_id]
        text = dataset.prompts[prompt_id].reference if anchor == DATASET_ANCHOR else getattr(by.get(anchor), "text", None)
        return [(text, by[c].text) for c in sorted(by) if c != anchor] if text else []

    def add(self, row: JudgmentRecord) -> None:
        if row.kind != "reference":
            return
        cand, win, tie, loss, _ = reference_wtl(row.candidates, self.anchor, row.probs[0])
        if win + tie + loss > 0:  # the outcome once per judgment, not once per round (rounds read them all)
            value = float(outcomes(np.array([win]), np.array([tie]), np.array([loss]), soft=self.section.soft)[0])
            self._values.append((row.round, cand, row.prompt_id, value))

    def summary(self, cutoff: int | None) -> dict:
        est = self.estimates(cutoff)
        return no_summary(sorted(est, key=lambda c: (-est[c]["elo"], c))[:5])

    def _outcomes(self, cutoff: int | None) -> Iterator[tuple[str, str, float]]:
        """``(candidate, prompt, outcome)`` of every committed reference judgment of rounds
        ``<= cutoff`` (soft or argmax as the campaign says; abstentions left out)."""
        for round_no, cand, prompt, value in self._values:
            if cutoff is None or round_no <= cutoff:
                yield cand, prompt, value

    def estimates(self, cutoff: int | None) -> dict[str, dict[str, float]]:
        """Per candidate, from committed reference judgments of rounds ``<= cutoff``: the run-averaged
        outcome over its prompts and judges, with the Jeffreys interval on the Elo scale."""
        items: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for cand, prompt, value in self._outcomes(cutoff):
            items[cand][prompt].append(value)
        out: dict[str, dict[str, float]] = {}
        if not items:
            return out
        names = sorted(items)
        n = np.array([len(items[c]) for c in names], dtype=float)
        total = np.array([sum(sum(v) / len(v) for v in items[c].values()) for c in names])  # plain Python: tiny lists
        est = raee_arrays(total, n)
        for k, c in enumerate(names):
            out[c] = {"n": float(n[k]), "elo": float(est["elo"][k]), "low": float(est["elo_low"][k]), "high": float(est["elo_high"][k])}
        return out

    def next_round(self, round_no: int, cutoff: int) -> Plan | str:
        """The next reference requests: a unit is one (prompt, candidate) for every judge, repeat and
        (with ``both_orders``) order; units are planned and budgeted whole."""
        ref, ctx = self.section, self.ctx
        # every judge is asked at once: an item planned for any judge was planned
        asked = {(p, cands[1]) for _, p, cands in ctx.asked if len(cands) == 2 and cands[0] == self.anchor}

        def unit(prompt: str, cand: str) -> list[PlannedRequest]:
            orders = ([self.anchor, cand], [cand, self.anchor]) if ref.both_orders else ([self.anchor, cand],)
            judges = ctx.judges_for(prompt, tuple(orders[0]), "reference")
            return [ctx.request(jn, "reference", prompt, shown, r) for jn in judges for r in range(ref.repeats) for shown in orders]

        units: list[list[PlannedRequest]] = []
        selected: list[list] = []
        if ref.allocation == "all":
            taken = 0
            for prompt in self.order:
                todo = [c for c in self.candidates if c in ctx.dataset.responses.get(prompt, {}) and (prompt, c) not in asked]
                if not todo:
                    continue
                for c in todo:
                    units.append(unit(prompt, c))
                    selected.append([self.anchor, prompt, c, None])
                taken += 1
                if taken == ctx.config.selection.batch:
                    break
            return Plan("reference", units, selected) if units else self.done
        left = {c: [p for p in self.prompts[c] if (p, c) not in asked] for c in self.candidates}
        done = {c: len(self.prompts[c]) - len(left[c]) for c in self.candidates}
        warm = [c for c in self.candidates if left[c] and done[c] < ref.warmup_prompts]
        if warm:
            for c in warm:
                for prompt in left[c][: ref.warmup_prompts - done[c]]:
                    units.append(unit(prompt, c))
                    selected.append([self.anchor, prompt, c, None])
            return Plan("reference", units, selected) if units else self.done
        if self._board is not None:
            return self._board_round(cutoff, left, done, unit)
        open_ = [c for c in self.candidates if left[c]]
        table = self._table(cutoff)
        estimate, sigma, judged = leaderboard_state(table)
        depth = np.array([done[c] for c in self.candidates], dtype=float)
        population = np.array([len(self.prompts[c]) for c in self.candidates], dtype=float)
        if ref.resolution is not None:
            # on what is committed (a prompt in flight tells nothing yet)
            # the claims hold together: each of the M − 1 at 5% / (M − 1), so that any one is wrong with at most 5%
            z = claim_z(len(self.candidates))
            settled = settled_leaderboard(self.candidates, estimate, sigma, judged, population, ref.resolution / 100, z=z)
            if settled is not None:
                ties = "; ".join(" ≈ ".join(pair) for pair in settled) or "none"
                return (
                    f"every neighbour is ordered or within {ref.resolution:g} win-rate points (treated as tied: {ties}); "
                    f"the {len(self.candidates) - 1} claims hold together with 95% confidence (each at 5% / {len(self.candidates) - 1}; "
                    "the win-rate intervals `rank` prints are 95% each, not together)"
                )
        else:
            est = self.estimates(cutoff)
            # one candidate has no neighbour: "separated from its neighbours" would be true of any
            # single candidate and stop after the warm-up; it spends its budget instead
            if len(self.candidates) > 1 and open_ and est and set(open_) <= set(est) and self._separated(est, open_):
                return "every candidate's Elo interval is separated from its neighbours'"
        if ref.allocation == "adaptive":  # lockstep: the open candidates at one depth, the settled ones stop
            resolution = ref.resolution / 100 if ref.resolution is not None else None
            z = claim_z(len(self.candidates)) if resolution is not None else SETTLED_Z
            for k in lockstep_choice(estimate, sigma, depth, population, ctx.config.selection.batch, z=z, resolution=resolution):
                c = self.candidates[int(k)]
                units.append(unit(left[c][0], c))
                selected.append([self.anchor, left[c][0], c, None])
            return Plan("reference", units, selected) if units else self.done
        values = allocation_gains(estimate, sigma, depth, population)
        if ref.slice_weight:
            values = values + ref.slice_weight * self._slice_gains(table, left)
        gains = {c: float(values[k]) for k, c in enumerate(self.candidates)}
        for c in sorted(open_, key=lambda c: (-gains[c], done[c], seeded_hash(ctx.seed, round_no, c)))[: ctx.config.selection.batch]:
            units.append(unit(left[c][0], c))
            selected.append([self.anchor, left[c][0], c, round(gains[c], 6)])
        return Plan("reference", units, selected) if units else self.done

    def _board_round(self, cutoff: int, left: dict[str, list[str]], done: dict[str, int], unit) -> Plan | str:
        """A round of an adaptive campaign placed on a board: the claims due are read
        (:class:`~.reference_board.BoardWatch`); the candidates not yet settled share the batch,
        the shallowest first, each walking its own seeded order."""
        assert self._board is not None
        table = self._table(cutoff)  # judges and repeats averaged per prompt
        committed = {
            c: [(self.order[j], float(table[k, j])) for j in np.flatnonzero(~np.isnan(table[k]))] for k, c in enumerate(self.candidates)
        }
        self._board.look(committed)
        reason = self._board.reason()
        if reason is not None:
            return reason
        open_ = sorted((c for c in self.candidates if left[c] and not self._board.settled(c)), key=lambda c: (done[c], c))
        batch = self.ctx.config.selection.batch
        share = max(1, batch // max(len(open_), 1))
        units: list[list[PlannedRequest]] = []
        selected: list[list] = []
        for c in open_:
            for prompt in left[c][:share]:
                units.append(unit(prompt, c))
                selected.append([self.anchor, prompt, c, None])
            if len(units) >= batch:
                break
        if units:
            return Plan("reference", units, selected)
        if self._board.claims:
            return f"every candidate is placed on the board or judged on every prompt: {self._board.claim_words()}"
        return self.done

    @staticmethod
    def _separated(est: dict[str, dict[str, float]], open_: list[str]) -> bool:
        """No open candidate's Elo interval overlaps a neighbour's (the campaign's stopping rule)."""
        ranked = sorted(est, key=lambda c: (est[c]["elo"], c))
        for k, c in enumerate(ranked):
            if c not in open_:
                continue
            for o in ranked[max(0, k - 1) : k] + ranked[k + 1 : k + 2]:
                if min(est[c]["high"], est[o]["high"]) > max(est[c]["low"], est[o]["low"]):
                    return False
        return True

    def _slice_gains(self, table: np.ndarray, left: dict[str, list[str]]) -> np.ndarray | float:
        """:func:`~orchestrator.raee.allocation.slice_gains` of each candidate's next prompt, or 0
        when the prompts have fewer than two categories."""
        if self._slices is None:
            prompts = self.ctx.dataset.prompts
            names = sorted({prompts[p].category if p in prompts else None for p in self.order}, key=str)
            index = {p: names.index(prompts[p].category if p in prompts else None) for p in self.order}
            population = np.zeros((len(self.candidates), len(names)))
            for k, c in enumerate(self.candidates):
                np.add.at(population[k], [index[p] for p in self.prompts[c]], 1.0)
            self._slices = (
                (index, np.array([index[p] for p in self.order]), population) if len(names) > 1 else ({}, np.zeros(0), population)
            )
        index, slices, population = self._slices
        if not index:
            return 0.0
        next_slice = np.array([index[left[c][0]] if left[c] else -1 for c in self.candidates])
        return slice_gains(table, slices, next_slice, population)

    def _table(self, cutoff: int) -> np.ndarray:
        """The committed judgments as ``candidates × prompts`` (``self.order``'s columns), judges and
        repeats averaged per prompt, NaN where not judged."""
        prompt_index = {p: k for k, p in enumerate(self.order)}
        row_of = {c: k for k, c in enumerate(self.candidates)}
        sums = np.zeros((len(self.candidates), len(self.order)))
        counts = np.zeros_like(sums)
        for cand, prompt, value in self._outcomes(cutoff):
            if cand in row_of:
                sums[row_of[cand], prompt_index[prompt]] += value
                counts[row_of[cand], prompt_index[prompt]] += 1
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
