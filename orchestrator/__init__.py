"""Active-learning orchestrator for LLM judges.

The public API (one function per CLI command, with the CLI's argument names; see
:mod:`orchestrator.api`)::

    import orchestrator as orc
    path, reason = orc.start("examples/summeval.toml")
    print([row.candidate for row in orc.ranking(path).groups[0].ranking[:3]])

Names are imported on first use, so ``import orchestrator`` stays light.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = [
    "start",
    "dry_run",
    "resume",
    "status",
    "ranking",
    "export",
    "replay",
    "fit_raee",
    "fit_simplex",
    "RaeeSettings",
    "ReplaySettings",
    "SimplexSettings",
    "OrchestratorError",
    "RunFailed",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name in ("OrchestratorError", "RunFailed"):
        from . import errors

        return getattr(errors, name)
    if name in ("RaeeSettings", "ReplaySettings", "SimplexSettings"):
        from .api import settings

        return getattr(settings, name)
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")
