"""Which limit stopped a round is told by the budget's own record, not read back from its words."""

from __future__ import annotations

import pytest

from orchestrator.records.config import BudgetConfig
from orchestrator.run.budget import fit_budget
from orchestrator.run.stops import StopReason
from orchestrator.store import PlannedRequest
from orchestrator.store.run_store import Spend


def _unit(tokens: int, usd: float) -> list[PlannedRequest]:
    return [
        PlannedRequest(key="k", judge="j", template="t", kind="pairwise", prompt_id="p", candidates=["a", "b"], messages=[],
                       reserved_tokens=tokens, reserved_usd=usd)
    ]  # fmt: skip


@pytest.mark.parametrize(
    "budget, extra, limit",
    [
        (BudgetConfig(max_calls=1), None, "max_calls"),
        (BudgetConfig(max_tokens=150), None, "max_tokens"),
        (BudgetConfig(max_usd=0.015), None, "max_usd"),
        (BudgetConfig(max_answer_tokens=10), lambda unit: (20, 0.0), "max_answer_tokens"),
        (BudgetConfig(max_answer_usd=0.001), lambda unit: (0, 0.01), "max_answer_usd"),
    ],
)
def test_the_limit_that_stopped_a_round_is_named_and_survives_as_the_stop_reason(budget, extra, limit):
    kept, reason = fit_budget([_unit(100, 0.01), _unit(100, 0.01)], Spend(), budget, extra)
    assert len(kept) == (0 if limit.startswith("max_answer") else 1)
    assert reason.limit == limit and reason.startswith(f"budget: {limit}")
    stop = StopReason(reason, "budget")
    assert stop.limit == limit and stop.extended(" (more)").limit == limit
    assert StopReason("every pair judged").limit is None
