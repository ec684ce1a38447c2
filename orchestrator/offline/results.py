"""Reading a run: its ranking with rank intervals and its status — the same for every campaign
kind (PoE posteriors, RAEE leaderboards, absolute-score means). Exports: :mod:`.export`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..records.config import RunConfig
from ..records.dataset import Dataset
from ..run.planners import reference_items
from ..store import JudgmentRecord, RunStore, open_run

__all__ = ["ranking", "ranking_in", "status"]


def _campaign_group(
    title: str,
    n: int,
    names: list[str],
    score: dict[str, float],
    draws,
    sd: dict[str, float],
    dataset: Dataset,
    truth: str | None,
    level: float,
) -> dict:
    """One ranking entry of a campaign (reference or absolute): candidates by score, shortest
    ``level`` rank intervals from score draws ``(S, N)`` (columns in ``names`` order), truth."""
    import numpy as np

    from ..poe.ranks import rank_interval_arrays  # numpy only: reading a leaderboard needs no torch

    _, lower, upper, _ = rank_interval_arrays(np.asarray(draws), level)
    entries = []
    for k, c in enumerate(names):
        row: dict[str, Any] = {
            "rank": k + 1,
            "candidate": c,
            "score": round(score[c], 3),
            "sd": round(sd[c], 3),
            "rank_low": int(lower[k]),
            "rank_high": int(upper[k]),
        }
        if truth:
            scores = [v for by in dataset.responses.values() if c in by for v in [by[c].human.get(truth)] if v is not None]
            row["truth"] = round(sum(scores) / len(scores), 6) if scores else None
        entries.append(row)
    entry: dict[str, Any] = {"group": title, "comparisons": n, "entropy": None, "max_adjacent_reorder": None, "ranking": entries}
    values = [r.get("truth") for r in entries]
    if truth and len(entries) > 2 and None not in values and len(set(values)) > 1:
        from scipy.stats import spearmanr

        entry["spearman_vs_truth"] = round(float(spearmanr([-r["rank"] for r in entries], values).statistic), 4)
    return entry


def _reference_ranking(path: str | Path, config: RunConfig, dataset: Dataset, level: float, store: RunStore) -> dict:
    """A reference campaign's ranking: RAEE Elo gaps (pooled over strong judges, else the mean over
    judges) with rank intervals from independent normal draws on the Elo scale, using the raw
    (superpopulation) SE."""
    import numpy as np

    from ..raee import known, leaderboard
    from .fit_raee import RaeeOptions, fit_raee, load_reference_judgments

    loaded = load_reference_judgments(path, log=False, store=store)
    data = loaded[0]
    if len(data) == 0:
        return {"run": str(path), "scope": "reference", "level": level, "groups": []}
    report = fit_raee(path, RaeeOptions(soft=config.reference.soft if config.reference else False), loaded=loaded, read_texts=False)
    out = []
    for anchor in dict.fromkeys(r.anchor for r in report.rows):
        board = leaderboard(report.rows, anchor)
        names = sorted(board, key=lambda c: (-board[c], c))
        se: dict[str, float] = {}
        for c in names:
            # the superpopulation SE: with every prompt of the pool judged the FPC one is 0
            rows = [r for r in report.rows if r.anchor == anchor and r.candidate == c and r.se_elo_raw is not None]
            pooled = [r for r in rows if r.judge == "pooled"]
            # unscreened judges may agree perfectly: Eq. (9) with ρ = 1, no 1/J shrinkage
            se[c] = known(pooled[0].se_elo_raw) if pooled else float(np.sqrt(np.mean([known(r.se_elo_raw) ** 2 for r in rows])))
        draws = np.random.default_rng(0).normal([board[c] for c in names], [se[c] for c in names], size=(4000, len(names)))
        group = _campaign_group(
            f"anchor {anchor}", int(np.sum(data.anchor == anchor)), names, board, draws, se, dataset, config.data.truth, level
        )
        _add_win_rates(group, data, anchor, config, dataset, level)
        out.append(group)
    return {"run": str(path), "scope": "reference", "level": level, "groups": out}


def _add_win_rates(group: dict, data, anchor: str, config: RunConfig, dataset: Dataset, level: float) -> None:
    """Per row: the win rate against the anchor in percent with its ``level`` interval and the number
    of prompts judged (:func:`_win_rates`); with prompt categories, the same per category
    (``group["slices"]``, :func:`_slices`)."""
    assert config.reference is not None
    per_candidate = reference_items(dataset, config.reference.anchor, config.seed)[3]
    rates = _win_rates(data, anchor, config, per_candidate, level)
    for row in group["ranking"]:
        row.update({key: value for key, value in rates.get(row["candidate"], {}).items() if key != "own_sd"})
    slices = _slices(data, anchor, config, dataset, per_candidate, level)
    if slices:
        group["slices"] = slices


def _win_rates(
    data, anchor: str, config: RunConfig, per_candidate: dict[str, list[str]], level: float, prompts: set[str] | None = None
) -> dict[str, dict]:
    """Candidate → ``{win_rate, win_rate_low, win_rate_high, prompts}``: the win rate against the
    anchor in percent (soft or argmax outcomes as the campaign fits them; prompt-difficulty
    corrected, the plain mean when every prompt is judged — the official AlpacaEval figure), its
    ``level`` interval over the candidate's prompts (those in ``prompts`` when given: a slice;
    :func:`~orchestrator.raee.allocation.win_rate_intervals`), and the number of prompts judged."""
    import numpy as np

    from ..raee import item_matrix
    from ..raee.allocation import win_rate_intervals

    assert config.reference is not None
    if prompts is not None:
        data = data.select(_member(data.prompt, prompts))
    candidates, _, y = item_matrix(data, anchor, soft=config.reference.soft)
    if not candidates:
        return {}
    pools = [[p for p in per_candidate.get(c, []) if prompts is None or p in prompts] for c in candidates]
    pool = max(len(set().union(*pools)), y.shape[1])
    estimate, half, own_sd, n = win_rate_intervals(y, np.array([len(p) for p in pools]), pool, level=level)
    out: dict[str, dict] = {}
    for k, candidate in enumerate(candidates):
        if n[k] == 0:
            continue
        rate = float(estimate[k])
        out[candidate] = {
            "win_rate": round(100 * rate, 3),
            "win_rate_low": round(100 * max(rate - half[k], 0.0), 3),
            "win_rate_high": round(100 * min(rate + half[k], 1.0), 3),
            "prompts": int(n[k]),
            "own_sd": float(own_sd[k]),  # (for rank intervals: the shared part cancels in differences)
        }
    return out


def _member(values, members: set[str]):
    """``values[i] in members`` for an array of strings (``np.isin`` on object arrays sorts both:
    0.6 s on a 30,000-judgment run's slices, this 0.03 s)."""
    import numpy as np

    return np.fromiter((v in members for v in values.tolist()), dtype=bool, count=len(values))


def _slices(data, anchor: str, config: RunConfig, dataset: Dataset, per_candidate: dict[str, list[str]], level: float) -> list[dict]:
    """One leaderboard per prompt category (issue #30 item 5), when the prompts name two or more:
    ``[{"slice", "prompts", "ranking": [{rank, candidate, win_rate…, rank_low, rank_high}]}]``, ranked
    by win rate, with rank intervals from normal draws of each win rate with its own sd (every
    candidate walks the same prompts: the difficulty they share cancels in the order)."""
    import numpy as np

    from ..poe.ranks import rank_interval_arrays

    by_category: dict[str, set[str]] = {}
    for prompt in dataset.prompts.values():
        if prompt.category is not None:
            by_category.setdefault(prompt.category, set()).add(prompt.id)
    if len(by_category) < 2:
        return []
    out = []
    for name, prompts in sorted(by_category.items()):
        rates = _win_rates(data, anchor, config, per_candidate, level, prompts)
        if not rates:
            continue
        names = sorted(rates, key=lambda c: (-rates[c]["win_rate"], c))
        mean = [rates[c]["win_rate"] for c in names]
        sd = [100 * rates[c].pop("own_sd") for c in names]
        # 2,000 draws per category (4,000 for the overall board): a category adds little to `rank`'s time
        _, lower, upper, _ = rank_interval_arrays(np.random.default_rng(0).normal(mean, sd, size=(2000, len(names))), level)
        ranking = [
            {"rank": k + 1, "candidate": c, **rates[c], "rank_low": int(lower[k]), "rank_high": int(upper[k])} for k, c in enumerate(names)
        ]
        judged = len(set(data.prompt[_member(data.prompt, prompts) & (data.anchor == anchor)].tolist()))
        out.append({"slice": name, "prompts": judged, "ranking": ranking})
    return out


def _absolute_ranking(path: str | Path, config: RunConfig, dataset: Dataset, templates: dict, level: float) -> dict:
    """An absolute campaign's quick ranking: each candidate's mean expected level (judges averaged
    with equal weight), rank intervals from resampling the prompts (the simplex paper's bootstrap
    baseline). Judge quality is not modelled here — that is ``orchestrator fit simplex``."""
    import numpy as np

    from ..simplex import build_score_data
    from ..simplex.baselines import simple_average
    from .fit_simplex import load_absolute_judgments

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
    group = _campaign_group(
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
    from ..run.calibration import temperatures_for
    from ..run.groups import build_groups_for, fit_groups
    from ..run.planners.poe import poe_config

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
    return result


def _flags(dataset: Dataset) -> dict[str, list[str]]:
    from ..raee.control import candidate_flags

    answers: dict[str, list[str]] = {}
    for by_candidate in dataset.responses.values():
        for candidate, response in by_candidate.items():
            answers.setdefault(candidate, []).append(response.text)
    return candidate_flags(answers)


def _ranking(path: str | Path, store: RunStore, *, level: float, fits: tuple[list, list] | None) -> dict:
    config = RunConfig.from_stored(store.config)
    dataset = store.dataset()
    if config.reference is not None:
        return _reference_ranking(path, config, dataset, level, store)
    judgments = list(store.judgments()) if config.absolute is None else []
    templates = store.templates()
    if config.absolute is not None:
        return _absolute_ranking(path, config, dataset, templates, level)
    # the PoE stack (torch) only where a PoE posterior is read: campaigns rank without it
    from ..poe import centred_variances, marginal_variances, posterior_entropy, rank_intervals, ranking_order
    from ..poe.uncertainty import adjacent_reorder_probabilities
    from ..run.groups import split_by_group
    from .panel import judge_summary, practical_ties

    groups, posteriors = fits if fits is not None else poe_fits(config, dataset, judgments)
    truth = config.data.truth
    out = []
    for group, post, rows_of_group in zip(groups, posteriors, split_by_group(groups, judgments)):
        intervals = rank_intervals(post, level=level)
        sd = centred_variances(post).sqrt()  # what comparisons see (the common location's uncertainty left out)
        sd_marginal = marginal_variances(post).sqrt()
        _, adj = adjacent_reorder_probabilities(post)
        rows = []
        for rank, c in enumerate(ranking_order(post.mean, group.names), start=1):
            row: dict[str, Any] = {
                "rank": rank,
                "candidate": group.names[c],
                "score": round(float(post.mean[c]), 6),
                "sd": round(float(sd[c]), 6),
                "sd_marginal": round(float(sd_marginal[c]), 6),
                "rank_low": int(intervals.lower[c]),
                "rank_high": int(intervals.upper[c]),
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
        entry: dict[str, Any] = {
            "group": group.key,
            "comparisons": post.n_comparisons,
            "entropy": round(posterior_entropy(post), 4),
            "max_adjacent_reorder": round(float(adj.max()), 4) if adj.numel() else 0.0,
            "ranking": rows,
        }
        informed = post.n_comparisons > 0 or post.link is not None  # never statistics from no data
        entry["judged"] = informed
        entry["judges"] = judge_summary(group, rows_of_group, post) if informed else []
        entry["ties"], entry["close"] = practical_ties(group, post, config.stopping.tie_delta, config.stopping.max_error)
        if truth and len(rows) > 2 and informed:
            from scipy.stats import spearmanr

            values = [r["truth"] for r in rows]
            if None not in values and len(set(values)) > 1:
                entry["spearman_vs_truth"] = round(float(spearmanr([-r["rank"] for r in rows], values).statistic), 4)
        out.append(entry)
    _add_people(store, config.data.scope, groups, posteriors, out, level)
    return {"run": str(path), "scope": config.data.scope, "level": level, "groups": out}


def _add_people(store: RunStore, scope: str, groups: list, posteriors: list, entries: list[dict], level: float) -> None:
    """With labels in the run file (``orchestrator label``): each group's people's ranking beside the
    judges' (:mod:`orchestrator.offline.replay_people`), as ``entry["people"]``."""
    from ..store.labels import stored_labels
    from .human_labels import as_labels
    from .replay_people import people_rankings

    stored = stored_labels(store.db.conn)
    if not stored:
        return
    people = people_rankings([(g.key, g.names, p) for g, p in zip(groups, posteriors)], as_labels(stored), scope, level=level)
    for entry in entries:
        if entry["group"] in people:
            entry["people"] = people[entry["group"]]


def _forecast(store, config: RunConfig, posteriors: list) -> dict | None:
    """Expected calls, tokens and USD to the stopping rule (PoE runs with a pilot; :mod:`orchestrator.run.forecast`)."""
    from ..run.forecast import forecast
    from ..run.planners import planner_for

    dataset = store.dataset()
    n_judges = len(config.judging.judges)
    possible = planner_for(config).possible_requests(config, dataset, n_judges)
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
        poe = config.reference is None and config.absolute is None  # campaigns have no PoE posterior
        # one fit of every group serves the forecast and the ranking
        fits = poe_fits(config, store.dataset(), list(store.judgments())) if poe else None
        forecast = _forecast(store, config, fits[1]) if fits is not None and run["status"] != "finished" else None
        deployments = store.deployment_counts()
        from ..store.labels import label_progress

        people = label_progress(store.db.conn)
        rank = ranking_in(path, store, fits=fits)  # the same open store: the run file is read once
    b = config.budget
    groups = rank["groups"]
    summary = {
        "run": str(path),
        "name": run["name"],
        "state": run["status"],
        "stop_reason": run["stop_reason"],
        "rounds": rounds,
        "requests": counts,
        "failures": failures,
        "spent": {"calls": spend.calls, "tokens": spend.tokens, "usd": round(spend.usd, 6), "cached": spend.cached},
        "budget": {"calls": b.max_calls, "tokens": b.max_tokens, "usd": b.max_usd},
        "groups": len(groups),
        "mean_entropy": round(sum(g["entropy"] for g in groups) / len(groups), 4) if poe and groups else None,
        "max_adjacent_reorder": max(g["max_adjacent_reorder"] for g in groups) if poe and groups else None,
        "top": {g["group"]: [r["candidate"] for r in g["ranking"][:3]] for g in groups[:5]},
        "forecast": forecast,
        "deployments": deployments,
        "people": people,
    }
    sp = [g["spearman_vs_truth"] for g in groups if "spearman_vs_truth" in g]
    if sp:
        summary["mean_spearman_vs_truth"] = round(sum(sp) / len(sp), 4)
    return summary
