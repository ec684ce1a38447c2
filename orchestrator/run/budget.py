"""Budgets by reservation: what a request may cost at most, and which planned units fit.

Before a round is written each request reserves its worst case (one call; every prompt byte as a
token plus the template's ``max_tokens``; at the judge's price). Only units whose reservations fit
in what is left are planned, so calls, tokens and USD never exceed the limits.
"""

from __future__ import annotations

import math
from typing import Callable

from ..errors import OrchestratorError
from ..judging.client import JudgeProfile
from ..records.config import BudgetConfig
from ..records.templates import MESSAGE_OVERHEAD_TOKENS, Template
from ..store import PlannedRequest, Spend

__all__ = ["MESSAGE_OVERHEAD_TOKENS", "BudgetStop", "fit_budget", "judge_price", "judge_prices", "worst_case"]


def judge_price(profile: JudgeProfile, local: bool) -> tuple[float, float] | None:
    """USD per (prompt, completion) token, or None when unknown."""
    if profile.price_input_per_mtok is not None or profile.price_output_per_mtok is not None:
        return (profile.price_input_per_mtok or 0.0) / 1e6, (profile.price_output_per_mtok or 0.0) / 1e6
    if local:
        return 0.0, 0.0
    import litellm

    info = litellm.model_cost.get(profile.model) or litellm.model_cost.get(profile.model.split("/", 1)[-1])
    if not info or info.get("input_cost_per_token") is None:
        return None
    return float(info["input_cost_per_token"]), float(info.get("output_cost_per_token") or 0.0)


def judge_prices(profiles: dict[str, JudgeProfile], local: set[str], *, max_usd: float | None) -> dict[str, tuple[float, float]]:
    """USD per (prompt, completion) token of every judge; unknown prices are 0 unless a USD budget
    needs them.

    Raises:
        OrchestratorError: ``max_usd`` is set and a judge has no known price.
    """
    prices = {}
    for name, profile in profiles.items():
        price = judge_price(profile, name in local)
        if price is None:
            if max_usd is not None:
                raise OrchestratorError(
                    f"judge {name!r}: litellm has no price for model {profile.model!r}; set price_input_per_mtok "
                    f"and price_output_per_mtok in its profile to use budget.max_usd"
                )
            price = (0.0, 0.0)
        prices[name] = price
    return prices


def worst_case(
    messages: list[dict], template: Template, profile: JudgeProfile, price: tuple[float, float], completions: int | None = None
) -> tuple[int, float]:
    """Upper bound on the tokens and USD of one request.

    A byte-level tokenizer never produces more tokens than bytes, so every content byte counts as
    a prompt token, plus a chat-template allowance per message; completions are capped by
    ``max_tokens``. Judges without logprobs sample ``samples`` times; a follow-up call that
    resolves a two-token option (``10``) is counted too.
    """
    prompt = sum(len(m["content"].encode()) + MESSAGE_OVERHEAD_TOKENS for m in messages)
    completion = profile.answer_tokens(template.max_new_tokens)
    calls = (completions or profile.samples) if not profile.logprobs else 1
    follow_ups = 0
    if profile.prefill and profile.logprobs and template.read == "first_token":
        options = template.options
        follow_ups = sum(any(o != p and o.startswith(p) for p in options) for o in options)
    tokens = calls * (prompt + completion) + follow_ups * (prompt + 8 + 1)
    usd = calls * (prompt * price[0] + completion * price[1]) + follow_ups * ((prompt + 8) * price[0] + price[1])
    return tokens, usd


BYTES_PER_TOKEN = 4.0
"""What a typical BPE tokenizer averages on English text (the expected figure, not the bound)."""


def typical_cost(messages: list[dict], template: Template, profile: JudgeProfile, price: tuple[float, float]) -> tuple[float, float]:
    """Expected tokens and USD of one request, for planning before any call: prompt bytes / 4
    plus the per-message allowance; a completion of one token where the answer is read from the
    first token with logprobs, half of ``max_tokens`` otherwise. After a pilot the measured
    figures replace this (:mod:`.forecast`)."""
    prompt = sum(len(m["content"].encode()) / BYTES_PER_TOKEN + MESSAGE_OVERHEAD_TOKENS for m in messages)
    first_token = profile.logprobs and template.read == "first_token"
    completion = 1.0 if first_token else profile.answer_tokens(template.max_new_tokens) / 2.0
    calls = profile.samples if not profile.logprobs else 1
    return calls * (prompt + completion), calls * (prompt * price[0] + completion * price[1])


class BudgetStop(str):
    """Why the budget stopped a round: the message (this string) and the ``limit`` that did it
    (``max_calls``, ``max_tokens``, ``max_usd``, ``max_answer_tokens``, ``max_answer_usd``)."""

    limit: str

    def __new__(cls, message: str, limit: str) -> "BudgetStop":
        made = super().__new__(cls, message)
        made.limit = limit
        return made


def fit_budget(
    units: list[list[PlannedRequest]],
    spend: Spend,
    budget: BudgetConfig,
    extra: Callable[[list[PlannedRequest]], tuple[int, float]] | None = None,
    answers_spent: tuple[int, float] = (0, 0.0),
) -> tuple[list[list[PlannedRequest]], BudgetStop | str]:
    """Keep units (a comparison's requests) in priority order while their reservations fit in what
    ``budget`` leaves after ``spend``; the reason when one did not fit. ``extra(unit)``: tokens and
    USD a unit reserves besides its requests (the candidate models' answers it needs first), which
    also fit in ``max_answer_tokens``/``max_answer_usd`` after ``answers_spent`` (the answers' part
    of ``spend``); the reason a :class:`BudgetStop`."""
    calls = math.inf if budget.max_calls is None else budget.max_calls - spend.calls
    tokens = math.inf if budget.max_tokens is None else budget.max_tokens - spend.tokens
    usd = math.inf if budget.max_usd is None else budget.max_usd - spend.usd
    answer_tokens = math.inf if budget.max_answer_tokens is None else budget.max_answer_tokens - answers_spent[0]
    answer_usd = math.inf if budget.max_answer_usd is None else budget.max_answer_usd - answers_spent[1]
    kept: list[list[PlannedRequest]] = []
    for unit in units:
        need_calls = sum(r.reserved_calls for r in unit)
        need_tokens = sum(r.reserved_tokens for r in unit)
        need_usd = sum(r.reserved_usd for r in unit)
        more_tokens, more_usd = extra(unit) if extra is not None else (0, 0.0)
        need_tokens, need_usd = need_tokens + more_tokens, need_usd + more_usd
        if more_tokens > answer_tokens or more_usd > answer_usd + 1e-12:
            what = (
                f"max_answer_tokens ({answers_spent[0]} of {budget.max_answer_tokens} spent or reserved by generated answers; "
                f"the next needs {more_tokens})"
                if more_tokens > answer_tokens
                else f"max_answer_usd (${answers_spent[1]:.4f} of ${budget.max_answer_usd} spent or reserved by generated answers)"
            )
            return kept, BudgetStop(f"budget: {what}", "max_answer_tokens" if more_tokens > answer_tokens else "max_answer_usd")
        if need_calls > calls or need_tokens > tokens or need_usd > usd + 1e-12:
            if need_calls > calls:
                limit, what = "max_calls", f"max_calls ({spend.calls} of {budget.max_calls} used)"
            elif need_tokens > tokens:
                limit, what = (
                    "max_tokens",
                    f"max_tokens ({spend.tokens} of {budget.max_tokens} used; the next request may need {need_tokens})",
                )
            else:
                limit, what = "max_usd", f"max_usd (${spend.usd:.4f} of ${budget.max_usd} used; the next request may need ${need_usd:.4f})"
            return kept, BudgetStop(f"budget: {what}", limit)
        calls, tokens, usd = calls - need_calls, tokens - need_tokens, usd - need_usd
        answer_tokens, answer_usd = answer_tokens - more_tokens, answer_usd - more_usd
        kept.append(unit)
    return kept, ""
