"""Growing a run (``orchestrator extend``): new candidates and prompts join its snapshot and the run
goes on, paying only for comparisons that place them, within a budget that can pay for them."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..errors import OrchestratorError
from ..judging.client import Judge
from ..records.config import BudgetConfig, RunConfig
from ..records.dataset import Dataset
from ..secrets import redact_json
from ..store import Spend, open_run
from ..store.snapshot import extend_snapshot, merge_snapshot
from .events import RunEvent
from .service import resume

__all__ = ["extend"]


def extend(
    run: str | Path,
    *,
    responses: str | Path,
    prompts: str | Path | None = None,
    add_calls: int | None = None,
    add_usd: float | None = None,
    add_tokens: int | None = None,
    progress: Callable[[RunEvent], None] | None = None,
    judges: dict[str, Judge] | None = None,
    cache: str | Path | bool | None = None,
) -> tuple[list[str], str | None]:
    """Grow a run: add the candidates (and prompts) of ``responses`` (``prompts``) to its snapshot
    and go on, spending only on comparisons that involve the new candidates
    (``selection.only_with``) — they are placed on the scale the run has already built; what was
    asked is never asked again. ``add_calls``, ``add_usd`` and ``add_tokens`` raise the budget's
    limits by that much. Returns ``(new candidates, stop reason)``.

    Raises:
        OrchestratorError: unreadable files, responses to prompts the run and ``prompts`` lack, a
            changed text for a response or prompt already in the run, nothing new, or a budget
            limit already spent that is not raised. Nothing is written then. Also when the run
            went on but made no judgment at all (the reason and the option that would help): the
            newcomers are then in the run, unranked, and a later ``extend``/``resume`` goes on.
    """
    from ..records.dataset import PromptRow, ResponseText, load_prompts
    from ..records.log import load_responses

    with open_run(run) as store:
        config = RunConfig.from_stored(store.config)
        _refuse_unextendable(run, config)
        current = store.dataset()
        new_prompts: dict[str, PromptRow] = load_prompts(prompts) if prompts is not None else {}
        by_prompt: dict[str, dict[str, ResponseText]] = {}
        for line, row in load_responses(responses):
            if row.prompt_id not in current.prompts and row.prompt_id not in new_prompts:
                hint = "" if prompts is not None else " (give the new prompts with --prompts)"
                raise OrchestratorError(f"{responses}:{line}: prompt {row.prompt_id!r} is not in the run{hint}")
            if not row.text.strip():
                raise OrchestratorError(f"{responses}:{line}: the response of {row.candidate!r} is empty")
            if row.candidate in current.models:
                raise OrchestratorError(
                    f"{responses}:{line}: {row.candidate!r} is a candidate model of the run: its answers are generated, not added"
                )
            by_prompt.setdefault(row.prompt_id, {})[row.candidate] = ResponseText(
                prompt_id=row.prompt_id, candidate=row.candidate, text=row.text, human=dict(row.human)
            )
        known = {c for by in current.responses.values() for c in by}
        new_candidates = sorted({c for by in by_prompt.values() for c in by} - known)
        added_responses = sum(1 for p, by in by_prompt.items() for c in by if c not in current.responses.get(p, {}))
        if not added_responses:
            raise OrchestratorError(f"{responses}: nothing new: every response is in the run already")
        selection = config.selection
        if new_candidates:
            selection = selection.model_copy(update={"only_with": sorted(set(selection.only_with) | set(new_candidates))})
        merge_snapshot(current, Dataset(new_prompts, by_prompt))  # the data is refused before the budget is looked at
        budget = _raised_budget(
            config.budget,
            store.planning_spend(store.last_round() + 1 - config.dispatch.pipeline_depth),  # as the engine will count it
            add_calls=add_calls,
            add_usd=add_usd,
            add_tokens=add_tokens,
            per_request=store.reserved_per_request(),
        )
        before = store.spend().calls
        config = config.model_copy(update={"selection": selection, "budget": budget})
        extend_snapshot(store, Dataset(new_prompts, by_prompt), redact_json(config.to_json()))
        said = f"extended with {added_responses} responses ({', '.join(new_candidates) or 'new prompts'}); resume to continue"
        store.set_status("interrupted", said, "extended")
    reason = resume(run, progress=progress, judges=judges, cache=cache)
    with open_run(run, write=False) as store:
        made = store.spend().calls - before
    if made == 0:
        hint = next((f"; raise it with {option}" for limit, option in _BUDGET_OPTIONS.items() if limit in (reason or "")), "")
        raise OrchestratorError(
            f"{run}: extended with {', '.join(new_candidates) or 'new prompts'}, but no judgment was made: {reason}{hint}"
        )
    return new_candidates, reason


_BUDGET_OPTIONS = {"max_calls": "--add-calls N", "max_usd": "--add-usd USD", "max_tokens": "--add-tokens N"}


def _raised_budget(
    budget: BudgetConfig,
    spend: Spend,
    *,
    add_calls: int | None,
    add_usd: float | None,
    add_tokens: int | None,
    per_request: tuple[float, float] = (0.0, 0.0),
) -> BudgetConfig:
    """The budget with its limits raised (from what is spent when a limit was not set), refused
    when what a limit leaves cannot pay for one request (``per_request``: the run's mean worst-case
    tokens and USD per request, what the engine reserves): an extension could ask nothing at all."""
    raised = {
        "max_calls": None if add_calls is None else (budget.max_calls or spend.calls) + add_calls,
        "max_usd": None if add_usd is None else (budget.max_usd or spend.usd) + add_usd,
        "max_tokens": None if add_tokens is None else (budget.max_tokens or spend.tokens) + add_tokens,
    }
    budget = budget.model_copy(update={k: v for k, v in raised.items() if v is not None})
    used = {"max_calls": spend.calls, "max_usd": spend.usd, "max_tokens": spend.tokens}
    need = {"max_calls": 1, "max_usd": per_request[1], "max_tokens": per_request[0]}
    for limit, option in _BUDGET_OPTIONS.items():
        value = getattr(budget, limit)
        if value is not None and value - used[limit] < max(need[limit], 1e-12):
            left = value - used[limit]
            shown = (
                f"${max(left, 0):.4f} left of ${value:g}; a request may need ${need[limit]:.4f}"
                if limit == "max_usd"
                else f"{max(left, 0):g} left of {value:g}" + (f"; a request may need {need[limit]:.0f}" if limit == "max_tokens" else "")
            )
            raise OrchestratorError(f"budget.{limit} is spent ({shown}): the newcomers could not be asked anything; give {option}")
    return budget


def _refuse_unextendable(run: str | Path, config: RunConfig) -> None:
    """A comparison's run is not extended: one line saying what to do."""
    if config.compare is not None:
        raise OrchestratorError(
            f"{run}: a comparison's run is not extended (it compares its two systems, and its decision is kept); "
            "to compare on more prompts or with a larger budget, run `orchestrator compare` on a new run name"
        )
