"""``orchestrator fit simplex``: the Bayesian simplex model on absolute scores of a run or a log.

The imperative shell around :mod:`orchestrator.simplex`: load absolute judgments (a run file's
``judgments`` table or a JSONL judgment log), fit, compare with the truth when the data has human
scores, summarise as a :class:`SimplexReport`, format a table.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import numpy as np
from pydantic import BaseModel
from scipy.stats import rankdata, spearmanr

from ...errors import OrchestratorError
from ...records.config import RunConfig
from ...records.log import load_log, load_responses
from ...simplex import (
    ScoreData,
    SimplexFit,
    SimplexSettings,
    build_score_data,
    fit_or_fallback,
    fit_simplex,
    label_grid,
    parse_self_map,
    sensitivity_sweep,
)
from ...store import open_run
from ..judges.human_labels import HumanLabels

__all__ = ["SimplexReport", "load_absolute_judgments", "people_beside", "run_simplex", "truth_scores"]


def load_absolute_judgments(source: str | Path, *, log: bool) -> tuple[list[tuple[str, str, str, dict]], dict]:
    """``(judge, candidate, prompt, probs)`` of every absolute judgment of a run file or a JSONL log,
    and what the source knows: ``{"truth": {candidate: mean human score} | None, "truth_field"}``."""
    path = Path(source)
    info: dict = {"truth": None, "truth_field": None}
    if log:
        return [(rec.judge, rec.candidates[0], rec.prompt_id, rec.probs) for _, rec in load_log(path) if rec.kind == "absolute"], info
    with open_run(path, write=False) as store:
        config = RunConfig.from_stored(store.config)
        rows = list(store.judgments(kind="absolute"))
        dataset = store.dataset()
    if config.data.truth:
        info = {
            "truth": _mean_truth(((r.candidate, r.human.get(config.data.truth)) for by in dataset.responses.values() for r in by.values())),
            "truth_field": config.data.truth,
        }
    return [(r.judge, r.candidates[0], r.prompt_id, r.probs[0]) for r in rows], info


def _mean_truth(pairs) -> dict[str, float]:
    values: dict[str, list[float]] = {}
    for cand, value in pairs:
        if value is not None:
            values.setdefault(cand, []).append(float(value))
    return {c: float(np.mean(v)) for c, v in values.items()}


def truth_scores(responses: str | Path, field: str) -> dict[str, float]:
    """Candidate → mean human score ``field`` over its responses (``responses.jsonl`` format).

    Raises:
        OrchestratorError: no response carries the field.
    """
    truth = _mean_truth((row.candidate, row.human.get(field)) for _, row in load_responses(responses))
    if not truth:
        raise OrchestratorError(f"{responses}: no response has a human score {field!r}")
    return truth


class CandidateRow(BaseModel):
    rank: int
    candidate: str
    expected: float
    """Posterior mean expected true score ``Σ_m m·π̄_{k,m}``."""
    low: float
    high: float
    """Credible interval of the expected score."""
    rank_mean: float
    rank_low: int
    rank_high: int
    """Shortest credible interval of the rank (1 = best)."""
    p_best: float
    """Posterior probability of rank 1."""
    scores: float
    """Judgments behind the candidate (fractional with --soft)."""
    truth: float | None = None
    true_rank: int | None = None


class JudgeRow(BaseModel):
    judge: str
    scores: float
    self_pairs: list[str]
    rho: float
    """Posterior mean ρ_j (its share of β_max: discrimination)."""
    confusion: list[list[float]]
    """Posterior mean θ_j: rows = true level 1..M, columns = assigned level."""


class SweepRow(BaseModel):
    parameter: str
    value: float
    spearman_vs_base: float | None
    rhat_ranking: float
    max_rhat: float
    seconds: float
    expected: dict[str, float]


class SimplexReport(BaseModel):
    source: str
    levels: int
    outcome: str
    """``hard`` (argmax scores counted) or ``soft`` (option probabilities as fractional counts)."""
    settings: dict
    label: str
    level: float
    candidates: list[CandidateRow]
    judges: list[JudgeRow]
    rhat: dict[str, float]
    ess: dict[str, float]
    divergences: int
    seconds: float
    chains: list[dict]
    converged: bool
    labelled: int = 0
    """Answers whose true level came from a person's label (``--human``)."""
    fallback_from: dict | None = None
    """Set when the requested fit did not converge and these are the fallback fit's results:
    the requested settings' label, its ranking R-hat and per-chain report."""
    truth_field: str | None = None
    spearman_vs_truth: float | None = None
    coverage_vs_truth: float | None = None
    sensitivity: list[SweepRow] | None = None
    people: dict | None = None
    """With ``--human``: people's ranking beside the fit's (:func:`people_beside`)."""
    warnings: list[str]


def run_simplex(
    source: str | Path,
    *,
    log: bool = False,
    levels: int,
    settings: SimplexSettings,
    judges: list[str] | None = None,
    self_judging: str | dict | None = None,
    sweep: bool = False,
    truth: dict[str, float] | None = None,
    truth_field: str | None = None,
    level: float = 0.95,
    progress: bool = False,
    sweep_progress: Callable[[str], None] | None = None,
    fallback: bool = True,
    human: str | Path | None = None,
) -> tuple[SimplexReport, SimplexFit, ScoreData, list | None]:
    """Load, fit (and sweep), summarise. Returns the report, the fit, the data and the sweep results.

    Raises:
        OrchestratorError: no absolute judgments, scores outside 1..M, unknown judges, bad settings.
    """
    if not 0 < level < 1:
        raise OrchestratorError(f"--level must be in (0, 1), got {level}")
    records, info = load_absolute_judgments(source, log=log)
    if judges:
        known = {r[0] for r in records}
        unknown = [j for j in judges if j not in known]
        if unknown:
            raise OrchestratorError(f"judge {unknown[0]!r} has no absolute judgments here (judges: {', '.join(sorted(known)) or 'none'})")
        records = [r for r in records if r[0] in judges]
    data = build_score_data(records, levels=levels, source=str(source))
    self_map = parse_self_map(self_judging, data.judges, data.candidates)
    if self_map:
        data = build_score_data(records, levels=levels, self_map=self_map, source=str(source))
    if truth is None and info["truth"]:
        truth, truth_field = info["truth"], info["truth_field"]
    grid, labels, label_notes = _human_grid(human, data)
    sweep_results = None
    if sweep:
        base_fit, sweep_results = sensitivity_sweep(data, settings, progress=sweep_progress, labels=grid)
    fit = (fit_or_fallback if fallback else fit_simplex)(data, settings, labels=grid, progress=progress)
    fit.warnings.extend(label_notes)
    report = summarise(
        fit, data, source=str(source), level=level, truth=truth, truth_field=truth_field, self_map=self_map, sweep=sweep_results
    )
    if labels is not None:
        report.people = people_beside(fit, labels, data.questions, level, truth)
    return report, fit, data, sweep_results


def _human_grid(human: str | Path | None, data: ScoreData) -> tuple[np.ndarray | None, HumanLabels | None, list[str]]:
    """People's labels: their absolute scores as the ``(K, Q)`` true levels of
    :func:`fit_simplex` (None without absolute labels), the labels, and notes for the report;
    ``(None, None, [])`` without ``--human``."""
    if human is None:
        return None, None, []
    from ..judges.human_labels import load_human_labels

    labels = load_human_labels(human)
    candidates, questions = set(data.candidates), set(data.questions)
    verdicts = [x for x in labels.pairwise if x.prompt_id in questions and {x.first, x.second} <= candidates]
    if not labels.absolute and not verdicts:
        raise OrchestratorError(
            f"{human}: no absolute score ({{prompt_id, candidate, score}}) and no pairwise verdict of two "
            "fitted candidates' answers: nothing here to fit"
        )
    grid, missing = label_grid(data, labels.mean_scores())
    if not grid.any() and not verdicts:
        raise OrchestratorError(f"{human}: no label is of an answer in the fitted data (first: {missing[0]})")
    notes = (
        [f"{len(missing)} human label(s) are of answers not in the fitted data and were not used (first: {missing[0]})"] if missing else []
    )
    return (grid if grid.any() else None), labels, notes


def people_beside(fit: SimplexFit, labels: HumanLabels, questions: list[str], level: float, truth: dict[str, float] | None) -> dict | None:
    """People's ranking beside the fit's: the fit's draws of the expected scores as the
    judges' posterior ``N(mean, cov)``, moved by people's scores of answers and pairwise verdicts on
    ``questions`` through the discrepancy model of :mod:`orchestrator.poe.human` (a candidate-specific
    judge bias of sd τ, averaged over τ). Labels inside the fit (true levels) inform the confusion
    matrices and the prevalences but cannot move a candidate that every judge misplaces — the bias
    this ranking allows for. ``{"labels", "tau", "ranking", "coverage_vs_truth"}``; None when no
    label is usable."""
    from ...poe.human import spread_grid
    from ..replay.people import people_ranking, verdict_indices

    index = {c: k for k, c in enumerate(fit.candidates)}
    asked = set(questions)
    scored = [(index[c], score) for (q, c), score in sorted(labels.mean_scores().items()) if c in index and q in asked]
    compared = verdict_indices(labels, index, asked.__contains__)
    expected = fit.flat("expected")
    mean, cov = expected.mean(0), np.atleast_2d(np.cov(expected.T))
    # fewer draws than candidates leave the draws' covariance singular: a ridge far below any sd
    cov = cov + 1e-6 * max(float(np.mean(np.diag(cov))), 1e-12) * np.eye(len(mean))
    # the expected scores' scale has no unit of its own (it depends on M and the data): τ relative to it
    people = people_ranking(fit.candidates, mean, cov, scored, compared, level=level, tau_grid=spread_grid(mean, cov))
    if people is not None and truth:
        known = [row for row in people["ranking"] if row["candidate"] in truth]
        true_rank = dict(zip([row["candidate"] for row in known], rankdata([-truth[row["candidate"]] for row in known], method="min")))
        people["coverage_vs_truth"] = round(
            float(np.mean([row["rank_low"] <= true_rank[row["candidate"]] <= row["rank_high"] for row in known])), 4
        )
    return people


def summarise(
    fit: SimplexFit,
    data: ScoreData,
    *,
    source: str,
    level: float = 0.95,
    truth: dict[str, float] | None = None,
    truth_field: str | None = None,
    self_map: dict | None = None,
    sweep: list | None = None,
) -> SimplexReport:
    """The report of a fit: candidates by posterior mean expected score with intervals, judges'
    confusion matrices, diagnostics, optional truth comparison and sensitivity rows."""
    st = fit.settings
    counts = data.counts(st.soft)
    if st.self_preference == "exclude":
        counts = counts * ~data.self_pairs[:, :, None]
    rows = _candidate_rows(fit, counts, level, truth)
    confusion = fit.confusion_mean()
    rho = fit.draws["rho"].reshape(-1, len(fit.judges)).mean(0)
    judges = [
        JudgeRow(
            judge=j,
            scores=round(float(counts[i].sum()), 3),
            self_pairs=sorted((self_map or {}).get(j, set())),
            rho=round(float(rho[i]), 4),
            confusion=[[round(float(x), 4) for x in row] for row in confusion[i]],
        )
        for i, j in enumerate(fit.judges)
    ]
    report = SimplexReport(
        source=source,
        levels=fit.levels,
        outcome="soft" if st.soft else "hard",
        settings={
            "omega": st.omega,
            "beta_max": st.beta_max,
            "delta": st.delta,
            "self_preference": st.self_preference,
            "chains": st.chains,
            "warmup": st.warmup,
            "draws": st.draws,
            "seed": st.seed,
            "target_accept": st.target_accept,
            "count_weight": st.count_weight,
            "likelihood": st.likelihood,
        },
        label=st.label(),
        level=level,
        candidates=rows,
        judges=judges,
        rhat={k: round(v, 4) for k, v in fit.rhat.items()},
        ess={k: round(v, 1) for k, v in fit.ess.items()},
        divergences=fit.divergences,
        seconds=round(fit.seconds, 2),
        chains=fit.chains,
        converged=fit.converged,
        fallback_from=fit.fallback_from,
        labelled=fit.labelled,
        warnings=list(fit.warnings),
    )
    scored = [r for r in rows if r.truth is not None]
    if truth and len(scored) > 2:
        report.truth_field = truth_field
        report.spearman_vs_truth = round(float(spearmanr([r.expected for r in scored], [r.truth for r in scored]).statistic), 4)
        report.coverage_vs_truth = round(
            float(np.mean([r.true_rank is not None and r.rank_low <= r.true_rank <= r.rank_high for r in scored])), 4
        )
    if sweep is not None:
        _add_sensitivity(report, fit, sweep)
    return report


def _candidate_rows(fit: SimplexFit, counts: np.ndarray, level: float, truth: dict[str, float] | None) -> list[CandidateRow]:
    """Candidates by posterior mean expected score, with intervals, rank intervals, P(best) and
    (with a truth) the true score and rank."""
    ranks = fit.ranks(level)
    mean = fit.expected_mean
    lo, hi = fit.expected_interval(level)
    order = sorted(range(len(fit.candidates)), key=lambda k: (-round(float(mean[k]), 9), fit.candidates[k]))
    true_rank = None
    if truth:
        known = [k for k in range(len(fit.candidates)) if fit.candidates[k] in truth]
        true_rank = {fit.candidates[k]: int(r) for k, r in zip(known, rankdata([-truth[fit.candidates[k]] for k in known], method="min"))}
    rows = []
    for position, k in enumerate(order, start=1):
        cand = fit.candidates[k]
        rows.append(
            CandidateRow(
                rank=position,
                candidate=cand,
                expected=round(float(mean[k]), 4),
                low=round(float(lo[k]), 4),
                high=round(float(hi[k]), 4),
                rank_mean=round(float(ranks.mean_rank[k]), 3),
                rank_low=int(ranks.lower[k]),
                rank_high=int(ranks.upper[k]),
                p_best=round(float(ranks.rank_probs[k, 0]), 4) if ranks.rank_probs is not None else math.nan,
                scores=round(float(counts[:, k].sum()), 3),
                truth=None if not truth or cand not in truth else round(truth[cand], 4),
                true_rank=None if true_rank is None else true_rank.get(cand),
            )
        )
    return rows


def _add_sensitivity(report: SimplexReport, fit: SimplexFit, sweep: list) -> None:
    """The sweep's rows, and a warning when a prior setting reorders the ranking (§5.4)."""
    report.sensitivity = [
        SweepRow(
            parameter=s.parameter,
            value=s.value,
            spearman_vs_base=None if math.isnan(s.spearman) else round(s.spearman, 4),
            rhat_ranking=round(s.rhat_ranking, 4),
            max_rhat=round(s.max_rhat, 4),
            seconds=round(s.seconds, 2),
            expected={c: round(float(v), 4) for c, v in zip(fit.candidates, s.expected)},
        )
        for s in sweep
    ]
    unstable = [s for s in sweep if not math.isnan(s.spearman) and s.spearman < 0.9]
    if unstable:
        worst = min(unstable, key=lambda s: s.spearman)
        name = "ω" if worst.parameter == "omega" else "β_max"
        report.warnings.append(
            f"the ranking is sensitive to the priors: at {name} = {worst.value:g} its Spearman "
            f"correlation with the base fit is {worst.spearman:.2f} (< 0.9); the conclusions "
            "depend on judge assumptions (simplex paper §5.4)"
        )
