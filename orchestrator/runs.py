"""Starting, resuming, growing and reading runs — the names the API and the tests use, kept here
(an alias module) while the code lives by role in :mod:`orchestrator.run` (``preparation``,
``judges``, ``service``, ``extension``) and :mod:`orchestrator.offline.results`."""

from __future__ import annotations

from .offline.export import EXPORT_FORMATS, export
from .offline.results import ranking, status
from .records.config import load_config
from .run.extension import extend
from .run.judges import judges_for, log_judges
from .run.preparation import Prepared, check_budget_fits, check_judges, check_new_run, dry_run, prepare, smoke
from .run.service import resume, start

__all__ = [
    "EXPORT_FORMATS",
    "Prepared",
    "check_budget_fits",
    "check_judges",
    "check_new_run",
    "dry_run",
    "export",
    "extend",
    "judges_for",
    "load_config",
    "log_judges",
    "prepare",
    "ranking",
    "resume",
    "smoke",
    "start",
    "status",
]
