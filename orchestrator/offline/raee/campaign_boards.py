"""The leaderboards of campaigns (reference and absolute runs): one entry per anchor (or one for an
absolute campaign) with shortest rank intervals from draws, and a reference campaign's win rates
against its anchor with their intervals, overall and per prompt category (honest
small slices). :mod:`orchestrator.offline.runs.results` reads a run and calls these."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...records.config import RunConfig
from ...records.dataset import Dataset
from ...run.planners import reference_items
from ...store import RunStore

__all__ = ["SLICE_MIN_PROMPTS", "campaign_group", "reference_ranking"]


def campaign_group(
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

    from ...poe.ranks import rank_interval_arrays  # numpy only: reading a leaderboard needs no torch

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


def reference_ranking(path: str | Path, config: RunConfig, dataset: Dataset, level: float, store: RunStore) -> dict:
    """A reference campaign's ranking: RAEE Elo gaps (pooled over strong judges, else the mean over
    judges) with rank intervals from independent normal draws on the Elo scale, using the raw
    (superpopulation) SE."""
    import numpy as np

    from ...raee import known, leaderboard
    from ...raee.estimates import outcomes
    from .fit import RaeeSettings, fit_raee, load_reference_judgments

    loaded = load_reference_judgments(path, log=False, store=store)
    data = loaded[0]
    if len(data) == 0:
        return {"run": str(path), "scope": "reference", "level": level, "groups": []}
    report = fit_raee(path, RaeeSettings(soft=config.reference.soft if config.reference else False), loaded=loaded, read_texts=False)
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
        group = campaign_group(
            f"anchor {anchor}", int(np.sum(data.anchor == anchor)), names, board, draws, se, dataset, config.data.truth, level
        )
        _add_win_rates(group, data, anchor, config, dataset, level)
        if config.reference is not None and config.reference.board is not None:
            _place_on_board(group, config.reference.board, anchor, data, config.reference.soft, level, store.attachment("board"))
        elif config.reference is not None and config.selection.only_with:  # an extended run: its own board
            _place_on_own_board(group, anchor, data, set(config.selection.only_with), config.reference.soft, level)
        out.append(group)
    from ..judges.information import information_warnings, judge_information

    # P(first shown better): the candidate's win probability when it was shown first (swapped: the anchor second)
    swapped = data.swapped if data.swapped is not None else np.zeros(len(data), dtype=bool)
    wins = outcomes(data.win, data.tie, data.loss, soft=True)

    def comparisons():
        for judge, anchor, candidate, anchor_second, p in zip(
            data.judge.tolist(), data.anchor.tolist(), data.candidate.tolist(), swapped.tolist(), wins.tolist()
        ):
            shown = [(anchor, "candidate", candidate), (anchor, "anchor", anchor)]
            first, second = shown if anchor_second else shown[::-1]
            yield judge, first, second, p if anchor_second else 1.0 - p

    tests = judge_information(comparisons())
    warnings, leader = information_warnings(tests)
    return {"run": str(path), "scope": "reference", "level": level, "groups": out, "warnings": warnings, "leader": leader}


def _add_win_rates(group: dict, data, anchor: str, config: RunConfig, dataset: Dataset, level: float) -> None:
    """Per row: the win rate against the anchor in percent with its ``level`` interval and the number
    of prompts judged (:func:`_win_rates`); with prompt categories, the same per category
    (``group["slices"]``, :func:`_slices`)."""
    assert config.reference is not None
    per_candidate = reference_items(dataset, config.reference.anchor, config.seed)[3]
    rates = _win_rates(data, anchor, config, per_candidate, level)
    for row in group["ranking"]:
        row.update({key: value for key, value in rates.get(row["candidate"], {}).items() if key not in ("own_sd", "sigma")})
    slices = _slices(data, anchor, config, dataset, per_candidate, level, {c: r["sigma"] for c, r in rates.items()})
    if slices:
        group["slices"] = slices


SLICE_MIN_PROMPTS = 5
"""A category board on fewer judged prompts is shown as too small for its intervals to mean much."""


def _win_rates(
    data,
    anchor: str,
    config: RunConfig,
    per_candidate: dict[str, list[str]],
    level: float,
    prompts: set[str] | None = None,
    sigma: dict[str, float] | None = None,
) -> dict[str, dict]:
    """Candidate → ``{win_rate, win_rate_low, win_rate_high, prompts}`` (and, on the whole board with
    two or more candidates judged on part of their prompts, ``win_rate_low_together`` /
    ``win_rate_high_together``: intervals that all hold at once with ``level``): the win rate against the
    anchor in percent (soft or argmax outcomes as the campaign fits them; prompt-difficulty
    corrected, the plain mean when every prompt is judged — the official AlpacaEval figure), its
    ``level`` interval over the candidate's prompts (:func:`~orchestrator.raee.allocation.win_rate_intervals`),
    and the number of prompts judged. A slice (``prompts`` given) is a sample of its category, not
    the category itself: its interval is for the category's win rate (no finite-population
    correction, which with every prompt of a small category judged made it a point), each
    candidate's per-prompt sd at least ``sigma`` (the whole board's: a few prompts cannot estimate
    it)."""
    import numpy as np

    from ...raee import item_matrix
    from ...raee.allocation import simultaneous_half, win_rate_intervals

    assert config.reference is not None
    if prompts is not None:
        data = data.select(_member(data.prompt, prompts))
    candidates, _, y = item_matrix(data, anchor, soft=config.reference.soft)
    if not candidates:
        return {}
    pools = [[p for p in per_candidate.get(c, []) if prompts is None or p in prompts] for c in candidates]
    populations = np.array([len(p) for p in pools])
    floor = None
    if prompts is not None:  # a category's win rate, its prompts a sample of it
        populations = np.full(len(candidates), 10**12)
        floor = np.array([(sigma or {}).get(c, 0.0) for c in candidates])
    estimate, half, own_sd, n, sd = win_rate_intervals(y, populations, level=level, sigma_floor=floor)
    together = simultaneous_half(y, populations, level=level, sigma_floor=floor) if prompts is None else None
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
            "sigma": float(sd[k]),
        }
        if together is not None:
            out[candidate]["win_rate_low_together"] = round(100 * max(rate - together[k], 0.0), 3)
            out[candidate]["win_rate_high_together"] = round(100 * min(rate + together[k], 1.0), 3)
    return out


def _member(values, members: set[str]):
    """``values[i] in members`` for an array of strings (``np.isin`` on object arrays sorts both:
    0.6 s on a 30,000-judgment run's slices, this 0.03 s)."""
    import numpy as np

    return np.fromiter((v in members for v in values.tolist()), dtype=bool, count=len(values))


def _slices(
    data, anchor: str, config: RunConfig, dataset: Dataset, per_candidate: dict[str, list[str]], level: float, sigma: dict[str, float]
) -> list[dict]:
    """One leaderboard per prompt category, when the prompts name two or more:
    ``[{"slice", "prompts", "small", "ranking": [{rank, candidate, win_rate…, rank_low, rank_high}]}]``,
    ranked by win rate, with rank intervals from Student-t draws (``n − 1`` degrees of freedom) of
    each win rate with its own sd (every candidate walks the same prompts: the difficulty they
    share cancels in the order). A category's intervals are never narrower than its data allow
    (one or two prompts gave point ranks while the whole board said 1–4): its prompts
    are a sample of the category and each candidate's per-prompt sd is at least the whole board's
    (``sigma``); ``small`` marks a category with fewer than :data:`SLICE_MIN_PROMPTS` judged prompts."""
    import numpy as np

    from ...poe.ranks import rank_interval_arrays

    by_category: dict[str, set[str]] = {}
    for prompt in dataset.prompts.values():
        if prompt.category is not None:
            by_category.setdefault(prompt.category, set()).add(prompt.id)
    if len(by_category) < 2:
        return []
    out = []
    for name, prompts in sorted(by_category.items()):
        rates = _win_rates(data, anchor, config, per_candidate, level, prompts, sigma)
        if not rates:
            continue
        names = sorted(rates, key=lambda c: (-rates[c]["win_rate"], c))
        mean = np.array([rates[c]["win_rate"] for c in names])
        sd = np.array([100 * rates[c].pop("own_sd") for c in names])
        df = np.array([max(rates[c]["prompts"] - 1, 1) for c in names], dtype=float)
        for c in names:
            rates[c].pop("sigma")
        # 2,000 draws per category (4,000 for the overall board): a category adds little to `rank`'s time
        draws = mean + sd * np.random.default_rng(0).standard_t(df, size=(2000, len(names)))
        _, lower, upper, _ = rank_interval_arrays(draws, level)
        ranking = [
            {"rank": k + 1, "candidate": c, **rates[c], "rank_low": int(lower[k]), "rank_high": int(upper[k])} for k, c in enumerate(names)
        ]
        judged = len(set(data.prompt[_member(data.prompt, prompts) & (data.anchor == anchor)].tolist()))
        out.append({"slice": name, "prompts": judged, "small": judged < SLICE_MIN_PROMPTS, "ranking": ranking})
    return out


def _place_on_board(group: dict, board: Path, anchor: str, data, soft: bool, level: float, snapshot: dict | None = None) -> None:
    """``[reference] board``: each candidate's win rate over the board's prompts from the prompts it
    was judged on and its rank interval among the board's models, as its row's ``placement``;
    ``group["board"]`` says what the board is."""
    from .board_placement import placements

    _show_placements(group, placements(board, anchor, data, soft=soft, level=level, snapshot=snapshot))


def _place_on_own_board(group: dict, anchor: str, data, newcomers: set[str], soft: bool, level: float) -> None:
    """``extend`` of a reference run: the candidates added are placed on the board the run
    had before (its other candidates' judgments), as with ``[reference] board``."""
    from .board_placement import own_board_placements

    result = own_board_placements(data, anchor, newcomers, soft=soft, level=level)
    if result is not None:
        _show_placements(group, result)


def _show_placements(group: dict, result: tuple[dict, dict[str, dict]]) -> None:
    """Each placed candidate's board figures as its row's ``placement`` (its own figures on the run's
    pool stay as they are: two quantities, two places); ``group["board"]`` says what the board is."""
    group["board"], placed = result
    for row in group["ranking"]:
        if row["candidate"] in placed:
            row["placement"] = placed[row["candidate"]]
