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

    def __new__(cls, message: str, kind: StopKind = "campaign") -> "StopReason":
        made = super().__new__(cls, message)
        made.kind = kind
        return made

    def extended(self, more: str) -> "StopReason":
        """The same kind of stop, with more words."""
        return StopReason(str(self) + more, self.kind)


def kind_of(reason: str) -> StopKind:
    """A reason's kind (a plain string, e.g. from an older caller: ``campaign``)."""
    return reason.kind if isinstance(reason, StopReason) else "campaign"
