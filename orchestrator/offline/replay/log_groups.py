"""Judgment logs grouped into ranking problems for a scope (``per_prompt``, ``global``, ``items``):
the candidates, their truth, and the judgments that can answer a replay's queries."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Literal

import numpy as np
import torch

from ...errors import OrchestratorError
from ...poe import absolute_moments
from ...records.log import LogRecord, ResponseRow
from ...run.groups import item_name
from ...store import JudgmentRecord

__all__ = ["SCOPES", "Group", "build_groups"]

Scope = Literal["per_prompt", "global", "items"]
SCOPES: tuple[str, ...] = ("per_prompt", "global", "items")


@dataclass
class Group:
    """One ranking problem: candidates, their truth, and the judgments that can answer queries."""

    key: str
    """Prompt id (``per_prompt``) or the scope name."""
    names: list[str]
    """Candidate names; index = position in the posterior."""
    truth: np.ndarray
    """``(N,)`` ground-truth scores (higher is better)."""
    pairwise: dict[tuple[int, int], list[tuple[str, float]]] = field(default_factory=dict)
    """Ordered pair ``(first, second)`` → ``(prompt_id, P(first better))`` judgments."""
    absolute: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    """Candidate → moment-matched ``(mean, variance)`` absolute judgments."""
    members: list[tuple[str, str]] = field(default_factory=list)
    """``(prompt, candidate)`` of every response the group ranks (a replay builds its dataset from them)."""
    records: list[LogRecord] = field(default_factory=list)
    """The group's logged judgments (what a replay's log judges answer from)."""
    rows: list[JudgmentRecord] = field(default_factory=list)
    """Every judgment of the group as a run-file row: the all-pairs posterior is fitted from these
    with the run's own code (:func:`orchestrator.run.groups.fit_group`), so a replay of a run's
    export reproduces the run's ranking exactly (every judge, both orders, every absolute score)."""
    texts: dict[tuple[str, str], str] = field(default_factory=dict)
    """``(prompt, candidate)`` → the response's text, where the responses file has one (length control)."""


def build_groups(
    records: Iterable[tuple[int, LogRecord]],
    responses: Iterable[tuple[int, ResponseRow]],
    truth_field: str,
    scope: Scope,
    *,
    judge: str | None = None,
    source: str = "log",
    responses_source: str = "responses",
) -> list[Group]:
    """Group logged judgments into ranking problems for ``scope``.

    Raises:
        OrchestratorError: unknown prompts or candidates (naming the log line), a truth field
            missing from a response (naming the line), or nothing left to rank.
    """
    if scope not in SCOPES:
        raise OrchestratorError(f"unknown scope {scope!r}; choose one of {', '.join(SCOPES)}")
    responses = list(responses)
    truth_by_key, by_prompt, text_of = _truth_and_texts(responses, truth_field)
    used = _checked_records(records, responses, truth_by_key, by_prompt, truth_field, judge, source, responses_source)
    members, origin = _members(used, by_prompt, truth_by_key, scope)
    groups = _empty_groups(members, origin, truth_by_key, by_prompt, text_of, scope)
    for number, rec in used:
        gkey, _ = _item_key(scope, rec.prompt_id, rec.candidates[0])
        _add_judgment(groups[gkey], members[gkey], number, rec, scope)
    out = [g for g in groups.values() if len(g.names) >= 2 and g.pairwise]
    if not out:
        raise OrchestratorError(f"{source}: no group has two candidates with pairwise judgments")
    return sorted(out, key=lambda g: g.key)


def _item_key(scope: Scope, prompt_id: str, cand: str) -> tuple[str, str]:
    """(group key, item name) of a prompt's candidate in ``scope``."""
    if scope == "per_prompt":
        return prompt_id, cand
    if scope == "global":
        return "global", cand
    return "items", item_name(prompt_id, cand)


def _truth_and_texts(
    responses: list[tuple[int, ResponseRow]], truth_field: str
) -> tuple[dict[tuple[str, str], float], dict[str, set[str]], dict[tuple[str, str], str]]:
    """Each (prompt, candidate)'s human score, each prompt's candidates, each response's text."""
    truth_by_key: dict[tuple[str, str], float] = {}
    known_fields: set[str] = set()
    for _, row in responses:
        known_fields |= set(row.human)
        value = row.human.get(truth_field)
        if value is not None:
            truth_by_key[(row.prompt_id, row.candidate)] = float(value)
    if not truth_by_key:
        fields = ", ".join(sorted(known_fields)) or "none"
        raise OrchestratorError(f"truth field {truth_field!r} is in no response's 'human' scores (fields present: {fields})")
    by_prompt: dict[str, set[str]] = defaultdict(set)
    text_of: dict[tuple[str, str], str] = {}
    for _, row in responses:
        by_prompt[row.prompt_id].add(row.candidate)
        text_of[(row.prompt_id, row.candidate)] = row.text
    return truth_by_key, by_prompt, text_of


def _checked_records(
    records: Iterable[tuple[int, LogRecord]],
    responses: list[tuple[int, ResponseRow]],
    truth_by_key: dict[tuple[str, str], float],
    by_prompt: dict[str, set[str]],
    truth_field: str,
    judge: str | None,
    source: str,
    responses_source: str,
) -> list[tuple[int, LogRecord]]:
    """The pairwise and absolute judgments to replay (of ``judge`` when given), every prompt and
    candidate checked against the responses."""
    used = []
    for number, rec in records:
        if judge is not None and rec.judge != judge:
            continue
        if rec.kind == "reference":
            continue  # reference-anchored judgments feed RAEE, not the PoE replay
        if rec.prompt_id not in by_prompt:
            raise OrchestratorError(f"{source}:{number}: prompt {rec.prompt_id!r} has no responses")
        for cand in rec.candidates:
            if cand not in by_prompt[rec.prompt_id]:
                raise OrchestratorError(f"{source}:{number}: unknown candidate {cand!r} for prompt {rec.prompt_id!r}")
            if (rec.prompt_id, cand) not in truth_by_key:
                line = next(n for n, r in responses if (r.prompt_id, r.candidate) == (rec.prompt_id, cand))
                raise OrchestratorError(
                    f"{responses_source}:{line}: candidate {cand!r} of prompt {rec.prompt_id!r} has no human score {truth_field!r}"
                )
        used.append((number, rec))
    if not used:
        who = f" by judge {judge!r}" if judge else ""
        raise OrchestratorError(f"{source}: no pairwise or absolute judgments{who} to replay")
    return used


def _members(
    used: list[tuple[int, LogRecord]], by_prompt: dict[str, set[str]], truth_by_key: dict[tuple[str, str], float], scope: Scope
) -> tuple[dict[str, dict[str, int]], dict[str, tuple[str, str]]]:
    """Each group's items in the order they are met (name → index), and each item's (prompt,
    candidate) — judged ones first, then the never-judged candidates (a run ranks them too)."""
    members: dict[str, dict[str, int]] = defaultdict(dict)
    origin: dict[str, tuple[str, str]] = {}  # item name → (prompt, candidate), for the items scope
    for _, rec in used:
        for cand in rec.candidates:
            gkey, name = _item_key(scope, rec.prompt_id, cand)
            members[gkey].setdefault(name, len(members[gkey]))
            origin[name] = (rec.prompt_id, cand)
    for gkey in list(members):
        for prompt_id, cands in sorted(by_prompt.items()):
            if scope == "per_prompt" and prompt_id != gkey:
                continue
            if scope == "items" and not any(origin.get(n, ("",))[0] == prompt_id for n in members[gkey]):
                continue
            for cand in sorted(cands):
                if (prompt_id, cand) in truth_by_key:
                    _, name = _item_key(scope, prompt_id, cand)
                    members[gkey].setdefault(name, len(members[gkey]))
                    origin.setdefault(name, (prompt_id, cand))
    return members, origin


def _empty_groups(
    members: dict[str, dict[str, int]],
    origin: dict[str, tuple[str, str]],
    truth_by_key: dict[tuple[str, str], float],
    by_prompt: dict[str, set[str]],
    text_of: dict[tuple[str, str], str],
    scope: Scope,
) -> dict[str, Group]:
    """One group per key with its items, their truth and the texts shown (no judgments yet)."""
    system_truth: dict[str, list[float]] = defaultdict(list)
    for (_, cand), value in truth_by_key.items():
        system_truth[cand].append(value)
    groups: dict[str, Group] = {}
    for gkey, index in members.items():
        names = sorted(index, key=lambda name: index[name])
        if scope == "global":  # a system's truth is its mean human score over all prompts
            truth = [float(np.mean(system_truth[name])) for name in names]
            shown = [(p, c) for p, cands in sorted(by_prompt.items()) for c in sorted(cands) if c in index and (p, c) in truth_by_key]
        elif scope == "items":
            truth = [truth_by_key[origin[name]] for name in names]
            shown = [origin[name] for name in names]
        else:
            truth = [truth_by_key[(gkey, name)] for name in names]
            shown = [(gkey, name) for name in names]
        texts = {(p, c): text_of[(p, c)] for p, c in shown if text_of.get((p, c))}
        groups[gkey] = Group(gkey, names, np.asarray(truth, dtype=float), members=shown, texts=texts)
    return groups


def _add_judgment(group: Group, index: dict[str, int], number: int, rec: LogRecord, scope: Scope) -> None:
    """One logged judgment into its group: as a run file row (the posterior on everything, the
    run's own fit) and as the replay's pairwise or absolute observation."""
    ids = [index[_item_key(scope, rec.prompt_id, c)[1]] for c in rec.candidates]
    group.records.append(rec)
    group.rows.append(
        JudgmentRecord(
            key=rec.key if rec.key is not None else f"line:{number:012d}",
            judge=rec.judge,
            kind=rec.kind,
            prompt_id=rec.prompt_id,
            candidates=list(rec.candidates),
            probs=[rec.probs],
            round=rec.round,
            p_first=rec.prob_first() if rec.kind == "pairwise" else None,
        )
    )
    if rec.kind == "pairwise":
        group.pairwise.setdefault((ids[0], ids[1]), []).append((rec.prompt_id, rec.prob_first()))
    else:
        levels, probs = rec.level_distribution()
        mean, var = absolute_moments(torch.tensor([probs], dtype=torch.float64), torch.tensor(levels, dtype=torch.float64))
        group.absolute.setdefault(ids[0], []).append((float(mean[0]), float(var[0])))
