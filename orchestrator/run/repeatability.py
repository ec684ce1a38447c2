"""Is the judge itself repeatable?. Replaying one log gives one result; a live judge may
still answer the same request differently from run to run (llama.cpp's batching of parallel slots
is not bit-deterministic), which no interval of a single run shows. At the end of a live run each
embedded (local, free) judge is asked a few of its committed requests again, exactly as sent and
past the judgment cache, and the two P(first better) are stored (:mod:`orchestrator.store.repeats`)
for the closing paragraph and the report to say how far the judge's own answers moved."""

from __future__ import annotations

import math

from ..judging.answers import check_answer
from ..judging.client import Judge
from ..records.judgments import JudgeRequest
from ..records.templates import Template
from ..store import RunStore
from ..store.repeats import record_repeats
from ..store.run_store import p_first

__all__ = ["REPEATS", "repeat_check", "repeat_summary"]

REPEATS = 3
"""Requests asked again per embedded judge (three calls of a local model: seconds)."""


async def repeat_check(store: RunStore, judges: dict[str, Judge], embedded: set[str], templates: dict[str, Template]) -> int:
    """Ask the last :data:`REPEATS` committed comparisons of each ``embedded`` judge again (the raw
    judge, not the cache) and store both answers; the number asked."""
    by_name = {t.name: t for t in templates.values()}
    chosen: dict[str, list] = {}
    for request, record in store.answered():  # oldest first: the last ones are this process's own answers
        if record.judge in embedded and record.p_first is not None and request.template in by_name:
            chosen.setdefault(record.judge, []).append((request, record))
    chosen = {judge: pairs[-REPEATS:] for judge, pairs in chosen.items()}  # (a resumed or extended run's older ones may come from a log)
    rows = []
    for judge, pairs in chosen.items():
        for request, record in pairs:
            asked = JudgeRequest(
                key=f"{request.key}:repeat-check",
                template=by_name[request.template],
                messages=request.messages,
                prompt_id=request.prompt_id,
                candidates=request.candidates,
            )
            again = check_answer(asked, await judges[judge].judge(asked))
            value = p_first(again) if again.status == "ok" else None
            if value is not None:
                rows.append((request.key, judge, float(record.p_first), float(value)))
    if rows:
        record_repeats(store, rows)
    return len(rows)


def repeat_summary(rows: list[tuple[str, str, float, float]], groups: list[dict] | None = None) -> str | None:
    """One sentence for the closing paragraph and the report (None without checks): how far the
    judge's own answers moved, and — against the neighbours' gaps in the fitted ranking (``groups``
    of a PoE ranking: a score difference ``d`` is a win probability ``σ(d)``) — which neighbours that
    movement alone could swap. Per-judgment noise averages out over many judgments, so this is the
    worst case."""
    if not rows:
        return None
    moved = max(abs(a - b) for _, _, a, b in rows)
    judges = sorted({j for _, j, _, _ in rows})
    who = judges[0] if len(judges) == 1 else f"{len(judges)} judges"
    if moved < 1e-9:
        return f"Asked {len(rows)} of its requests again, {who} answered exactly as before: its answers are repeatable."
    close = []
    for group in groups or []:
        ranking = group.get("ranking") or []
        for a, b in zip(ranking, ranking[1:]):
            if "score" in a and group.get("entropy") is not None:
                gap = 1 / (1 + math.exp(-(a["score"] - b["score"]))) - 0.5
                if gap < moved:
                    close.append(f"{a['candidate']}/{b['candidate']}")
    swap = (
        f"more than the gap in win probability between {len(close)} pair(s) of neighbours ({', '.join(close[:4])}), "
        "which the judge's own variation alone could swap in another run"
        if close
        else "less than any two neighbours' gap in win probability: alone it cannot reorder this ranking"
    )
    # verdicts (0 or 1) move because they are draws; probabilities because llama.cpp reuses the
    # previous request's computation
    verdicts = all(v in (0.0, 1.0) for _, _, a, b in rows for v in (a, b))
    why = (
        "its verdicts are draws: another one may answer otherwise, which the fit counts as such"
        if verdicts
        else "llama.cpp reuses the previous request's computation; a run repeats exactly only in the same order"
    )
    return f"Asked {len(rows)} of its requests again out of turn, {who} moved its P(first better) by up to {moved:.3f} ({why}): {swap}."
