"""The public Python API: one function per CLI command, with the CLI's argument names
(the run lifecycle in :mod:`.lifecycle`, offline analyses in :mod:`.analysis`, tools in :mod:`.tools`)
and the records they return. The text and plots the commands print and write are in
:mod:`.presentation`, the settings objects of the fits beside them (``orchestrator.raee.settings``,
``orchestrator.simplex.settings``, ``orchestrator.offline.replay.settings``): importable from their
modules, not from the front (docs/api.md lists what the front exports).

``orchestrator run CONFIG --runs-dir D`` is ``start(CONFIG, runs_dir=D)``, ``orchestrator fit raee
--log FILE --judge J`` is ``fit_raee(log=FILE, judge=[J])``, and so on; the CLI (``orchestrator/cli/``)
only parses, calls one of these and prints. Every function raises :class:`OrchestratorError` (one line
for a person) on bad input, and nothing else on user error.
"""

from __future__ import annotations

from .analysis import calibrate, fit_raee, fit_simplex, judges, replay
from .compare import compare, compare_plan
from .labels import export_labels, import_labels, label_server
from .lifecycle import dry_run, export, load_config, ranking, report, resume, start, status
from .tools import cache_import, cache_prune, cache_stats, embedded_judge, import_data, init, record, simulate

__all__ = [
    # a run's life
    "load_config",
    "dry_run",
    "start",
    "resume",
    "extend",
    "status",
    "ranking",
    "report",
    "export",
    # is mine better?
    "compare",
    "compare_plan",
    # analyses of a run file or a judgment log
    "replay",
    "fit_raee",
    "fit_simplex",
    "calibrate",
    "judges",
    # people's labels
    "label_server",
    "export_labels",
    "import_labels",
    # the judgment cache
    "cache_stats",
    "cache_prune",
    "cache_import",
    # data and judges
    "init",
    "import_data",
    "simulate",
    "record",
    "embedded_judge",
    # the records the verbs return
    "Ranking",
    "Status",
    "Comparison",
]


LAZY = {
    "extend": "orchestrator.run.extension",  # `orchestrator extend`: grow a run (the engine's imports, when asked for)
    "Ranking": "orchestrator.records.reports",  # the typed record of `rank --json` (what the CLI's tables read)
    "Status": "orchestrator.records.reports",  # the typed record of `status --json`
    "Comparison": "orchestrator.records.reports",  # the typed record of `compare --json`
}
"""Names imported from their module when first asked for (the CLI's start stays light)."""


def __getattr__(name: str):
    """The typed output records and ``extend`` (:data:`LAZY`)."""
    if name in LAZY:
        import importlib

        return getattr(importlib.import_module(LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
