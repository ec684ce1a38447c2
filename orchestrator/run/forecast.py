"""Cost estimates users can plan with: after a pilot, the expected calls, tokens
and USD to reach the stopping rule, with a 90th percentile, next to the worst case.

Calls: the comparisons still needed per ranking (:func:`~orchestrator.poe.forecast.comparisons_to_settle`,
summed draw by draw over the rankings), plus the rounds already in flight when the rule fires, times
the calls per comparison; then capped where the run must stop anyway (the budget, or every request
asked). Tokens and USD: those calls at the mean tokens and USD per paid call measured so far (cache
hits cost nothing and are left out of the mean). Worst case: what the budget allows, or without
budget limits every remaining request at its worst-case reservation (:mod:`.budget`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..poe import Posterior
from ..poe.forecast import comparisons_to_settle
from ..poe.stopping import IndifferenceZone
from ..records.config import RunConfig
from ..store import RunStore

__all__ = ["forecast"]


def forecast(
    store: RunStore, config: RunConfig, posteriors: list[Posterior], *, n_judges: int, possible: int, draws: int = 200
) -> dict[str, Any] | None:
    """The forecast dict (``calls``/``calls_p90``, ``tokens``/``tokens_p90``, ``usd``/``usd_p90``,
    ``worst_calls``/``worst_tokens``/``worst_usd``, ``stops_by``), or None before any paid or
    cached judgment exists (no pilot yet)."""
    spend = store.spend()
    if spend.calls == 0 or any(p.n_comparisons == 0 and p.link is None for p in posteriors):
        return None
    s, sel = config.stopping, config.selection
    cost_aware = sel.kinds == "mixed" or (sel.panel == "cost_aware" and n_judges > 1)
    per_comparison = 1 if cost_aware else n_judges * (2 if config.model.debias == "permutation" else 1)
    if s.rule == "budget":
        remaining = np.full(draws, math.inf)
    else:
        size = sum(len(p.mean) for p in posteriors)
        per_group_draws = max(16, min(draws, 400_000 // max(size, 1)))  # bounded work on large rankings
        remaining = np.zeros(per_group_draws)
        for p in posteriors:
            remaining += comparisons_to_settle(p, IndifferenceZone.of(s), draws=per_group_draws, seed=config.seed)
        in_flight = (config.dispatch.pipeline_depth - 1) * sel.batch
        remaining = np.where(remaining > 0, remaining + in_flight, 0.0)
    paid = max(spend.calls - spend.cached, 0)
    tokens_per_call = spend.tokens / paid if paid else 0.0
    usd_per_call = spend.usd / paid if paid else 0.0
    b = config.budget
    caps = {"every request asked": float(possible)}
    if b.max_calls is not None:
        caps["budget.max_calls"] = float(b.max_calls)
    if b.max_tokens is not None and tokens_per_call > 0:
        caps["budget.max_tokens"] = spend.calls + (b.max_tokens - spend.tokens) / tokens_per_call
    if b.max_usd is not None and usd_per_call > 0:
        caps["budget.max_usd"] = spend.calls + (b.max_usd - spend.usd) / usd_per_call
    cap_name, cap = min(caps.items(), key=lambda kv: kv[1])
    calls = np.minimum(spend.calls + remaining * per_comparison, cap)
    mean, p90 = float(calls.mean()), float(np.quantile(calls, 0.9))
    reserved_tokens, reserved_usd = store.reserved_per_request()
    worst_calls = min(float(possible), float(b.max_calls) if b.max_calls is not None else math.inf)
    worst_tokens = spend.tokens + (worst_calls - spend.calls) * reserved_tokens
    worst_usd = spend.usd + (worst_calls - spend.calls) * reserved_usd
    if b.max_tokens is not None:
        worst_tokens = min(worst_tokens, b.max_tokens)
    if b.max_usd is not None:
        worst_usd = min(worst_usd, b.max_usd)
    return {
        "calls": round(mean),
        "calls_p90": round(p90),
        "tokens": round(spend.tokens + (mean - spend.calls) * tokens_per_call),
        "tokens_p90": round(spend.tokens + (p90 - spend.calls) * tokens_per_call),
        "usd": round(spend.usd + (mean - spend.calls) * usd_per_call, 6),
        "usd_p90": round(spend.usd + (p90 - spend.calls) * usd_per_call, 6),
        "worst_calls": round(worst_calls),
        "worst_tokens": round(worst_tokens),
        "worst_usd": round(worst_usd, 6),
        "stops_by": "the stopping rule" if float(np.median(calls)) < cap else cap_name,
        "after_calls": spend.calls,
    }
