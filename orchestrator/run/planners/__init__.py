"""Campaign planners: what to ask next, one module per campaign kind (see :mod:`.base`).

The PoE planner (and with it torch) is imported when it is first used, so that reading a
reference or absolute campaign (``rank``, ``status``) does not pay for the PoE stack."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .absolute import AbsolutePlanner
from .base import Plan, Planner, PlannerBase
from .compare import ComparePlanner
from .compare_anchor import AnchoredComparePlanner
from .reference import ReferencePlanner, reference_items
from .registry import PLANNERS, builtin_planner_for, load_planner, planner_for

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
    "load_planner",
    "reference_items",
]


def __getattr__(name: str) -> Any:
    if name == "PoEPlanner":
        from .poe import PoEPlanner

        return PoEPlanner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
