"""The Bayesian simplex model (simplex paper, ``shared/papers/simplex-llm-judges.txt``): judges'
confusion matrices with a monotone weight-propagation prior, candidates' true-score prevalences,
random effects for constancy violations, NUTS posterior, rank credible intervals, sensitivity
analysis, and the paper's baselines.

Pure functions on arrays (:mod:`.prior`, :mod:`.data`, :mod:`.baselines`, :mod:`.simulate`), a
numpyro model (:mod:`.model`) and its inference (:mod:`.inference`); JAX is imported only when a
model is fitted. :mod:`.sensitivity` is §5.4's sweep; :func:`.inference.fit_or_fallback` the
default fit with its fallback when the chains disagree.
"""

from .data import ScoreData, build_score_data, collapse_levels, label_grid, parse_self_map
from .inference import SimplexFit, SimplexSettings, fit_or_fallback, fit_simplex
from .prior import confusion_matrix, edge_concentrations, n_judge_parameters, propagation_table
from .sensitivity import SWEEP_BETAS, SWEEP_OMEGAS, sensitivity_sweep

__all__ = [
    "ScoreData",
    "build_score_data",
    "collapse_levels",
    "parse_self_map",
    "label_grid",
    "SimplexFit",
    "SimplexSettings",
    "fit_simplex",
    "fit_or_fallback",
    "sensitivity_sweep",
    "SWEEP_OMEGAS",
    "SWEEP_BETAS",
    "confusion_matrix",
    "edge_concentrations",
    "n_judge_parameters",
    "propagation_table",
]
