"""Classes a judge profile or a run config names as ``package.module:Class`` (a judge provider, a
campaign planner): imported, found, and refused in one line when they are not there."""

from __future__ import annotations

import importlib
import inspect
import re

from ..errors import OrchestratorError

__all__ = ["CLASS_SPEC", "named_class"]

CLASS_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
"""``package.module:Class``."""


def named_class(spec: str, setting: str) -> type:
    """The class ``spec`` names; ``setting`` says where it was named (the start of every error line).

    Raises:
        OrchestratorError: one line: not ``module:Class``, a module that does not import, or no such class."""
    if not CLASS_SPEC.match(spec):
        raise OrchestratorError(f"{setting} {spec!r} is not 'package.module:Class'")
    module_name, _, class_name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an import error of any kind is the user's module's: one line
        raise OrchestratorError(f"{setting}: module {module_name!r} does not import ({type(exc).__name__}: {exc})") from None
    cls = getattr(module, class_name, None)
    if not inspect.isclass(cls):
        raise OrchestratorError(f"{setting}: {module_name} has no class {class_name!r}")
    return cls
