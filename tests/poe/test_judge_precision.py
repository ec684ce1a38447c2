"""A judge's precision κ (orchestrator/poe/reliability.py): read back from judges of known
dispersion, and the rank intervals it sets cover the truth (the measurement of the prior)."""

import math
import random

import numpy as np
import torch

from orchestrator.poe import Observations, PoEConfig, fit_with_reliability
from orchestrator.poe.reliability import log_dispersion
from orchestrator.poe.uncertainty import rank_intervals


def test_the_log_dispersion_is_the_mode_of_its_posterior():
    residual_sum = torch.tensor([0.0, 0.42, 24.0, 300.0], dtype=torch.float64)
    dof = torch.tensor([10.0, 105.0, 24.0, 0.0], dtype=torch.float64)
    u = log_dispersion(residual_sum, dof, 3.0)
    grid = torch.linspace(-30, 30, 600_001, dtype=torch.float64)
    for k in (1, 2, 3):
        objective = dof[k] / 2 * grid + residual_sum[k] / 2 * torch.exp(-grid) + grid**2 / 18
        assert abs(float(u[k] - grid[objective.argmin()])) < 2e-4
    assert float(u[0]) == -45.0  # no residual at all: the prior alone stops it, at −m s²/2 (κ then capped)
    assert abs(float(u[2])) < 0.05  # a coin's residuals: φ ≈ 1
    assert float(u[3]) > 0  # residuals with no degrees of freedom left: a worse judge than a coin


def _replicates(kind: str, reps: int, n: int = 16, m: int = 48) -> tuple[float, float, float]:
    """Median κ, coverage of the true ranks by the 95% rank intervals, and their mean width."""
    rng = random.Random(11)
    kappas, covered, widths = [], [], []
    for rep in range(reps):
        scores = [rng.gauss(0, 1) for _ in range(n)]
        comparisons = []
        for _ in range(m):
            i, j = rng.sample(range(n), 2)
            p = 1 / (1 + math.exp(-(scores[i] - scores[j])))
            if kind == "coin":  # one Bernoulli verdict: dispersion 1
                y = 1.0 if rng.random() < p else 0.0
            else:  # the share of 50 Bernoulli verdicts: dispersion 1/50, κ = 50
                y = sum(rng.random() < p for _ in range(50)) / 50
            comparisons.append((i, j, y))
        post = fit_with_reliability(Observations.from_lists(n, comparisons), PoEConfig(judge_precision=True))
        intervals = rank_intervals(post, n_samples=1000, generator=torch.Generator().manual_seed(rep))
        true_rank = np.argsort(np.argsort(-np.asarray(scores))) + 1
        lower, upper = intervals.lower.numpy(), intervals.upper.numpy()
        kappas.append(float(post.judges["precision"][0]))
        covered.append(float(np.mean((lower <= true_rank) & (true_rank <= upper))))
        widths.append(float(np.mean(upper - lower + 1)))
    return float(np.median(kappas)), float(np.mean(covered)), float(np.mean(widths))


def test_a_coins_precision_is_one_and_its_intervals_cover():
    # the first estimator read κ ≈ 1.5 here (residuals of a fit that passes close to 48
    # judgments of 16 scores) and covered 0.93
    kappa, covered, width = _replicates("coin", 40)
    assert 0.85 < kappa < 1.2
    assert covered >= 0.94
    assert width < 14


def test_a_reproducible_judges_precision_is_read_and_its_intervals_narrow():
    # the first estimator's 4 pseudo-judgments at a coin's dispersion held κ at 7 here (truth 50):
    # intervals of 7.7 ranks covering 100%
    kappa, covered, width = _replicates("soft", 40)
    assert 25 < kappa < 70
    assert covered >= 0.93
    assert width < 6
