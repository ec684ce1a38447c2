"""What the HTML report shows, gathered from a run file: the ranking (``orchestrator rank``), the
efficiency curve (the ranking refitted on the judgments of each round so far), spend per round,
per-judge diagnostics (position bias, calibration with a fitted temperature, reliability, agreement)
and every judgment. Read-only: the run file is opened for reading and never changed."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..offline.runs.results import poe_fits, ranking_in
from ..poe import IndifferenceZone, neighbour_status
from ..records.config import RunConfig
from ..records.dataset import Dataset
from ..run.calibration import calibrate, temperatures_for, truth_scores
from ..run.groups import build_groups_for, fit_groups
from ..run.planners.poe import poe_config
from ..store import JudgmentRecord, open_run

__all__ = ["ReportData", "collect", "MAX_CURVE_POINTS"]

MAX_CURVE_POINTS = 30
"""Rounds at which the efficiency curve refits the ranking (evenly spaced, the last included)."""


@dataclass
class ReportData:
    path: Path
    run: dict[str, Any]
    config: RunConfig
    dataset: Dataset
    ranking: dict
    judgments: list[JudgmentRecord]
    rounds: list[dict]
    spend_per_round: list[tuple[int, int, float, int]] = field(default_factory=list)
    """``(round, calls, usd, tokens)``."""
    curve: list[dict] = field(default_factory=list)
    """Per refit point: ``calls``, ``usd``, ``spearman`` (mean over groups with truth, or None),
    ``entropy``, ``max_adjacent_reorder`` (from the round's record)."""
    judges: dict[str, dict] = field(default_factory=dict)
    """Per judge: calls, failures, first-shown share, calibration (when the data has truth)."""
    raee_text: str | None = None
    """Reference campaigns: the full RAEE report as ``orchestrator fit raee`` prints it."""
    neighbours: dict[str, int] | None = None
    """PoE runs: neighbour pairs of every ranking by the stopping rule's reading (``resolved``: the
    order is settled, P(d > 0) ≥ 1 − ``max_error``, or P(misordered by more than δ) is below
    ``max_error``; ``ordered_within_delta``: of those, ordered pairs that are also practical ties;
    ``tied``: a practical tie, P(|d| < δ) > ½, whose order is not settled; ``uncertain``: the rest)."""
    repeatability: str | None = None
    """What asking the embedded judge a few requests again showed (None: not checked)."""


def _neighbours(data: ReportData, posteriors: list | None) -> dict[str, int] | None:
    """``posteriors``: the final fits of a PoE run (None for campaigns or without judgments)."""
    if posteriors is None:
        return None
    s = data.config.stopping
    poe = poe_config(data.config)
    counts = {"resolved": 0, "ordered_within_delta": 0, "tied": 0, "uncertain": 0, "total": 0}
    for post in posteriors:
        if post.n_comparisons == 0 and post.link is None:
            continue
        status = neighbour_status(post, IndifferenceZone.of(s), poe.expert)
        # A pair whose order is settled is resolved, even when its gap is below δ (then it is
        # counted as "ordered within δ" too: never "tied" next to rank intervals that separate it).
        # A practical tie whose order is not known is a tie, not resolved, although in the
        # indifference-zone sense it cannot be misordered by more than δ.
        ordered = status.ordered(s.max_error)
        tied = status.tied & ~ordered
        resolved = (status.resolved | ordered) & ~tied
        counts["resolved"] += int(resolved.sum())
        counts["ordered_within_delta"] += int((ordered & status.tied).sum())
        counts["tied"] += int(tied.sum())
        counts["uncertain"] += int((~resolved & ~tied).sum())
        counts["total"] += int(resolved.numel())
    return counts


def _spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    from scipy.stats import spearmanr

    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    value = float(spearmanr(a, b).statistic)
    return None if math.isnan(value) else value


def _curve(data: ReportData, truth: dict[tuple[str, str], float]) -> list[dict]:
    """The ranking refitted at up to :data:`MAX_CURVE_POINTS` rounds (PoE runs; campaigns show the
    rounds' spend only)."""
    config = data.config
    by_round = {r["round"]: r for r in data.rounds}
    ok = [r for r in data.judgments if r.status == "ok"]
    if not ok:
        return []
    rounds = sorted({r.round for r in data.judgments})
    step = max(1, math.ceil(len(rounds) / MAX_CURVE_POINTS))
    points = sorted(set(rounds[::step]) | {rounds[-1]})
    poe_run = config.reference is None and config.absolute is None
    groups = build_groups_for(data.dataset, config.data.scope) if poe_run else []
    # each member's truth as `rank` reports it (mean over its prompts), once per group
    truth_of = {g["group"]: {r["candidate"]: r.get("truth") for r in g.get("ranking", [])} for g in data.ranking.get("groups", [])}
    out = []
    for last in points:
        upto = [r for r in data.judgments if r.round <= last]
        point: dict[str, Any] = {
            "round": last,
            "calls": len(upto),
            "usd": sum(r.cost_usd for r in upto),
            "entropy": by_round.get(last, {}).get("entropy"),
            "max_adjacent_reorder": by_round.get(last, {}).get("max_adjacent_reorder"),
            "spearman": None,
        }
        if poe_run and truth:
            rows = [r for r in ok if r.round <= last]
            temperatures = temperatures_for(config.model.temperature, rows, data.dataset, config.data.truth)
            posteriors = fit_groups(groups, rows, poe_config(config), debias=config.model.debias, temperatures=temperatures)
            values = []
            for group, post in zip(groups, posteriors):
                member_truth = truth_of.get(group.key, {})
                names = [n for n in group.names if member_truth.get(n) is not None]
                if len(names) < 3 or post.n_comparisons == 0 and post.link is None:
                    continue
                idx = [group.index[n] for n in names]
                rho = _spearman(post.mean[idx].numpy(), np.array([member_truth[n] for n in names]))
                if rho is not None:
                    values.append(rho)
            point["spearman"] = float(np.mean(values)) if values else None
        out.append(point)
    return out


def _judges(data: ReportData, truth: dict[tuple[str, str], float]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    by_judge: dict[str, list[JudgmentRecord]] = defaultdict(list)
    for r in data.judgments:
        by_judge[r.judge].append(r)
    for judge, rows in sorted(by_judge.items()):
        ok = [r for r in rows if r.status == "ok"]
        pairwise = [r for r in ok if r.kind in ("pairwise", "reference") and r.p_first is not None]
        firsts = [float(r.p_first) for r in pairwise if r.p_first is not None]
        entry: dict[str, Any] = {
            "calls": len(rows),
            "failed": len(rows) - len(ok),
            "usd": sum(r.cost_usd for r in rows),
            "pairwise": len(pairwise),
            "absolute": sum(1 for r in ok if r.kind == "absolute"),
            "first_shown_wins": sum(1 for p in firsts if p > 0.5) / len(firsts) if firsts else None,
            "mean_p_first": sum(firsts) / len(firsts) if firsts else None,
            **_length_preference(data, pairwise, truth),
        }
        out[judge] = entry
    for c in calibrate(data.judgments, truth):
        out[c.judge]["calibration"] = {
            "n": c.n,
            "temperature": c.temperature,
            "ece": c.ece,
            "ece_after": c.ece_after,
            "bins": c.bins,
            "bins_after": c.bins_after,
        }
    for group in data.ranking.get("groups", []):
        for row in group.get("judges", []) or []:
            if row.get("judge") in out:
                out[row["judge"]].setdefault("fit", []).append({"group": group.get("group"), **row})
    return out


def _length_preference(data: ReportData, pairwise: list[JudgmentRecord], truth: dict[tuple[str, str], float]) -> dict[str, Any]:
    """``prefers_longer``: the share of a judge's decisive comparisons of answers of different lengths
    won by the longer one; ``reference_prefers_longer``: the reference scores' share on the same
    pairs (where they differ) — the judge's length taste beside people's."""
    judge_votes, reference_votes = [], []
    for r in pairwise:
        texts = [data.dataset.responses.get(r.prompt_id, {}).get(c) for c in r.candidates]
        if any(t is None for t in texts) or r.p_first is None:
            continue
        first_len, second_len = (len(t.text) for t in texts)  # type: ignore[union-attr]
        if first_len == second_len:
            continue
        first_longer = first_len > second_len
        if r.p_first != 0.5:
            judge_votes.append((r.p_first > 0.5) == first_longer)
        scores = [truth.get((r.prompt_id, c)) for c in r.candidates]
        if None not in scores and scores[0] != scores[1]:
            reference_votes.append((scores[0] > scores[1]) == first_longer)  # type: ignore[operator]
    share = lambda votes: sum(votes) / len(votes) if votes else None  # noqa: E731
    return {"prefers_longer": share(judge_votes), "reference_prefers_longer": share(reference_votes)}


def collect(path: str | Path) -> ReportData:
    """Everything the report shows, from the run file at ``path`` (read-only)."""
    path = Path(path)
    with open_run(path, write=False) as store:  # the run file is opened and read once
        run = dict(store.run)
        config = RunConfig.from_stored(store.config)
        dataset = store.dataset()
        judgments = list(store.judgments(ok_only=False, full=True))
        rounds = store.rounds()
        ok = [r for r in judgments if r.status == "ok"]
        poe_run = config.reference is None and config.absolute is None
        fits = poe_fits(config, dataset, ok) if poe_run and ok else None  # one final fit for the ranking and the neighbours
        data = ReportData(path, run, config, dataset, ranking_in(path, store, fits=fits), judgments, rounds)
        from ..run.repeatability import repeat_summary
        from ..store.repeats import stored_repeats

        data.repeatability = repeat_summary(stored_repeats(store.db.conn), data.ranking.get("groups"))
        if config.reference is not None and any(r.kind == "reference" for r in ok):
            from ..offline.raee.fit import RaeeSettings, fit_raee, format_raee

            data.raee_text = format_raee(fit_raee(path, RaeeSettings(soft=config.reference.soft), store=store))
    per_round: dict[int, list[JudgmentRecord]] = defaultdict(list)
    for r in judgments:
        per_round[r.round].append(r)
    data.spend_per_round = [
        (k, len(rows), sum(r.cost_usd for r in rows), sum(r.prompt_tokens + r.completion_tokens for r in rows))
        for k, rows in sorted(per_round.items())
    ]
    truth = truth_scores(dataset, config.data.truth)
    data.curve = _curve(data, truth)
    data.judges = _judges(data, truth)
    data.neighbours = _neighbours(data, fits[1] if fits is not None else None)
    return data
