"""Two systems compared through an anchor (``[compare] anchor``): both judged against the same anchor
on the same prompts — or only the candidate, when an earlier run holds the baseline's judgments
(``baseline_run``) — and the decision is about the difference of their win rates against the anchor.

On prompt ``j`` each system's win share against the anchor is ``w = P(win) + ½ P(tie)``, averaged over
the shown orders asked and the judges; the outcome ``X_j = (1 + w_cj − w_bj) / 2`` lies in [0, 1] and
``100 (2 X̄ − 1)`` is the difference of the two win rates in points. The anytime-valid confidence
sequence of X̄ (:mod:`orchestrator.gate.sequence`) is read after every round with the margin halved,
and reported on the difference's scale. With a ``baseline_run`` the candidate is asked in the shown
orders the baseline was, by the same judges, so a judge's position bias enters both sides alike.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ...errors import OrchestratorError
from ...gate.sequence import Decision
from ...paths import file_sha256
from ...raee.records import reference_wtl
from ...records.compare_config import CompareConfig
from ...records.config import RunConfig
from ...records.dataset import DATASET_ANCHOR, Dataset
from ...store import JudgmentRecord
from ..requests import PlanContext, seeded_hash
from .base import Plan, PlannerBase
from .compare import (
    completed_rounds,
    decision_of,
    decision_summary,
    describe,
    done_words,
    lost_outcomes,
    planned_order,
    prompt_batch,
    round_looks,
)

__all__ = [
    "AnchorJudgment",
    "AnchoredComparePlanner",
    "anchored_outcomes",
    "anchored_decision",
    "baseline_snapshot",
    "kept_judgments",
    "shares",
]

DEFAULT_TEMPLATE = "raee-pairwise-summary"


def anchor_name(anchor: str) -> str:
    return DATASET_ANCHOR if anchor == "dataset" else anchor


@dataclass(frozen=True)
class AnchorJudgment:
    """What a comparison through an anchor reads of one judgment: a judgment of this run, or one
    kept from the baseline run (:func:`baseline_snapshot`)."""

    judge: str
    prompt_id: str
    candidates: tuple[str, ...]
    """As shown, first shown first."""
    probs: dict[str, float]
    """The option probabilities of the first read position."""
    template: str | None = None

    @classmethod
    def of_record(cls, row: JudgmentRecord) -> AnchorJudgment:
        return cls(row.judge, row.prompt_id, tuple(row.candidates), row.probs[0], row.template)

    @classmethod
    def of_kept(cls, row: dict[str, Any]) -> AnchorJudgment:
        return cls(row["judge"], row["prompt_id"], tuple(row["candidates"]), row["probs"], row.get("template"))


def kept_judgments(kept: dict | None) -> list[AnchorJudgment] | None:
    """The baseline run's judgments a comparison keeps (its ``baseline`` attachment), or None without one."""
    return [AnchorJudgment.of_kept(row) for row in kept["payload"]["judgments"]] if kept else None


def shares(rows: Iterable[AnchorJudgment], system: str, anchor: str) -> dict[tuple[str, str], dict[bool, float]]:
    """``(prompt, judge) → {anchor shown first: the system's win share}`` from reference judgments
    of ``system`` against ``anchor``; repeats of one order are averaged."""
    found: dict[tuple[str, str], dict[bool, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if set(row.candidates) != {system, anchor}:
            continue
        _, win, tie, _, swapped = reference_wtl(list(row.candidates), anchor, row.probs)
        found[(row.prompt_id, row.judge)][not swapped].append(win + 0.5 * tie)
    return {key: {first: float(np.mean(v)) for first, v in orders.items()} for key, orders in found.items()}


def anchored_outcomes(
    order: list[str],
    candidate: dict[tuple[str, str], dict[bool, float]],
    baseline: dict[tuple[str, str], dict[bool, float]],
    lost: dict[str, tuple[float, int]] | None = None,
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """``(prompts, X, w_c, w_b)`` in ``order``: per prompt, over the judges whose candidate shares
    cover every shown order the baseline has, ``X = mean (1 + w_c − w_b) / 2`` with each side's share
    averaged over those orders (module docstring). Prompts without such a judge are left out. A
    system whose answer to a prompt could not be generated (``lost``, :func:`.compare.lost_outcomes`)
    lost that prompt to the anchor: its share there is 0."""
    lost = lost or {}
    no_candidate = {p for p, (x, _) in lost.items() if x <= 0.5}
    no_baseline = {p for p, (x, _) in lost.items() if x >= 0.5}
    prompts, x, wc, wb = [], [], [], []
    by_prompt: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for (prompt, judge), base in baseline.items():
        mine = {o: 0.0 for o in base} if prompt in no_candidate else candidate.get((prompt, judge))
        if mine and set(base) <= set(mine):
            by_prompt[prompt].append((float(np.mean([mine[o] for o in base])), float(np.mean(list(base.values())))))
    for (prompt, judge), mine in candidate.items():
        if prompt in no_baseline and prompt not in no_candidate:
            by_prompt[prompt].append((float(np.mean(list(mine.values()))), 0.0))
    for prompt in no_candidate & no_baseline:
        by_prompt[prompt] = [(0.0, 0.0)]
    for prompt in order:
        if prompt in by_prompt:
            c, b = np.mean(by_prompt[prompt], axis=0)
            prompts.append(prompt)
            x.append((1 + c - b) / 2)
            wc.append(c)
            wb.append(b)
    return prompts, np.array(x), np.array(wc), np.array(wb)


def anchored_decision(outcomes: np.ndarray, section: CompareConfig, looks: list[int] | None = None) -> Decision:
    """The decision on the difference of win rates (points): the sequence of X̄ with the margin
    halved, its difference and ends doubled."""
    return decision_of(outcomes, section, looks, scale=2.0)


def baseline_snapshot(path: Path, baseline: str, anchor: str) -> dict:
    """What a run keeps of its ``baseline_run`` (an attachment): the baseline's judgments against
    the anchor (judge, prompt, shown candidates, probabilities, template) and the file's sha256.

    Raises:
        OrchestratorError: the file is not a run file, or holds no judgment of the baseline against the anchor."""
    from ...store import open_run

    if not Path(path).is_file():
        raise OrchestratorError(f"compare.baseline_run: {path}: no such run file")
    with open_run(path, write=False) as store:
        rows = [r for r in store.judgments() if set(r.candidates) == {baseline, anchor} and r.kind in ("reference", "pairwise")]
    if not rows:
        raise OrchestratorError(f"compare.baseline_run: {path} holds no judgment of {baseline!r} against the anchor {anchor!r}")
    judgments = [{**asdict(AnchorJudgment.of_record(r)), "candidates": list(r.candidates)} for r in rows]
    return {
        "source": str(path),
        "digest": file_sha256(Path(path)),
        "payload": {"baseline": baseline, "anchor": anchor, "judgments": judgments},
    }


ANSWERING = ("provider", "model", "logprobs", "top_logprobs", "samples", "prefill", "params")
"""What about a judge decides its answers (:func:`orchestrator.judging.cache.judge_identity`
without the address, which may move between machines)."""


def check_baseline_judges(config: RunConfig, identities: dict[str, dict | None]) -> None:
    """Refuse a ``baseline_run`` whose judges answered as another model than the profiles of the
    same names would now (an edited profile): the candidate would be judged by a different judge
    than the baseline was. ``identities``: each of this run's judges' identity now; the baseline
    run's are those it recorded (a run answered from a log, or made before identities were
    recorded, has none to compare).

    Raises:
        OrchestratorError: one line naming the judge and what changed."""
    from ...secrets import redact_json
    from ...store import open_run
    from ...store.identities import read_identities

    section = config.compare
    if section is None or section.baseline_run is None or not Path(section.baseline_run).is_file():
        return
    with open_run(section.baseline_run, write=False) as store:
        history = read_identities(store)
    for judge, current in identities.items():
        then = history.at(judge, float("inf")) if history else None
        now = None if current is None else json.loads(json.dumps(redact_json(current), sort_keys=True, default=str))  # as stored
        if then is None or now is None:
            continue
        changed = [field for field in ANSWERING if then.get(field) != now.get(field)]
        if changed:
            field = changed[0]
            raise OrchestratorError(
                f"compare.baseline_run: judge {judge!r} answered the baseline in {section.baseline_run} with {field} = "
                f"{then.get(field)!r}; its profile now says {now.get(field)!r}: the candidate would be judged by another judge "
                "than the baseline was. Restore the profile, or judge the baseline again in this run (drop baseline_run)"
            )


class AnchoredComparePlanner(PlannerBase):
    """The next ``selection.batch`` prompts of the seeded order, each a unit of the candidate's (and,
    without a ``baseline_run``, the baseline's) requests against the anchor for every judge; stops
    when the decision is reached."""

    kind, role, done = "compare", "reference", "every prompt both systems were judged on against the anchor has been judged"

    section: CompareConfig

    def __init__(self, ctx: PlanContext):
        super().__init__(ctx)
        section = self.section
        assert section.anchor is not None
        self.anchor = anchor_name(section.anchor)
        kept = ctx.attachment("baseline") if ctx.attachment is not None else None
        self.baseline_rows = kept_judgments(kept)
        self.baseline_orders = _baseline_orders(self.baseline_rows, section.baseline, self.anchor)  # fixed: read once
        self.order = anchored_order(ctx.config, ctx.dataset, self.baseline_rows)
        self.read: list[AnchorJudgment] = []

    @staticmethod
    def roles(config: RunConfig) -> dict[str, str]:
        assert config.compare is not None
        return {"reference": config.compare.template or _baseline_template(config) or DEFAULT_TEMPLATE}

    @staticmethod
    def check(config: RunConfig, dataset: Dataset, templates: dict) -> None:
        section = config.compare
        assert section is not None and section.anchor is not None
        template = templates["reference"]
        if template.kind != "reference":
            raise OrchestratorError(f"compare.template: {template.name!r} is a {template.kind} template, not a reference-anchored one")
        systems = sorted({c for by in dataset.responses.values() for c in by})
        needed = ("candidate",) if section.baseline_run is not None else ("candidate", "baseline")
        for field in needed:
            if getattr(section, field) not in systems:
                raise OrchestratorError(
                    f"compare.{field}: {getattr(section, field)!r} has no responses (candidates: {', '.join(systems[:8])})"
                )
        if section.anchor != "dataset" and section.anchor not in systems:
            raise OrchestratorError(f'compare.anchor: {section.anchor!r} is neither "dataset" nor a system with responses')
        snapshot = None
        if section.baseline_run is not None:
            snapshot = kept_judgments(baseline_snapshot(section.baseline_run, section.baseline, anchor_name(section.anchor)))
            assert snapshot is not None
            used = sorted({str(r.template) for r in snapshot})
            if template.name not in used:
                raise OrchestratorError(
                    f"compare.baseline_run: {section.baseline_run} judged {section.baseline!r} with {', '.join(used)}; this run "
                    f"uses {template.name!r}: win shares from two templates are not comparable (set compare.template)"
                )
            judges = {r.judge for r in snapshot}
            if not judges & set(config.judging.judges):
                raise OrchestratorError(
                    f"compare.baseline_run: {section.baseline_run}'s judges ({', '.join(sorted(judges))}) are not this run's "
                    f"({', '.join(config.judging.judges)}): the candidate must be judged by the baseline's judges"
                )
        if not anchored_order(config, dataset, snapshot):
            raise OrchestratorError(
                f"compare: no prompt has the anchor's text, {section.candidate!r}'s answer and "
                + ("the baseline's judgment in the baseline run" if snapshot else f"{section.baseline!r}'s answer")
            )

    @staticmethod
    def unit_calls(config: RunConfig, n_judges: int) -> tuple[str, int]:
        assert config.compare is not None
        return "reference", (1 if config.compare.baseline_run is not None else 4) * n_judges

    @staticmethod
    def possible_requests(config: RunConfig, dataset: Dataset, n_judges: int) -> int:
        assert config.compare is not None
        per_prompt = 2 if config.compare.baseline_run is not None else 4
        return per_prompt * n_judges * len(anchored_order(config, dataset, None))

    @staticmethod
    def shown_texts(config: RunConfig, dataset: Dataset, prompt_id: str) -> list[tuple[str, str]]:
        assert config.compare is not None and config.compare.anchor is not None
        by = dataset.responses.get(prompt_id, {})
        anchor = _anchor_text(config.compare.anchor, dataset, prompt_id)
        systems = (config.compare.candidate,) if config.compare.baseline_run else (config.compare.candidate, config.compare.baseline)
        return [(anchor, by[s].text) for s in systems if s in by and anchor]

    def add(self, row: JudgmentRecord) -> None:
        if row.kind == "reference":
            self.rows.append(row)
            self.read.append(AnchorJudgment.of_record(row))  # what the shares read, made once per judgment

    def lost(self, cutoff: int | None = None) -> dict[str, tuple[float, int]]:
        """The prompts a system of this run lost for want of an answer (rounds ``<= cutoff``)."""
        if self.ctx.answers is None:
            return {}
        return lost_outcomes(self.ctx.answers.failure_rounds, self.section.candidate, self.section.baseline, cutoff)

    def outcomes(self, cutoff: int | None = None) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        rows = self.read if cutoff is None else [a for a, r in zip(self.read, self.rows) if r.round <= cutoff]
        baseline = self.baseline_rows if self.baseline_rows is not None else rows
        return anchored_outcomes(
            self.order,
            shares(rows, self.section.candidate, self.anchor),
            shares(baseline, self.section.baseline, self.anchor),
            self.lost(cutoff),
        )

    def decision(self, cutoff: int | None = None) -> Decision:
        rows = self.rows if cutoff is None else [r for r in self.rows if r.round <= cutoff]
        prompts, x, _, _ = self.outcomes(cutoff)
        return anchored_decision(x, self.section, round_looks(prompts, completed_rounds(rows, self.lost(cutoff))))

    def stop_before(self, cutoff: int) -> str:
        found = self.decision(cutoff)
        if found.decision == "not yet known":
            return ""
        said = describe(found, self.section, self.anchor)
        return f"decided after {found.at} prompts: {self.section.candidate} is {said}"

    def next_round(self, round_no: int, cutoff: int) -> Plan | str:
        ctx = self.ctx
        c, b, a = self.section.candidate, self.section.baseline, self.anchor

        def unit(prompt: str) -> list:
            out = []
            for j in ctx.judges_for(prompt, (a, c), "reference"):
                if self.baseline_rows is not None:  # the candidate in the orders the baseline was shown in
                    wanted = [(a, c) if first else (c, a) for first in sorted(self.baseline_orders.get((prompt, j), ()), reverse=True)]
                else:
                    wanted = [(a, c), (c, a), (a, b), (b, a)]
                out += [ctx.request(j, "reference", prompt, list(shown)) for shown in wanted if (j, prompt, shown) not in ctx.asked]
            return out

        done = done_words(self.order, self.section, self.done)
        return prompt_batch(planned_order(self.order, self.section), unit, "reference", ctx.config.selection.batch, (c, b), done)

    def summary(self, cutoff: int | None) -> dict:
        return decision_summary(self.decision(cutoff).decision, self.section.candidate, self.section.baseline)


def _anchor_text(anchor: str, dataset: Dataset, prompt_id: str) -> str | None:
    if anchor == "dataset":
        row = dataset.prompts.get(prompt_id)
        return row.reference if row is not None else None
    found = dataset.responses.get(prompt_id, {}).get(anchor)
    return found.text if found is not None else None


def _baseline_orders(rows: list[AnchorJudgment] | None, baseline: str, anchor: str) -> dict[tuple[str, str], set[bool]]:
    """``(prompt, judge) → {anchor shown first?}`` of the baseline run's judgments."""
    out: dict[tuple[str, str], set[bool]] = defaultdict(set)
    for row in rows or []:
        out[(row.prompt_id, row.judge)].add(row.candidates[0] == anchor)
    return out


def anchored_order(config: RunConfig, dataset: Dataset, baseline_rows: list[AnchorJudgment] | None) -> list[str]:
    """The prompts in the order they are asked (seeded, random: unbiased at any stop): those with the
    anchor's text and the candidate's answer, and the baseline's answer — or, with a baseline run,
    a judgment of the baseline by one of this run's judges."""
    section = config.compare
    assert section is not None and section.anchor is not None
    judged = {r.prompt_id for r in baseline_rows if r.judge in config.judging.judges} if baseline_rows is not None else None
    prompts = [
        p
        for p, by in dataset.responses.items()
        if section.candidate in by
        and _anchor_text(section.anchor, dataset, p)
        and (p in judged if judged is not None else (section.baseline in by or section.baseline_run is not None))
    ]
    return sorted(prompts, key=lambda p: seeded_hash(config.seed, "compare-order", p))


def _baseline_template(config: RunConfig) -> str | None:
    """The template the baseline run judged the baseline with (its most common), when it names one."""
    section = config.compare
    if section is None or section.baseline_run is None or section.anchor is None or not Path(section.baseline_run).is_file():
        return None
    try:
        rows = kept_judgments(baseline_snapshot(section.baseline_run, section.baseline, anchor_name(section.anchor))) or []
    except OrchestratorError:
        return None
    names = [r.template for r in rows if r.template]
    return max(set(names), key=names.count) if names else None
