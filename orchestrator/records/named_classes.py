"""Classes a judge profile or a run config names as ``package.module:Class`` (a judge provider, a
campaign planner): imported, found, and refused in one line when they are not there.

A config and its judge profiles are code, like a Makefile: running a config imports what it names,
and the modules beside the config file can be named (:func:`modules_beside`). A run file or a log is
data: commands that only read one never call into this module (docs/reliability.md, "What is code
and what is data")."""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

from ..errors import OrchestratorError

__all__ = ["CLASS_SPEC", "module_origin", "modules_beside", "named_class"]

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


def modules_beside(folder: Path | None) -> None:
    """Let the modules in ``folder`` — the folder of the config being run — be imported by name, as
    ``python`` run from that folder would. The folder goes last on the module search path, so a
    module of the same name installed in the environment is never shadowed."""
    if folder is not None and str(folder) not in sys.path:
        sys.path.append(str(folder))


def module_origin(spec: str) -> str:
    """Where the module a ``package.module:Class`` names was imported from (its file), for the dry
    run to say what a config runs; ``"(not imported)"`` before it was."""
    module = sys.modules.get(spec.partition(":")[0])
    origin = getattr(module, "__file__", None) if module is not None else None
    return str(origin) if origin else "(not imported)"
