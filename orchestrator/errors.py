"""The one exception type users see: the CLI prints it as one line and exits with code 2."""

from __future__ import annotations

__all__ = ["OrchestratorError"]


class OrchestratorError(Exception):
    """A problem with the user's input or environment (bad file, bad option), not a bug."""
