"""The adaptive leaderboard allocation's pure core: prompt-difficulty corrected win
rates that equal the plain means on complete data, and gains that never starve a candidate."""

from __future__ import annotations

import numpy as np
import pytest

from orchestrator.raee.allocation import (
    allocation_gains,
    leaderboard_state,
    lockstep_choice,
    settled_leaderboard,
    slice_gains,
    stratified_order,
    win_rate_intervals,
)


def _table(seed: int = 0, models: int = 6, prompts: int = 60) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ability = np.linspace(0.1, 0.8, models)
    difficulty = rng.normal(0, 0.15, prompts)
    return np.clip(ability[:, None] + difficulty[None, :] + rng.normal(0, 0.1, (models, prompts)), 0, 1)


def test_complete_data_gives_the_plain_means_the_official_win_rates():
    y = _table()
    estimate, sigma, n = leaderboard_state(y)
    np.testing.assert_allclose(estimate, y.mean(1), atol=1e-12)
    assert (n == y.shape[1]).all() and (sigma > 0).all()


def test_a_candidate_seen_on_easy_prompts_only_is_corrected_for_their_easiness():
    y = _table(seed=1)
    easy = np.argsort(-y[:-1].mean(0))[:10]  # the prompts the other candidates found easiest
    partial = y.copy()
    hidden = np.setdiff1d(np.arange(y.shape[1]), easy)
    partial[2, hidden] = np.nan
    estimate, _, n = leaderboard_state(partial)
    naive = np.nanmean(partial[2])
    assert n[2] == 10
    assert abs(estimate[2] - y[2].mean()) < 0.5 * abs(naive - y[2].mean())


def test_a_candidate_with_few_prompts_and_a_wide_interval_is_picked_never_starved():
    y = _table(seed=2, models=5, prompts=200)
    partial = y.copy()
    partial[:, 40:] = np.nan
    partial[3, 4:40] = np.nan
    partial[3, :4] = partial[3, 0]  # four identical outcomes: its own spread is 0, its interval is not
    estimate, sigma, n = leaderboard_state(partial)
    assert n[3] == 4 and sigma[3] > 0.5 * np.median(sigma)
    for weight in (0.0, 60.0):
        gains = allocation_gains(estimate, sigma, n, np.full(5, 200), width_weight=weight)
        assert int(np.argmax(gains)) == 3, (weight, gains)


def test_crowded_neighbours_gain_more_than_a_separated_candidate_and_a_finished_one_nothing():
    estimate = np.array([0.10, 0.50, 0.51, 0.52, 0.90])
    sigma = np.full(5, 0.3)
    n = np.array([50, 50, 50, 50, 50])
    population = np.array([100, 100, 100, 100, 50])
    gains = allocation_gains(estimate, sigma, n, population, width_weight=0.0)
    assert gains[1:4].min() > 10 * gains[0] and gains[4] == -np.inf


def test_the_stopping_rule_orders_or_ties_every_neighbour_and_names_the_ties():
    names = ["a", "b", "c"]
    n, population = np.array([100, 100, 100]), np.array([1000, 1000, 1000])
    sigma = np.full(3, 0.1)  # sd of a difference ≈ 0.014
    # far apart: ordered, nothing tied
    assert settled_leaderboard(names, np.array([0.9, 0.5, 0.1]), sigma, n, population, 0.02) == []
    # b and c 0.5 points apart: tied within 5 points, not within 1 point (undecided then)
    close = np.array([0.9, 0.5, 0.495])
    assert settled_leaderboard(names, close, sigma, n, population, 0.05) == [("b", "c")]
    assert settled_leaderboard(names, close, sigma, n, population, 0.01) is None
    # a candidate without a judgment keeps the board open
    assert settled_leaderboard(names, np.array([0.9, 0.5, 0.1]), sigma, np.array([100, 0, 100]), population, 0.5) is None


def test_win_rate_intervals_cover_the_pools_win_rate_only_with_the_prompts_shared_variance():
    # every candidate judged on the same 15 of 200 prompts (a cut benchmark, or one category's few
    # prompts): which prompts were drawn moves all win rates together, so an interval from the
    # candidates' own residual sd alone is too narrow for the pool's win rate
    from orchestrator.raee.allocation import prompt_sampling_variance

    covered, covered_own = [], []
    for seed in range(200):
        y = _table(seed=seed, models=6, prompts=200)
        truth = y.mean(1)
        part = np.full_like(y, np.nan)
        drawn = np.random.default_rng(1000 + seed).choice(200, 15, replace=False)
        part[:, drawn] = y[:, drawn]
        estimate, sigma, n = leaderboard_state(part)
        own = sigma**2 / n * (1 - n / 200)
        shared = prompt_sampling_variance(part, 200)
        covered += list(np.abs(estimate - truth) <= 1.96 * np.sqrt(own + shared))
        covered_own += list(np.abs(estimate - truth) <= 1.96 * np.sqrt(own))
    assert 0.92 <= np.mean(covered) <= 0.985
    assert np.mean(covered_own) < 0.8
    assert (prompt_sampling_variance(_table(), 60) == 0.0).all()  # every prompt judged: nothing left to draw


def test_every_prefix_of_the_stratified_order_holds_each_category_in_proportion():
    rng = np.random.default_rng(0)
    sizes = {"coding": 50, "math": 30, "writing": 15, "rare": 5}
    prompts = [f"{c}-{k}" for c, n in sizes.items() for k in range(n)]
    shuffled = [prompts[i] for i in rng.permutation(len(prompts))]
    category = {p: p.split("-")[0] for p in prompts}
    order = stratified_order(shuffled, category, {c: float(rng.uniform()) for c in sizes})
    assert sorted(order) == sorted(prompts)
    for n in range(1, len(order) + 1):
        for c, size in sizes.items():
            held = sum(category[p] == c for p in order[:n])
            assert abs(held - n * size / 100) < 1 + 1e-9, (n, c, held)
    # within a category the shuffled order is kept; a random order's first 20 miss "rare" often, this one never
    assert [p for p in order if category[p] == "rare"] == [p for p in shuffled if category[p] == "rare"]
    assert {category[p] for p in order[:20]} == set(sizes)
    # one category, or none: the shuffled order itself
    assert stratified_order(shuffled, {p: "all" for p in prompts}, {"all": 0.3}) == shuffled
    assert stratified_order(shuffled, {}, {}) == shuffled


def test_slice_gains_favour_a_candidate_whose_next_prompt_settles_an_undecided_category():
    # two categories: in "a" (columns 0–29) candidates 0 and 1 are tied and each has 5 prompts; in
    # "b" (30–59) every candidate has 20 prompts and all are far apart
    rng = np.random.default_rng(3)
    y = np.full((3, 60), np.nan)
    y[:, :5] = np.array([0.5, 0.5, 0.9])[:, None] + rng.normal(0, 0.1, (3, 5))
    y[:, 30:50] = np.array([0.1, 0.5, 0.9])[:, None] + rng.normal(0, 0.1, (3, 20))
    slices = np.repeat([0, 1], 30)
    population = np.full((3, 2), 30.0)
    gains = slice_gains(y, slices, np.array([0, 1, -1]), population)
    assert gains[0] > 5 * gains[1] > 0 and gains[2] == 0.0
    # what each candidate's next prompt is decides: the same candidates, next prompts swapped
    swapped = slice_gains(y, slices, np.array([1, 0, 0]), population)
    assert swapped[1] > 5 * swapped[0] and swapped[2] > 0
    # the slice's own gains, from allocation_gains on its columns alone
    estimate, sigma, n = leaderboard_state(y[:, slices == 0])
    np.testing.assert_allclose(gains[0], allocation_gains(estimate, sigma, n, population[:, 0])[0])


def test_the_stopping_claims_hold_together():
    """Issue #52 item 2: the board's M − 1 neighbour claims each at 5% / (M − 1) (Bonferroni)."""
    from scipy.stats import norm

    from orchestrator.raee.allocation import claim_z, settled_leaderboard

    assert claim_z(2) == pytest.approx(1.959964, abs=1e-5)
    assert claim_z(20) == pytest.approx(norm.ppf(1 - 0.05 / 38), abs=1e-9) and 3.0 < claim_z(20) < 3.02
    # two candidates 4 points apart, the sd of their difference 1.6 points: ordered per pair (z 1.96), not with 20 claims (z 3.0)
    est, sigma, n, pop = np.array([0.54, 0.50]), np.array([0.05, 0.05]), np.array([20, 20]), np.array([1000, 1000])
    assert settled_leaderboard(["a", "b"], est, sigma, n, pop, 0.01, z=1.96) == []
    assert settled_leaderboard(["a", "b"], est, sigma, n, pop, 0.01, z=claim_z(20)) is None


def test_a_candidate_judged_on_its_whole_pool_gets_its_own_win_rate_exactly():
    """A candidate without an answer to some prompts, judged on every prompt it has: its win rate is
    the mean of its outcomes with a point interval — the difficulty adjustment (which reads the pool of
    every prompt) used to move it by the missing prompts' difficulty, and a zero-width interval then
    missed its own win rate (found on AlpacaEval's two models with 804 of 805 answers)."""
    rng = np.random.default_rng(3)
    y = np.clip(rng.normal(0.4, 0.25, (6, 60)) + np.linspace(-0.2, 0.2, 60)[None, :], 0, 1)
    y[2, :5] = np.nan  # candidate 2 has no answer to five (easy) prompts
    y[4, 30:] = np.nan  # candidate 4 is half judged
    populations = np.array([60, 60, 55, 60, 60, 60])
    estimate, half, *_ = win_rate_intervals(y, populations)
    complete = [0, 1, 2, 3, 5]
    assert np.allclose(estimate[complete], np.nanmean(y[complete], axis=1), atol=1e-12)
    assert np.all(half[complete] == 0.0)
    assert half[4] > 0.0 and abs(estimate[4] - np.nanmean(y[4])) > 1e-6  # the half-judged one is still adjusted


def test_lockstep_walks_the_open_candidates_at_one_depth_and_stops_only_the_settled():
    """Issue #52 item 3: with weak evidence every candidate advances, the shallowest first (the fixed
    subset); one whose neighbours are beyond doubt stops — unless its interval is the widest, so it
    never becomes the largest error; with a resolution, neighbours tied within it are settled too."""
    sigma = np.full(4, 0.1)
    population = np.full(4, 100.0)
    estimate = np.array([0.9, 0.5, 0.52, 0.48])
    # weak evidence (4 prompts each of outcomes with sd 0.3): nothing is settled, all advance
    assert sorted(lockstep_choice(estimate, np.full(4, 0.3), np.full(4, 4.0), population, 4).tolist()) == [0, 1, 2, 3]
    # the shallowest first, ties in index order
    assert lockstep_choice(estimate, sigma, np.array([10.0, 8, 9, 8]), population, 2).tolist() == [1, 3]
    # 40 prompts each: candidate 0 is 0.38 above its neighbour, 5 sd = 5·√(2·0.01/40·0.6) = 0.09 — it stops
    assert sorted(lockstep_choice(estimate, sigma, np.full(4, 40.0), population, 4).tolist()) == [1, 2, 3]
    # ... unless its own interval is wider than any still open
    assert 0 in lockstep_choice(estimate, np.array([0.3, 0.1, 0.1, 0.1]), np.full(4, 40.0), population, 4).tolist()
    # with a 10-point resolution the close three are tied beyond doubt at 80 prompts each: all settled,
    # and then everyone with prompts left advances (the caller's stopping rule decides to stop)
    close = np.array([0.9, 0.50, 0.51, 0.49])
    settled_all = lockstep_choice(close, np.full(4, 0.1), np.full(4, 80.0), population, 4, z=3.0, resolution=0.10)
    assert sorted(settled_all.tolist()) == [0, 1, 2, 3]
    assert sorted(lockstep_choice(close, np.full(4, 0.1), np.full(4, 80.0), population, 4, z=3.0).tolist()) == [1, 2, 3]
    # a candidate with every prompt judged is never chosen
    assert 2 not in lockstep_choice(estimate, sigma, np.array([4.0, 4, 100, 4]), population, 4).tolist()


def test_a_win_rate_is_a_share_even_on_a_few_prompts():
    # one prompt, won, that the others lost: the difficulty correction alone reads above 100%
    y = np.full((3, 5), np.nan)
    y[0, 0] = 1.0
    y[1, :2] = [0.0, 1.0]
    y[2, :3] = [0.0, 1.0, 0.0]
    estimate, half, *_ = win_rate_intervals(y, np.array([5, 5, 5]))
    assert ((0.0 <= estimate) & (estimate <= 1.0)).all()
    assert (half > 0).all()
