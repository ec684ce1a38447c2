"""Reading a run: its ranking with rank intervals and its status — the same for every campaign
kind (PoE posteriors, RAEE leaderboards, absolute-score means). Exports: :mod:`.export`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...records.config import RunConfig
from ...records.dataset import Dataset
from ...store import JudgmentRecord, RunStore, open_run
from ..raee.campaign_boards import campaign_group, reference_ranking

__all__ = ["ranking", "ranking_in", "status"]


def _absolute_ranking(path: str | Path, config: RunConfig, dataset: Dataset, templates: dict, level: float) -> dict:
    """An absolute campaign's quick ranking: each candidate's mean expected level (judges averaged
    with equal weight), rank intervals from resampling the prompts (the simplex paper's bootstrap
    baseline). Judge quality is not modelled here — that is ``orchestrator fit simplex``."""
    import numpy as np

    from ...simplex import build_score_data
    from ...simplex.baselines import simple_average
    from ..simplex.fit import load_absolute_judgments

    records, _ = load_absolute_judgments(path, log=False)
    if not records:
        return {"run": str(path), "scope": "absolute", "level": level, "groups": []}
    levels = len(templates["absolute"].options)
    data = build_score_data(records, levels=levels, source=str(path))
    scores = data.item_scores(soft=True)
    mean = simple_average(scores)
    rng = np.random.default_rng(0)
    q = scores.shape[2]
    with np.errstate(invalid="ignore"):
        boot = np.stack([simple_average(scores[:, :, rng.integers(0, q, size=q)]) for _ in range(1000)])
    boot = np.where(np.isnan(boot), np.nanmean(boot, axis=0), boot)
    order = sorted(range(len(data.candidates)), key=lambda k: (-mean[k], data.candidates[k]))
    names = [data.candidates[k] for k in order]
    score = {data.candidates[k]: float(mean[k]) for k in order}
    sd = {data.candidates[k]: float(boot[:, k].std()) for k in order}
    group = campaign_group(
        f"mean score 1–{levels} (bootstrap; judge quality: `orchestrator fit simplex RUN --levels {levels}`)",
        len(records),
        names,
        score,
        boot[:, order],
        sd,
        dataset,
        config.data.truth,
        level,
    )
    return {"run": str(path), "scope": "absolute", "level": level, "groups": [group]}


def poe_fits(config: RunConfig, dataset: Dataset, judgments: list[JudgmentRecord]) -> tuple[list, list]:
    """The run's groups and their cold fits on ``judgments`` (what ``rank`` and the engine fit)."""
    from ...run.calibration import temperatures_for
    from ...run.groups import build_groups_for, fit_groups
    from ...run.planners.poe import poe_config

    groups = build_groups_for(dataset, config.data.scope)
    temperatures = temperatures_for(config.model.temperature, judgments, dataset, config.data.truth)
    return groups, fit_groups(groups, judgments, poe_config(config), debias=config.model.debias, temperatures=temperatures)


def ranking(path: str | Path, *, level: float = 0.95, fits: tuple[list, list] | None = None) -> dict:
    """The run's current ranking per group: cold fits on every committed judgment, 95% rank intervals
    (for a reference campaign: the RAEE leaderboard per anchor), and ``flags``: candidates whose
    answers are constant or copied across prompts (:func:`orchestrator.raee.control.candidate_flags`).
    ``fits``: the groups and posteriors of :func:`poe_fits` when the caller has them already
    (``status`` fits once for both)."""
    with open_run(path, write=False) as store:
        return ranking_in(path, store, level=level, fits=fits)


def ranking_in(path: str | Path, store: RunStore, *, level: float = 0.95, fits: tuple[list, list] | None = None) -> dict:
    """:func:`ranking` of the run file ``path`` already open as ``store`` (read once for
    ``status`` and the report)."""
    result = _ranking(path, store, level=level, fits=fits)
    result["flags"] = _flags(store.dataset())  # cached: the dataset is read once
    if store.dataset().models:
        from ...store.answers import answer_provenance

        result["answers"] = answer_provenance(store, len(store.dataset().prompts))
    return result


def _flags(dataset: Dataset) -> dict[str, list[str]]:
    from ...raee.control import candidate_flags

    answers: dict[str, list[str]] = {}
    for prompt, by_candidate in dataset.responses.items():
        for candidate, response in by_candidate.items():
            if not dataset.pending(prompt, candidate):  # a candidate model's answer not written is no empty answer
                answers.setdefault(candidate, []).append(response.text)
    return candidate_flags(answers)


NOTHING_JUDGED = "No judgment has succeeded yet: nothing is ranked and no leader is named (the order shown is the data's)."
"""The warning of a ranking read before any judgment succeeded."""


def _ranking(path: str | Path, store: RunStore, *, level: float, fits: tuple[list, list] | None) -> dict:
    config = RunConfig.from_stored(store.config)
    dataset = store.dataset()
    if config.reference is not None:
        return reference_ranking(path, config, dataset, level, store)
    if config.compare is not None:  # two systems and a decision, not a ranking
        from .comparison import comparison_in

        return {"run": str(path), "scope": "compare", "level": level, "groups": [], "comparison": comparison_in(store)}
    judgments = list(store.judgments()) if config.absolute is None else []
    templates = store.templates()
    if config.absolute is not None:
        return _absolute_ranking(path, config, dataset, templates, level)
    # the PoE stack (torch) only where a PoE posterior is read: campaigns rank without it
    from ...poe import posterior_entropy
    from ...poe.uncertainty import adjacent_reorder_probabilities
    from ...run.groups import split_by_group
    from ..judges.panel import judge_summary, practical_ties

    groups, posteriors = fits if fits is not None else poe_fits(config, dataset, judgments)
    truth = config.data.truth
    out = []
    silent = _silent_models(store)
    for group, post, rows_of_group in zip(groups, posteriors, split_by_group(groups, judgments)):
        unjudged = [k for k, name in enumerate(group.names) if group.candidate(name) in silent]
        rows = _poe_rows(group, post, dataset, truth, level, leave_out=unjudged)
        _, adj = adjacent_reorder_probabilities(post)
        entry: dict[str, Any] = {
            "group": group.key,
            "comparisons": post.n_comparisons,
            "entropy": round(posterior_entropy(post), 4),
            "max_adjacent_reorder": round(float(adj.max()), 4) if adj.numel() else 0.0,
            "ranking": rows,
        }
        if unjudged:  # no answer to judge: not ranked among the judged (an estimate from the prior alone)
            entry["not_judged"] = [group.names[k] for k in unjudged]
        informed = post.n_comparisons > 0 or post.link is not None  # never statistics from no data
        entry["judged"] = informed
        entry["judges"] = judge_summary(group, rows_of_group, post, judgments) if informed else []
        entry["ties"], entry["close"] = (
            [pair for pair in pairs if not set(pair) & set(entry.get("not_judged", []))]
            for pairs in practical_ties(group, post, config.stopping.tie_delta, config.stopping.max_error)
        )
        if truth and len(rows) > 2 and informed:
            from scipy.stats import spearmanr

            values = [r["truth"] for r in rows]
            if None not in values and len(set(values)) > 1:
                entry["spearman_vs_truth"] = round(float(spearmanr([-r["rank"] for r in rows], values).statistic), 4)
        out.append(entry)
    _add_people(store, config.data.scope, groups, posteriors, out, level)
    from ..judges.information import information_warnings, judge_information

    tests = judge_information(
        (row.judge, (group.key, row.candidates[0]), (group.key, row.candidates[1]), row.p_first)
        for group, rows_of_group in zip(groups, split_by_group(groups, judgments))
        for row in rows_of_group
        if row.p_first is not None and len(row.candidates) == 2
    )
    warnings, leader = information_warnings(tests)
    if not any(entry["judged"] for entry in out):  # no claim from no data: nothing leads
        warnings, leader = [NOTHING_JUDGED, *warnings], False
    return {
        "run": str(path),
        "scope": config.data.scope,
        "level": level,
        "groups": out,
        "warnings": warnings,
        "leader": leader,
        "information": {
            j: {"judgments": t.judgments, "p_value": t.p_value, "first_share": t.first_share, "first_probability": t.first_probability}
            for j, t in tests.items()
        },
    }


def _silent_models(store: RunStore) -> set[str]:
    """Candidate models none of whose answers could be generated (every one failed): nothing of
    theirs was judged."""
    from ...store.answers import answer_counts

    return {c for c, n in answer_counts(store).items() if n["ok"] == 0 and n["pending"] == 0 and n["failed"] > 0}


def _poe_rows(group, post, dataset: Dataset, truth: str | None, level: float, leave_out: list[int] | None = None) -> list[dict[str, Any]]:
    """A PoE group's ranking rows: rank, score, its sd against the field's mean and marginal, the
    ``level`` rank interval, and the mean truth of the candidate's answers where the data has one.
    ``leave_out``: candidates (indices) not ranked — the others are ranked among themselves."""
    from ...poe import centred_variances, marginal_variances, rank_intervals, ranking_order

    left_out = set(leave_out or [])
    kept = [c for c in range(len(group.names)) if c not in left_out]
    intervals = rank_intervals(post, level=level, among=kept if leave_out else None)
    position = {c: k for k, c in enumerate(kept)} if leave_out else {c: c for c in kept}
    sd = centred_variances(post).sqrt()  # what comparisons see (the common location's uncertainty left out)
    sd_marginal = marginal_variances(post).sqrt()
    rows = []
    for rank, c in enumerate((c for c in ranking_order(post.mean, group.names) if c in position), start=1):
        row: dict[str, Any] = {
            "rank": rank,
            "candidate": group.names[c],
            "score": round(float(post.mean[c]), 6),
            "sd": round(float(sd[c]), 6),
            "sd_marginal": round(float(sd_marginal[c]), 6),
            "rank_low": int(intervals.lower[position[c]]),
            "rank_high": int(intervals.upper[position[c]]),
        }
        if truth:
            name = group.names[c]
            scores = [
                v
                for p, by in dataset.responses.items()
                if group.member(p, group.candidate(name)) == name
                for v in [by[group.candidate(name)].human.get(truth)]
                if v is not None
            ]
            row["truth"] = round(sum(scores) / len(scores), 6) if scores else None
        rows.append(row)
    return rows


def _add_people(store: RunStore, scope: str, groups: list, posteriors: list, entries: list[dict], level: float) -> None:
    """With labels in the run file (``orchestrator label``): each group's people's ranking beside the
    judges' (:mod:`orchestrator.offline.replay.people`), as ``entry["people"]``."""
    from ...store.labels import stored_labels
    from ..judges.human_labels import as_labels
    from ..replay.people import people_rankings

    stored = stored_labels(store.db.conn)
    if not stored:
        return
    people = people_rankings([(g.key, g.names, p) for g, p in zip(groups, posteriors)], as_labels(stored), scope, level=level)
    for entry in entries:
        if entry["group"] in people:
            entry["people"] = people[entry["group"]]


def _forecast(store, config: RunConfig, posteriors: list) -> dict | None:
    """Expected calls, tokens and USD to the stopping rule (PoE runs with a pilot; :mod:`orchestrator.run.forecast`)."""
    from ...run.forecast import forecast
    from ...run.planners import builtin_planner_for

    planner = builtin_planner_for(config)
    if planner is None:  # a campaign kind from outside the package: reading a run imports none of its code
        return None
    dataset = store.dataset()
    n_judges = len(config.judging.judges)
    possible = planner.possible_requests(config, dataset, n_judges)
    return forecast(store, config, posteriors, n_judges=n_judges, possible=possible)


def status(path: str | Path) -> dict:
    """Budget spent, rounds, state, and the uncertainty of the current ranking."""
    with open_run(path, write=False) as store:
        run = store.run
        config = RunConfig.from_stored(store.config)
        spend = store.spend()
        counts = store.request_counts()
        failures = store.failure_counts()
        rounds = store.last_round() + 1
        poe = config.campaign == "poe"  # campaigns have no PoE posterior
        # one fit of every group serves the forecast and the ranking
        fits = poe_fits(config, store.dataset(), list(store.judgments())) if poe else None
        forecast = _forecast(store, config, fits[1]) if fits is not None and run["status"] != "finished" else None
        deployments = store.deployment_counts()
        from ...store.labels import label_progress

        people = label_progress(store.db.conn)
        rank = ranking_in(path, store, fits=fits)  # the same open store: the run file is read once
        prompts = len(store.dataset().prompts)
    b = config.budget
    groups = rank["groups"]
    summary = {
        "run": str(path),
        "name": run["name"],
        "state": run["status"],
        "stop_reason": run["stop_reason"],
        "stop_kind": run.get("stop_kind"),
        "rounds": rounds,
        "requests": counts,
        "failures": failures,
        "spent": {"calls": spend.calls, "tokens": spend.tokens, "usd": round(spend.usd, 6), "cached": spend.cached},
        "budget": {"calls": b.max_calls, "tokens": b.max_tokens, "usd": b.max_usd},
        "groups": len(groups),
        "mean_entropy": round(sum(g["entropy"] for g in groups) / len(groups), 4) if poe and groups else None,
        "max_adjacent_reorder": max(g["max_adjacent_reorder"] for g in groups) if poe and groups else None,
        # no leader where no judge carries information: the warnings say why
        "top": {g["group"]: [r["candidate"] for r in g["ranking"][:3]] for g in groups[:5] if g.get("judged", True)}
        if rank.get("leader", True)
        else {},
        "warnings": rank.get("warnings", []),
        "forecast": forecast,
        "deployments": deployments,
        "people": people,
    }
    if config.candidates:  # candidates that are models: how many of their answers were generated (the ranking's count)
        counted = rank.get("answers") or {}
        empty = {"generated": 0, "failed": 0, "pending": 0, "truncated": 0, "cached": 0}
        summary["answers"] = {
            c: {"ok": n["generated"], **{k: n[k] for k in ("failed", "pending", "truncated", "cached")}, "prompts": prompts}
            for c in config.candidates
            for n in [{**empty, **counted.get(c, {})}]
        }
    if "comparison" in rank:
        summary["comparison"] = rank["comparison"]
    sp = [g["spearman_vs_truth"] for g in groups if "spearman_vs_truth" in g]
    if sp:
        summary["mean_spearman_vs_truth"] = round(sum(sp) / len(sp), 4)
    return summary
