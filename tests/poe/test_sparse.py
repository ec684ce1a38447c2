"""The sparse posterior for large N: the same mode and nuisance parameters as the dense
path, variance estimates within their stated error, candidate-pair selection that only asks open
pairs, and the same learning curve as dense selection; a replay through the engine with it."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from orchestrator.poe import (
    ORDER_IJ,
    ORDER_JI,
    Observations,
    PoEConfig,
    adjacent_reorder_probabilities,
    candidate_pairs,
    fit_laplace,
    fit_with_reliability,
    indifference_stop,
    marginal_variances,
    pair_variances,
    posterior_entropy,
    rank_intervals,
    select_pairs,
)
from orchestrator.poe.objective import NegLogPosterior
from orchestrator.poe.sparse import HessianPattern, block_pcg, sparse_covariance, sparse_newton


def _simulated(n: int, k: int, seed: int, *, judges: int = 1, absolutes: int = 0):
    rng = np.random.default_rng(seed)
    quality = rng.standard_normal(n)
    first = rng.integers(0, n, k)
    second = rng.integers(0, n - 1, k)
    second = second + (second >= first)
    judge = rng.integers(0, judges, k)
    slope = np.array([1.5, 0.6, 3.0])[judge]
    p = 1 / (1 + np.exp(-(slope * (quality[first] - quality[second]) - 0.3 + 0.4 * rng.standard_normal(k))))
    comparisons = [(int(a), int(b), float(q), int(j)) for a, b, q, j in zip(first, second, p, judge)]
    items = rng.integers(0, n, absolutes)
    absolutes_list = [(int(i), float(5 + 2 * quality[i] + 0.5 * rng.standard_normal()), 0.8, 0) for i in items]
    return quality, Observations.from_lists(n, comparisons, absolutes_list, n_judges=judges)


@pytest.mark.parametrize(
    "config, judges, absolutes",
    [
        (PoEConfig(), 1, 0),
        (PoEConfig(home_advantage=True), 1, 0),
        (PoEConfig(home_advantage=True, judge_sharpness=True), 3, 0),
        (PoEConfig(home_advantage=True), 2, 40),
    ],
    ids=["plain", "home", "home+sharpness, 3 judges", "home+absolute link, 2 judges"],
)
def test_sparse_fit_equals_dense(config, judges, absolutes):
    _, obs = _simulated(150, 900, seed=judges, judges=judges, absolutes=absolutes)
    dense = fit_laplace(obs, config, method="dense")
    sparse = fit_laplace(obs, config, method="sparse")
    assert sparse.cov is None and sparse.sparse is not None and dense.sparse is None
    assert torch.allclose(dense.theta, sparse.theta, atol=1e-7)
    assert sparse.converged and dense.converged
    for name, values in dense.judges.items():  # Δ_j and its sd, sharpness and its interval, the link: exact
        assert torch.allclose(values, sparse.judges[name], rtol=1e-6, atol=1e-8), name
    # the variances are estimates (32 draws with a control variate): ~6-15% off each
    order = torch.argsort(dense.mean, descending=True)
    a, b = order[:-1], order[1:]
    rel = pair_variances(sparse, a, b) / pair_variances(dense, a, b) - 1
    assert abs(float(rel.mean())) < 0.1 and float(rel.abs().mean()) < 0.2 and float(rel.abs().max()) < 0.8
    rel = marginal_variances(sparse) / marginal_variances(dense) - 1
    assert abs(float(rel.mean())) < 0.1 and float(rel.abs().max()) < 0.8
    # ... and unbiased: with many draws they converge to the dense Σ (the low-rank correction for the
    # sharpness and link terms included)
    objective = NegLogPosterior(obs, config)
    theta, hess, pattern, _, _ = sparse_newton(objective, objective.initial())
    many = dataclasses.replace(sparse, sparse=sparse_covariance(objective, theta, hess, pattern, n_draws=4096, seed=1))
    rel = pair_variances(many, a, b) / pair_variances(dense, a, b) - 1
    assert abs(float(rel.mean())) < 0.01 and float(rel.abs().mean()) < 0.03
    rel = marginal_variances(many) / marginal_variances(dense) - 1
    assert abs(float(rel.mean())) < 0.02


def test_auto_switches_to_sparse_at_the_threshold(monkeypatch):
    from orchestrator.poe import laplace

    _, obs = _simulated(40, 200, seed=0)
    assert fit_laplace(obs).cov is not None
    monkeypatch.setattr(laplace, "SPARSE_MIN_N", 40)
    assert fit_laplace(obs).cov is None
    assert fit_laplace(obs, PoEConfig(posterior="dense")).cov is not None
    with pytest.raises(ValueError, match="posterior must be"):
        PoEConfig(posterior="cholesky")


def test_reliability_fit_is_the_same_sparse_and_dense():
    _, obs = _simulated(120, 800, seed=3, judges=2)
    dense = fit_with_reliability(obs, PoEConfig(judge_sharpness=True, judge_precision=True, posterior="dense"))
    sparse = fit_with_reliability(obs, PoEConfig(judge_sharpness=True, judge_precision=True, posterior="sparse"))
    # the sparse fit estimates the leverage in κ from its 32 draws (dense: exact), so the two agree
    # to that estimate's noise
    assert torch.allclose(dense.mean, sparse.mean, atol=1e-4)
    assert torch.allclose(dense.judges["precision"], sparse.judges["precision"], rtol=0.02)
    assert float((dense.judges["precision"] - 1).abs().min()) > 0.5


def test_everything_downstream_reads_a_sparse_posterior():
    """Stopping, reorder probabilities, entropy and rank intervals work without Σ."""
    quality, obs = _simulated(300, 3000, seed=4)
    dense = fit_laplace(obs, method="dense")
    sparse = fit_laplace(obs, method="sparse")
    _, adj_dense = adjacent_reorder_probabilities(dense)
    _, adj_sparse = adjacent_reorder_probabilities(sparse)
    assert float((adj_dense - adj_sparse).abs().max()) < 0.1
    # entropy: the Hadamard bound is below the exact value (equality would need no shared comparison)
    assert posterior_entropy(sparse) <= posterior_entropy(dense) + 1e-9
    assert indifference_stop(sparse).max_error == pytest.approx(indifference_stop(dense).max_error, rel=0.3)
    intervals = rank_intervals(sparse)
    assert intervals.lower.shape == (300,) and bool((intervals.lower <= intervals.upper).all())
    true_rank = torch.as_tensor(np.argsort(np.argsort(-quality)) + 1)
    covered = ((intervals.lower <= true_rank) & (true_rank <= intervals.upper)).double().mean()
    assert float(covered) > 0.75  # 32 draws: the interval ends are noisy, not absent


def test_block_pcg_solves_and_the_pattern_sums_duplicates():
    rows = torch.tensor([0, 1, 0, 1, 0, 2, 2])
    cols = torch.tensor([0, 1, 1, 0, 0, 2, 2])
    vals = torch.tensor([2.0, 3.0, -1.0, -1.0, 1.0, 1.5, 0.5], dtype=torch.float64)
    pattern = HessianPattern(rows, cols, 3)
    matrix = pattern.matrix(vals)
    dense = np.array([[3.0, -1.0, 0.0], [-1.0, 3.0, 0.0], [0.0, 0.0, 2.0]])
    assert np.allclose(matrix.toarray(), dense)
    rhs = np.array([[1.0, 0.0], [2.0, 1.0], [3.0, -1.0]])
    x, _ = block_pcg(matrix, rhs, rtol=1e-12)
    assert np.allclose(dense @ x, rhs)
    assert np.allclose(pattern.lookup(matrix, np.array([0, 1, 2, 0]), np.array([1, 0, 0, 2])), [-1.0, -1.0, 0.0, 0.0])


def test_candidate_pairs_stay_in_their_blocks_and_cover_neighbours():
    _, obs = _simulated(200, 1000, seed=5)
    post = fit_laplace(obs, method="sparse")
    blocks = torch.arange(200) % 7
    pairs = candidate_pairs(post, blocks=blocks, window=2, uncertain=20, n_random=300)
    assert bool((pairs[:, 0] < pairs[:, 1]).all())
    assert bool((blocks[pairs[:, 0]] == blocks[pairs[:, 1]]).all())
    assert torch.unique(pairs[:, 0] * 200 + pairs[:, 1]).numel() == pairs.shape[0]
    keys = set((pairs[:, 0] * 200 + pairs[:, 1]).tolist())
    for block in range(7):  # every ranking neighbour within each block is a candidate
        members = torch.nonzero(blocks == block).flatten()
        order = members[torch.argsort(post.mean[members], descending=True)]
        for a, b in zip(order[:-1].tolist(), order[1:].tolist()):
            assert min(a, b) * 200 + max(a, b) in keys


def test_selection_over_candidates_asks_only_open_pairs_in_an_open_order():
    _, obs = _simulated(100, 500, seed=6)
    post = fit_laplace(obs, method="sparse")
    pairs = candidate_pairs(post, window=3)
    bits = torch.tensor([ORDER_IJ, ORDER_JI, ORDER_IJ | ORDER_JI, 0]).repeat(pairs.shape[0] // 4 + 1)[: pairs.shape[0]]
    cands = torch.cat([pairs, bits[:, None]], 1)
    allowed = {(int(i), int(j)) for i, j, b in cands.tolist() if b & ORDER_IJ} | {
        (int(j), int(i)) for i, j, b in cands.tolist() if b & ORDER_JI
    }
    for strategy in ("reorder", "variance", "random", "diverse", "eps:0.5", "min_uncertainty"):
        picked = select_pairs(post, strategy, cands, 40, generator=torch.Generator().manual_seed(1))
        assert len(picked) == 40 and len({frozenset(p) for p in picked}) == 40
        assert set(picked) <= allowed, strategy
    both = {(int(i), int(j)) for i, j, b in cands.tolist() if b == ORDER_IJ | ORDER_JI}
    picked = select_pairs(post, "reorder", cands, 1000, ordered=False)  # permutation: both orders must be open
    assert set(picked) == both


def test_sparse_active_learning_matches_dense():
    """A reorder loop with candidate pairs reaches the dense loop's Spearman with the truth."""
    n, batch, rounds = 300, 60, 12
    results = {}
    for method in ("dense", "sparse"):
        rng = np.random.default_rng(0)
        quality = rng.standard_normal(n)
        generator = torch.Generator().manual_seed(0)
        available = torch.ones(n, n, dtype=torch.bool).fill_diagonal_(False)
        comparisons: list[tuple] = []
        post = fit_laplace(Observations.from_lists(n), method=method)
        for _ in range(rounds):
            if method == "dense":
                pairs = select_pairs(post, "reorder", available, batch, generator=generator)
            else:
                cand = candidate_pairs(post, window=4, uncertain=30, n_random=batch, generator=generator)
                i, j = cand[:, 0], cand[:, 1]
                bits = available[i, j].long() * ORDER_IJ + available[j, i].long() * ORDER_JI
                pairs = select_pairs(post, "reorder", torch.stack([i, j, bits], 1)[bits > 0], batch, generator=generator)
            for a, b in pairs:
                available[a, b] = False
                p = 1 / (1 + np.exp(-(1.5 * (quality[a] - quality[b]) + 0.5 * rng.standard_normal())))
                comparisons.append((a, b, float(p)))
            post = fit_laplace(Observations.from_lists(n, comparisons), method=method)
        results[method] = spearmanr(post.mean.numpy(), quality).statistic
    assert results["sparse"] > 0.8
    assert abs(results["sparse"] - results["dense"]) < 0.02, results


def test_replay_with_a_sparse_posterior_runs_through_the_engine(tmp_path):
    """``orchestrator replay --scope items --posterior sparse``: the engine's candidate pairs (with
    the log's own pairs as hints), stopping and ranking on a sparse posterior; it asks only what
    the log holds and ranks close to the truth."""
    from orchestrator.api import replay

    rng = np.random.default_rng(7)
    prompts, per_prompt = 4, 30
    quality = {f"p{p}": rng.standard_normal(per_prompt) for p in range(prompts)}
    with open(tmp_path / "responses.jsonl", "w") as fh:
        for p, q in quality.items():
            for c in range(per_prompt):
                fh.write(json.dumps({"prompt_id": p, "candidate": f"c{c}", "human": {"quality": float(q[c])}}) + "\n")
    with open(tmp_path / "log.jsonl", "w") as fh:
        for p, q in quality.items():
            shown = {tuple(rng.choice(per_prompt, 2, replace=False)) for _ in range(300)}  # each judgment once
            for a, b in sorted(shown):
                for judge, slope in (("sim", 2.0), ("sim-weak", 0.7)):  # two judges: the cost-aware panel falls back
                    prob = float(1 / (1 + np.exp(-(slope * (q[a] - q[b])))))
                    shown_pair = [f"c{a}", f"c{b}"]
                    record = {
                        "kind": "pairwise",
                        "judge": judge,
                        "prompt_id": p,
                        "candidates": shown_pair,
                        "probs": {"A": prob, "B": 1 - prob},
                    }
                    fh.write(json.dumps(record) + "\n")
    from orchestrator.api.settings import ReplaySettings

    kwargs = dict(responses=tmp_path / "responses.jsonl", truth="quality")
    sparse = replay(tmp_path / "log.jsonl", settings=ReplaySettings(scope="items", batch=50, budget=400, posterior="sparse"), **kwargs)
    dense = replay(tmp_path / "log.jsonl", settings=ReplaySettings(scope="items", batch=50, budget=400, posterior="dense"), **kwargs)
    assert sparse.curve[-1][0] == 400 == dense.curve[-1][0]  # the log's pairs were found: the whole budget was spent
    assert sparse.curve[-1][1] > 0.6
    assert abs(sparse.curve[-1][1] - dense.curve[-1][1]) < 0.1


def test_a_non_finite_hessian_raises_instead_of_damping_for_ever():
    """A NaN on the diagonal made the damping schedule's scale NaN, and the sparse solve looped."""
    import scipy.sparse as sp

    from orchestrator.poe.sparse import damped_solve

    with pytest.raises(FloatingPointError, match="not finite"):
        damped_solve(sp.csr_matrix(np.array([[np.nan, 0.0], [0.0, 1.0]])), np.ones(2))
    # an indefinite matrix is damped until it is positive definite, as the dense Cholesky does
    x = damped_solve(sp.csr_matrix(np.array([[1.0, 2.0], [2.0, 1.0]])), np.ones(2))
    assert np.allclose(x, [1 / 3, 1 / 3])


def test_replay_refuses_a_batch_above_the_configs_bound(tmp_path):
    """``--batch`` beyond what a run's config allows was an internal error (a validation traceback)."""
    from orchestrator.api import replay
    from orchestrator.api.settings import ReplaySettings
    from orchestrator.errors import OrchestratorError
    from orchestrator.records.config import MAX_BATCH

    log = tmp_path / "log.jsonl"
    log.write_text(
        json.dumps({"kind": "pairwise", "judge": "j", "prompt_id": "p", "candidates": ["a", "b"], "probs": {"A": 0.7, "B": 0.3}}) + "\n"
    )
    with pytest.raises(OrchestratorError, match="--batch must be <= 100,000"):
        replay(log, settings=ReplaySettings(batch=MAX_BATCH + 1))
    assert replay(log, settings=ReplaySettings(batch=MAX_BATCH)).curve  # the bound itself is allowed
