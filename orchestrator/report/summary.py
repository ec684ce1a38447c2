"""The paragraph a run ends with and the report opens with (plain text): what the run found, what
is still uncertain, whether the judge can be trusted and is repeatable, what it spent (plain
words first; a judge without information named as such, and no leader named from it)."""

from __future__ import annotations

from collections import Counter

from ..judging.extract import failure_advice
from .data import ReportData

__all__ = ["summary_text"]


def _count(n: int, one: str, many: str) -> str:
    """``1 is``, ``3 are``: a number with its verb agreeing."""
    return f"{n} {one if n == 1 else many}"


def _reason(error: str | None, error_type: str | None) -> str:
    """A failure's reason in a few words: its message up to the first detail (`` (``, ``: ``)."""
    text = (error or error_type or "no reason recorded").strip()
    cuts = [i for i in (text.find(" ("), text.find(": ")) if i > 0]
    return text[: min(cuts)] if cuts else text[:80]


def failures_said(judgments) -> str:
    """``"; 9 failed: 5 the thinking block never closed, 4 no verdict after the thinking — the
    thinking ran out of tokens: …"``, the commonest reasons first (three at most) and what to change
    for the commonest one, or ``""`` when nothing failed."""
    failed = [r for r in judgments if r.status != "ok"]
    if not failed:
        return ""
    why = [_reason(r.error, r.error_type) for r in failed]
    reasons = Counter(why).most_common()
    said = ", ".join(f"{n} {reason}" for reason, n in reasons[:3]) + (", …" if len(reasons) > 3 else "")
    commonest = failed[why.index(reasons[0][0])]
    advice = failure_advice(commonest.error_type, commonest.judge, commonest.template)
    return f"; {len(failed)} failed: {said}" + (f" — {advice}" if advice else "")


def spent_said(judgments: list) -> str:
    """``It spent N judge calls, T tokens and $U``: what the budget counts — paid completions (k
    sampled verdicts are k), not requests —, with what was answered free and what failed."""
    calls = sum(1 if r.completions is None else r.completions for r in judgments)  # (0: a request that asked no judge)
    requests = len(judgments)
    usd = sum(r.cost_usd for r in judgments)
    tokens = sum(r.prompt_tokens + r.completion_tokens for r in judgments)
    cached = sum(1 for r in judgments if getattr(r, "cached", False))
    return (
        f"It spent {calls} judge calls"
        + (f" over {requests} requests" if requests != calls else "")
        + (f" ({cached} answered from the judgment cache at no cost)" if cached else "")
        + f", {tokens:,} tokens"
        + (f" and ${usd:.4f}" if usd else "")
        + failures_said(judgments)
        + "."
    )


def summary_text(data: ReportData) -> str:
    """One paragraph (plain text): what the run found, what is still uncertain, what it spent."""
    groups = [g for g in data.ranking.get("groups", []) if g.get("ranking")]
    spent = spent_said(data.judgments)
    reason = data.run.get("stop_reason") or ""
    status = f"The run is {data.run.get('status', '?')}" + (f" ({reason})" if reason else "") + "."
    comparison = data.ranking.get("comparison")
    if comparison:  # a [compare] run: its decision, not a leader
        return f"{status} {comparison['sentence']} (α = {comparison['alpha']:g}). {spent}"
    if groups and all(len(g["ranking"]) == 1 for g in groups):  # one candidate: nothing leads anything
        row = groups[0]["ranking"][0]
        rate = (
            f": win rate {row['win_rate']:.1f}% against the anchor ({row['win_rate_low']:.1f}–{row['win_rate_high']:.1f}%)"
            if "win_rate" in row and "win_rate_low" in row
            else ""
        )
        placed = row.get("placement")
        if placed and groups[0].get("board"):  # placed on a board: its place among the board's models
            board = groups[0]["board"]
            return (
                f"{status} One candidate, {row['candidate']}{rate}; placed on the board ({board['models']} models): "
                f"{placed['win_rate']:.1f}% over the board's prompts ({placed['win_rate_low']:.1f}–{placed['win_rate_high']:.1f}%), "
                f"rank {placed['board_rank_low']}–{placed['board_rank_high']} among the board's models. {spent}"
            )
        return f"{status} One candidate, {row['candidate']}{rate}; with nothing to rank it against, no order is claimed. {spent}"
    if not groups:
        return f"{status} No ranking yet: no judgment has been committed. {spent}"
    n_cands = sum(len(g["ranking"]) for g in groups)
    first = groups[0]
    top = first["ranking"][0]
    lead = f"{len(groups)} rankings of {n_cands} responses in all" if len(groups) > 1 else f"{n_cands} candidates ranked"
    where = f"In {first['group']}, " if len(groups) > 1 else ""
    warnings = " ".join(data.ranking.get("warnings", []))
    if not data.ranking.get("leader", True):  # no leader named from a judge that carries no information
        return f"{warnings} {status} " + (data.repeatability + " " if data.repeatability else "") + spent
    text = (
        warnings + " " if warnings else ""
    ) + f"{status} {lead}. {where}{top['candidate']} leads (95% rank interval {top['rank_low']}–{top['rank_high']}). "
    n = data.neighbours
    if n is not None and n["total"]:
        delta = data.config.stopping.tie_delta
        sure = 1 - data.config.stopping.max_error
        close = n.get("ordered_within_delta", 0)
        text += (
            f"Of {n['total']} neighbouring pairs, {_count(n['resolved'], 'is', 'are')} settled (in this order with probability "
            f"≥ {sure:g}, or so close that the order would not matter: stopping.tie_delta = {delta:g})"
            + (f", {close} of them in order though close" if close else "")
            + f"; {_count(n['tied'], 'is', 'are')} too close to call and "
            f"{_count(n['uncertain'], 'is', 'are')} still open (more judgments would tell). "
        )
    else:
        separated = total = 0
        for g in groups:
            rows = g["ranking"]
            for a, b in zip(rows, rows[1:]):
                total += 1
                separated += a["rank_high"] < b["rank_low"]
        if total:
            text += f"{separated} of {total} neighbouring pairs {'is' if separated == 1 else 'are'} separated (their 95% rank intervals do not overlap). "
    if data.repeatability:
        text += data.repeatability + " "
    rhos = [g["spearman_vs_truth"] for g in groups if g.get("spearman_vs_truth") is not None]
    if rhos:
        over = f" (mean over {len(rhos)} rankings)" if len(rhos) > 1 else ""
        text += f"Agreement with the reference scores (Spearman): {sum(rhos) / len(rhos):.2f}{over}. "
    elif data.config.data.truth:
        text += "Agreement with the reference scores (Spearman): not computable (fewer than 3 candidates with scores, or all equal). "
    return text + spent
