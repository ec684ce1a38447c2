"""The settings objects the fits and the replay take: what ``fit raee``, ``fit simplex`` and
``replay`` build from their options, each choice checked where it is made (one line naming it)."""

from __future__ import annotations

from ..offline.replay.settings import ReplaySettings
from ..raee.settings import RaeeSettings
from ..simplex.settings import SimplexSettings

__all__ = ["RaeeSettings", "ReplaySettings", "SimplexSettings"]
