"""Why a run stopped, typed: the words a person reads and a ``kind`` that code reads instead of them.

A :class:`StopReason` is a ``str`` (its message), so everything that prints or stores a reason is
unchanged; code that must act on why a run stopped reads :attr:`StopReason.kind`, never the words.
"""

from __future__ import annotations

from ..records.reports import StopKind

__all__ = ["StopKind", "StopReason"]


class StopReason(str):
    """A stop reason: the message (this string) and its :data:`StopKind`."""

    kind: StopKind
    limit: str | None
    """A budget stop's limit (``max_calls``, ``max_tokens``…; :class:`~orchestrator.run.budget.BudgetStop`), else None."""

    def __new__(cls, message: str, kind: StopKind = "campaign") -> "StopReason":
        made = super().__new__(cls, message)
        made.kind = kind
        made.limit = getattr(message, "limit", None)
        return made

    def extended(self, more: str) -> "StopReason":
        """The same kind of stop, with more words."""
        made = StopReason(str(self) + more, self.kind)
        made.limit = self.limit
        return made


def kind_of(reason: str) -> StopKind:
    """A reason's kind (a plain string, e.g. from an older caller: ``campaign``)."""
    return reason.kind if isinstance(reason, StopReason) else "campaign"
