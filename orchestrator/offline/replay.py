"""Replay a recorded judgment log: run a selection strategy offline, answering each selected
comparison from the log instead of calling a judge.

This is the PoE paper's protocol (§5.2, §6.2, Table 2): after every batch the posterior is refit
and its ranking compared with the human truth (Spearman) and with the judge's own all-pairs
ranking; ``k90`` is the number of judge calls after which Spearman first reaches 90% of the
all-pairs value (per group, then averaged), ``k_self90`` the number after which the Spearman with
the all-pairs ranking first reaches 0.9.

Scopes (DESIGN.md "Domain model"):

- ``per_prompt``: one posterior per prompt over its responses; the budget applies per prompt and
  curves are averaged over prompts (the paper's SummEval setting).
- ``global``: candidates (systems) ranked across prompts; a comparison of i and j is answered
  from a prompt where the log has it, least-used prompt first.
- ``items``: every response is its own item (``prompt_id::candidate``) in one posterior.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from scipy.stats import spearmanr

from ..errors import OrchestratorError
from ..poe import (
    DEBIAS_MODES,
    Observations,
    PoEConfig,
    Posterior,
    Strategy,
    fit_laplace,
    get_expert,
    parse_strategy,
    permutation_debias,
    ranking_order,
    select_pairs,
    threads_for,
)
from ..records import ResponseRow, load_log, load_responses
from ..run.groups import Group as RunGroup
from ..run.groups import fit_group, item_name
from .log_groups import SCOPES, Group, build_groups

__all__ = ["SCOPES", "Group", "item_name", "GroupReplay", "ReplayReport", "build_groups", "replay_group", "replay", "replay_files"]

NO_TRUTH = "__none__"


@dataclass(frozen=True)
class GroupReplay:
    """Result of replaying one group."""

    key: str
    names: list[str]
    """Candidate names, in posterior index order."""
    truth: np.ndarray
    """Ground truth per candidate."""
    curve: list[tuple[int, float, float]]
    """``(calls, spearman_vs_truth, spearman_vs_all_pairs)`` after every batch, from k = 0."""
    full_spearman: float
    """Spearman vs truth of the posterior on every logged judgment."""
    k90: int | None
    """First k with Spearman ≥ 0.9 · full (None if full ≤ 0 or never reached)."""
    k_self90: int | None
    """First k with Spearman vs the all-pairs ranking ≥ 0.9 (None if never reached)."""
    final: Posterior
    """The posterior after the last batch."""


@dataclass(frozen=True)
class ReplayReport:
    """Averages over groups and seeds; :meth:`to_json` is the ``--json`` output."""

    strategy: str
    scope: str
    expert: str
    debias: str
    batch: int
    budget: int | None
    seeds: int
    n_groups: int
    full_spearman: float
    k90: float | None
    k90_sd: float | None
    k90_undefined: int
    k_self90: float | None
    k_self90_sd: float | None
    curve: list[tuple[int, float, float]]
    groups: list[GroupReplay] = field(repr=False, default_factory=list)
    """Per-group results of the first seed."""

    def to_json(self) -> dict:
        return {
            "strategy": self.strategy,
            "scope": self.scope,
            "expert": self.expert,
            "debias": self.debias,
            "batch": self.batch,
            "budget": self.budget,
            "seeds": self.seeds,
            "n_groups": self.n_groups,
            "full_spearman": _round(self.full_spearman),
            "k90": _round(self.k90),
            "k90_sd": _round(self.k90_sd),
            "k90_undefined": self.k90_undefined,
            "k_self90": _round(self.k_self90),
            "k_self90_sd": _round(self.k_self90_sd),
            "curve": [[k, _round(a), _round(b)] for k, a, b in self.curve],
            "rankings": {g.key: [g.names[c] for c in ranking_order(g.final.mean, g.names)] for g in self.groups},
        }


def _round(x: float | None, digits: int = 6) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), digits)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation; 0 when either side is constant (no ranking yet)."""
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    value = spearmanr(a, b).statistic
    return 0.0 if math.isnan(value) else float(value)


def replay_group(
    group: Group,
    strategy: Strategy,
    config: PoEConfig,
    *,
    debias: str = "none",
    batch: int = 1,
    budget: int | None = None,
    seed: int = 0,
    with_absolute: bool = False,
    tick: Callable[[int], None] | None = None,
) -> GroupReplay:
    """Run ``strategy`` on one group, answering each selected pair from the log.

    ``budget`` counts judge calls for this group (a permutation-debiased pair costs two, an
    absolute warm start one per candidate). ``tick(calls)`` is called after every batch with the
    calls it used (progress of long replays).
    """
    n = len(group.names)
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    pools = {key: rng.sample(entries, len(entries)) for key, entries in group.pairwise.items()}
    counts = torch.zeros(n, n, dtype=torch.long)
    for (i, j), entries in pools.items():
        counts[i, j] = len(entries)
    prompt_usage: Counter[str] = Counter()

    def take(i: int, j: int) -> float:
        entries = pools[(i, j)]
        # least-used prompt first (matters in the global scope; a no-op elsewhere)
        best = min(range(len(entries)), key=lambda t: prompt_usage[entries[t][0]])
        prompt, p = entries.pop(best)
        prompt_usage[prompt] += 1
        counts[i, j] -= 1
        return p

    absolutes: list[tuple[int, float, float]] = []
    if with_absolute:
        absolutes = [(i, *entries[0]) for i, entries in sorted(group.absolute.items())]
    members = RunGroup(group.key, group.names, {name: k for k, name in enumerate(group.names)})
    full = fit_group(members, group.rows, config, debias=debias, with_absolute=with_absolute)
    full_spearman = spearman(full.mean.numpy(), group.truth)

    comparisons: list[tuple[int, int, float]] = []
    calls = len(absolutes)
    posterior = fit_laplace(Observations.from_lists(n, comparisons, absolutes), config)
    curve = [(calls, spearman(posterior.mean.numpy(), group.truth), spearman(posterior.mean.numpy(), full.mean.numpy()))]
    ordered = debias != "permutation"
    cost = 1 if ordered else 2
    while True:
        picks = batch if budget is None else min(batch, (budget - calls) // cost)
        if picks <= 0:
            break
        pairs = select_pairs(posterior, strategy, counts > 0, picks, ordered=ordered, generator=generator, expert=config.expert)
        if not pairs:
            break
        for i, j in pairs:
            if ordered:
                comparisons.append((i, j, take(i, j)))
            else:
                comparisons.append((i, j, float(permutation_debias(take(i, j), take(j, i)))))
            calls += cost
        posterior = fit_laplace(Observations.from_lists(n, comparisons, absolutes), config, warm_start=posterior)
        if tick is not None:
            tick(len(pairs) * cost)
        mean = posterior.mean.numpy()
        curve.append((calls, spearman(mean, group.truth), spearman(mean, full.mean.numpy())))

    if budget is None and int(counts.sum()) == 0:
        # Every logged judgment was used: report the canonical (cold) fit on all of them, which is
        # what `orchestrator rank` computes for a run, so a replay of an export reproduces it.
        posterior = full
    k90 = None
    if full_spearman > 0:
        k90 = next((k for k, sp, _ in curve if sp >= 0.9 * full_spearman), None)
    k_self90 = next((k for k, _, self_sp in curve if self_sp >= 0.9), None)
    return GroupReplay(group.key, group.names, group.truth, curve, full_spearman, k90, k_self90, posterior)


def _average_curves(curves: list[list[tuple[int, float, float]]]) -> list[tuple[int, float, float]]:
    """Average step-function curves over their union of k values (a finished curve holds its last value)."""
    ks = sorted({k for curve in curves for k, _, _ in curve})
    out = []
    for k in ks:
        sp, self_sp = [], []
        for curve in curves:
            last = curve[0]
            for point in curve:
                if point[0] > k:
                    break
                last = point
            sp.append(last[1])
            self_sp.append(last[2])
        out.append((k, float(np.mean(sp)), float(np.mean(self_sp))))
    return out


def _mean_sd(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def replay(
    groups: list[Group],
    strategy: str | Strategy,
    *,
    scope: str = "per_prompt",
    expert: str = "soft_bt",
    debias: str = "none",
    batch: int = 1,
    budget: int | None = None,
    seeds: int = 1,
    with_absolute: bool = False,
    progress=None,
) -> ReplayReport:
    """Replay ``strategy`` on every group for ``seeds`` seeds and average (see module docstring).

    ``k90`` per seed is the mean over groups with a defined k90; the report gives the mean and
    sd of that over seeds. ``progress`` is an optional callable ``(done, total)`` counting judge
    calls replayed, called after every batch.

    Raises:
        OrchestratorError: bad strategy, expert, debias mode, batch, budget or seeds.
    """
    try:
        strat = parse_strategy(strategy) if isinstance(strategy, str) else strategy
        config = PoEConfig(expert=get_expert(expert), home_advantage=debias == "home")
    except ValueError as exc:
        raise OrchestratorError(str(exc)) from None
    if debias not in DEBIAS_MODES:
        raise OrchestratorError(f"unknown debias mode {debias!r}; choose one of {', '.join(DEBIAS_MODES)}")
    if batch < 1:
        raise OrchestratorError(f"--batch must be >= 1 (got {batch})")
    if budget is not None and budget < 1:
        raise OrchestratorError(f"--budget must be >= 1 (got {budget})")
    if seeds < 1:
        raise OrchestratorError(f"--seeds must be >= 1 (got {seeds})")
    curves, full_values = [], []
    k90_per_seed, kself_per_seed = [], []
    first_seed: list[GroupReplay] = []
    undefined = 0

    def callable_calls(group: Group) -> int:
        logged = sum(len(entries) for entries in group.pairwise.values())
        if debias == "permutation":
            logged = 2 * sum(min(len(e), len(group.pairwise.get((j, i), []))) for (i, j), e in group.pairwise.items() if i < j)
        return logged if budget is None else min(logged, budget)

    total, done = seeds * sum(callable_calls(g) for g in groups), 0

    def tick(calls: int) -> None:
        nonlocal done
        done += calls
        if progress is not None:
            progress(min(done, total), total)

    for seed in range(seeds):
        results = []
        for group in groups:
            with threads_for(len(group.names)):
                results.append(
                    replay_group(
                        group, strat, config, debias=debias, batch=batch, budget=budget, seed=seed, with_absolute=with_absolute, tick=tick
                    )
                )
        if seed == 0:
            first_seed = results
            full_values = [r.full_spearman for r in results]
            undefined = sum(r.k90 is None for r in results)
        curves.append(_average_curves([r.curve for r in results]))
        k90s = [r.k90 for r in results if r.k90 is not None]
        kselfs = [r.k_self90 for r in results if r.k_self90 is not None]
        if k90s:
            k90_per_seed.append(float(np.mean(k90s)))
        if kselfs:
            kself_per_seed.append(float(np.mean(kselfs)))
    k90, k90_sd = _mean_sd(k90_per_seed)
    kself, kself_sd = _mean_sd(kself_per_seed)
    return ReplayReport(
        strategy=str(strat),
        scope=scope,
        expert=config.expert.name,
        debias=debias,
        batch=batch,
        budget=budget,
        seeds=seeds,
        n_groups=len(groups),
        full_spearman=float(np.mean(full_values)),
        k90=k90,
        k90_sd=k90_sd,
        k90_undefined=undefined,
        k_self90=kself,
        k_self90_sd=kself_sd,
        curve=_average_curves(curves) if seeds > 1 else curves[0],
        groups=first_seed,
    )


def replay_files(
    log: str | Path,
    responses: str | Path | None,
    truth: str | None,
    strategy: str,
    *,
    scope: str = "per_prompt",
    judge: str | None = None,
    **kwargs,
) -> ReplayReport:
    """:func:`replay` on files: a judgment-log JSONL and a responses JSONL (truth in ``human[truth]``).

    Without ``responses`` and ``truth`` the candidates come from the log and no Spearman is
    computed: the replay then only yields the rankings (e.g. to check an export of a run).
    """
    try:
        parse_strategy(strategy)
    except ValueError as exc:
        raise OrchestratorError(str(exc)) from None
    if (responses is None) != (truth is None):
        raise OrchestratorError("--responses and --truth go together (give both, or neither to only rank)")
    records = load_log(log)
    if responses is None:
        seen = dict.fromkeys((r.prompt_id, c) for _, r in records for c in r.candidates)
        rows = [(0, ResponseRow(prompt_id=p, candidate=c, human={NO_TRUTH: 0.0})) for p, c in seen]
        truth, responses = NO_TRUTH, "(from the log)"
    else:
        rows = load_responses(responses)
    groups = build_groups(records, rows, truth, scope, judge=judge, source=str(log), responses_source=str(responses))  # type: ignore[arg-type]
    return replay(groups, strategy, scope=scope, **kwargs)
