"""The public Python API: one function per CLI command, with the CLI's argument names
(the run lifecycle in :mod:`.lifecycle`, offline analyses in :mod:`.analysis`, tools in :mod:`.tools`,
the text and plots they print and write in :mod:`.presentation`).

``orchestrator run CONFIG --runs-dir D`` is ``start(CONFIG, runs_dir=D)``, ``orchestrator fit raee
--log FILE --judge J`` is ``fit_raee(log=FILE, judge=[J])``, and so on; the CLI (``orchestrator/cli/``)
only parses, calls one of these and prints. Every function raises :class:`OrchestratorError` (one line
for a person) on bad input, and nothing else on user error.
"""

from __future__ import annotations

from .analysis import calibrate, fit_raee, fit_simplex, judges, replay
from .compare import compare, compare_plan, junit_xml
from .labels import export_labels, import_labels, label_server
from .lifecycle import dry_run, export, load_config, ranking, report, resume, start, status, summary
from .presentation import (
    bias_covariates,
    calibration_plot,
    format_calibration,
    format_judge_board,
    format_raee,
    format_simplex,
    raee_plots,
    raee_se_curve_plot,
    replay_curve_plot,
    replay_ranking,
    simplex_plots,
    truth_scores,
)
from .tools import cache_import, cache_prune, cache_stats, embedded_judge, import_data, init, record, simulate

__all__ = [
    "RaeeSettings",
    "Ranking",
    "Status",
    "ReplaySettings",
    "SimplexSettings",
    "compare",
    "compare_plan",
    "junit_xml",
    "start",
    "dry_run",
    "resume",
    "extend",
    "failure_advice",
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
    "label_server",
    "export_labels",
    "import_labels",
    "cache_stats",
    "cache_prune",
    "cache_import",
    "init",
    "simulate",
    "record",
    "import_data",
    "embedded_judge",
    "format_raee",
    "raee_plots",
    "raee_se_curve_plot",
    "truth_scores",
    "format_simplex",
    "simplex_plots",
    "format_calibration",
    "calibration_plot",
    "format_judge_board",
    "replay_ranking",
    "replay_curve_plot",
    "bias_covariates",
]


LAZY = {
    "extend": "orchestrator.run.extension",  # `orchestrator extend`: grow a run (the engine's imports, when asked for)
    "failure_advice": "orchestrator.judging.extract",  # what to change when a judge's answers fail
    "SimplexSettings": "orchestrator.simplex.settings",
    "RaeeSettings": "orchestrator.raee.settings",
    "ReplaySettings": "orchestrator.offline.replay.settings",
    "Ranking": "orchestrator.records.reports",  # the typed record of `rank --json` (what the CLI's tables read)
    "Status": "orchestrator.records.reports",  # the typed record of `status --json`
}
"""Names imported from their module when first asked for (the CLI's start stays light)."""


def __getattr__(name: str):
    """The settings objects the fits and replay take, the typed output records and ``extend`` (:data:`LAZY`)."""
    if name in LAZY:
        import importlib

        return getattr(importlib.import_module(LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
