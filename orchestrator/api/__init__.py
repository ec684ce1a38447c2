"""The public Python API: one function per CLI command, with the CLI's argument names
(the run lifecycle in :mod:`.lifecycle`, offline analyses in :mod:`.analysis`, tools in :mod:`.tools`).

``orchestrator run CONFIG --runs-dir D`` is ``start(CONFIG, runs_dir=D)``, ``orchestrator fit raee
--log FILE --judge J`` is ``fit_raee(log=FILE, judge=[J])``, and so on; the CLI (``orchestrator/cli/``)
only parses, calls one of these and prints. Every function raises :class:`OrchestratorError` (one line
for a person) on bad input, and nothing else on user error.
"""

from __future__ import annotations

from .analysis import calibrate, fit_raee, fit_simplex, judges, replay
from .lifecycle import dry_run, export, extend, load_config, ranking, report, resume, start, status, summary
from .tools import cache_import, cache_prune, cache_stats, embedded_judge, import_data, init, record, simulate

__all__ = [
    "start",
    "dry_run",
    "resume",
    "extend",
    "status",
    "ranking",
    "report",
    "summary",
    "load_config",
    "calibrate",
    "export",
    "replay",
    "fit_raee",
    "fit_simplex",
    "judges",
    "cache_stats",
    "cache_prune",
    "cache_import",
    "init",
    "simulate",
    "record",
    "import_data",
    "embedded_judge",
]
