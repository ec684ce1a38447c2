"""``fit raee --control self``: each judge's preference for answers of its own model family in a
reference campaign, and the win rates it would give without it. Families come from
``--family NAME=FAMILY`` (judges and candidates) or a run's ``model.families``; the fit is
:func:`orchestrator.raee.self_preference.self_preference`, per anchor, on each judge's win rates
(the length-controlled ones when ``--control length`` ran first)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit, logit
from scipy.stats import norm

from ...errors import OrchestratorError
from ...raee import JudgeBias, RaeeReport, ReferenceJudgments, item_matrix
from ...raee.self_preference import logit_win_rates, self_preference
from .length_control import FLAG_SHIFT, controlled_report, extreme_shift

if TYPE_CHECKING:
    from ...store import RunStore

__all__ = ["apply_self_control", "run_families"]


def run_families(source: str | Path, store: RunStore | None = None) -> dict[str, str]:
    """A run's ``model.families`` (empty when it declares none; ``store``: the run file already open)."""
    from ...records.config import RunConfig
    from ...store import open_run

    if store is None:
        with open_run(source, write=False) as opened:
            return run_families(source, opened)
    return dict(RunConfig.from_stored(store.config).model.families)


def _input_logits(rows, anchor: str, judge: str, candidates: list[str], y: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """A judge's log-odds per candidate and their variances: its length-controlled win rates when
    they are there (variance from their interval), its raw outcomes otherwise."""
    raw, var = logit_win_rates(y)
    for m, candidate in enumerate(candidates):
        row = rows.get((anchor, judge, candidate))
        if row is not None and row.win_rate_controlled is not None and row.win_rate_controlled_low is not None:
            p, low, high = (
                np.clip(v / 100, 1e-6, 1 - 1e-6)
                for v in (row.win_rate_controlled, row.win_rate_controlled_low, row.win_rate_controlled_high)
            )
            raw[m] = logit(p)
            var[m] = ((logit(high) - logit(low)) / (2 * z)) ** 2
    return raw, var


def _anchor_inputs(
    data: ReferenceJudgments, anchor: str, families: dict[str, str], rows: dict, *, soft: bool, z: float
) -> tuple[list[str], list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What the self-preference fit under one anchor reads: ``(judges, candidates, logits,
    variances, raw win rates, own)`` — each judge's per-candidate logit win rate and its variance,
    its plain win rate in points, and whether the candidate is of the judge's family.

    Raises:
        OrchestratorError: a judge without a declared family, or no candidate of a judge's family."""
    judges = list(dict.fromkeys(data.judge[data.anchor == anchor].tolist()))
    missing = [j for j in judges if j not in families]
    if missing:
        raise OrchestratorError(
            f"--control self: no family for judge {missing[0]!r}; declare every judge's and candidate's model family "
            "(--family NAME=FAMILY, or model.families in the run's config)"
        )
    tables = {j: item_matrix(data.select((data.anchor == anchor) & (data.judge == j)), anchor, soft=soft) for j in judges}
    candidates = sorted({c for cands, _, _ in tables.values() for c in cands})
    if not any(families.get(c) == families[j] for j in judges for c in candidates):
        raise OrchestratorError(
            f"--control self: no candidate under anchor {anchor!r} is of a judge's family "
            f"(judges: {', '.join(f'{j}={families[j]}' for j in judges)}); nothing to control"
        )
    logits = np.full((len(judges), len(candidates)), np.nan)
    variances = np.full_like(logits, np.nan)
    raw_rates = np.full_like(logits, np.nan)
    for j, judge in enumerate(judges):
        cands, _, y = tables[judge]
        columns = [candidates.index(c) for c in cands]
        logits[j, columns], variances[j, columns] = _input_logits(rows, anchor, judge, cands, y, z)
        raw_rates[j, columns] = 100 * np.nanmean(y, axis=1)
    own = np.array([[families.get(c) == families[j] for c in candidates] for j in judges])
    return judges, candidates, logits, variances, raw_rates, own


def apply_self_control(
    report: RaeeReport,
    data: ReferenceJudgments,
    families: dict[str, str],
    *,
    soft: bool,
    flag_shift: float = FLAG_SHIFT,
    source: str = "flags",
) -> RaeeReport:
    """The report with each judge's self-preference (``judge_biases``, bias ``self``) and every
    per-judge row's ``win_rate_controlled`` (interval): what the judge would say without its taste
    for its family; candidates it moves by more than ``flag_shift`` points are flagged.

    Raises:
        OrchestratorError: a judge without a declared family, no candidate of any judge's family,
            or a self-preference that cannot be told from the family's quality.
    """
    from ...records.families import family_problem

    problem = family_problem(
        families,
        list(dict.fromkeys(data.judge.tolist())),
        {*data.candidate.tolist(), *data.anchor.tolist()},
        where="--family" if source == "flags" else "model.families",
    )
    if problem:
        raise OrchestratorError(problem)
    z = float(norm.ppf(0.5 + report.level / 2))
    rows = {(r.anchor, r.judge, r.candidate): r for r in report.rows}
    biases = list(report.judge_biases)
    flags = {c: list(r) for c, r in report.flags.items()}
    warnings = list(report.warnings)
    for anchor in dict.fromkeys(data.anchor.tolist()):
        judges, candidates, logits, variances, raw_rates, own = _anchor_inputs(data, anchor, families, rows, soft=soft, z=z)
        try:
            fit = self_preference(logits, variances, own)
        except ValueError as exc:
            raise OrchestratorError(f"--control self under anchor {anchor!r}: {exc}") from None
        for j, judge in enumerate(judges):
            if np.isfinite(fit.effect[j]):
                effect, sd = float(fit.effect[j]), float(fit.effect_sd[j])
                biases.append(
                    JudgeBias(
                        anchor=anchor,
                        judge=judge,
                        bias="self",
                        effect=effect,
                        low=effect - z * sd,
                        high=effect + z * sd,
                        points_per_sd=100 * (float(expit(effect)) - 0.5),
                        candidates=int(own[j].sum()),
                    )
                )
            for m, candidate in enumerate(candidates):
                row = rows.get((anchor, judge, candidate))
                if row is None or not np.isfinite(fit.controlled[j, m]):
                    continue
                centre, half = fit.controlled[j, m], z * np.sqrt(fit.controlled_var[j, m])
                rows[(anchor, judge, candidate)] = updated = row.model_copy(
                    update={
                        "win_rate": row.win_rate if row.win_rate is not None else float(raw_rates[j, m]),
                        "win_rate_controlled": 100 * float(expit(centre)),
                        "win_rate_controlled_low": 100 * float(expit(centre - half)),
                        "win_rate_controlled_high": 100 * float(expit(centre + half)),
                    }
                )
                # the move this control makes (from the length-controlled rate when length ran first)
                before = row.win_rate_controlled if row.win_rate_controlled is not None else updated.win_rate
                controlled = updated.win_rate_controlled
                assert before is not None and controlled is not None
                if own[j, m] and extreme_shift(before, controlled, flag_shift):
                    reason = (
                        f"win rate moves {controlled - before:+.1f} points without {judge}'s preference for its family "
                        f"({families[judge]}; flagged beyond {flag_shift:g} points or a quarter of the way to 0 or 100)"
                    )
                    flags.setdefault(candidate, []).append(reason)
                    warnings.append(f"{candidate} flagged: {reason}")
    return controlled_report(report, rows, biases, flags, warnings)
