"""Laplace posterior: recovery of known scores and Δ, debiasing order invariance, calibration,
warm starts, and the coverage of rank intervals on simulated data."""

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from orchestrator.poe import (
    Observations,
    PoEConfig,
    entropy,
    expected_calibration_error,
    fit_laplace,
    fit_temperature,
    permutation_debias,
    rank_intervals,
    stopping_rule,
    temperature_scale,
)


def _bt_outcomes(scores, n_rounds, gen, delta=0.0):
    """Hard Bradley–Terry outcomes for every ordered pair, n_rounds times; the first-shown
    candidate gets an extra −delta (d = s_i − s_j − Δ)."""
    n = scores.numel()
    comps = []
    for _ in range(n_rounds):
        for i in range(n):
            for j in range(n):
                if i != j:
                    p = torch.sigmoid(scores[i] - scores[j] - delta)
                    comps.append((i, j, float(torch.rand((), generator=gen, dtype=torch.float64) < p)))
    return comps


def test_recovers_known_scores():
    gen = torch.Generator().manual_seed(0)
    truth = torch.randn(12, generator=gen, dtype=torch.float64)
    obs = Observations.from_lists(12, _bt_outcomes(truth, 20, gen))
    post = fit_laplace(obs, PoEConfig(prior_precision=0.01))
    assert post.converged
    assert spearmanr(post.mean, truth).statistic > 0.95
    centred = post.mean - post.mean.mean()
    err = (centred - (truth - truth.mean())).abs()
    assert float(err.max()) < 4 * float(post.cov.diagonal().sqrt().max())


def test_recovers_home_advantage():
    gen = torch.Generator().manual_seed(1)
    truth = torch.randn(10, generator=gen, dtype=torch.float64)
    obs = Observations.from_lists(10, _bt_outcomes(truth, 20, gen, delta=-0.8))
    post = fit_laplace(obs, PoEConfig(home_advantage=True))
    assert post.delta is not None and post.delta_sd is not None
    assert abs(post.delta - (-0.8)) < 3 * post.delta_sd
    assert post.delta_sd < 0.2
    biased = fit_laplace(obs, PoEConfig())
    assert biased.delta is None


def test_permutation_debiasing_is_order_invariant():
    assert float(permutation_debias(0.9, 0.3)) == pytest.approx(0.8)
    assert float(permutation_debias(0.9, 0.3)) == pytest.approx(1 - float(permutation_debias(0.3, 0.9)))
    gen = torch.Generator().manual_seed(2)
    p = torch.rand(8, 8, generator=gen, dtype=torch.float64)
    pairs = [(i, j) for i in range(8) for j in range(i + 1, 8)]
    forward = [(i, j, float(permutation_debias(p[i, j], p[j, i]))) for i, j in pairs]
    backward = [(j, i, float(permutation_debias(p[j, i], p[i, j]))) for i, j in pairs]
    a = fit_laplace(Observations.from_lists(8, forward))
    b = fit_laplace(Observations.from_lists(8, backward))
    torch.testing.assert_close(a.mean, b.mean)
    torch.testing.assert_close(a.cov, b.cov)


def test_temperature_rescales_scores_and_keeps_ranking():
    gen = torch.Generator().manual_seed(3)
    truth = torch.randn(8, generator=gen, dtype=torch.float64)
    pairs = [(i, j) for i in range(8) for j in range(8) if i != j]
    p = torch.tensor([float(torch.sigmoid(truth[i] - truth[j])) for i, j in pairs], dtype=torch.float64)
    config = PoEConfig(prior_precision=1e-9)
    for temperature in (0.5, 2.0):
        q = temperature_scale(p, temperature)
        base = fit_laplace(Observations.from_lists(8, [(i, j, float(x)) for (i, j), x in zip(pairs, p)]), config, tol=1e-10)
        scaled = fit_laplace(Observations.from_lists(8, [(i, j, float(x)) for (i, j), x in zip(pairs, q)]), config, tol=1e-10)
        base_c, scaled_c = base.mean - base.mean.mean(), scaled.mean - scaled.mean.mean()
        torch.testing.assert_close(scaled_c, base_c / temperature, atol=1e-5, rtol=1e-5)
        assert torch.equal(torch.argsort(base.mean), torch.argsort(scaled.mean))
    # noisy, inconsistent probabilities: the ranking still does not move
    noisy = (p + 0.2 * torch.randn(p.shape, generator=gen, dtype=torch.float64)).clamp(0.01, 0.99)
    base = fit_laplace(Observations.from_lists(8, [(i, j, float(x)) for (i, j), x in zip(pairs, noisy)]))
    scaled = fit_laplace(Observations.from_lists(8, [(i, j, float(x)) for (i, j), x in zip(pairs, temperature_scale(noisy, 0.4))]))
    # Appendix B's derivation is per comparison; with inconsistent probabilities the MAP
    # weighs comparisons differently after scaling, so only near-equality holds.
    assert spearmanr(base.mean, scaled.mean).statistic > 0.95


def test_temperature_fit_reduces_calibration_error():
    gen = torch.Generator().manual_seed(4)
    logits = 2 * torch.randn(4000, generator=gen, dtype=torch.float64)
    outcome = (torch.rand(4000, generator=gen, dtype=torch.float64) < torch.sigmoid(logits)).double()
    overconfident = torch.sigmoid(3 * logits)  # a judge three times too sharp
    before = expected_calibration_error(overconfident, outcome)
    t = fit_temperature(overconfident, outcome)
    after = expected_calibration_error(temperature_scale(overconfident, t), outcome)
    assert before > 0.08 and after < 0.03
    assert 2.3 < t < 3.8
    assert 2.5 < fit_temperature(overconfident, outcome, method="nll") < 3.5
    # the predictions themselves (which side is favoured) are unchanged
    assert torch.equal(overconfident > 0.5, temperature_scale(overconfident, t) > 0.5)


@pytest.mark.parametrize("n", [30, 300])  # Newton warm start, and frozen-Hessian steps first
def test_warm_start_reaches_the_same_mode(n):
    gen = torch.Generator().manual_seed(5)
    truth = torch.randn(n, generator=gen, dtype=torch.float64)
    pairs = torch.randint(0, n, (30 * n, 2), generator=gen).tolist()
    comps = [
        (i, j, float(torch.rand((), generator=gen, dtype=torch.float64) < torch.sigmoid(truth[i] - truth[j]))) for i, j in pairs if i != j
    ]
    # a large change (40 new hard outcomes): quasi-Newton steps with the previous inverse
    # Hessian, then Newton, reach the same mode
    previous = fit_laplace(Observations.from_lists(n, comps[:-40]))
    cold = fit_laplace(Observations.from_lists(n, comps))
    warm = fit_laplace(Observations.from_lists(n, comps), warm_start=previous)
    assert warm.converged
    torch.testing.assert_close(warm.mean, cold.mean, atol=1e-6, rtol=0)
    torch.testing.assert_close(warm.cov, cold.cov, atol=1e-6, rtol=0)
    # a small change (one new comparison) converges on the frozen Hessian in a few steps
    previous = fit_laplace(Observations.from_lists(n, comps[:-1]))
    warm = fit_laplace(Observations.from_lists(n, comps), warm_start=previous)
    torch.testing.assert_close(warm.mean, cold.mean, atol=1e-6, rtol=0)
    assert warm.n_iter <= 6


def test_no_observations_is_the_prior():
    post = fit_laplace(Observations.from_lists(4))
    torch.testing.assert_close(post.mean, torch.zeros(4, dtype=torch.float64))
    torch.testing.assert_close(post.cov, torch.eye(4, dtype=torch.float64))
    assert entropy(post.cov) == pytest.approx(4 * (1 + np.log(2 * np.pi)) / 2)


def test_absolute_experts_and_link_are_fitted():
    gen = torch.Generator().manual_seed(6)
    truth = torch.randn(10, generator=gen, dtype=torch.float64)
    absolutes = [(i, float(6 + 1.5 * truth[i] + 0.1 * torch.randn((), generator=gen)), 0.3) for i in range(10)]
    post = fit_laplace(Observations.from_lists(10, [], absolutes))
    assert post.link is not None and post.link[0] > 0
    assert spearmanr(post.mean, truth).statistic > 0.95


@pytest.mark.parametrize("n,n_comparisons", [(30, 90), (50, 200)])
def test_rank_intervals_cover_true_ranks(n, n_comparisons):
    """95% rank intervals cover the true rank 90–97% of the time when the data follow the model
    (scores from the N(0, I) prior, Bradley–Terry outcomes on random pairs)."""
    gen = torch.Generator().manual_seed(11)
    covered = total = 0
    all_pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    for rep in range(80):
        truth = torch.randn(n, generator=gen, dtype=torch.float64)
        pick = torch.randperm(len(all_pairs), generator=gen)[:n_comparisons]
        comps = []
        for k in pick:
            i, j = all_pairs[int(k)]
            win = torch.rand((), generator=gen, dtype=torch.float64) < torch.sigmoid(truth[i] - truth[j])
            comps.append((i, j, float(win)))
        post = fit_laplace(Observations.from_lists(n, comps))
        ri = rank_intervals(post, n_samples=2000, generator=torch.Generator().manual_seed(rep))
        true_rank = torch.argsort(torch.argsort(-truth)) + 1
        covered += int(((ri.lower <= true_rank) & (true_rank <= ri.upper)).sum())
        total += n
        torch.testing.assert_close(ri.rank_probs.sum(1), torch.ones(n, dtype=torch.float64))
        inside = torch.stack([ri.rank_probs[c, ri.lower[c] - 1 : ri.upper[c]].sum() for c in range(n)])
        assert bool((inside >= 0.95 - 1e-9).all())
    coverage = covered / total
    assert 0.90 <= coverage <= 0.97, coverage


def test_stopping_rule():
    gen = torch.Generator().manual_seed(8)
    truth = torch.tensor([3.0, 1.0, -1.0, -3.0], dtype=torch.float64)
    comps = _bt_outcomes(truth, 30, gen)
    post = fit_laplace(Observations.from_lists(4, comps))
    decision = stopping_rule(post, max_adjacent_reorder=0.05)
    assert decision.stop and decision.max_adjacent_reorder < 0.05
    prior = fit_laplace(Observations.from_lists(4))
    assert not stopping_rule(prior, max_adjacent_reorder=0.05).stop
    assert stopping_rule(prior, max_adjacent_reorder=0.05).max_adjacent_reorder == pytest.approx(0.5)
    assert stopping_rule(post, entropy_target=entropy(post.cov) + 1).stop
    assert not stopping_rule(post).stop
