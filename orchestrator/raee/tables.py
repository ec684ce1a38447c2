"""RAEE report helpers on the columnar log: per-item outcomes, between-judge correlation, leaderboards
and anchor swaps (RAEE paper §2.3, App. E); used by :mod:`orchestrator.raee.report`."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from .estimates import outcomes
from .records import AnchorSwap, RaeeRow, ReferenceJudgments

__all__ = ["item_outcomes", "item_matrix", "leaderboard", "between_judge_correlation", "anchor_swaps"]


def item_outcomes(data: ReferenceJudgments, *, soft: bool = False) -> dict[tuple[str, str, str], np.ndarray]:
    """Per ``(anchor, judge, candidate)``: the outcomes of its items (prompts), repeated runs
    averaged (Eq. 5), in prompt order."""
    if len(data) == 0:
        return {}
    s = outcomes(data.win, data.tie, data.loss, soft=soft)
    keys = np.char.add(
        np.char.add(np.char.add(np.char.add(data.anchor.astype(str), "\x1f"), data.judge.astype(str)), "\x1f"), data.candidate.astype(str)
    )
    items = np.char.add(np.char.add(keys, "\x1f"), data.prompt.astype(str))
    item_ids, item = np.unique(items, return_inverse=True)
    means = np.bincount(item, weights=s) / np.bincount(item)
    cell_of_item = np.array([k.rsplit("\x1f", 1)[0] for k in item_ids])
    out: dict[tuple[str, str, str], np.ndarray] = {}
    for key in np.unique(cell_of_item):
        anchor, judge, cand = key.split("\x1f")
        out[(anchor, judge, cand)] = means[cell_of_item == key]
    return out


def between_judge_correlation(item_mean, item_a, item_j, item_c, item_p, kept, n_a, n_j) -> dict[int, float]:
    """Per anchor: mean pairwise Pearson correlation of the judges' run-averaged item outcomes
    (an estimate of ρ_k, Lemma 1), clipped to [0, 1]; 1 with a single judge."""
    out = {}
    for ai in range(n_a):
        values = {}
        for ji in range(n_j):
            sel = kept & (item_a == ai) & (item_j == ji)
            values[ji] = dict(zip(zip(item_c[sel].tolist(), item_p[sel].tolist()), item_mean[sel].tolist()))
        corr = []
        for x, y in combinations([v for v in values.values() if v], 2):
            common = sorted(set(x) & set(y))
            if len(common) >= 3:
                u, v = np.array([x[t] for t in common]), np.array([y[t] for t in common])
                if u.std() > 0 and v.std() > 0:
                    corr.append(float(np.corrcoef(u, v)[0, 1]))
        out[ai] = min(1.0, max(0.0, float(np.mean(corr)))) if corr else 1.0
    return out


def leaderboard(rows: list[RaeeRow], anchor: str) -> dict[str, float]:
    """Candidate → Elo gap under an anchor: the pooled row when there is one, else the mean over judges."""
    pooled = {r.candidate: r.elo for r in rows if r.anchor == anchor and r.judge == "pooled" and r.elo is not None}
    per_judge: dict[str, list[float]] = {}
    for r in rows:
        if r.anchor == anchor and r.judge not in ("pooled", "-") and r.elo is not None:
            per_judge.setdefault(r.candidate, []).append(r.elo)
    return {cand: pooled.get(cand, float(np.mean(v))) for cand, v in per_judge.items()}


def anchor_swaps(rows: list[RaeeRow], anchors: list[str]) -> list[AnchorSwap]:
    """Kendall τ and mean |centred Elo shift| between the leaderboards of every pair of anchors,
    over the candidates both rank (anchors themselves excluded) (App. E.1)."""

    boards = {an: leaderboard(rows, an) for an in anchors}
    out = []
    for x, y in combinations(anchors, 2):
        common = sorted((set(boards[x]) & set(boards[y])) - {x, y})
        if len(common) < 2:
            out.append(AnchorSwap(anchors=(x, y), candidates=len(common), kendall_tau=None, mean_abs_centered_elo_shift=float("nan")))
            continue
        u = np.array([boards[x][cn] for cn in common])
        v = np.array([boards[y][cn] for cn in common])
        from scipy.stats import kendalltau  # only here: scipy.stats costs 0.6 s to import

        tau = kendalltau(u, v).statistic
        shift = float(np.mean(np.abs((u - u.mean()) - (v - v.mean()))))
        out.append(
            AnchorSwap(
                anchors=(x, y), candidates=len(common), kendall_tau=None if np.isnan(tau) else float(tau), mean_abs_centered_elo_shift=shift
            )
        )
    return out


def item_matrix(data: ReferenceJudgments, anchor: str, *, soft: bool = False) -> tuple[list[str], list[str], np.ndarray]:
    """``(candidates, prompts, y)`` under one anchor: ``y[c, p]`` the candidate's outcome on the
    prompt, repeated runs averaged per judge (Eq. 5), then judges averaged with equal weight; NaN
    where it was not judged (the input of :func:`orchestrator.raee.allocation.leaderboard_state`)."""
    sel = np.flatnonzero(data.anchor == anchor)
    if sel.size == 0:
        return [], [], np.zeros((0, 0))
    s = outcomes(data.win[sel], data.tie[sel], data.loss[sel], soft=soft)
    runs: dict[tuple[str, str, str], list[float]] = {}
    for k, value in zip(sel.tolist(), s.tolist()):
        runs.setdefault((str(data.candidate[k]), str(data.prompt[k]), str(data.judge[k])), []).append(value)
    candidates = sorted({c for c, _, _ in runs})
    prompts = sorted({p for _, p, _ in runs})
    row, col = {c: k for k, c in enumerate(candidates)}, {p: k for k, p in enumerate(prompts)}
    sums = np.zeros((len(candidates), len(prompts)))
    judges = np.zeros_like(sums)
    for (cand, prompt, _), values in runs.items():
        sums[row[cand], col[prompt]] += sum(values) / len(values)
        judges[row[cand], col[prompt]] += 1
    return candidates, prompts, np.where(judges > 0, sums / np.maximum(judges, 1), np.nan)
