"""Campaign planners from outside the package: ``[selection] planner = "package.module:Class"`` names a
class that implements the planner protocol (most easily a subclass of
:class:`~orchestrator.run.planners.base.PlannerBase`); it plans every round of the run, its resume
included (the config is stored with the run, the class imported again)."""

from __future__ import annotations

import importlib
import inspect

from ...errors import OrchestratorError

__all__ = ["load_planner"]

REQUIRED = ("roles", "next_round", "add", "stop_before", "summary", "check", "unit_calls", "possible_requests", "shown_texts")
"""What the engine calls on a planner (the rest has defaults in ``PlannerBase``)."""


def load_planner(spec: str) -> type:
    """The planner class ``selection.planner`` names.

    Raises:
        OrchestratorError: one line: a module that does not import, no such class, or a class that
            lacks what the engine calls (:data:`REQUIRED`, ``kind``, ``role``, ``done``)."""
    module_name, _, class_name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an import error of any kind is the user's module's: one line
        raise OrchestratorError(f"selection.planner: module {module_name!r} does not import ({type(exc).__name__}: {exc})") from None
    cls = getattr(module, class_name, None)
    if not inspect.isclass(cls):
        raise OrchestratorError(f"selection.planner: {module_name} has no class {class_name!r}")
    missing = [name for name in (*REQUIRED, "kind", "role", "done") if not hasattr(cls, name)]
    if missing:
        raise OrchestratorError(
            f"selection.planner: {spec} lacks {', '.join(missing)} (subclass orchestrator.run.planners.PlannerBase; docs/extending.md)"
        )
    return cls
