"""Campaign planners: what to ask next, one module per campaign kind (see :mod:`.base`)."""

from __future__ import annotations

from typing import Any

from ...config import RunConfig
from .absolute import AbsolutePlanner
from .base import Plan, Planner
from .poe import PoEPlanner
from .reference import ReferencePlanner, reference_items

__all__ = ["PLANNERS", "Plan", "Planner", "PoEPlanner", "ReferencePlanner", "AbsolutePlanner", "planner_for", "reference_items"]

PLANNERS: dict[str, type] = {"poe": PoEPlanner, "reference": ReferencePlanner, "absolute": AbsolutePlanner}
"""Campaign kind → planner class."""


def planner_for(config: RunConfig) -> Any:
    """The planner class of a config's campaign (:attr:`RunConfig.campaign`)."""
    return PLANNERS[config.campaign]
