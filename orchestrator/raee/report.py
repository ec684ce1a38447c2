"""RAEE on an accumulated judgment log: per-judge tables, ICC screening, pooling, diagnostics.

The closed forms are :mod:`orchestrator.raee.estimates`, the records :mod:`.records`; this module groups reference-anchored judgments
(columnar arrays, so a million judgments fit in well under a second) and assembles a
:class:`RaeeReport`:

- per (anchor, judge, candidate): W/T/L, p̂, Jeffreys p̄ and credible interval, Elo gap and interval,
  SE raw / with the finite-population correction / κ-adjusted (RAEE Algorithm 1, Eq. 2–4, App. E.4);
- judge screening: ICC(3, k) from k repeated runs (Eq. 6), strong judges ``ICC ≥ ρ0``;
- per (anchor, candidate) a pooled row over the strong judges: mean Elo gap with variance
  ``σ²_Δ(ρ_k + (1 − ρ_k)/J)`` (Eq. 9);
- anchor diagnostics (App. E.1): mid-region coverage (share of p̄ in [0.2, 0.8]) and, with
  several anchors, Kendall τ and centred Elo shifts between their leaderboards;
- the abstention filter (App. E.2): a judge abstains on a (candidate, prompt) item whose outcome
  spreads across runs by more than a threshold (SD), and the coverage that leaves.

Outcomes per judgment are hard (argmax, ties ½; the paper) or soft (``P(win) + ½P(tie)``; our
extension); repeated runs of a judge on an item are averaged before the estimate (Eq. 5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
from scipy.special import ndtri

from ..errors import OrchestratorError
from .estimates import GAMMA, cohen_kappa, icc3k, outcomes, pooled_variance, raee_arrays, spread_se
from .records import MID_REGION, MID_REGION_TARGET, JudgeScreen, RaeeReport, RaeeRow, ReferenceJudgments, known
from .tables import anchor_swaps, between_judge_correlation

__all__ = ["raee_report"]


def _se_p(row: RaeeRow) -> float:
    return known(row.se_p_fpc if row.se_p_fpc is not None else row.se_p_raw)


def _codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniques, inverse = np.unique(values.astype(str), return_inverse=True)
    return uniques, inverse.astype(np.int64)


@dataclass
class _Items:
    """The judgments as columns, grouped into items (anchor, judge, candidate, prompt); the runs of
    an item are averaged (Eq. 5)."""

    anchors: np.ndarray
    judge_names: np.ndarray
    cand_names: np.ndarray
    a: np.ndarray
    j: np.ndarray
    c: np.ndarray
    p: np.ndarray
    s: np.ndarray
    """Each judgment's outcome (soft or hard, as asked)."""
    hard: np.ndarray
    """Each judgment's hard outcome (1, ½, 0)."""
    item: np.ndarray
    """Each judgment's item index."""
    runs: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    item_a: np.ndarray
    item_j: np.ndarray
    item_c: np.ndarray
    item_p: np.ndarray
    rank_in_item: np.ndarray
    """A judgment's run number within its item (0 = first run)."""
    kept: np.ndarray
    """Items the abstention filter keeps."""

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return len(self.anchors), len(self.judge_names), len(self.cand_names), int(self.p.max()) + 1


def _items(data: ReferenceJudgments, soft: bool, abstain_sd: float | None) -> _Items:
    s = outcomes(data.win, data.tie, data.loss, soft=soft)
    hard = s if not soft else outcomes(data.win, data.tie, data.loss, soft=False)
    anchors, a = _codes(data.anchor)
    judge_names, j = _codes(data.judge)
    cand_names, c = _codes(data.candidate)
    _, p = _codes(data.prompt)
    n_j, n_c, n_p = len(judge_names), len(cand_names), int(p.max()) + 1
    item_ids, item = np.unique(((a * n_j + j) * n_c + c) * n_p + p, return_inverse=True)
    runs = np.bincount(item)
    mean = np.bincount(item, weights=s) / runs
    sd = np.sqrt(
        np.maximum(np.bincount(item, weights=s * s) / runs - mean**2, 0.0) * np.where(runs > 1, runs / np.maximum(runs - 1, 1), 0.0)
    )
    order = np.lexsort((data.run_index(), item))
    rank_in_item = np.empty(item.size, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(runs)[:-1]])
    rank_in_item[order] = np.arange(item.size) - np.repeat(starts, runs)
    kept = np.ones(item_ids.size, dtype=bool) if abstain_sd is None else ~((runs > 1) & (sd > abstain_sd))
    return _Items(
        anchors, judge_names, cand_names, a, j, c, p, s, hard, item, runs, mean, sd,
        item_a=item_ids // (n_p * n_c * n_j),
        item_j=(item_ids // (n_p * n_c)) % n_j,
        item_c=(item_ids // n_p) % n_c,
        item_p=item_ids % n_p,
        rank_in_item=rank_in_item,
        kept=kept,
    )  # fmt: skip


def _screens(it: _Items, icc_threshold: float) -> tuple[list[JudgeScreen], dict[tuple[int, int], float]]:
    """ICC(3, k) per (anchor, judge) from its items judged k times (Eq. 6); the strong judges
    (ICC ≥ ρ0) by (anchor index, judge index) with their ICC."""
    screens: list[JudgeScreen] = []
    strong: dict[tuple[int, int], float] = {}
    for ai in range(len(it.anchors)):
        for ji in range(len(it.judge_names)):
            mine = (it.item_a == ai) & (it.item_j == ji)
            if not mine.any():
                continue
            multi = it.runs[mine & (it.runs > 1)]
            screen = JudgeScreen(
                anchor=it.anchors[ai], judge=it.judge_names[ji], runs=1, items=int(mine.sum()), coverage=float(it.kept[mine].mean())
            )
            if multi.size == 0:
                screen.note = "no repeated runs: ICC(3,k) needs every item judged k ≥ 2 times"
            else:
                k = int(np.bincount(multi).argmax())
                use_items = np.flatnonzero(mine & (it.runs >= k))
                if use_items.size < 2:
                    screen.note = f"ICC(3,{k}) needs at least 2 items with {k} runs"
                else:
                    row_of = np.full(it.runs.size, -1)
                    row_of[use_items] = np.arange(use_items.size)
                    pick = (row_of[it.item] >= 0) & (it.rank_in_item < k)
                    matrix = np.zeros((use_items.size, k))
                    matrix[row_of[it.item[pick]], it.rank_in_item[pick]] = it.s[pick]
                    screen.runs = k
                    screen.icc = icc3k(matrix)
                    screen.strong = screen.icc >= icc_threshold
                    if screen.strong:
                        strong[(ai, ji)] = screen.icc
            screens.append(screen)
    return screens, strong


def _kappa_factors(it: _Items) -> dict[str, float | None]:
    """κ factor per anchor from the judges' first-run hard verdicts on common items (App. E.4)."""
    n_p = it.shape[3]
    kappa: dict[str, float | None] = {}
    first = it.rank_in_item == 0
    for ai in range(len(it.anchors)):
        labels = {}
        for ji in range(len(it.judge_names)):
            sel = first & (it.a == ai) & (it.j == ji) & it.kept[it.item]
            if sel.any():
                labels[ji] = dict(zip((it.c[sel] * n_p + it.p[sel]).tolist(), it.hard[sel].tolist()))
        pairs = []
        for x, y in combinations(sorted(labels), 2):
            common = sorted(set(labels[x]) & set(labels[y]))
            if len(common) >= 2:
                pairs.append(cohen_kappa(np.array([labels[x][t] for t in common]), np.array([labels[y][t] for t in common])))
        kappa[it.anchors[ai]] = math.sqrt(max(0.0, float(np.mean(pairs)))) if pairs else None
    return kappa


def _estimates(est: dict, k: int) -> dict[str, Any]:
    return {f: float(est[f][k]) for f in ("p_hat", "p_bar", "p_low", "p_high", "elo", "elo_low", "elo_high", "se_p_raw")}


def _judge_rows(it: _Items, kappa: dict[str, float | None], *, soft: bool, level: float, population: int | None) -> list[RaeeRow]:
    """One row per (anchor, judge, candidate) over the kept items (Algorithm 1, Eq. 2–4)."""
    _, n_j, n_c, _ = it.shape
    kept = it.kept
    cells, cell = np.unique(((it.item_a * n_j + it.item_j) * n_c + it.item_c)[kept], return_inverse=True)
    n_items = np.bincount(cell)
    total = np.bincount(cell, weights=it.mean[kept])
    sumsq = np.bincount(cell, weights=it.mean[kept] ** 2)
    judgment_kept = kept[it.item]
    jcell = np.searchsorted(cells, ((it.a * n_j + it.j) * n_c + it.c)[judgment_kept])
    counts = {lab: np.bincount(jcell[it.hard[judgment_kept] == lab], minlength=cells.size) for lab in (1.0, 0.5, 0.0)}
    n_judgments = np.bincount(jcell, minlength=cells.size)
    cell_c, cell_j, cell_a = cells % n_c, (cells // n_c) % n_j, cells // (n_c * n_j)
    try:
        est = raee_arrays(total, n_items, level=level, population=population)
    except ValueError as exc:
        raise OrchestratorError(str(exc)) from None
    spread = spread_se(total, sumsq, n_items, cells // n_c)  # pooled within (anchor, judge)
    rows: list[RaeeRow] = []
    for k in range(cells.size):
        anchor = it.anchors[cell_a[k]]
        fpc = float(est["se_p"][k]) if population is not None else None
        kap = kappa.get(anchor)
        se_kappa = (fpc if fpc is not None else float(est["se_p_raw"][k])) * kap if kap is not None else None
        se_best = se_kappa if se_kappa is not None else (fpc if fpc is not None else float(est["se_p_raw"][k]))
        pb = float(est["p_bar"][k])
        rows.append(
            RaeeRow(
                anchor=anchor,
                judge=it.judge_names[cell_j[k]],
                candidate=it.cand_names[cell_c[k]],
                n=int(n_items[k]),
                judgments=int(n_judgments[k]),
                wins=int(counts[1.0][k]),
                ties=int(counts[0.5][k]),
                losses=int(counts[0.0][k]),
                **_estimates(est, k),
                se_p_fpc=fpc,
                se_p_kappa=se_kappa,
                se_elo=GAMMA * se_best / (pb * (1 - pb)),
                se_p_spread=None if np.isnan(spread[k]) else float(spread[k]),
                se_elo_raw=GAMMA * (float(spread[k]) if soft and not np.isnan(spread[k]) else float(est["se_p_raw"][k])) / (pb * (1 - pb)),
            )
        )
    return rows


def _pooled_rows(it: _Items, rows: list[RaeeRow], strong: dict[tuple[int, int], float], *, level: float, pool_all: bool) -> list[RaeeRow]:
    """Per (anchor, candidate) the mean Elo gap over the strong judges (every judge with
    ``pool_all``, ρ_k from their between-judge correlation, Lemma 1) with variance Eq. 9."""
    z = float(ndtri((1 + level) / 2))
    n_a, n_j, _, _ = it.shape
    by_anchor_cand: dict[tuple[str, str], list[RaeeRow]] = {}
    for row in rows:
        by_anchor_cand.setdefault((row.anchor, row.candidate), []).append(row)
    rho_all = between_judge_correlation(it.mean, it.item_a, it.item_j, it.item_c, it.item_p, it.kept, n_a, n_j) if pool_all else {}
    judge_index = {name: k for k, name in enumerate(it.judge_names)}
    anchor_index = {name: k for k, name in enumerate(it.anchors)}
    pooled: list[RaeeRow] = []
    for (anchor, cand), group in by_anchor_cand.items():
        ai = anchor_index[anchor]
        if pool_all:
            members = group
            rho = rho_all.get(ai, 1.0)
        else:
            members = [r for r in group if (ai, judge_index[r.judge]) in strong]
            rho = float(np.mean([strong[(ai, judge_index[r.judge])] for r in members])) if members else 0.0
        if not members:
            continue
        gaps = np.array([r.elo for r in members])
        sigma2 = float(np.mean([(GAMMA * _se_p(r) / (known(r.p_bar) * (1 - known(r.p_bar)))) ** 2 for r in members]))
        sigma2_raw = float(np.mean([known(r.se_elo_raw) ** 2 for r in members]))
        gap, se = float(gaps.mean()), math.sqrt(pooled_variance(sigma2, rho, len(members)))
        inv = lambda e: 1.0 / (1.0 + math.exp(-e / GAMMA))  # noqa: E731
        pooled.append(
            RaeeRow(
                anchor=anchor,
                judge="pooled",
                candidate=cand,
                n=int(sum(r.n for r in members)),
                judgments=sum(r.judgments for r in members),
                wins=sum(r.wins for r in members),
                ties=sum(r.ties for r in members),
                losses=sum(r.losses for r in members),
                p_hat=float(np.mean([r.p_hat for r in members])),
                p_bar=inv(gap),
                p_low=inv(gap - z * se),
                p_high=inv(gap + z * se),
                elo=gap,
                elo_low=gap - z * se,
                elo_high=gap + z * se,
                se_elo=se,
                se_elo_raw=math.sqrt(pooled_variance(sigma2_raw, rho, len(members))),
            )
        )
    return pooled


def _screen_warnings(screens: list[JudgeScreen], abstain_sd: float | None, pool_all: bool) -> list[str]:
    warnings = []
    if abstain_sd is not None:
        for sc in screens:
            if sc.coverage < 1.0:
                warnings.append(
                    f"abstention (SD > {abstain_sd:g}) drops {1 - sc.coverage:.1%} of judge {sc.judge}'s "
                    f"items under anchor {sc.anchor} (coverage {sc.coverage:.1%})"
                )
    no_icc = [sc.judge for sc in screens if sc.icc is None]
    if no_icc and not pool_all:
        warnings.append(
            f"judge(s) {', '.join(sorted(set(no_icc)))}: no repeated runs, so no ICC(3,k) screen and no "
            "pooled row from them (run each judge k ≥ 2 times, or --pool-all)"
        )
    return warnings


def _missing_rows(rows: list[RaeeRow], anchors: np.ndarray, candidates: list[str], warnings: list[str]) -> list[RaeeRow]:
    """Rows for the candidates that should be there but have no judgments (and a warning each anchor)."""
    present = {(r.anchor, r.candidate) for r in rows}
    missing_rows: list[RaeeRow] = []
    for anchor in anchors:
        missing = [cn for cn in candidates if cn != anchor and (anchor, cn) not in present]
        if missing:
            warnings.append(
                f"{len(missing)} candidate(s) have no judgments against anchor {anchor}: "
                f"{', '.join(missing[:8])}{' …' if len(missing) > 8 else ''}"
            )
            missing_rows.extend(RaeeRow(anchor=anchor, judge="-", candidate=cn, n=0) for cn in missing)
    return missing_rows


def _mid_region(rows: list[RaeeRow], anchors: np.ndarray, warnings: list[str]) -> dict[str, float]:
    """Mid-region coverage per anchor (App. E.1): the share of p̄ in [0.2, 0.8]."""
    mid_region: dict[str, float] = {}
    for anchor in anchors:
        p_bars = np.array([r.p_bar for r in rows if r.anchor == anchor and r.judge not in ("pooled", "-") and r.p_bar is not None])
        if p_bars.size == 0:  # every item left out (abstention): nothing to measure (one check for every caller)
            warnings.append(f"anchor {anchor}: no candidate has a win rate left (every item was dropped); nothing is estimated")
            continue
        mid_region[anchor] = float(np.mean((p_bars >= MID_REGION[0]) & (p_bars <= MID_REGION[1])))
        if mid_region[anchor] < MID_REGION_TARGET:
            warnings.append(
                f"anchor {anchor}: only {mid_region[anchor]:.0%} of the p̄ lie in [0.2, 0.8] (want ≥ 95%); "
                "the anchor may be too weak or too strong to discriminate"
            )
    return mid_region


def raee_report(
    data: ReferenceJudgments,
    *,
    soft: bool = False,
    level: float = 0.95,
    population: int | None = None,
    icc_threshold: float = 0.9,
    abstain_sd: float | None = None,
    pool_all: bool = False,
    judges: list[str] | None = None,
    candidates: list[str] | None = None,
) -> RaeeReport:
    """The RAEE report of a set of reference-anchored judgments (see the module docstring).

    Args:
        soft: soft outcomes instead of the judge's argmax.
        population: the prompt pool size M for the finite-population correction.
        icc_threshold: ρ0 of the screen (strong judges have ICC(3, k) ≥ ρ0).
        abstain_sd: drop (judge, candidate, prompt) items whose outcome SD across runs exceeds this.
        pool_all: pool every judge, with ρ_k estimated as the mean between-judge correlation of the
            item outcomes (Lemma 1), when the judges have no repeated runs to screen them.
        judges: only these judges.
        candidates: the candidates that should appear (a run's candidates), so that missing ones
            are reported rather than silently absent.

    Raises:
        OrchestratorError: no judgments, or an unknown judge.
    """
    if len(data) == 0:
        raise OrchestratorError(
            "no reference-anchored judgments (kind 'reference') to fit; judge the candidates "
            "against a reference first (a run with a [reference] campaign, or "
            "`orchestrator record --template raee-...`)"
        )
    if judges:
        present = set(data.judge.astype(str))
        unknown = [j for j in judges if j not in present]
        if unknown:
            raise OrchestratorError(f"judge {unknown[0]!r} has no reference-anchored judgments here (judges: {', '.join(sorted(present))})")
        data = data.select(np.isin(data.judge.astype(str), judges))
    it = _items(data, soft, abstain_sd)
    screens, strong = _screens(it, icc_threshold)
    warnings = _screen_warnings(screens, abstain_sd, pool_all)
    kappa = _kappa_factors(it)
    rows = _judge_rows(it, kappa, soft=soft, level=level, population=population)
    rows.extend(_pooled_rows(it, rows, strong, level=level, pool_all=pool_all))
    if candidates is not None:
        rows.extend(_missing_rows(rows, it.anchors, candidates, warnings))
    mid_region = _mid_region(rows, it.anchors, warnings)
    swaps = anchor_swaps(rows, list(it.anchors))
    for sw in swaps:
        if sw.kendall_tau is not None and sw.kendall_tau < 0.9:
            warnings.append(
                f"anchors {sw.anchors[0]} and {sw.anchors[1]} rank the candidates differently (Kendall τ = {sw.kendall_tau:.2f} < 0.9)"
            )
    return RaeeReport(
        outcome="soft" if soft else "hard",
        level=level,
        population=population,
        icc_threshold=icc_threshold,
        abstain_sd=abstain_sd,
        rows=rows,
        judges=screens,
        kappa_factor=kappa,
        mid_region_coverage=mid_region,
        anchor_swaps=swaps,
        warnings=warnings,
    )
