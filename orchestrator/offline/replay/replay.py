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

import asyncio
import contextlib
import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from ...errors import OrchestratorError, RunFailed
from ...judging.client import JudgeProfile
from ...judging.log_judge import LogJudge
from ...poe import PoEConfig, Strategy, parse_strategy, threads_for
from ...poe.covariates import CONTROLS
from ...records.config import RunConfig
from ...records.dataset import Dataset, PromptRow, ResponseText
from ...records.log import ResponseRow, load_log, load_responses
from ...records.templates import get_template
from ...run.engine import RunEngine, RunEvent
from ...run.groups import build_groups_for, fit_group, item_name
from ...store import create_run
from .log_groups import SCOPES, Group, build_groups
from .report import GroupReplay, ReplayReport, average_curves, mean_sd, spearman
from .settings import ReplaySettings

__all__ = [
    "SCOPES",
    "Group",
    "item_name",
    "GroupReplay",
    "ReplayReport",
    "ReplaySettings",
    "build_groups",
    "group_dataset",
    "replay_group",
    "replay",
    "replay_with",
    "replay_files",
]

NO_TRUTH = "__none__"


def replay_group(
    group: Group,
    strategy: Strategy | str,
    config: PoEConfig,
    *,
    scope: str = "per_prompt",
    debias: str = "none",
    batch: int = 1,
    budget: int | None = None,
    seed: int = 0,
    with_absolute: bool = False,
    panel: str = "cost_aware",
    tick: Callable[[int], None] | None = None,
    workdir: Path | None = None,
    reference: np.ndarray | None = None,
) -> GroupReplay:
    """Run ``strategy`` on one group with the run engine, every request answered from the log.

    This is a run (:class:`~orchestrator.run.engine.RunEngine`, the PoE planner, a run file in a
    temporary directory) whose judges are :class:`~orchestrator.judging.log_judge.LogJudge` s over
    the group's logged judgments: grouping, debiasing, warm start, panels (every judge of the log
    asked each selected comparison) and selection are a live run's. The planner asks only what the
    log can answer. ``budget`` counts judge calls for this group (a permutation-debiased pair costs
    two per judge, an absolute warm start one per candidate and judge); ``tick(calls)`` is called
    as judgments arrive (progress of long replays). ``reference`` (scores in ``group.names``
    order) replaces the all-pairs fit as the "self" ranking of the curve (a benchmark comparing
    debias modes measures them all against one ranking).
    """
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="orchestrator-replay-")))
        settings = ReplaySettings(
            strategy=str(strategy), scope=scope, debias=debias, batch=batch, budget=budget, with_absolute=with_absolute, panel=panel
        )
        return _replay_group(group, str(strategy), config, settings, seed, tick, workdir, reference)


def _replay_group(
    group: Group,
    strategy: str,
    poe: PoEConfig,
    settings: ReplaySettings,
    seed: int,
    tick: Callable[[int], None] | None,
    workdir: Path,
    reference: np.ndarray | None = None,
) -> GroupReplay:
    names = list(dict.fromkeys(r.judge for r in group.records))
    config = _replay_config(names, strategy, poe, settings, seed)
    scope, debias, with_absolute, budget = settings.scope, settings.debias, settings.with_absolute, settings.budget
    dataset = group_dataset(group)
    run_group = build_groups_for(dataset, scope)[0]
    truth_of = dict(zip(group.names, group.truth))
    truth = np.asarray([truth_of[name] for name in run_group.names], dtype=float)
    relevant = [r for r in group.rows if r.kind == "pairwise" or (with_absolute and r.kind == "absolute")]
    full = fit_group(run_group, relevant, poe, debias=debias, with_absolute=with_absolute).mean.numpy()
    self_scores = full
    if reference is not None:
        reference_of = dict(zip(group.names, reference))
        self_scores = np.asarray([reference_of[name] for name in run_group.names], dtype=float)
    judges = {name: LogJudge(name, group.records) for name in names}
    profiles = {name: log_profile(name, group.records) for name in names}
    templates = {"pairwise": get_template("poe-pairwise")}
    if with_absolute:
        templates["absolute"] = get_template("poe-absolute")

    curve: list[tuple[int, float, float]] = []

    def observe(spend, planner) -> None:
        mean = planner.posteriors[0].mean.numpy()
        curve.append((spend.calls, spearman(mean, truth), spearman(mean, self_scores)))

    def progress(event: RunEvent) -> None:
        if event.kind == "judgment" and tick is not None:
            tick(1)

    path = workdir / f"{seed}-{hashlib.sha256(group.key.encode()).hexdigest()[:16]}.db"
    store = create_run(path, name="replay", config=config.to_json(), seed=seed, dataset=dataset, templates=templates)
    with store:
        engine = RunEngine(
            store,
            config,
            judges,  # type: ignore[arg-type]
            profiles,
            templates,
            local=set(names),  # a log judge costs nothing (and needs no price lookup)
            progress=progress if tick is not None else None,
            answerable=lambda judge, prompt, cands, kind, repeat=0: judges[judge].holds(prompt, cands, kind, repeat),
            known_pairs=lambda: {pair for judge in judges.values() for pair in judge.pairwise_requests()},
            observe=observe,
        )
        try:
            asyncio.run(engine.run())
        except RunFailed as exc:
            # (the run file is this replay's temporary one: no advice about resuming it)
            raise OrchestratorError(f"replay of group {group.key!r}: the log's judgments could not be used: {exc.reason}") from None
        posterior = engine.planner.posteriors[0]
        used = store.judgment_counts().get("ok", 0)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    if with_absolute and len(curve) > 1 and curve[0][0] == 0:
        curve = curve[1:]  # the curve starts once the warm start's scores are in (PoE §3.2)
    if budget is None and used == len(relevant):
        # Every logged judgment was asked: report the fit on them in the log's order, which is
        # what `orchestrator rank` computes for a run, so a replay of an export reproduces it.
        posterior = fit_group(run_group, relevant, poe, debias=debias, with_absolute=with_absolute)
    full_spearman = spearman(full, truth)
    k90 = None
    if full_spearman > 0:
        k90 = next((k for k, sp, _ in curve if sp >= 0.9 * full_spearman), None)
    k_self90 = next((k for k, _, self_sp in curve if self_sp >= 0.9), None)
    return GroupReplay(group.key, run_group.names, truth, curve, full_spearman, k90, k_self90, posterior, sorted(names))


def log_profile(name: str, records: list) -> JudgeProfile:
    """The profile of a judge answering from a log, as its records say it was read: a log of single
    verdicts with repeats (repeat 0..R−1 of one shown order) samples adaptively up to R, a log of
    ``samples`` judgments pays its k completions each (``max_calls`` counts them), anything else is a
    log-probability judge."""
    mine = [r for r in records if r.judge == name and r.kind == "pairwise"]
    if mine and all(r.method == "verdict" for r in mine):
        ceiling = max(r.repeat for r in mine) + 1
        return JudgeProfile(name=name, model=f"log/{name}", logprobs=False, samples=min(ceiling, 64), sampling="adaptive")
    if mine and all(r.method == "samples" and r.samples for r in mine):
        k = max(r.samples or 1 for r in mine)
        return JudgeProfile(name=name, model=f"log/{name}", logprobs=False, samples=min(k, 64), sampling="fixed")
    return JudgeProfile(name=name, model=f"log/{name}")


def _replay_config(judges: list[str], strategy: str, poe: PoEConfig, settings: ReplaySettings, seed: int) -> RunConfig:
    """The run config of one group's replay: the paper's protocol (no stopping rule, every
    round planned on everything before it, every answer at once)."""
    return RunConfig.model_validate(
        {
            "name": "replay",
            "seed": seed,
            "data": {"prompts": "(log)", "responses": "(log)", "scope": settings.scope},
            "judging": {"judges": judges},
            "model": {
                "expert": poe.expert.name,
                "debias": settings.debias,
                "absolute_warm_start": settings.with_absolute,
                "judge_reliability": poe.judge_sharpness,
                "posterior": poe.posterior,
                "control": [name for name, covariates in CONTROLS.items() if set(covariates) <= set(poe.controls)],
                "families": poe.families,
            },
            "stopping": {"rule": "budget"},
            "selection": {"strategy": strategy, "batch": settings.batch, "panel": settings.panel},
            "budget": {"max_calls": settings.budget},
            "dispatch": {"pipeline_depth": 1, "concurrency": 256, "max_attempts": 1},
        }
    )


def group_dataset(group: Group) -> Dataset:
    """The responses a group ranks, as a run's dataset (the log answers; the texts, where known,
    give length control its lengths)."""
    prompts: dict[str, PromptRow] = {}
    responses: dict[str, dict[str, ResponseText]] = {}
    for prompt, candidate in group.members:
        if prompt not in prompts:
            prompts[prompt] = PromptRow(id=prompt, text=f"(prompt {prompt}: answers come from the log)")
            responses[prompt] = {}
        text = group.texts.get((prompt, candidate)) or f"(response of {candidate})"
        responses[prompt][candidate] = ResponseText(prompt_id=prompt, candidate=candidate, text=text)
    return Dataset(prompts, responses)


def replay(groups: list[Group], strategy: str | Strategy, *, progress=None, **options) -> ReplayReport:
    """Replay ``strategy`` on every group for ``seeds`` seeds (``seed``, ``seed + 1``, …) and
    average (see module docstring); ``options`` are :class:`ReplaySettings`' fields. With a run's
    seed, batch and settings (and, for a single group, its budget) a replay of the run's export
    asks what the run asked.

    ``k90`` per seed is the mean over groups with a defined k90; the report gives the mean and
    sd of that over seeds. ``progress`` is an optional callable ``(done, total)`` counting judge
    calls replayed, called after every batch.

    ``control=["length", "style"]`` fits each judge's length and style tastes with the scores
    (``scope="global"`` only, with the responses' texts; :attr:`orchestrator.records.config.ModelConfig.control`).

    Raises:
        OrchestratorError: bad strategy, expert, debias mode, batch, budget, seeds or control.
    """
    options["control"] = tuple(options.get("control") or ())
    return replay_with(groups, ReplaySettings(strategy=strategy, **options), progress=progress)


def replay_with(groups: list[Group], settings: ReplaySettings, *, progress=None) -> ReplayReport:
    """:func:`replay` with its options as one :class:`ReplaySettings`."""
    strat, config = settings.checked(groups)
    total, done = settings.seeds * sum(settings.callable_calls(g) for g in groups), 0

    def tick(calls: int) -> None:
        nonlocal done
        done += calls
        if progress is not None:
            progress(min(done, total), total)

    per_seed: list[list[GroupReplay]] = []
    workdir = Path(tempfile.mkdtemp(prefix="orchestrator-replay-"))
    try:
        for offset in range(settings.seeds):
            results = []
            for group in groups:
                with threads_for(len(group.names)):
                    ticks = tick if progress is not None else None
                    results.append(_replay_group(group, str(strat), config, settings, settings.seed + offset, ticks, workdir))
            per_seed.append(results)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return _report(per_seed, str(strat), config.expert.name, settings, len(groups))


def _report(per_seed: list[list[GroupReplay]], strategy: str, expert: str, settings: ReplaySettings, n_groups: int) -> ReplayReport:
    """The replay's report: the first seed's groups, curves averaged over groups then seeds, k90
    and k_self90 as mean ± sd over seeds of the per-seed means over groups where they are defined."""
    first_seed = per_seed[0]
    curves = [average_curves([r.curve for r in results]) for results in per_seed]
    k90_per_seed = [float(np.mean(k)) for results in per_seed if (k := [r.k90 for r in results if r.k90 is not None])]
    kself_per_seed = [float(np.mean(k)) for results in per_seed if (k := [r.k_self90 for r in results if r.k_self90 is not None])]
    k90, k90_sd = mean_sd(k90_per_seed)
    kself, kself_sd = mean_sd(kself_per_seed)
    return ReplayReport(
        strategy=strategy,
        scope=settings.scope,
        expert=expert,
        debias=settings.debias,
        batch=settings.batch,
        budget=settings.budget,
        seeds=settings.seeds,
        seed=settings.seed,
        n_groups=n_groups,
        full_spearman=float(np.mean([r.full_spearman for r in first_seed])),
        k90=k90,
        k90_sd=k90_sd,
        k90_undefined=sum(r.k90 is None for r in first_seed),
        k_self90=kself,
        k_self90_sd=kself_sd,
        curve=average_curves(curves) if settings.seeds > 1 else curves[0],
        groups=first_seed,
    )


def replay_files(
    log: str | Path,
    responses: str | Path | None,
    truth: str | None,
    strategy: str | ReplaySettings,
    *,
    judge: str | None = None,
    progress=None,
    **options,
) -> ReplayReport:
    """:func:`replay` on files: a judgment-log JSONL and a responses JSONL (truth in ``human[truth]``);
    ``strategy`` a name with ``options`` (:class:`ReplaySettings`' fields), or the settings whole.

    Without ``responses`` and ``truth`` the candidates come from the log and no Spearman is
    computed: the replay then only yields the rankings (e.g. to check an export of a run).
    """
    if isinstance(strategy, ReplaySettings):
        settings = strategy
    else:
        options["control"] = tuple(options.get("control") or ())
        settings = ReplaySettings(strategy=strategy, **options)
    try:
        parse_strategy(settings.strategy) if isinstance(settings.strategy, str) else None
    except ValueError as exc:
        raise OrchestratorError(str(exc)) from None
    if truth is not None and responses is None:
        raise OrchestratorError("--truth FIELD reads the human scores in --responses FILE.jsonl: give it too")
    records = load_log(log)
    if "self" in settings.control and settings.families:  # (without families: ReplaySettings.checked says so)
        from ...records.families import family_problem

        chosen = [r for _, r in records if judge is None or r.judge == judge]
        judges = sorted({r.judge for r in chosen})
        problem = family_problem(dict(settings.families), judges, {c for r in chosen for c in r.candidates}, where="--family")
        if problem:
            raise OrchestratorError(problem)
    if responses is None:
        seen = dict.fromkeys((r.prompt_id, c) for _, r in records for c in r.candidates)
        rows = [(0, ResponseRow(prompt_id=p, candidate=c, human={NO_TRUTH: 0.0})) for p, c in seen]
        truth, responses = NO_TRUTH, "(from the log)"
    else:
        rows = load_responses(responses)
        if truth is None:  # the answers' texts alone (length or style control): only rank
            rows = [(n, r.model_copy(update={"human": {**r.human, NO_TRUTH: 0.0}})) for n, r in rows]
            truth = NO_TRUTH
    groups = build_groups(records, rows, truth, settings.scope, judge=judge, source=str(log), responses_source=str(responses))  # type: ignore[arg-type]
    return replay_with(groups, settings, progress=progress)
