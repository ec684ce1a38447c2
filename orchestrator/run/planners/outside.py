"""Campaign planners from outside the package: ``[selection] planner = "package.module:Class"`` names a
class that implements the planner protocol (most easily a subclass of
:class:`~orchestrator.run.planners.base.PlannerBase`); it plans every round of the run, its resume
included (the config is stored with the run, the class imported again)."""

from __future__ import annotations

from ...errors import OrchestratorError
from ...records.named_classes import named_class

__all__ = ["load_planner"]

REQUIRED = ("roles", "next_round", "add", "stop_before", "summary", "check", "unit_calls", "possible_requests", "shown_texts")
"""What the engine calls on a planner (the rest has defaults in ``PlannerBase``)."""


def load_planner(spec: str) -> type:
    """The planner class ``selection.planner`` names.

    Raises:
        OrchestratorError: one line: a module that does not import, no such class, or a class that
            lacks what the engine calls (:data:`REQUIRED`, ``kind``, ``role``, ``done``)."""
    cls = named_class(spec, "selection.planner")
    missing = [name for name in (*REQUIRED, "kind", "role", "done") if not hasattr(cls, name)]
    if missing:
        raise OrchestratorError(
            f"selection.planner: {spec} lacks {', '.join(missing)} (subclass orchestrator.run.planners.PlannerBase; docs/extending.md)"
        )
    return cls
