"""Ranking groups of a run: which responses share one posterior, and the observations a group's
judgments give it (PoE §3: comparative experts, absolute experts, permutation debiasing §3.3).

Scopes (DESIGN.md "Domain model"): ``per_prompt`` (a group per prompt), ``global`` (candidates
across prompts, one group) and ``items`` (every response its own item, one group). The live engine,
``orchestrator rank`` and the replay of an export all group and fit through this module, so they
agree on every ranking.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from ..errors import OrchestratorError
from ..poe import Observations, PoEConfig, Posterior, absolute_moments, fit_with_reliability, permutation_debias, threads_for
from ..poe.covariates import TEXT_CONTROLS, answer_covariates, comparison_covariates, self_covariate, text_features
from ..poe.stated import calibrate_stated
from ..poe.verdicts import is_verdict
from ..records.dataset import Dataset
from ..records.log import grade_vector, level_distribution
from ..store import JudgmentRecord

__all__ = [
    "ITEMS",
    "ITEM_SEPARATOR",
    "item_name",
    "Group",
    "build_groups_for",
    "group_observations",
    "fit_group",
    "judge_names",
    "fit_groups",
    "split_by_group",
]


ITEM_SEPARATOR = "::"


def item_name(prompt_id: str, candidate: str) -> str:
    """The ``items`` scope's name of a response, ``prompt::candidate``, injective by construction:
    a ``:`` or ``\\`` inside either part is escaped with a backslash, so ``a::b`` + ``c`` and ``a`` +
    ``b::c`` stay two items (``a\\:\\:b::c`` and ``a::b\\:\\:c``)."""

    def escape(part: str) -> str:
        return part.replace("\\", "\\\\").replace(":", "\\:")

    return f"{escape(prompt_id)}{ITEM_SEPARATOR}{escape(candidate)}"


ITEMS = "items"
"""The key of the one group of the ``items`` scope."""


@dataclass
class Group:
    """One posterior: the responses of a prompt (``per_prompt``), all candidates (``global``), or
    every response as its own item (``items``, named ``prompt::candidate``, see :func:`item_name`)."""

    key: str
    names: list[str]
    index: dict[str, int]
    prompts: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """``global``: unordered candidate pair (sorted) → prompts where both responded."""
    origin: dict[str, tuple[str, str]] = field(default_factory=dict)
    """``items``: item name → (prompt, candidate)."""
    features: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    """``global``: (prompt, candidate) → its answer's length and style counts (controls;
    :func:`orchestrator.poe.covariates.text_features`)."""

    def member(self, prompt_id: str, candidate: str) -> str | None:
        """The name under which a prompt's response is ranked here (None: not a member)."""
        if self.key == ITEMS:
            name: str | None = item_name(prompt_id, candidate)
        elif self.key == "global":
            name = candidate
        else:
            name = candidate if prompt_id == self.key else None
        return name if name is not None and name in self.index else None

    def candidate(self, name: str) -> str:
        """The candidate a member stands for (itself, except for items)."""
        return self.origin[name][1] if self.key == ITEMS else name

    def pair_prompts(self, a: str, b: str) -> list[str]:
        """Prompts on which members ``a`` and ``b`` can be compared (items: only their own prompt,
        and only when it is the same one)."""
        if self.key == ITEMS:
            (pa, _), (pb, _) = self.origin[a], self.origin[b]
            return [pa] if pa == pb else []
        if self.key == "global":
            return self.prompts.get((min(a, b), max(a, b)), [])
        return [self.key]

    def absolute_prompts(self, name: str, dataset: Dataset) -> list[str]:
        """Prompts on which a member can be scored alone."""
        if self.key == ITEMS:
            return [self.origin[name][0]]
        if self.key == "global":
            return [p for p, by_cand in dataset.responses.items() if name in by_cand]
        return [self.key]


def build_groups_for(dataset: Dataset, scope: str) -> list[Group]:
    """The posteriors of a run: one per prompt, one over all candidates, or one over all responses."""
    if scope == "per_prompt":
        out = []
        for pid, by_cand in dataset.responses.items():
            names = sorted(by_cand)
            out.append(Group(pid, names, {n: k for k, n in enumerate(names)}))
        return out
    if scope == "global":
        names = sorted({c for by_cand in dataset.responses.values() for c in by_cand})
        prompts: dict[tuple[str, str], list[str]] = defaultdict(list)
        for pid, by_cand in dataset.responses.items():
            cands = sorted(by_cand)
            for x in range(len(cands)):
                for y in range(x + 1, len(cands)):
                    prompts[(cands[x], cands[y])].append(pid)
        features = {(pid, c): text_features(r.text) for pid, by_cand in dataset.responses.items() for c, r in by_cand.items()}
        return [Group("global", names, {n: k for k, n in enumerate(names)}, dict(prompts), features=features)]
    if scope == ITEMS:
        origin = {item_name(pid, c): (pid, c) for pid, by_cand in dataset.responses.items() for c in sorted(by_cand)}
        names = list(origin)
        return [Group(ITEMS, names, {n: k for k, n in enumerate(names)}, origin=origin)]
    raise OrchestratorError(f"scope {scope!r} is not supported by the loop (use per_prompt, global or items)")


def judge_names(judgments: list[JudgmentRecord]) -> list[str]:
    """The judges of a group's judgments, sorted: index ``j`` of the per-judge parameters."""
    return sorted({row.judge for row in judgments})


class GroupObservations(NamedTuple):
    """What :func:`group_observations` reads from a group's judgments."""

    comparisons: list[tuple]
    absolutes: list[tuple]
    grades: dict[int, list[float]]


def typical_answers(features: dict[tuple[str, str], dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per prompt, the mean of each text feature over its answers: what an absolute judgment's
    answer is compared with (:func:`~orchestrator.poe.covariates.answer_covariates`)."""
    sums: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    for (prompt, _), values in features.items():
        total = sums.setdefault(prompt, {})
        for name, value in values.items():
            total[name] = total.get(name, 0.0) + value
        counts[prompt] = counts.get(prompt, 0) + 1
    return {prompt: {name: value / counts[prompt] for name, value in total.items()} for prompt, total in sums.items()}


def _tempered(p_first: float, judge: str, temperatures: dict[str, float] | None) -> float:
    """``σ(logit(p)/T)`` with the judge's temperature (``"*"``: every judge's; none: ``p``)."""
    if not temperatures:
        return p_first
    t = temperatures.get(judge, temperatures.get("*", 1.0))
    q = min(max(p_first, 1e-12), 1 - 1e-12)
    return 1.0 / (1.0 + math.exp(-math.log(q / (1 - q)) / t))


def _pair_covariates(
    row: JudgmentRecord,
    controls: tuple[str, ...],
    features: dict[tuple[str, str], dict[str, float]] | None,
    families: dict[str, str] | None,
) -> tuple:
    """A comparison's covariates in ``controls`` order: the text features' normalised differences,
    and for ``self`` whether the judge is of the first or the second candidate's family."""
    fa, fb = (features.get((row.prompt_id, c), {}) if features else {} for c in row.candidates)
    return tuple(
        self_covariate(row.judge, row.candidates[0], row.candidates[1], families or {}) if name == "self" else value
        for name, value in zip(controls, comparison_covariates(fa, fb, controls))
    )


def group_observations(
    group: Group,
    judgments: list[JudgmentRecord],
    *,
    debias: str,
    with_absolute: bool = True,
    judges: dict[str, int] | None = None,
    temperatures: dict[str, float] | None = None,
    controls: tuple[str, ...] = (),
    families: dict[str, str] | None = None,
) -> GroupObservations:
    """Comparisons ``(first, second, P(first better), judge[, *covariates])``, absolutes
    ``(item, mean, var, judge)`` and the graded verdicts of comparisons that have one (their index
    → five probabilities, :data:`~orchestrator.records.log.GRADES` order) of a group from committed
    judgment rows (store format), in the given order; ``judges`` maps judge names to parameter indices (None: every judge is judge 0,
    shared parameters). With ``controls`` each comparison carries its covariates: the normalised
    differences of :func:`~orchestrator.poe.covariates.comparison_covariates` from the group's
    ``features`` ((prompt, candidate) → text features) and, for ``self``, :func:`~orchestrator.poe.covariates.self_covariate`
    from ``families``; each absolute judgment its answer's covariates against the prompt's typical
    answer (:func:`~orchestrator.poe.covariates.answer_covariates`).

    With ``permutation`` debiasing the two orders of a pair (same judge and prompt) are combined
    (PoE §3.3; graded verdicts as ``½ (q_ij + reversed q_ji)``); an order whose partner failed
    permanently is used alone. ``temperatures`` (judge →
    ``T``, ``"*"`` for every judge) scales each pairwise probability to ``σ(logit(p)/T)`` first
    (PoE App. B; :mod:`orchestrator.run.calibration`).
    """
    comparisons: list[tuple] = []
    absolutes: list[tuple] = []
    grades: dict[int, list[float]] = {}
    features = group.features
    typical: dict[str, dict[str, float]] | None = None
    waiting: dict[tuple[str, str, str, str], float] = {}
    combined: dict[tuple[str, str, str, str], int] = {}
    for row in judgments:
        members = [group.member(row.prompt_id, c) for c in row.candidates]
        if any(m is None for m in members):
            continue
        cands: list[str] = members  # type: ignore[assignment]
        judge = judges[row.judge] if judges is not None else 0
        if row.kind == "pairwise" and row.p_first is not None:
            p_first = _tempered(row.p_first, row.judge, temperatures)
            graded = grade_vector(row.probs[0]) if row.probs else None
            a, b = cands
            extra = _pair_covariates(row, controls, features, families) if controls else ()
            if debias == "permutation":
                back = (row.judge, row.prompt_id, b, a)
                if back in waiting:
                    p_back = waiting.pop(back)
                    slot = combined.pop(back)
                    flipped = tuple(-v for v in extra)  # the slot keeps the earlier order (b first)
                    comparisons[slot] = (group.index[b], group.index[a], float(permutation_debias(p_back, p_first)), judge, *flipped)
                    earlier = grades.pop(slot, None)
                    if earlier is not None and graded is not None:  # (one order graded alone: the combined p)
                        grades[slot] = [0.5 * (x + y) for x, y in zip(earlier, graded[::-1])]
                    continue
                waiting[(row.judge, row.prompt_id, a, b)] = p_first
                combined[(row.judge, row.prompt_id, a, b)] = len(comparisons)
            if graded is not None:
                grades[len(comparisons)] = graded
            comparisons.append((group.index[a], group.index[b], float(p_first), judge, *extra))
        elif row.kind == "absolute" and with_absolute:
            if sum(row.probs[0].values()) <= 0:
                continue
            levels, weights = level_distribution(row.probs[0])
            mean, var = absolute_moments(torch.tensor([weights], dtype=torch.float64), torch.tensor(levels, dtype=torch.float64))
            covariates: tuple = ()
            if controls:
                typical = typical if typical is not None else typical_answers(features or {})
                answer = features.get((row.prompt_id, row.candidates[0]), {}) if features else {}
                covariates = answer_covariates(
                    row.judge, row.candidates[0], answer, typical.get(row.prompt_id, {}), controls, families or {}
                )
            absolutes.append((group.index[cands[0]], float(mean[0]), float(var[0]), judge, *covariates))
    return GroupObservations(comparisons, absolutes, grades)


def fit_group(
    group: Group,
    judgments: list[JudgmentRecord],
    config: PoEConfig,
    *,
    debias: str,
    with_absolute: bool = True,
    temperatures: dict[str, float] | None = None,
) -> Posterior:
    """Cold Laplace fit of one group on its judgments, taken in (round, key) order: the canonical
    posterior, the same in a live run, a resumed one, ``orchestrator rank`` and the replay of the
    run's export."""
    # a stated confidence counts only through its judge's calibration (poe/stated.py)
    rows, _ = calibrate_stated(sorted(judgments, key=lambda r: (r.round, r.key)))
    names = judge_names(rows)
    judges = {name: k for k, name in enumerate(names)}
    # text covariates need the answers' features (a global group has them); self needs none
    usable = bool(group.features) or not set(config.controls) & set(TEXT_CONTROLS)
    controls = config.controls if usable else ()
    comparisons, absolutes, grades = group_observations(
        group,
        rows,
        debias=debias,
        with_absolute=with_absolute,
        judges=judges,
        temperatures=temperatures,
        controls=controls,
        families=config.families,
    )
    observations = Observations.from_lists(len(group.names), comparisons, absolutes, n_judges=max(len(names), 1), grades=grades)
    if any(is_verdict(row.method) or row.method == "stated" for row in rows if row.kind == "pairwise"):
        # verdicts' scores live on a smaller scale than the unit prior's (poe/verdicts.py)
        config = dataclasses.replace(config, empirical_prior_scale=True)
    return fit_with_reliability(observations, config)


def fit_groups(
    groups: list[Group], judgments: list[JudgmentRecord], config: PoEConfig, *, debias: str, temperatures: dict[str, float] | None = None
) -> list[Posterior]:
    """:func:`fit_group` for every group of a run."""
    judgments, _ = calibrate_stated(judgments)  # on the whole run: every group's verdicts calibrate its judge
    with threads_for(max(len(g.names) for g in groups)):
        return [
            fit_group(group, rows, config, debias=debias, temperatures=temperatures)
            for group, rows in zip(groups, split_by_group(groups, judgments))
        ]


def split_by_group(groups: list[Group], judgments: list[JudgmentRecord]) -> list[list[JudgmentRecord]]:
    if len(groups) == 1:
        return [judgments]
    where = {g.key: k for k, g in enumerate(groups)}
    out: list[list[JudgmentRecord]] = [[] for _ in groups]
    for row in judgments:
        k = where.get(row.prompt_id)
        if k is not None:
            out[k].append(row)
    return out
