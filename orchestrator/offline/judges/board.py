"""``orchestrator judges``: a leaderboard of judges against people (AlpacaEval's
``analyze_evaluators``). For every judge of a log, against the human labels of
:mod:`orchestrator.offline.judges.human_labels`:

- ``agreement``: the share of its verdicts on pairs where people prefer one answer that side with
  them (a judge's tie counts ½). A pairwise judgment is one verdict; an absolute judge's verdicts
  are the pairs of answers to one prompt it scored (higher expected score wins);
- ``spearman``/``kendall``: the candidates' ranking the judge alone implies (win rate in its
  comparisons, or mean expected score) against the people's (mean score, or win rate);
- ``first_shown_wins`` (position), ``prefers_longer`` beside the people's share on the same pairs
  (length, with the answers' texts), ``ece`` (calibration of P(first better) on decisive pairs);
- ``usd_per_1000``/``tokens_per_1000`` judgments (from the log's ``cost_usd`` and token counts).

Intervals: percentile bootstrap over prompts (every statistic recomputed on resampled prompts).
``human_ceiling``: where several annotators labelled one item, how often one agrees with the
majority of the others — what a judge can be expected to reach.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import kendalltau, spearmanr

from ...errors import OrchestratorError
from ...records.log import GRADES, LogRecord, grade_vector, prob_first
from .human_labels import HumanLabels

__all__ = ["judge_board", "format_judge_board"]

BINS = 10


def _p_first(probs: dict[str, float]) -> float:
    """P(first shown better) of a comparison, each verdict kind read with its own meaning: A/B with
    an optional tie C, or graded five-way verdicts (A≫B and A>B win, A=B is half of one;
    never read as ties). Any other kind fails loudly, never as a tie.

    Raises:
        OrchestratorError: options that are neither A/B(/C) nor :data:`GRADES`."""
    if grade_vector(probs) is None and not ({"A", "B"} <= set(probs) and set(probs) <= {"A", "B", "C"}):
        raise OrchestratorError(
            f"a comparison's options {sorted(probs)} are neither A/B (C a tie) nor graded ({', '.join(GRADES)}): "
            "the judges board cannot read this verdict kind"
        )
    return prob_first(probs) if sum(probs.values()) > 0 else 0.5


def _expected_score(probs: dict[str, float]) -> float | None:
    levels = [(float(k), v) for k, v in probs.items() if k.lstrip("-").replace(".", "", 1).isdigit()]
    total = sum(v for _, v in levels)
    return None if total <= 0 else sum(k * v for k, v in levels) / total


@dataclass
class _Tally:
    """Per prompt sums of one judge (the bootstrap resamples prompts)."""

    agree: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    votes: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    first_wins: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    decisive: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    longer: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    human_longer: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    length_pairs: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    calibration: list[tuple[str, float, float]] = field(default_factory=list)
    scores: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))


def _verdict(p: float) -> float:
    return 1.0 if p > 0.5 else 0.0 if p < 0.5 else 0.5


def _tally(records: list[LogRecord], labels: HumanLabels, lengths: dict[tuple[str, str], int]) -> dict[str, _Tally]:
    scores, votes = labels.mean_scores(), labels.pair_votes()
    tallies: dict[str, _Tally] = defaultdict(_Tally)
    absolute: dict[tuple[str, str, str], list[float]] = defaultdict(list)

    def vote(t: _Tally, prompt: str, a: str, b: str, p_a: float, *, probability: bool = True) -> None:
        human = labels.preference(prompt, a, b, scores=scores, votes=votes)
        if human is None or human == 0.5:
            return
        verdict = _verdict(p_a)
        t.agree[prompt] += 1.0 - abs(verdict - human)
        t.votes[prompt] += 1
        if probability:  # an absolute judge's derived verdict is not a probability to calibrate
            t.calibration.append((prompt, p_a, human))
        la, lb = lengths.get((prompt, a)), lengths.get((prompt, b))
        if la is not None and lb is not None and la != lb and verdict != 0.5:
            t.length_pairs[prompt] += 1
            t.longer[prompt] += float((verdict == 1.0) == (la > lb))
            t.human_longer[prompt] += float((human == 1.0) == (la > lb))

    for rec in records:
        t = tallies[rec.judge]
        if rec.kind == "absolute":
            value = _expected_score(rec.probs)
            if value is not None:
                absolute[(rec.judge, rec.prompt_id, rec.candidates[0])].append(value)
            continue
        first, second = rec.candidates
        p = _p_first(rec.probs)
        t.scores[(rec.prompt_id, first)].append(p)
        t.scores[(rec.prompt_id, second)].append(1 - p)
        if p != 0.5:
            t.first_wins[rec.prompt_id] += float(p > 0.5)
            t.decisive[rec.prompt_id] += 1
        vote(t, rec.prompt_id, first, second, p)
    by_prompt: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for (judge, prompt, candidate), values in absolute.items():
        by_prompt[(judge, prompt)][candidate] = sum(values) / len(values)
        tallies[judge].scores[(prompt, candidate)].append(sum(values) / len(values))
    for (judge, prompt), cands in by_prompt.items():
        names = sorted(cands)
        for x in range(len(names)):
            for y in range(x + 1, len(names)):
                a, b = names[x], names[y]
                gap = cands[a] - cands[b]
                vote(tallies[judge], prompt, a, b, 1.0 if gap > 0 else 0.0 if gap < 0 else 0.5, probability=False)
    return tallies


def _human_candidate_scores(labels: HumanLabels) -> dict[tuple[str, str], list[float]]:
    """People's (prompt, candidate) values for the ranking: absolute scores, or pairwise wins."""
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (prompt, candidate), score in labels.mean_scores().items():
        out[(prompt, candidate)].append(score)
    if not out:
        for (prompt, a, b), verdicts in labels.pair_votes().items():
            for v in verdicts:
                out[(prompt, a)].append(v)
                out[(prompt, b)].append(1 - v)
    return out


def _per_prompt(values: dict[str, float], prompts: list[str]) -> np.ndarray:
    return np.array([values.get(p, 0.0) for p in prompts])


def _ratio(weights: np.ndarray, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    top, bottom = weights @ num, weights @ den
    return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), np.nan)


def _matrix(values: dict[tuple[str, str], list[float]], prompts: list[str], candidates: list[str]) -> tuple[np.ndarray, np.ndarray]:
    sums, counts = np.zeros((len(prompts), len(candidates))), np.zeros((len(prompts), len(candidates)))
    row, col = {p: k for k, p in enumerate(prompts)}, {c: k for k, c in enumerate(candidates)}
    for (prompt, candidate), v in values.items():
        if prompt in row and candidate in col:
            sums[row[prompt], col[candidate]] += sum(v)
            counts[row[prompt], col[candidate]] += len(v)
    return sums, counts


def _rank_agreement(weights: np.ndarray, judge: tuple, human: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Spearman and Kendall per bootstrap row between the judge's and the people's candidate means."""
    j = _ratio(weights, judge[0], judge[1])
    h = _ratio(weights, human[0], human[1])
    rho, tau = np.full(len(weights), np.nan), np.full(len(weights), np.nan)
    for k in range(len(weights)):
        ok = ~np.isnan(j[k]) & ~np.isnan(h[k])
        if ok.sum() >= 3 and np.ptp(j[k][ok]) > 0 and np.ptp(h[k][ok]) > 0:
            rho[k] = spearmanr(j[k][ok], h[k][ok]).statistic
            tau[k] = kendalltau(j[k][ok], h[k][ok]).statistic
    return rho, tau


def _ece(weights: np.ndarray, calibration: list[tuple[str, float, float]], prompts: list[str]) -> np.ndarray:
    row = {p: k for k, p in enumerate(prompts)}
    count, conf, hit = (np.zeros((len(prompts), BINS)) for _ in range(3))
    for prompt, p, human in calibration:
        b = min(int(p * BINS), BINS - 1)
        count[row[prompt], b] += 1
        conf[row[prompt], b] += p
        hit[row[prompt], b] += human
    n, c, h = weights @ count, weights @ conf, weights @ hit
    total = n.sum(1)
    return np.where(total > 0, np.abs(c - h).sum(1) / np.where(total > 0, total, 1), np.nan)


def human_ceiling(labels: HumanLabels) -> float | None:
    """Leave-one-out agreement of an annotator with the majority of the others, over the pairs (a
    pairwise label, or two scored answers to one prompt) at least two annotators labelled."""
    agree = total = 0.0
    by_pair: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for r in labels.pairwise:
        a, b = sorted((r.first, r.second))
        by_pair[(r.prompt_id, a, b)][r.annotator] = 0.5 if r.winner == "tie" else float(r.winner == a)
    scored: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for s in labels.absolute:
        scored[(s.prompt_id, s.annotator)][s.candidate] = s.score
    for (prompt, annotator), cands in scored.items():
        names = sorted(cands)
        for x in range(len(names)):
            for y in range(x + 1, len(names)):
                gap = cands[names[x]] - cands[names[y]]
                by_pair[(prompt, names[x], names[y])].setdefault(annotator, 1.0 if gap > 0 else 0.0 if gap < 0 else 0.5)
    for verdicts in by_pair.values():
        if len(verdicts) < 2:
            continue
        for who, mine in verdicts.items():
            others = [v for w, v in verdicts.items() if w != who]
            majority = sum(others) / len(others)
            if majority == 0.5 or mine == 0.5:
                continue
            agree += float((mine == 1.0) == (majority > 0.5))
            total += 1
    return agree / total if total else None


def judge_board(
    records: list[LogRecord],
    labels: HumanLabels,
    *,
    lengths: dict[tuple[str, str], int] | None = None,
    margin: float = 0.02,
    draws: int = 500,
    seed: int = 0,
    level: float = 0.95,
) -> dict:
    """The leaderboard (module docstring) as a JSON-ready dict, judges by agreement, best first."""
    lengths = lengths or {}
    tallies = _tally(records, labels, lengths)
    human_values = _human_candidate_scores(labels)
    prompts = sorted({r.prompt_id for r in records} | {p for p, _ in human_values})
    candidates = sorted({c for _, c in human_values})
    weights = np.vstack(
        [np.ones(len(prompts)), np.random.default_rng(seed).multinomial(len(prompts), np.full(len(prompts), 1 / len(prompts)), draws)]
    )
    human = _matrix(human_values, prompts, candidates)
    lo, hi = 50 * (1 - level), 100 - 50 * (1 - level)

    def stat(values: np.ndarray, digits: int = 4) -> tuple[float | None, float | None, float | None]:
        if np.isnan(values[0]):
            return None, None, None
        rest = values[1:][~np.isnan(values[1:])]
        low, high = np.percentile(rest, [lo, hi]) if rest.size else (np.nan, np.nan)
        return round(float(values[0]), digits), round(float(low), digits), round(float(high), digits)

    rows = []
    for judge in sorted(tallies):
        t = tallies[judge]
        mine = [r for r in records if r.judge == judge]
        entry: dict = {"judge": judge, "judgments": len(mine), "compared": int(sum(t.votes.values()))}
        metrics = {
            "agreement": _ratio(weights, _per_prompt(t.agree, prompts), _per_prompt(t.votes, prompts)),
            "first_shown_wins": _ratio(weights, _per_prompt(t.first_wins, prompts), _per_prompt(t.decisive, prompts)),
            "prefers_longer": _ratio(weights, _per_prompt(t.longer, prompts), _per_prompt(t.length_pairs, prompts)),
            "humans_prefer_longer": _ratio(weights, _per_prompt(t.human_longer, prompts), _per_prompt(t.length_pairs, prompts)),
            "ece": _ece(weights, t.calibration, prompts),
        }
        metrics["spearman"], metrics["kendall"] = _rank_agreement(weights, _matrix(t.scores, prompts, candidates), human)
        for name, values in metrics.items():
            entry[name], entry[f"{name}_low"], entry[f"{name}_high"] = stat(values)
        cost = sum(r.cost_usd for r in mine)
        # a price the log states, $0 included (a local model); None only where the log says nothing
        priced = any("cost_usd" in r.model_fields_set for r in mine)
        entry["usd_per_1000"] = round(1000 * cost / len(mine), 6) if mine and priced else None
        tokens = sum(r.prompt_tokens + r.completion_tokens for r in mine)
        entry["tokens_per_1000"] = round(1000 * tokens / len(mine)) if mine and tokens > 0 else None
        rows.append(entry)
    rows.sort(key=lambda r: -1.0 if r["agreement"] is None else -r["agreement"])
    return {
        "judges": rows,
        "annotators": labels.annotators,
        "human_ceiling": human_ceiling(labels),
        "margin": margin,
        "level": level,
        "recommended": _recommend(rows, margin),
    }


def _recommend(rows: list[dict], margin: float) -> dict | None:
    """The cheapest judge whose agreement is within ``margin`` of the best (by price per 1,000
    judgments; without prices in the log, the best)."""
    scored = [r for r in rows if r["agreement"] is not None]
    if not scored:
        return None
    best = max(r["agreement"] for r in scored)
    near = [r for r in scored if r["agreement"] >= best - margin]
    priced = [r for r in near if r["usd_per_1000"] is not None]
    if priced:
        pick = min(priced, key=lambda r: (r["usd_per_1000"], -r["agreement"]))
        return {"judge": pick["judge"], "reason": f"cheapest within {margin:g} of the best agreement ({best:.3f})"}
    pick = max(near, key=lambda r: r["agreement"])
    return {"judge": pick["judge"], "reason": "the best agreement (the log has no prices to compare)"}


def format_judge_board(board: dict) -> str:
    """The leaderboard as text."""

    def cell(row: dict, key: str, spec: str = ".3f") -> str:
        value = row.get(key)
        if value is None:
            return "—"
        low, high = row.get(f"{key}_low"), row.get(f"{key}_high")
        return f"{value:{spec}} ({low:{spec}}–{high:{spec}})" if low is not None and high is not None else f"{value:{spec}}"

    level = f"{board['level']:.0%}"
    header = f"{'judge':<30} {'judgments':>9} {'pairs':>6}  {'agreement':<22} {'Spearman':<22} {'Kendall':<22} {'first wins':<22} {'ECE':<22} {'USD/1k':>8}"
    lines = [f"judges against people ({', '.join(board['annotators'])}); {level} bootstrap intervals over prompts", header]
    for r in board["judges"]:
        usd = "—" if r["usd_per_1000"] is None else f"{r['usd_per_1000']:.4f}"
        lines.append(
            f"{r['judge']:<30.30} {r['judgments']:>9} {r['compared']:>6}  {cell(r, 'agreement'):<22} {cell(r, 'spearman'):<22} "
            f"{cell(r, 'kendall'):<22} {cell(r, 'first_shown_wins'):<22} {cell(r, 'ece'):<22} {usd:>8}"
        )
    if any(r.get("prefers_longer") is not None for r in board["judges"]):
        lines.append("prefers the longer answer (judge vs people on the same pairs):")
        for r in board["judges"]:
            if r.get("prefers_longer") is not None:
                lines.append(f"  {r['judge']}: {cell(r, 'prefers_longer')} vs {r['humans_prefer_longer']:.3f}")
    if board.get("unmatched_labels"):
        lines.append(f"{board['unmatched_labels']} label(s) are of answers no judge here judged and were not used")
    ceiling = board["human_ceiling"]
    lines.append(
        "human ceiling (an annotator vs the majority of the others): "
        + ("not computable (no item labelled by two annotators)" if ceiling is None else f"{ceiling:.3f}")
    )
    if board["recommended"]:
        lines.append(f"recommended: {board['recommended']['judge']} — {board['recommended']['reason']}")
    lines.append(
        "agreement: share of verdicts siding with people where they prefer one answer (ties ½); Spearman/Kendall: the "
        "candidates' ranking the judge alone implies vs the people's; first wins: position bias (0.5 = none); ECE: "
        "calibration of P(first better)"
    )
    return "\n".join(lines)
