"""The evaluation loop: select a batch from the PoE posterior, ask the judges, commit every judgment
to the run file as it arrives, refit, repeat (DESIGN.md "Data flow of one run").

The shell around the pure core: selection and fitting are :mod:`orchestrator.poe`; persistence is
:mod:`orchestrator.store`; the judges are injected (``name → Judge``), so the same loop runs against
litellm, the embedded llama.cpp judge or a test server.

Determinism: the posterior of each group is a cold Laplace fit on its committed judgments (sorted
by round and key) and round ``r`` draws its tie-breaks from a generator seeded with ``(seed, r)``,
so a resumed run selects exactly what the uninterrupted run would have selected.

Budgets: before a round is written, each request reserves its worst case (one call; every prompt
byte as a token plus the template's ``max_tokens``; their price). Only requests whose reservation
fits in what is left are planned, so calls, tokens and USD never exceed the limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import random
import signal
import sqlite3
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np
import torch

from .config import RunConfig
from .dataset import Dataset
from .errors import OrchestratorError, RunFailed
from .judging.client import Judge, JudgeProfile, JudgeRequest, Judgment
from .judging.dispatch import RetryPolicy, call_with_retries
from .judging.templates import Template
from .poe import (
    Observations,
    PoEConfig,
    Posterior,
    absolute_moments,
    adjacent_reorder_probabilities,
    entropy,
    fit_laplace,
    get_expert,
    parse_strategy,
    permutation_debias,
    ranking_order,
    select_across,
    selection_scores,
    stopping_rule,
    threads_for,
)
from .raee import outcomes, raee_arrays
from .raee_report import reference_wtl
from .failpoints import failpoint
from .record import request_key
from .records import level_distribution
from .offline.replay import item_name
from .store import RunStore, Spend

__all__ = ["ITEMS", "Group", "RunEngine", "RunEvent", "build_groups_for", "group_observations", "worst_case", "fit_group",
           "fit_groups", "judge_price", "judge_prices", "reference_items", "DATASET_ANCHOR"]

DATASET_ANCHOR = "reference"
"""The anchor's name in the log when it is the dataset's reference text."""

FAIL_FAST_AFTER = 8
"""A run whose first this many finished requests all failed permanently stops (``failed``)."""

MESSAGE_OVERHEAD_TOKENS = 16
"""Chat-template tokens per message added on top of the content (generous for known templates)."""


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
        return [Group("global", names, {n: k for k, n in enumerate(names)}, dict(prompts))]
    if scope == ITEMS:
        origin = {item_name(pid, c): (pid, c) for pid, by_cand in dataset.responses.items() for c in sorted(by_cand)}
        names = list(origin)
        return [Group(ITEMS, names, {n: k for k, n in enumerate(names)}, origin=origin)]
    raise OrchestratorError(f"scope {scope!r} is not supported by the loop (use per_prompt, global or items)")


def group_observations(
    group: Group, judgments: list[dict], *, debias: str, with_absolute: bool = True
) -> tuple[list[tuple[int, int, float]], list[tuple[int, float, float]]]:
    """Comparisons ``(first, second, P(first better))`` and absolutes ``(item, mean, var)`` of a group
    from committed judgment rows (store format), in the given order.

    With ``permutation`` debiasing the two orders of a pair (same judge and prompt) are combined
    (PoE §3.3); an order whose partner failed permanently is used alone.
    """
    comparisons: list[tuple[int, int, float]] = []
    absolutes: list[tuple[int, float, float]] = []
    waiting: dict[tuple[str, str, str, str], float] = {}
    combined: dict[tuple[str, str, str, str], int] = {}
    for row in judgments:
        shown = json.loads(row["candidates"]) if isinstance(row["candidates"], str) else row["candidates"]
        members = [group.member(row["prompt_id"], c) for c in shown]
        if any(m is None for m in members):
            continue
        cands: list[str] = members  # type: ignore[assignment]
        if row["kind"] == "pairwise" and row["p_first"] is not None:
            a, b = cands
            if debias == "permutation":
                back = (row["judge"], row["prompt_id"], b, a)
                if back in waiting:
                    p_back = waiting.pop(back)
                    slot = combined.pop(back)
                    comparisons[slot] = (group.index[b], group.index[a], float(permutation_debias(p_back, row["p_first"])))
                    continue
                waiting[(row["judge"], row["prompt_id"], a, b)] = row["p_first"]
                combined[(row["judge"], row["prompt_id"], a, b)] = len(comparisons)
            comparisons.append((group.index[a], group.index[b], float(row["p_first"])))
        elif row["kind"] == "absolute" and with_absolute:
            probs = json.loads(row["probs"])[0] if isinstance(row["probs"], str) else row["probs"][0]
            if sum(probs.values()) <= 0:
                continue
            levels, weights = level_distribution(probs)
            mean, var = absolute_moments(torch.tensor([weights], dtype=torch.float64),
                                         torch.tensor(levels, dtype=torch.float64))
            absolutes.append((group.index[cands[0]], float(mean[0]), float(var[0])))
    return comparisons, absolutes


def fit_group(group: Group, judgments: list[dict], config: PoEConfig, *, debias: str) -> Posterior:
    """Cold Laplace fit of one group on its judgments, taken in (round, key) order: the canonical
    posterior, the same in a live run, a resumed one and ``orchestrator rank``."""
    rows = sorted(judgments, key=lambda r: (r["round"], r["key"]))
    comparisons, absolutes = group_observations(group, rows, debias=debias)
    return fit_laplace(Observations.from_lists(len(group.names), comparisons, absolutes), config)


def fit_groups(groups: list[Group], judgments: list[dict], config: PoEConfig, *, debias: str) -> list[Posterior]:
    """:func:`fit_group` for every group of a run."""
    with threads_for(max(len(g.names) for g in groups)):
        return [fit_group(group, rows, config, debias=debias) for group, rows in zip(groups, _split(groups, judgments))]


def _split(groups: list[Group], judgments: list[dict]) -> list[list[dict]]:
    if len(groups) == 1:
        return [judgments]
    where = {g.key: k for k, g in enumerate(groups)}
    out: list[list[dict]] = [[] for _ in groups]
    for row in judgments:
        k = where.get(row["prompt_id"])
        if k is not None:
            out[k].append(row)
    return out


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
            raise OrchestratorError("reference.anchor = \"dataset\" but no prompt has a \"reference\" text; "
                                    "add one to prompts.jsonl or name a candidate as the anchor")
        cands = sorted({c for p in prompts for c in dataset.responses.get(p, {})})
        if DATASET_ANCHOR in cands:
            raise OrchestratorError(f"a candidate is named {DATASET_ANCHOR!r}, the name of the dataset's reference "
                                    "anchor; rename it")
    else:
        name = anchor
        prompts = [p for p, by in dataset.responses.items() if anchor in by]
        if not prompts:
            raise OrchestratorError(f"reference.anchor: {anchor!r} is neither \"dataset\" nor a candidate with responses")
        cands = sorted({c for p in prompts for c in dataset.responses[p]} - {anchor})
    if not cands:
        raise OrchestratorError("reference campaign: no candidate answered a prompt that has an anchor text")
    order = sorted(prompts, key=lambda p: _hash(seed, "reference-order", p))
    per_candidate = {c: [p for p in order if c in dataset.responses.get(p, {})] for c in cands}
    return name, cands, order, per_candidate


def judge_price(profile: JudgeProfile, local: bool) -> tuple[float, float] | None:
    """USD per (prompt, completion) token, or None when unknown."""
    if profile.price_input_per_mtok is not None or profile.price_output_per_mtok is not None:
        return (profile.price_input_per_mtok or 0.0) / 1e6, (profile.price_output_per_mtok or 0.0) / 1e6
    if local:
        return 0.0, 0.0
    import litellm

    info = litellm.model_cost.get(profile.model) or litellm.model_cost.get(profile.model.split("/", 1)[-1])
    if not info or info.get("input_cost_per_token") is None:
        return None
    return float(info["input_cost_per_token"]), float(info.get("output_cost_per_token") or 0.0)


def judge_prices(profiles: dict[str, JudgeProfile], local: set[str], *, max_usd: float | None) -> dict[str, tuple[float, float]]:
    """USD per (prompt, completion) token of every judge; unknown prices are 0 unless a USD budget
    needs them.

    Raises:
        OrchestratorError: ``max_usd`` is set and a judge has no known price.
    """
    prices = {}
    for name, profile in profiles.items():
        price = judge_price(profile, name in local)
        if price is None:
            if max_usd is not None:
                raise OrchestratorError(
                    f"judge {name!r}: litellm has no price for model {profile.model!r}; set price_input_per_mtok "
                    f"and price_output_per_mtok in its profile to use budget.max_usd")
            price = (0.0, 0.0)
        prices[name] = price
    return prices


def worst_case(messages: list[dict], template: Template, profile: JudgeProfile, price: tuple[float, float]) -> tuple[int, float]:
    """Upper bound on the tokens and USD of one request.

    A byte-level tokenizer never produces more tokens than bytes, so every content byte counts as
    a prompt token, plus a chat-template allowance per message; completions are capped by
    ``max_tokens``. Judges without logprobs sample ``samples`` times; a follow-up call that
    resolves a two-token option (``10``) is counted too.
    """
    prompt = sum(len(m["content"].encode()) + MESSAGE_OVERHEAD_TOKENS for m in messages)
    completion = template.max_new_tokens
    calls = profile.samples if not profile.logprobs else 1
    follow_ups = 0
    if profile.prefill and profile.logprobs and template.read == "first_token":
        options = template.options
        follow_ups = sum(any(o != p and o.startswith(p) for p in options) for o in options)
    tokens = calls * (prompt + completion) + follow_ups * (prompt + 8 + 1)
    usd = calls * (prompt * price[0] + completion * price[1]) + follow_ups * ((prompt + 8) * price[0] + price[1])
    return tokens, usd


@dataclass(frozen=True)
class RunEvent:
    """Progress of a run, for displays."""

    kind: str
    """``round`` (a round was planned), ``judgment`` (one arrived), ``draining`` (an interrupt:
    calls in flight finish and commit, nothing new starts) or ``stop``."""
    round: int
    judgments: int
    failed: int
    spend: Spend
    planned_requests: int = 0
    entropy: float | None = None
    max_adjacent_reorder: float | None = None
    top: list[str] = field(default_factory=list)
    reason: str = ""


class RunEngine:
    """Runs (or resumes) one run to its end. ``judges`` maps profile name → :class:`Judge`."""

    def __init__(
        self,
        store: RunStore,
        config: RunConfig,
        judges: dict[str, Judge],
        profiles: dict[str, JudgeProfile],
        templates: dict[str, Template],
        *,
        local: set[str] | None = None,
        progress: Callable[[RunEvent], None] | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ):
        self.store = store
        self.config = config
        self.judges = judges
        self.profiles = profiles
        self.templates = templates
        self.progress = progress
        self.sleep = sleep
        self.dataset = store.dataset()
        self.groups = build_groups_for(self.dataset, config.data.scope)
        self.poe = PoEConfig(expert=get_expert(config.model.expert), home_advantage=config.model.debias == "home")
        self.strategy = parse_strategy(config.selection.strategy)
        self.ordered = config.model.debias != "permutation"
        self.prices = judge_prices(profiles, local or set(), max_usd=config.budget.max_usd)
        self.posteriors: list[Posterior | None] = [None] * len(self.groups)
        self._dirty = set(range(len(self.groups)))
        self._fit_count = [-1] * len(self.groups)
        self._fit_cutoff: list[int | None] = [None] * len(self.groups)
        self._judgments: list[list[dict]] = [[] for _ in self.groups]
        self._where = {g.key: k for k, g in enumerate(self.groups)}
        self._reference_rows: list[dict] = []
        self._absolute_rows: list[dict] = []
        self.absolute = config.absolute
        for row in store.judgments():
            self._add(row)
        self._asked = store.asked()
        self._avail: list[torch.Tensor] | None = None  # built at the first selection, then updated
        self._run_name = store.run["name"]
        self.reference = config.reference
        if self.reference is not None:
            self.anchor, self.ref_candidates, self.ref_order, self.ref_prompts = reference_items(
                self.dataset, self.reference.anchor, config.seed)
        if self.absolute is not None:
            self.abs_order = sorted(self.dataset.responses, key=lambda p: _hash(config.seed, "absolute-order", p))
        self._failed = next(store.db.query("select count(*) as n from judgments where status = 'failed'"))["n"]
        self._ok = next(store.db.query("select count(*) as n from judgments where status = 'ok'"))["n"]
        self._failed_at_start = self._failed
        self._hard_stop = False
        self._draining = False
        """Set by the first SIGINT/SIGTERM: no new round, no new call, no retry; calls in flight
        finish and are committed (a provider has already charged for them)."""
        self._in_flight_calls = 0

    # -- state -------------------------------------------------------------------------------
    def _add(self, row: dict) -> None:
        if row["kind"] == "reference":
            self._reference_rows.append(row)
            return
        if self.absolute is not None and row["kind"] == "absolute":
            self._absolute_rows.append(row)
            return
        k = 0 if len(self.groups) == 1 else self._where.get(row["prompt_id"])
        if k is None:
            return
        self._judgments[k].append(row)
        self._dirty.add(k)

    def refit(self, cutoff: int | None = None) -> list[Posterior]:
        """Posteriors on the committed judgments of rounds ``<= cutoff`` (all when None).

        Cold fits (see the module docstring); a group is refit only when its set of judgments
        changed since its last fit.
        """
        with threads_for(max(len(g.names) for g in self.groups)):
            for k in range(len(self.groups)):
                if k not in self._dirty and cutoff == self._fit_cutoff[k]:
                    continue
                rows = [r for r in self._judgments[k] if cutoff is None or r["round"] <= cutoff]
                if self.posteriors[k] is not None and len(rows) == self._fit_count[k]:
                    continue  # the same judgments as the last fit
                self.posteriors[k] = fit_group(self.groups[k], rows, self.poe, debias=self.config.model.debias)
                self._fit_count[k] = len(rows)
                self._fit_cutoff[k] = cutoff
                failpoint("refit")
        self._dirty.clear()
        return self.posteriors  # type: ignore[return-value]

    def _limits_left(self, spend: Spend) -> tuple[float, float, float]:
        b = self.config.budget
        return (
            math.inf if b.max_calls is None else b.max_calls - spend.calls,
            math.inf if b.max_tokens is None else b.max_tokens - spend.tokens,
            math.inf if b.max_usd is None else b.max_usd - spend.usd,
        )

    # -- planning ----------------------------------------------------------------------------
    def _request(self, judge: str, template: Template, prompt_id: str, candidates: list[str], repeat: int = 0) -> dict:
        profile = self.profiles[judge]
        prompt = self.dataset.prompts[prompt_id]
        texts = [prompt.reference or "" if c == DATASET_ANCHOR and template.kind == "reference"
                 else self.dataset.responses[prompt_id][c].text for c in candidates]
        values = {"context": prompt.text, "question": prompt.text, "reference": prompt.reference or ""}
        if template.kind == "absolute":
            values["response"] = texts[0]
        elif template.kind == "reference":  # A = the anchor, B = the candidate
            values.update(A=texts[0], B=texts[1], reference=texts[0], response=texts[1])
        else:
            values.update(A=texts[0], B=texts[1])
        messages = template.render(values, attribute=self.config.judging.attribute, prefill=profile.prefill)
        tokens, usd = worst_case(messages, template, profile, self.prices[judge])
        key = request_key(self._run_name, judge, template.digest, self.config.judging.attribute or "",
                          prompt_id, *candidates, str(repeat))
        return {"key": key, "judge": judge, "template": template.name, "kind": template.kind, "prompt_id": prompt_id,
                "candidates": json.dumps(candidates), "repeat": repeat, "messages": json.dumps(messages),
                "reserved_tokens": tokens, "reserved_usd": usd}

    def _fit_budget(self, units: list[list[dict]], spend: Spend) -> tuple[list[list[dict]], str]:
        """Keep units (a comparison's requests) in priority order while their reservations fit."""
        calls, tokens, usd = self._limits_left(spend)
        kept: list[list[dict]] = []
        for unit in units:
            need_calls = len(unit)
            need_tokens = sum(r["reserved_tokens"] for r in unit)
            need_usd = sum(r["reserved_usd"] for r in unit)
            if need_calls > calls or need_tokens > tokens or need_usd > usd + 1e-12:
                b = self.config.budget
                if need_calls > calls:
                    what = f"max_calls ({spend.calls} of {b.max_calls} used)"
                elif need_tokens > tokens:
                    what = f"max_tokens ({spend.tokens} of {b.max_tokens} used; the next request may need {need_tokens})"
                else:
                    what = f"max_usd (${spend.usd:.4f} of ${b.max_usd} used; the next request may need ${need_usd:.4f})"
                return kept, f"budget: {what}"
            calls, tokens, usd = calls - need_calls, tokens - need_tokens, usd - need_usd
            kept.append(unit)
        return kept, ""

    def _prompt_use(self) -> Counter[str]:
        """Requests per prompt so far (derived from the log, so a resumed run sees the same)."""
        return Counter(p for _, p, _ in self._asked)

    def _warm_start_units(self) -> list[list[dict]]:
        """One absolute request per candidate and judge, unless the warm start was planned already."""
        if any(len(c) == 1 for _, _, c in self._asked):
            return []
        template = self.templates["absolute"]
        use = self._prompt_use()
        units = []
        for group in self.groups:
            for name in group.names:
                prompts = group.absolute_prompts(name, self.dataset)
                prompt = min(prompts, key=lambda p: (use[p], _hash(self.config.seed, p, name)))
                use[prompt] += 1
                units.append([self._request(j, template, prompt, [group.candidate(name)]) for j in self.profiles])
        random.Random(self.config.seed).shuffle(units)  # a budget too small for all spreads over groups
        return units

    def _available(self, group: Group) -> torch.Tensor:
        """``(N, N)`` bool: ordered pairs that can still be asked (on some prompt, for ``global``)."""
        n = len(group.names)
        avail = torch.zeros(n, n, dtype=torch.bool)
        for i in range(n):
            for j in range(n):
                if i != j:
                    avail[i, j] = self._pair_open(group, i, j)
        return avail

    def _pair_open(self, group: Group, i: int, j: int) -> bool:
        a, b = group.names[i], group.names[j]
        judge = next(iter(self.profiles))
        ca, cb = group.candidate(a), group.candidate(b)
        return any(self._open(judge, p, ca, cb) for p in group.pair_prompts(a, b))

    def _mark_asked(self, rows: list[dict]) -> None:
        """Record planned requests and update the availability of the pairs they touch."""
        for r in rows:
            cands = tuple(json.loads(r["candidates"]))
            self._asked.add((r["judge"], r["prompt_id"], cands))
            if len(cands) == 2 and self._avail is not None:
                k = 0 if len(self.groups) == 1 else self._where[r["prompt_id"]]
                group = self.groups[k]
                a, b = (group.member(r["prompt_id"], c) for c in cands)
                if a is None or b is None:
                    continue
                i, j = group.index[a], group.index[b]
                self._avail[k][i, j] = self._pair_open(group, i, j)
                self._avail[k][j, i] = self._pair_open(group, j, i)

    def _open(self, judge: str, prompt: str, a: str, b: str) -> bool:
        if (judge, prompt, (a, b)) in self._asked:
            return False
        return self.ordered or (judge, prompt, (b, a)) not in self._asked

    def _comparison_units(self, round_no: int, posteriors: list[Posterior]) -> tuple[list[list[dict]], list[list]]:
        if self._avail is None:
            self._avail = [self._available(g) for g in self.groups]
        available = self._avail
        generator = torch.Generator().manual_seed(self.config.seed * 1_000_003 + round_no)
        picks = select_across(posteriors, self.strategy, available, self.config.selection.batch,
                              ordered=self.ordered, generator=generator, expert=self.poe.expert)
        template = self.templates["pairwise"]
        judge0 = next(iter(self.profiles))
        units, selected = [], []
        scores: dict[int, torch.Tensor] = {}
        use = self._prompt_use()
        for g, i, j in picks:
            group = self.groups[g]
            a, b = group.names[i], group.names[j]
            ca, cb = group.candidate(a), group.candidate(b)
            options = [p for p in group.pair_prompts(a, b) if self._open(judge0, p, ca, cb)]
            prompt = min(options, key=lambda p: (use[p], _hash(self.config.seed, p, a, b)))
            use[prompt] += 1
            orders = [(ca, cb)] if self.ordered else [(ca, cb), (cb, ca)]
            units.append([self._request(jn, template, prompt, list(o)) for jn in self.profiles for o in orders])
            if g not in scores:
                scores[g] = selection_scores(posteriors[g], self.strategy)
            metric = float(scores[g][i, j])
            selected.append([group.key, prompt, a, b, round(metric, 6)])
        return units, selected

    # -- reference-anchored campaigns ----------------------------------------------------------
    def _reference_estimates(self, cutoff: int | None) -> dict[str, dict[str, float]]:
        """Per candidate, from committed reference judgments of rounds ``<= cutoff``: the run-averaged
        outcome over its prompts and judges, with the Jeffreys interval on the Elo scale."""
        soft = bool(self.reference and self.reference.soft)
        items: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for row in self._reference_rows:
            if cutoff is not None and row["round"] > cutoff:
                continue
            cand, win, tie, loss, _ = reference_wtl(json.loads(row["candidates"]), self.anchor, json.loads(row["probs"])[0])
            if win + tie + loss <= 0:
                continue
            s = float(outcomes(np.array([win]), np.array([tie]), np.array([loss]), soft=soft)[0])
            items[cand][row["prompt_id"]].append(s)
        out = {}
        if not items:
            return out
        names = sorted(items)
        n = np.array([len(items[c]) for c in names], dtype=float)
        total = np.array([sum(np.mean(v) for v in items[c].values()) for c in names])
        est = raee_arrays(total, n)
        for k, c in enumerate(names):
            out[c] = {"n": float(n[k]), "elo": float(est["elo"][k]), "low": float(est["elo_low"][k]),
                      "high": float(est["elo_high"][k])}
        return out

    def _reference_units(self, round_no: int, cutoff: int) -> tuple[list[list[dict]], list[list], str]:
        """The next reference requests: a unit is one (prompt, candidate) for every judge, repeat and
        (with ``both_orders``) order; units are planned and budgeted whole."""
        ref = self.reference
        assert ref is not None
        template = self.templates["reference"]
        judge0 = next(iter(self.profiles))
        asked = {(p, cands[1]) for jn, p, cands in self._asked
                 if jn == judge0 and len(cands) == 2 and cands[0] == self.anchor}

        def unit(prompt: str, cand: str) -> list[dict]:
            orders = ([self.anchor, cand], [cand, self.anchor]) if ref.both_orders else ([self.anchor, cand],)
            return [self._request(jn, template, prompt, shown, r)
                    for jn in self.profiles for r in range(ref.repeats) for shown in orders]

        units, selected = [], []
        if ref.allocation == "all":
            taken = 0
            for prompt in self.ref_order:
                todo = [c for c in self.ref_candidates
                        if c in self.dataset.responses.get(prompt, {}) and (prompt, c) not in asked]
                if not todo:
                    continue
                for c in todo:
                    units.append(unit(prompt, c))
                    selected.append([self.anchor, prompt, c, None])
                taken += 1
                if taken == self.config.selection.batch:
                    break
            return units, selected, ""
        left = {c: [p for p in self.ref_prompts[c] if (p, c) not in asked] for c in self.ref_candidates}
        done = {c: len(self.ref_prompts[c]) - len(left[c]) for c in self.ref_candidates}
        warm = [c for c in self.ref_candidates if left[c] and done[c] < ref.warmup_prompts]
        if warm:
            for c in warm:
                for prompt in left[c][: ref.warmup_prompts - done[c]]:
                    units.append(unit(prompt, c))
                    selected.append([self.anchor, prompt, c, None])
            return units, selected, ""
        est = self._reference_estimates(cutoff)
        ranked = sorted(est, key=lambda c: (est[c]["elo"], c))
        overlap: dict[str, float] = {}
        for k, c in enumerate(ranked):
            lo, hi = est[c]["low"], est[c]["high"]
            width = max(hi - lo, 1e-12)
            overlap[c] = sum(max(0.0, min(hi, est[o]["high"]) - max(lo, est[o]["low"])) / width
                             for o in ranked[max(0, k - 1): k] + ranked[k + 1: k + 2])
        open_ = [c for c in self.ref_candidates if left[c]]
        # a candidate without a committed judgment yet counts as overlapping everything
        score = {c: overlap.get(c, math.inf) for c in open_}
        if open_ and all(score[c] == 0.0 for c in open_):
            return [], [], "every candidate's Elo interval is separated from its neighbours'"
        for c in sorted(open_, key=lambda c: (-score[c], done[c], _hash(self.config.seed, round_no, c)))[
                : self.config.selection.batch]:
            units.append(unit(left[c][0], c))
            selected.append([self.anchor, left[c][0], c, round(score[c], 6) if math.isfinite(score[c]) else None])
        return units, selected, ""

    # -- absolute-scoring campaigns (for the simplex model) ------------------------------------
    def _absolute_units(self) -> tuple[list[list[dict]], list[list]]:
        """Every candidate on the next ``selection.batch`` prompts (seeded order); a unit is one
        answer for every judge and repeat, planned and budgeted whole."""
        ab = self.absolute
        assert ab is not None
        template = self.templates["absolute"]
        judge0 = next(iter(self.profiles))
        asked = {(p, cands[0]) for jn, p, cands in self._asked if jn == judge0 and len(cands) == 1}
        units, selected, taken = [], [], 0
        for prompt in self.abs_order:
            todo = [c for c in sorted(self.dataset.responses[prompt]) if (prompt, c) not in asked]
            if not todo:
                continue
            for cand in todo:
                units.append([self._request(jn, template, prompt, [cand], r) for jn in self.profiles for r in range(ab.repeats)])
                selected.append([prompt, prompt, cand])
            taken += 1
            if taken == self.config.selection.batch:
                break
        return units, selected

    def _absolute_summary(self) -> dict:
        """The five candidates with the highest mean expected level so far (a progress display;
        the ranking is ``orchestrator fit simplex``)."""
        scores: dict[str, list[float]] = defaultdict(list)
        for row in self._absolute_rows:
            levels, probs = level_distribution(json.loads(row["probs"])[0])
            scores[json.loads(row["candidates"])[0]].append(sum(lv * p for lv, p in zip(levels, probs)))
        top = sorted(scores, key=lambda c: (-sum(scores[c]) / len(scores[c]), c))[:5]
        return {"entropy": None, "max_adjacent_reorder": None, "top": top}

    def _reference_summary(self, cutoff: int | None) -> dict:
        est = self._reference_estimates(cutoff)
        top = sorted(est, key=lambda c: (-est[c]["elo"], c))[:5]
        return {"entropy": None, "max_adjacent_reorder": None, "top": top}

    # -- dispatch ----------------------------------------------------------------------------
    async def _call(self, request: JudgeRequest, judge: Judge) -> tuple[Judgment, int]:
        d = self.config.dispatch
        policy = RetryPolicy(d.max_attempts, d.backoff_initial_s, d.backoff_max_s)
        # draining: no new attempt (the request stays pending and is sent again on resume)
        return await call_with_retries(judge, request, policy, sleep=self.sleep, stop=lambda: self._draining)

    async def _dispatch(self, rows: list[dict], round_no: int, semaphore: asyncio.Semaphore) -> None:
        """Ask one round's requests (under the run-wide concurrency limit), committing each as it
        arrives, then record the round's end."""
        templates = {t.name: t for t in self.templates.values()}
        started = time.perf_counter()

        async def one(row: dict) -> None:
            request = JudgeRequest(key=row["key"], template=templates[row["template"]],
                                   messages=json.loads(row["messages"]), prompt_id=row["prompt_id"],
                                   candidates=json.loads(row["candidates"]))
            async with semaphore:
                if self._draining:  # not sent yet: leave it pending for the resume
                    return
                self._in_flight_calls += 1
                try:
                    judgment, attempts = await self._call(request, self.judges[row["judge"]])
                finally:
                    self._in_flight_calls -= 1
            if self._draining and judgment.status == "failed" and judgment.retryable:
                return  # a retry would have followed: pending, sent again on resume
            judgment = judgment.model_copy(update={"judge": row["judge"]})
            committed = self.store.commit_judgment(judgment, attempts, round_no, row.get("repeat") or 0)
            if judgment.status == "ok":
                self._ok += 1
                self._add(committed)
            else:
                self._failed += 1
            self._event("judgment", round_no)

        # Grouped by prompt: consecutive requests then share the prompt's prefix, which a local
        # llama.cpp judge reuses from its cache (6.5x faster on CPU; benchmarks/RESULTS.md).
        await asyncio.gather(*(one(r) for r in sorted(rows, key=lambda r: (r["prompt_id"], r["key"]))))
        if not self._draining:
            self.store.finish_round(round_no, {**self._round_info(), "dispatch_s": time.perf_counter() - started})

    # -- the loop ----------------------------------------------------------------------------
    def _event(self, kind: str, round_no: int, **extra) -> None:
        if self.progress is None:
            return
        n_ok = sum(len(rows) for rows in self._judgments) + len(self._reference_rows) + len(self._absolute_rows)
        self.progress(RunEvent(kind, round_no, n_ok, self._failed, self.store.spend(), **extra))

    def _summary(self, posteriors: list[Posterior]) -> dict:
        ent = [entropy(p.cov) for p in posteriors]
        worst = 0.0
        for p in posteriors:
            _, adj = adjacent_reorder_probabilities(p)
            if adj.numel():
                worst = max(worst, float(adj.max()))
        first = self.groups[0]
        top = [first.names[c] for c in ranking_order(posteriors[0].mean, first.names)[:5]]
        return {"entropy": float(sum(ent) / len(ent)), "max_adjacent_reorder": worst, "top": top}

    def _should_stop(self, posteriors: list[Posterior]) -> str:
        s = self.config.stopping
        if s.max_adjacent_reorder is None and s.entropy_target is None:
            return ""
        reasons = []
        for p in posteriors:
            if p.n_comparisons == 0:
                return ""
            decision = stopping_rule(p, max_adjacent_reorder=s.max_adjacent_reorder, entropy_target=s.entropy_target)
            if not decision.stop:
                return ""
            reasons.append(decision.reason)
        return "stopping rule: " + (reasons[0] if len(reasons) == 1 else f"met in all {len(reasons)} groups")

    async def run(self) -> str:
        """Run to the end; returns the stop reason. Judgments are committed as they arrive.

        The first SIGINT or SIGTERM drains: calls already sent finish and are committed, nothing
        new starts, and the run stops as interrupted (``KeyboardInterrupt``); a second one stops
        at once (what was in flight is asked again on resume), also in the middle of a posterior
        update or a selection (CPU-bound work, during which the event loop cannot run handlers).
        Planned requests stay pending.

        Raises:
            RunFailed: the run could not do what it was asked: no judgment succeeded (every call
                failed, or the budget did not fit one request). The run file keeps the failures
                and is marked ``failed``.
        """
        self.store.set_status("running")
        round_no = self.store.last_round()
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()
        self._hard_stop = False

        def on_signal() -> None:
            if not self._draining:
                self._draining = True
                self._event("draining", self.store.last_round(), planned_requests=self._in_flight_calls)
            elif main is not None:
                self._hard_stop = True
                main.cancel()

        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, on_signal)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no such support
                pass
        try:
            with threads_for(max(len(g.names) for g in self.groups)):
                return await self._run(round_no)
        except asyncio.CancelledError:
            if self._hard_stop:
                raise KeyboardInterrupt from None
            raise
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    @contextlib.contextmanager
    def _cpu_work(self) -> Iterator[None]:
        """Signals during CPU-bound work (refit, selection): asyncio's handlers only run when the
        event loop gets control back, so Python-level handlers stand in: the first signal starts
        the drain, a second raises ``KeyboardInterrupt`` at once, wherever the work is."""
        def handler(signum, frame) -> None:
            if not self._draining:
                self._draining = True
                self._event("draining", self.store.last_round(), planned_requests=self._in_flight_calls)
            else:
                self._hard_stop = True
                raise KeyboardInterrupt

        previous = {}
        wakeup = None
        try:
            # asyncio also learns of signals through its wake-up fd and would act on them a second
            # time once the loop runs again: switch that off while these handlers stand in
            wakeup = signal.set_wakeup_fd(-1)
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread: leave signals alone
            pass
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)
            if wakeup is not None:
                signal.set_wakeup_fd(wakeup)

    def _fail_fast(self) -> str:
        """A reason to stop when nothing has worked yet: the first ``FAIL_FAST_AFTER`` finished
        requests all failed permanently (a wrong address, a rejected request, an unreadable
        answer): the next ones would only spend the budget the same way."""
        if self._ok == 0 and self._failed - self._failed_at_start >= FAIL_FAST_AFTER:
            return f"the first {self._failed - self._failed_at_start} judge calls all failed ({self._typical_error()})"
        return ""

    def _typical_error(self) -> str:
        row = next(self.store.db.query(
            "select error_type, error, count(*) as n from judgments where status = 'failed' "
            "group by error_type order by n desc limit 1"), None)
        if row is None:
            return "no call was made"
        error = " ".join((row["error"] or "").split("Traceback (most recent call last)")[0].split())
        return f"{row['n']} × {row['error_type'] or 'error'}: {error[:200]}"

    def _set_status_safely(self, status: str, reason: str) -> None:
        """Mark the run's state on the way out of an error; a run file that cannot be written (a
        full disk) keeps ``running``, which resume treats like ``interrupted``."""
        try:
            self.store.set_status(status, reason)
        except sqlite3.Error:
            pass

    async def _run(self, round_no: int) -> str:
        # Round r is planned once every round <= r - depth has been committed, from the posterior on
        # exactly those rounds: depth 1 waits for each round (fully adaptive); depth 2 plans the next
        # round while the current one is in flight (judges stay busy). Either way the plan depends
        # only on the log, not on timing, so a resumed run asks what an uninterrupted one would.
        depth = self.config.dispatch.pipeline_depth
        semaphore = asyncio.Semaphore(self.config.dispatch.concurrency)
        in_flight: dict[int, asyncio.Task] = {}
        reason = ""
        failed = False
        drained = False
        try:
            pending = self.store.pending_requests()
            for r in sorted({row["round"] for row in pending}):  # interrupted rounds go first
                rows = [row for row in pending if row["round"] == r]
                self._event("round", r, planned_requests=len(rows))
                in_flight[r] = asyncio.create_task(self._dispatch(rows, r, semaphore))
            while True:
                if self._draining:
                    break
                cutoff = round_no + 1 - depth
                for r in sorted(r for r in in_flight if r <= cutoff):
                    await in_flight.pop(r)
                if self._draining:
                    break
                reason = self._fail_fast()
                if reason:
                    failed = True
                    break
                with self._cpu_work():
                    reason, round_no, planned = self._plan_round(round_no, cutoff)
                if planned is None:
                    break
                in_flight[round_no] = asyncio.create_task(self._dispatch(planned, round_no, semaphore))
            for r in sorted(in_flight):  # what was planned is asked (and paid) before stopping
                await in_flight.pop(r)
            if self._draining:
                self.store.set_status("interrupted", "interrupted; resume to continue")
                drained = True
                raise KeyboardInterrupt
        except KeyboardInterrupt:
            if not drained:  # a hard stop, or a Ctrl-C without our handler: stop now, as below
                for task in in_flight.values():
                    task.cancel()
                await asyncio.gather(*in_flight.values(), return_exceptions=True)
                self._set_status_safely("interrupted", "interrupted; resume to continue")
            raise
        except BaseException:
            for task in in_flight.values():
                task.cancel()
            await asyncio.gather(*in_flight.values(), return_exceptions=True)
            self._set_status_safely("interrupted", "interrupted; resume to continue")
            raise
        if self._ok == 0:
            # nothing to rank: say so, never "finished" with statistics from no data
            failed = True
            reason = (f"no judgment succeeded: {reason}" if not reason.startswith("the first") else reason)
            if self._failed:
                reason += f"; typical failure: {self._typical_error()}" if "×" not in reason else ""
        if failed:
            self.store.set_status("failed", reason)
            raise RunFailed(f"{self.store.path}: the run failed: {reason}. The run file keeps every failure "
                            f"(`orchestrator status {self.store.path}`); fix the judge or the config, then "
                            f"`orchestrator resume {self.store.path}` (it asks new requests) or start a new run")
        self.store.set_status("finished", reason)
        with self._cpu_work():
            summary = self._campaign_summary(self.refit() if self.reference is None and self.absolute is None else [], None)
        self._event("stop", round_no, reason=reason, **summary)
        return reason

    def _plan_round(self, round_no: int, cutoff: int) -> tuple[str, int, list[dict] | None]:
        """Refit, check the stopping rule, select the next round and write it as pending requests.
        Returns ``(stop reason, round number, planned request rows or None to stop)``."""
        timings: dict[str, float] = {}
        started = time.perf_counter()
        posteriors: list[Posterior] = []
        if self.reference is None and self.absolute is None:
            posteriors = self.refit(cutoff)
            reason = self._should_stop(posteriors)
            if reason:
                return reason, round_no, None
        timings["fit_s"] = time.perf_counter() - started
        round_no += 1
        started = time.perf_counter()
        if self.reference is not None:
            kind = "reference"
            units, selected, reason = self._reference_units(round_no, cutoff)
            if reason:
                return reason, round_no - 1, None
        elif self.absolute is not None:
            kind = "absolute"
            units, selected = self._absolute_units()
        else:
            kind = "absolute"
            units = self._warm_start_units() if self.config.model.absolute_warm_start else []
            selected = [[u[0]["prompt_id"], u[0]["prompt_id"], json.loads(u[0]["candidates"])[0]] for u in units]
            if not units:
                kind = "pairwise"
                units, selected = self._comparison_units(round_no, posteriors)
        if not units:
            reason = ("every comparison has been asked" if self.reference is None and self.absolute is None
                      else "every candidate has been judged on every prompt")
            return reason, round_no - 1, None
        kept, budget_reason = self._fit_budget(units, self.store.planning_spend(cutoff))
        if not kept:
            return budget_reason or "budget spent", round_no - 1, None
        rows = [r for unit in kept for r in unit]
        timings["select_s"] = time.perf_counter() - started
        summary = self._campaign_summary(posteriors, cutoff)
        self.store.add_round(round_no, kind, selected[: len(kept)], rows,
                             {**summary, **timings, "top": json.dumps(summary["top"])})
        self._mark_asked(rows)
        self._event("round", round_no, planned_requests=len(rows), **summary)
        return "", round_no, rows

    def _campaign_summary(self, posteriors: list[Posterior], cutoff: int | None) -> dict:
        if self.reference is not None:
            return self._reference_summary(cutoff)
        if self.absolute is not None:
            return self._absolute_summary()
        return self._summary(posteriors)

    def _round_info(self) -> dict:
        spend = self.store.spend()
        return {"calls": spend.calls, "tokens": spend.tokens, "usd": spend.usd}


def _hash(*parts: Any) -> str:
    """Seeded, order-free tie-break between prompts (stable across processes, unlike hash())."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()
