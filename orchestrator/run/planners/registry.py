"""Which planner plans a campaign: one registry and one loader for the package's campaign kinds and
for those from outside it.

Every planner is named as ``package.module:Class``: the package's own in :data:`PLANNERS`, one
from outside by ``[selection] planner`` (most easily a subclass of
:class:`~orchestrator.run.planners.base.PlannerBase`; it plans every round of the run, its resume
included: the config is stored with the run, the class imported again). Both are imported and
checked by :func:`load_planner`. Commands that only read a run file load the package's own planners
and never one a config names (:func:`builtin_planner_for`): a run file is data."""

from __future__ import annotations

from typing import Any

from ...errors import OrchestratorError
from ...records.config import RunConfig
from ...records.named_classes import named_class

__all__ = ["PLANNERS", "REQUIRED", "builtin_planner_for", "load_planner", "planner_for", "planner_kind"]

PLANNERS: dict[str, str] = {
    "poe": "orchestrator.run.planners.poe:PoEPlanner",
    "reference": "orchestrator.run.planners.reference:ReferencePlanner",
    "absolute": "orchestrator.run.planners.absolute:AbsolutePlanner",
    "compare": "orchestrator.run.planners.compare:ComparePlanner",
    "compare through an anchor": "orchestrator.run.planners.compare_anchor:AnchoredComparePlanner",
}
"""The package's planners by what they plan (:func:`planner_kind`); the PoE planner's module, and
with it torch, is imported only when a run needs it."""

REQUIRED = ("roles", "next_round", "add", "stop_before", "summary", "check", "unit_calls", "possible_requests", "shown_texts")
"""What the engine calls on a planner (the rest has defaults in ``PlannerBase``)."""


def planner_kind(config: RunConfig) -> str:
    """What the config's campaign plans, as :data:`PLANNERS` names it: its ``campaign``, and a
    comparison through an anchor (``[compare] anchor``) as one of its own."""
    if config.campaign == "compare" and config.compare is not None and config.compare.anchor is not None:
        return "compare through an anchor"
    return config.campaign


def load_planner(spec: str, setting: str = "selection.planner") -> type:
    """The planner class ``spec`` (``package.module:Class``) names, checked.

    Raises:
        OrchestratorError: one line: a module that does not import, no such class, or a class that
            lacks what the engine calls (:data:`REQUIRED`, ``kind``, ``role``, ``done``)."""
    cls = named_class(spec, setting)
    missing = [name for name in (*REQUIRED, "kind", "role", "done") if not hasattr(cls, name)]
    if missing:
        raise OrchestratorError(
            f"{setting}: {spec} lacks {', '.join(missing)} (subclass orchestrator.run.planners.PlannerBase; docs/extending.md)"
        )
    return cls


def planner_for(config: RunConfig) -> Any:
    """The planner class of a config's campaign: the one ``selection.planner`` names, else the
    package's for its kind. Only commands that run a config call this; those that read a run file
    use :func:`builtin_planner_for`."""
    if config.selection.planner is not None:
        return load_planner(config.selection.planner)
    return builtin_planner_for(config)


def builtin_planner_for(config: RunConfig) -> Any:
    """The planner class of a config's campaign when it is one of this package's, else None. Never
    imports anything a config names."""
    if config.selection.planner is not None:
        return None
    return load_planner(PLANNERS[planner_kind(config)], f"campaign {config.campaign!r}")
