"""Product-of-experts posterior, Laplace approximation, active selection and ranking uncertainty.

Pure functions and frozen dataclasses over torch tensors; no I/O. See the PoE paper
(``shared/papers/poe-uncertainty-comparative-judging.txt``) for the equations cited here.

The names below load their submodule on first use (PEP 562): a module that needs one numpy-only
helper (:mod:`.ranks`: reading a leaderboard) does not import torch with the rest. Where each name
comes from is read from the ``TYPE_CHECKING`` imports at the bottom, the list type checkers see.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

_where: dict[str, str] = {}


def _sources() -> dict[str, str]:
    """Name → submodule, from this file's ``if TYPE_CHECKING:`` imports."""
    if not _where:
        tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                for statement in node.body:
                    if isinstance(statement, ast.ImportFrom) and statement.module:
                        _where.update({alias.name: statement.module for alias in statement.names})
    return _where


def __getattr__(name: str) -> Any:
    module = _sources().get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ORDER_IJ",
    "ORDER_JI",
    "candidate_pairs",
    "marginal_variances",
    "centred_variances",
    "pair_variances",
    "pair_metric",
    "posterior_entropy",
    "fit_with_reliability",
    "judge_precision",
    "IndifferenceDecision",
    "IndifferenceZone",
    "NeighbourStatus",
    "indifference_stop",
    "neighbour_status",
    "DEBIAS_MODES",
    "EXPERT_NAMES",
    "MIN_ABSOLUTE_VARIANCE",
    "STRATEGIES",
    "Expert",
    "NegLogPosterior",
    "Observations",
    "PoEConfig",
    "Posterior",
    "RankIntervals",
    "StopDecision",
    "Strategy",
    "absolute_moments",
    "adjacent_reorder_probabilities",
    "entropy",
    "eps_metric",
    "expected_calibration_error",
    "expected_curvature",
    "expert_derivatives",
    "fit_laplace",
    "fit_temperature",
    "get_expert",
    "linear_gaussian",
    "min_uncertainty_metric",
    "newton_map",
    "pair_variance",
    "parse_strategy",
    "permutation_debias",
    "phi_gaussian",
    "rank_intervals",
    "rank_intervals_from_draws",
    "ranking_order",
    "reorder_probability",
    "select_across",
    "select_pairs",
    "selection_scores",
    "sigma_beta",
    "soft_bradley_terry",
    "stopping_rule",
    "temperature_scale",
    "threads_for",
    "variance_metric",
]

if TYPE_CHECKING:
    from .bias import DEBIAS_MODES, permutation_debias
    from .candidates import ORDER_IJ, ORDER_JI, candidate_pairs
    from .experts import (
        EXPERT_NAMES,
        MIN_ABSOLUTE_VARIANCE,
        Expert,
        absolute_moments,
        expected_curvature,
        expert_derivatives,
        get_expert,
        linear_gaussian,
        phi_gaussian,
        sigma_beta,
        soft_bradley_terry,
    )
    from .laplace import Posterior, centred_variances, fit_laplace, marginal_variances, newton_map, pair_variances, threads_for
    from .metrics import (
        STRATEGIES,
        Strategy,
        eps_metric,
        min_uncertainty_metric,
        pair_metric,
        pair_variance,
        parse_strategy,
        reorder_probability,
        selection_scores,
        variance_metric,
    )
    from .objective import NegLogPosterior, Observations, PoEConfig
    from .reliability import fit_with_reliability, judge_precision
    from .selection import select_across, select_pairs
    from .stopping import IndifferenceDecision, IndifferenceZone, NeighbourStatus, indifference_stop, neighbour_status
    from .uncertainty import (
        RankIntervals,
        StopDecision,
        adjacent_reorder_probabilities,
        entropy,
        expected_calibration_error,
        fit_temperature,
        posterior_entropy,
        rank_intervals,
        rank_intervals_from_draws,
        ranking_order,
        stopping_rule,
        temperature_scale,
    )
