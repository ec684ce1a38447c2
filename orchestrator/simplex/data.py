"""Absolute scores as arrays for the simplex model: judges × candidates × questions × levels.

The model's likelihood depends on the data only through the counts ``n[j, k, s]`` (simplex paper
Eq. B.3); the baselines (bootstrap, Bradley–Terry from score-derived pairs) need the per-question
scores, so both are kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ..errors import OrchestratorError

__all__ = ["ScoreData", "build_score_data", "design_effect", "parse_self_map", "collapse_levels", "label_grid", "labelled_arrays"]


@dataclass(frozen=True)
class ScoreData:
    """Scores of ``J`` judges on ``K`` candidates' answers to ``Q`` questions, levels ``1..M``."""

    judges: list[str]
    candidates: list[str]
    questions: list[str]
    levels: int
    dist: np.ndarray
    """``(J, K, Q, M)``: the judge's distribution over levels for the item, averaged over repeated
    runs (a hard score is one-hot); NaN where the judge did not score the item."""
    runs: np.ndarray
    """``(J, K, Q)``: how many judgments of the item (0 = missing)."""
    hard_item_mean: np.ndarray
    """``(J, K, Q)``: the argmax level, averaged over repeated runs; NaN where missing."""
    self_pairs: np.ndarray
    """``(J, K)`` bool: judge ``j`` judging its own model family's candidate ``k``."""
    hard_item_counts: np.ndarray
    """``(J, K, Q, M)``: argmax scores counted per item (every run counts; 0 where missing)."""

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return len(self.judges), len(self.candidates), len(self.questions), self.levels

    def counts(self, soft: bool = False) -> np.ndarray:
        """``(J, K, M)``: :meth:`item_counts` summed over questions."""
        return self.item_counts(soft).sum(axis=2)

    @property
    def hard_counts(self) -> np.ndarray:
        """``(J, K, M)``: argmax scores counted (every run counts)."""
        return self.counts(False)

    @property
    def soft_counts(self) -> np.ndarray:
        """``(J, K, M)``: option probabilities summed (our extension: fractional counts)."""
        return self.counts(True)

    def item_counts(self, soft: bool = False) -> np.ndarray:
        """``(J, K, Q, M)`` each item's scores counted: argmax levels (hard) or option probabilities
        summed over repeated runs (soft); zeros where the judge did not score the item."""
        if soft:
            return np.nan_to_num(self.dist) * self.runs[..., None]
        return self.hard_item_counts

    def item_scores(self, soft: bool = False) -> np.ndarray:
        """``(J, K, Q)`` score per item: the argmax level (hard; repeats averaged) or the expected
        level under the judge's distribution (soft); NaN where missing."""
        levels = np.arange(1, self.levels + 1, dtype=float)
        return self.dist @ levels if soft else self.hard_item_mean

    def without_self(self) -> "ScoreData":
        """Self-judging items removed (the paper's default, ``k ≠ j`` in Eq. B.3)."""
        if self.self_pairs is None or not self.self_pairs.any():
            return self
        keep = ~self.self_pairs
        return ScoreData(
            self.judges,
            self.candidates,
            self.questions,
            self.levels,
            np.where(keep[:, :, None, None], self.dist, np.nan),
            np.where(keep[:, :, None], self.runs, 0),
            np.where(keep[:, :, None], self.hard_item_mean, np.nan),
            np.zeros_like(self.self_pairs),
            self.hard_item_counts * keep[:, :, None, None],
        )


def parse_self_map(spec: str | dict | None, judges: list[str], candidates: list[str]) -> dict[str, set[str]]:
    """``judge → candidates of its model family`` from ``"judge=cand1,cand2;judge2=cand3"`` or a
    mapping; names must exist (a typo would silently keep self-judging data).

    Raises:
        OrchestratorError: malformed text, or an unknown judge or candidate.
    """
    if not spec:
        return {}
    if isinstance(spec, str):
        out: dict[str, set[str]] = {}
        for part in filter(None, (p.strip() for p in spec.split(";"))):
            if "=" not in part:
                raise OrchestratorError(f"--self-judging: {part!r} is not JUDGE=CANDIDATE[,CANDIDATE...]")
            judge, cands = part.split("=", 1)
            names = {c.strip() for c in cands.split(",") if c.strip()}
            if not names:  # "judge=" would silently keep its self-judging data
                raise OrchestratorError(f"--self-judging: {part!r} names no candidate for judge {judge.strip()!r}")
            out.setdefault(judge.strip(), set()).update(names)
    else:
        out = {str(j): set(map(str, cs if isinstance(cs, (list, tuple, set)) else [cs])) for j, cs in spec.items()}
    for judge, shown in out.items():
        if judge not in judges:
            raise OrchestratorError(f"--self-judging: unknown judge {judge!r} (judges: {', '.join(judges)})")
        unknown = sorted(shown - set(candidates))
        if unknown:
            raise OrchestratorError(f"--self-judging: unknown candidate {unknown[0]!r} for judge {judge!r}")
    return out


def collapse_levels(data: ScoreData, mapping: list[int]) -> ScoreData:
    """Merge levels: ``mapping[s − 1]`` is the new level of old level ``s`` (e.g. ``[1, 1, 2, 2, 3]``,
    simplex paper App. D.6), so an M-level log can be drawn on the triangle (M' = 3)."""
    if len(mapping) != data.levels:
        raise OrchestratorError(f"--collapse needs {data.levels} entries (one per level), got {len(mapping)}")
    new = max(mapping)
    if sorted(set(mapping)) != list(range(1, new + 1)) or any(b < a for a, b in zip(mapping, mapping[1:])):
        raise OrchestratorError(f"--collapse {','.join(map(str, mapping))}: new levels must be 1..M' and non-decreasing")
    onehot = np.zeros((data.levels, new))
    onehot[np.arange(data.levels), np.asarray(mapping) - 1] = 1.0
    hard = data.hard_item_mean
    lookup = np.asarray(mapping, dtype=float)
    # a repeat-averaged hard score maps through its nearest level (exact for single runs)
    idx = np.clip(np.rint(np.nan_to_num(hard, nan=1.0)).astype(int), 1, data.levels) - 1
    return ScoreData(
        data.judges,
        data.candidates,
        data.questions,
        new,
        data.dist @ onehot,
        data.runs,
        np.where(np.isnan(hard), np.nan, lookup[idx]),
        data.self_pairs,
        data.hard_item_counts @ onehot,
    )


def build_score_data(
    records: Iterable[tuple[str, str, str, dict[str, float]]], *, levels: int, self_map: dict[str, set[str]] | None = None, source: str = ""
) -> ScoreData:
    """From ``(judge, candidate, question, {level: probability})`` judgments (a hard score is
    ``{"3": 1.0}``); repeated judgments of an item count as separate observations.

    Raises:
        OrchestratorError: fewer than 2 levels, a level that is not an integer in 1..M (naming the
            judgment), no judgments.
    """
    if levels < 2:
        raise OrchestratorError(f"--levels must be at least 2 (got {levels})")
    where = f"{source}: " if source else ""
    rows = []
    for judge, cand, question, probs in records:
        vec = np.zeros(levels)
        for key, value in probs.items():
            try:
                level = float(key)
            except ValueError:
                level = math.nan
            if not level.is_integer() or not 1 <= level <= levels:
                if value > 0:
                    raise OrchestratorError(
                        f"{where}score {key!r} of judge {judge!r} on candidate {cand!r}, prompt {question!r} is outside "
                        f"1..{levels}; pass the scale's size with --levels (scores must be the integers 1..M)"
                    )
                continue
            vec[int(level) - 1] += value
        total = vec.sum()
        if total <= 0:
            raise OrchestratorError(
                f"{where}judge {judge!r} on candidate {cand!r}, prompt {question!r}: no probability on any level 1..{levels}"
            )
        rows.append((judge, cand, question, vec / total))
    if not rows:
        raise OrchestratorError(
            f"{where}no absolute judgments (kind 'absolute') to fit; score the candidates with an "
            "absolute template first (a run with an [absolute] section, or a log)"
        )
    judges = sorted({r[0] for r in rows})
    candidates = sorted({r[1] for r in rows})
    questions = sorted({r[2] for r in rows})
    ji = {n: i for i, n in enumerate(judges)}
    ki = {n: i for i, n in enumerate(candidates)}
    qi = {n: i for i, n in enumerate(questions)}
    shape = (len(judges), len(candidates), len(questions))
    dist_sum = np.zeros(shape + (levels,))
    hard_sum = np.zeros(shape)
    runs = np.zeros(shape, dtype=np.int64)
    hard_item_counts = np.zeros(shape + (levels,))
    for judge, cand, question, vec in rows:
        j, k, q = ji[judge], ki[cand], qi[question]
        dist_sum[j, k, q] += vec
        top = int(np.argmax(vec))
        hard_sum[j, k, q] += top + 1
        hard_item_counts[j, k, q, top] += 1
        runs[j, k, q] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        dist = np.where(runs[..., None] > 0, dist_sum / runs[..., None], np.nan)
        hard_mean = np.where(runs > 0, hard_sum / runs, np.nan)
    self_pairs = np.zeros((len(judges), len(candidates)), dtype=bool)
    for judge, cands in (self_map or {}).items():
        if judge in ji:
            for cand in cands:
                if cand in ki:
                    self_pairs[ji[judge], ki[cand]] = True
    return ScoreData(judges, candidates, questions, levels, dist, runs, hard_mean, self_pairs, hard_item_counts)


def design_effect(data: "ScoreData", *, soft: bool = False) -> float:
    """How many judge scores one answer is worth: ``deff = 1 + (J̄ − 1)·ρ`` (Kish), ``ρ`` the
    intra-answer correlation of the judges' scores once each judge's mean for each candidate is
    removed (one-way ICC over answers), ``J̄`` the mean number of judges per answer.

    The count likelihood (Eq. B.3) treats every judge's score as an independent observation of the
    candidate's prevalence; judges who score the same answer share its quality, so J judges × Q
    answers carry the information of about ``J·Q/deff`` independent scores. Returns 1 when it cannot
    be estimated (one judge, fewer than three complete answers, no within-answer variation)."""
    scores = data.item_scores(soft)
    n_judges = scores.shape[0]
    if n_judges < 2:
        return 1.0
    with np.errstate(invalid="ignore"):
        centred = scores - np.nanmean(scores, axis=2, keepdims=True)
    items = centred.transpose(1, 2, 0).reshape(-1, n_judges)
    items = items[~np.isnan(items).any(axis=1)]
    if len(items) < 3:
        return 1.0
    means = items.mean(axis=1)
    between = n_judges * float(((means - means.mean()) ** 2).sum()) / (len(items) - 1)
    within = float(((items - means[:, None]) ** 2).sum()) / (len(items) * (n_judges - 1))
    if between + (n_judges - 1) * within <= 0:
        return 1.0
    rho = min(1.0, max(0.0, (between - within) / (between + (n_judges - 1) * within)))
    answered = np.sum(~np.isnan(scores), axis=0)
    mean_judges = float(answered[answered > 0].mean()) if np.any(answered > 0) else 1.0
    return 1.0 + max(mean_judges - 1.0, 0.0) * rho


def label_grid(data: ScoreData, labels: dict[tuple[str, str], float]) -> tuple[np.ndarray, list[str]]:
    """``(K, Q)`` true levels from people's scores of answers (0 = unlabelled), and the problems.

    ``labels`` maps ``(question, candidate)`` → a person's score on the judges' 1..M scale (the mean
    over annotators); it is rounded to the nearest level. Raises on a score outside ``[0.5, M + 0.5)``;
    labels of answers not in the data are returned as problems, not errors.
    """
    grid = np.zeros((len(data.candidates), len(data.questions)), dtype=int)
    kpos = {c: i for i, c in enumerate(data.candidates)}
    qpos = {q: i for i, q in enumerate(data.questions)}
    missing = []
    for (question, candidate), score in sorted(labels.items()):
        if not 0.5 <= score < data.levels + 0.5:
            raise OrchestratorError(
                f"a human score of {score:g} ({candidate} on {question}) is outside the judges' scale 1..{data.levels}: "
                "fit simplex reads labels as true scores on that scale"
            )
        if candidate not in kpos or question not in qpos:
            missing.append(f"{candidate} on {question}")
            continue
        grid[kpos[candidate], qpos[question]] = int(math.floor(score + 0.5))
    return grid, missing


def labelled_arrays(item_counts: np.ndarray, grid: np.ndarray | None, likelihood: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What :func:`~orchestrator.simplex.model.make_model` takes for human labels: ``(scores,
    labelled, labels)`` from per-answer counts ``(J, K, Q, M)`` and the ``(K, Q)`` label grid.

    ``counts``: scores of the unlabelled answers ``(J, K, M)``, ``labelled (J, K, M, M)`` (judge j's
    scores s of answers labelled m) and ``labels (K, M)`` (labels per level). ``answers``: the item
    counts, an unused placeholder and ``(K, Q, M)`` one-hot labels, ones where unlabelled.
    """
    n_judges, n_cands, n_questions, levels = item_counts.shape
    if grid is None:
        grid = np.zeros((n_cands, n_questions), dtype=int)
    onehot = (grid[..., None] == np.arange(1, levels + 1)).astype(float)  # (K, Q, M); zeros where unlabelled
    if likelihood == "answers":
        mask = np.where((grid > 0)[..., None], onehot, 1.0)
        return item_counts, np.zeros(1), mask
    unlabelled = item_counts * (grid == 0)[None, :, :, None]
    labelled = np.einsum("jkqs,kqm->jkms", item_counts, onehot)
    return unlabelled.sum(axis=2), labelled, onehot.sum(axis=1)
