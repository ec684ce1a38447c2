"""The one exception type users see: the CLI prints it as one line and exits with code 2."""

from __future__ import annotations

__all__ = ["OrchestratorError", "OrchestratorWarning", "RunFailed"]


class OrchestratorError(Exception):
    """A problem with the user's input or environment (bad file, bad option), not a bug."""


class RunFailed(OrchestratorError):
    """A run that could not do what it was asked (every judge call failed, no judgment fitted in
    the budget): the run file is kept, marked ``failed``, and the command exits non-zero.
    ``reason``: why, without the advice about the run file (a replay's run file is temporary)."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason or message


class OrchestratorWarning(UserWarning):
    """Something the user should know that does not stop the command (the CLI prints it as one
    ``warning:`` line on stderr)."""
