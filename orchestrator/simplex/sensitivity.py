"""The simplex paper's sensitivity protocol (§5.4): refit at other ω and β_max, compare rankings."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Literal

import numpy as np

from .data import ScoreData
from .inference import SimplexFit, SimplexSettings, fit_simplex
from .sampler import Sampler, structure

__all__ = ["SweepResult", "sensitivity_sweep", "SWEEP_OMEGAS", "SWEEP_BETAS"]

SWEEP_OMEGAS = (0.0, 1.0, 2.0, 4.0, 8.0)
SWEEP_BETAS = (0.0, 1.0, 5.0, 10.0, 20.0)
"""§5.4: ω at β_max fixed (the base value), then β_max at ω = 0."""


@dataclass
class SweepResult:
    """§5.4: each setting's expected scores and their Spearman correlation with the base fit."""

    parameter: Literal["omega", "beta_max"]
    value: float
    expected: np.ndarray
    spearman: float
    rhat_ranking: float
    """R-hat of the standardised expected scores (the fit's convergence check)."""
    max_rhat: float
    seconds: float


def sensitivity_sweep(
    data: ScoreData,
    base: SimplexSettings,
    *,
    omegas: tuple[float, ...] = SWEEP_OMEGAS,
    betas: tuple[float, ...] = SWEEP_BETAS,
    base_beta: float = 5.0,
    progress: Callable[[str], None] | None = None,
    labels: np.ndarray | None = None,
) -> tuple[SimplexFit, list[SweepResult]]:
    """The paper's sensitivity protocol (§5.4): the base fit ω = 0, β_max = ``base_beta``; ω over
    ``omegas`` at β_max = ``base_beta``; β_max over ``betas`` at ω = 0. Each ranking is compared with
    the base by the Spearman correlation of the posterior mean expected scores. ``labels``: people's
    true levels of answers, in every fit (:func:`~orchestrator.simplex.inference.fit_simplex`).

    One compiled sampler per model structure is reused across values.
    """
    from scipy.stats import spearmanr

    shift = base.self_preference == "shift" and bool(data.self_pairs.any())
    samplers: dict[tuple, Sampler] = {}

    def run(settings: SimplexSettings) -> SimplexFit:
        key = structure(settings, shift)
        if key not in samplers:
            samplers[key] = Sampler(data.levels, key, settings, False)
        return fit_simplex(data, settings, labels=labels, sampler=samplers[key])

    base_settings = replace(base, omega=0.0, beta_max=base_beta)
    if progress:
        progress(f"base fit ω = 0, β_max = {base_beta:g}")
    base_fit = run(base_settings)
    results = []
    grid: list[tuple[Literal["omega", "beta_max"], float]] = [("omega", w) for w in omegas] + [("beta_max", b) for b in betas]
    for parameter, value in grid:
        settings = replace(base_settings, omega=value) if parameter == "omega" else replace(base_settings, beta_max=value)
        if settings == base_settings:
            fit = base_fit
        else:
            if progress:
                progress(f"{'ω' if parameter == 'omega' else 'β_max'} = {value:g}")
            fit = run(settings)
        rho = spearmanr(fit.expected_mean, base_fit.expected_mean).statistic if len(data.candidates) > 2 else math.nan
        results.append(
            SweepResult(parameter, value, fit.expected_mean, float(rho), fit.rhat.get("ranking", math.nan), fit.max_rhat, fit.seconds)
        )
    return base_fit, results
