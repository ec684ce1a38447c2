"""Look-ahead selection: its gain is the preposterior expectation it claims to be, it
leaves settled ties for unexplored candidates, batches spread, and a run or replay can use it."""

import json

import numpy as np
import pytest
import torch
from scipy.stats import norm

from conftest import write_jsonl
from orchestrator.cli import main
from orchestrator.offline.replay.simulate import JUDGE_PRESETS, simulate_dataset
from orchestrator.poe import Observations, Posterior, fit_laplace, select_across, select_pairs
from orchestrator.poe.experts import soft_bradley_terry
from orchestrator.poe.lookahead import expected_misorder_gain, lookahead_batch


def _posterior(mean, cov):
    mean = torch.tensor(mean, dtype=torch.float64)
    cov = torch.tensor(cov, dtype=torch.float64)
    return Posterior(mean, cov, mean.clone(), cov, None, None, None, 0, True, 0)


def _misordered(means, cov):
    """Expected misordered pairs Σ_{k<l} Φ(−|μ_k − μ_l|/√V_kl) for each row of ``means``."""
    k, l = np.triu_indices(cov.shape[0], 1)
    v = cov[k, k] + cov[l, l] - 2 * cov[k, l]
    return norm.cdf(-np.abs(means[..., k] - means[..., l]) / np.sqrt(v)).sum(axis=-1)


def test_gain_equals_a_monte_carlo_preposterior():
    """Observe y = s_a − s_b + e, e ~ N(0, 1/h): the exact Gaussian update, averaged over the
    predictive distribution of y, lowers the expected misordered pairs by the computed gain."""
    rng = np.random.default_rng(0)
    n = 5
    a_mat = rng.normal(size=(n, n))
    cov = a_mat @ a_mat.T / n + 0.2 * np.eye(n)
    mean = rng.normal(scale=0.8, size=n)
    a, b, h = 1, 3, 2.5
    u = np.zeros(n)
    u[a], u[b] = 1, -1
    s_u = cov @ u
    denom = u @ s_u + 1 / h
    cov_after = cov - np.outer(s_u, s_u) / denom
    ys = rng.normal(u @ mean, np.sqrt(denom), 400_000)
    after = _misordered(mean + np.outer((ys - u @ mean) / denom, s_u), cov_after).mean()
    expected = _misordered(mean, cov) - after
    targets = torch.triu_indices(n, n, 1)
    gain = expected_misorder_gain(
        torch.tensor(mean),
        torch.tensor(cov),
        torch.tensor([a]),
        torch.tensor([b]),
        torch.tensor([h], dtype=torch.float64),
        (targets[0], targets[1]),
    )
    assert float(gain[0]) == pytest.approx(expected, abs=0.005)  # Monte Carlo se ≈ 0.001
    assert expected > 0.02  # the case is not trivially zero


def test_settled_tie_yields_to_an_unexplored_candidate():
    """Candidates 0 and 1 were compared so often that their tie is known (tiny variance, equal
    means): reorder asks them again (probability ½), look-ahead compares candidate 3, never seen."""
    cov = np.diag([0.002, 0.002, 0.05, 1.0])
    cov[0, 1] = cov[1, 0] = 0.0019
    post = _posterior([0.0, 0.0, 2.0, 0.5], cov.tolist())
    available = torch.ones(4, 4, dtype=torch.bool)
    assert set(select_pairs(post, "reorder", available, 1, ordered=False)[0]) == {0, 1}
    pick = select_pairs(post, "lookahead", available, 1, ordered=False)[0]
    assert 3 in pick


def test_a_batch_under_the_prior_is_a_matching():
    """Under the prior every pair gains the same; the rank-one updates make each pick avoid the
    candidates already in the batch, so 8 picks among 16 candidates touch all 16."""
    post = fit_laplace(Observations.from_lists(16))
    pairs = select_pairs(post, "lookahead", torch.ones(16, 16, dtype=torch.bool), 8, ordered=False)
    assert len({c for p in pairs for c in p}) == 16


def test_batch_gains_fall_and_equal_a_fresh_score_after_the_update():
    """The second pick's reported gain is what scoring it afresh on the updated covariance gives
    (among the pairs not touching the first pick: 2 picks of 6 candidates use each at most once)."""
    rng = np.random.default_rng(1)
    n = 6
    a_mat = rng.normal(size=(n, n))
    cov = torch.tensor(a_mat @ a_mat.T / n + 0.3 * np.eye(n))
    mean = torch.tensor(rng.normal(size=n))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    expert = soft_bradley_terry()
    picks, gains = lookahead_batch(mean, cov, pairs, 2, expert)
    assert gains[0] >= gains[1] > 0
    (a, b), h = picks[0], float(torch.sigmoid(mean[picks[0][0]] - mean[picks[0][1]]) * torch.sigmoid(mean[picks[0][1]] - mean[picks[0][0]]))
    u = torch.zeros(n, dtype=torch.float64)
    u[a], u[b] = 1, -1
    s_u = cov @ u
    updated = cov - h * torch.outer(s_u, s_u) / (1 + h * float(u @ s_u))
    again, regain = lookahead_batch(mean, updated, [p for p in pairs if not set(p) & set(picks[0])], 1, expert)
    assert again[0] == picks[1] and regain[0] == pytest.approx(gains[1], rel=1e-9)


def test_replay_with_lookahead_reaches_the_all_pairs_ranking(tmp_path, capsys):
    records, responses = simulate_dataset(2, 8, JUDGE_PRESETS["llm"], seed=5, absolute=False)
    log, resp = tmp_path / "log.jsonl", tmp_path / "responses.jsonl"
    write_jsonl(log, records)
    write_jsonl(resp, responses)
    try:
        main(
            [
                "replay",
                str(log),
                "--responses",
                str(resp),
                "--truth",
                "quality",
                "--strategy",
                "lookahead",
                "--debias",
                "permutation",
                "--json",
            ]
        )
    except SystemExit as exc:
        assert exc.code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["strategy"] == "lookahead"
    calls = [k for k, _, _ in report["curve"]]
    assert calls == list(range(0, 57, 2))  # both orders of a pair per step, every pair once
    assert report["curve"][-1][2] == pytest.approx(1.0)
    assert report["k_self90"] < 56


def test_across_groups_the_batch_goes_where_misorderings_can_be_removed():
    settled = _posterior([3.0, 0.0, -3.0], np.diag([0.01, 0.01, 0.01]).tolist())
    uncertain = _posterior([0.1, 0.0, -0.1], np.eye(3).tolist())
    everything = torch.ones(3, 3, dtype=torch.bool)
    batch = select_across([settled, uncertain], "lookahead", [everything, everything], 2, ordered=False)
    assert [g for g, _, _ in batch] == [1, 1]
    # a group with nothing left to ask gives way
    nothing = torch.zeros(3, 3, dtype=torch.bool)
    batch = select_across([settled, uncertain], "lookahead", [everything, nothing], 2, ordered=False)
    assert [g for g, _, _ in batch] == [0, 0] and len({frozenset(p[1:]) for p in batch}) == 2
