"""Humans in the loop: the items a person should label first (``choice``), a person's
labelling session on a run file (``session``) and its local web page (``server``, ``page.html``)."""

from .choice import LabelItem
from .server import LabelServer
from .session import LabelSession

__all__ = ["LabelItem", "LabelServer", "LabelSession"]
