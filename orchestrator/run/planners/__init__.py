"""Campaign planners: what to ask next, one module per campaign kind (see :mod:`.base`).

The PoE planner (and with it torch) is imported when it is first used, so that reading a
reference or absolute campaign (``rank``, ``status``) does not pay for the PoE stack."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...records.config import RunConfig
from .absolute import AbsolutePlanner
from .base import Plan, Planner, PlannerBase
from .compare import ComparePlanner
from .compare_anchor import AnchoredComparePlanner
from .reference import ReferencePlanner, reference_items

if TYPE_CHECKING:
    from .poe import PoEPlanner

__all__ = [
    "PLANNERS",
    "Plan",
    "Planner",
    "PlannerBase",
    "PoEPlanner",
    "ReferencePlanner",
    "AbsolutePlanner",
    "ComparePlanner",
    "AnchoredComparePlanner",
    "planner_for",
    "builtin_planner_for",
    "reference_items",
]

PLANNERS: dict[str, str] = {
    "poe": "PoEPlanner",
    "reference": "ReferencePlanner",
    "absolute": "AbsolutePlanner",
    "compare": "ComparePlanner",
}
"""Campaign kind → the name of its planner class in this package."""


def __getattr__(name: str) -> Any:
    if name == "PoEPlanner":
        from .poe import PoEPlanner

        return PoEPlanner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def planner_for(config: RunConfig) -> Any:
    """The planner class of a config's campaign (:attr:`RunConfig.campaign`): for a campaign kind
    from outside the package, the class its ``selection.planner`` names, imported — only commands
    that run a config call this; those that read a run file use :func:`builtin_planner_for`."""
    if config.selection.planner is not None:  # a campaign kind from outside the package
        from .outside import load_planner

        return load_planner(config.selection.planner)
    return builtin_planner_for(config)


def builtin_planner_for(config: RunConfig) -> Any:
    """The planner class of a config's campaign when it is one of this package's, else None. Never
    imports anything a config names: a run file is data, and reading it runs no code of its own."""
    if config.selection.planner is not None:
        return None
    name = PLANNERS[config.campaign]
    if name == "ComparePlanner" and config.compare is not None and config.compare.anchor is not None:
        return AnchoredComparePlanner  # the same campaign, through an anchor
    return __getattr__(name) if name == "PoEPlanner" else globals()[name]
