"""RAEE closed forms (RAEE paper §2, Algorithm 1, App. B/E) and the AlpacaEval 2.0 leaderboard."""

import json
import math

import numpy as np
import pytest
from scipy.stats import beta as beta_dist

from conftest import DATA
from orchestrator.raee import GAMMA, cohen_kappa, elo, icc3k, kappa_factor, outcomes, pooled_variance, raee_estimate


def test_soft_win_probability_reproduces_the_alpacaeval_leaderboard():
    """AlpacaEval's win_rate is the mean of P(model beats the reference): RAEE's soft p̂ × 100."""
    models = json.loads((DATA / "alpacaeval_subset.json").read_text())["models"]
    estimates = {}
    for name, entry in models.items():
        runs: dict[str, list[float]] = {}
        for instruction, p in entry["annotations"]:  # one model was annotated twice: run-average (Eq. 5)
            runs.setdefault(instruction, []).append(p)
        preference = np.array([np.mean(v) for v in runs.values()])
        s = outcomes(preference - 1.0, np.zeros_like(preference), 2.0 - preference, soft=True)
        estimates[name] = raee_estimate(s, population=805)
        assert estimates[name].p_hat * 100 == pytest.approx(entry["win_rate"], abs=1e-6)
    by_rate = sorted(models, key=lambda m: -models[m]["win_rate"])
    assert sorted(estimates, key=lambda m: -estimates[m].elo) == by_rate  # the leaderboard order


def test_algorithm_1_by_hand():
    s = np.array([1, 1, 1, 0.5, 0, 0, 1, 0.5])  # W=4, T=2, L=2, N=8
    est = raee_estimate(s, level=0.9)
    a, b = 4 + 1 + 0.5, 2 + 1 + 0.5
    assert (est.wins, est.ties, est.losses, est.n) == (4, 2, 2, 8)
    assert est.p_hat == 5 / 8 and est.p_bar == pytest.approx(a / (a + b))
    assert est.p_low == pytest.approx(beta_dist.ppf(0.05, a, b)) and est.p_high == pytest.approx(beta_dist.ppf(0.95, a, b))
    assert est.elo == pytest.approx(400 / math.log(10) * math.log(est.p_bar / (1 - est.p_bar)))
    assert est.se_p == pytest.approx(math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1))))
    assert est.se_elo == pytest.approx(GAMMA * est.se_p / (est.p_bar * (1 - est.p_bar)))
    assert elo(0.5) == 0.0 and elo(1 / (1 + 10 ** (-100 / 400))) == pytest.approx(100.0)


@pytest.mark.parametrize("seed", range(5))
def test_closed_form_properties(seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95)
    s = rng.choice([0.0, 0.5, 1.0], size=400, p=[(1 - p) * 0.9, 0.1, p * 0.9])
    small, large = raee_estimate(s[:100]), raee_estimate(s)
    for est in (small, large):
        assert est.p_low < est.p_bar < est.p_high  # the interval contains p̄
        assert est.elo_low < est.elo < est.elo_high  # and its monotone image contains the Elo gap
        assert abs(est.p_bar - est.p_hat) <= 1 / (2 * est.n)  # Jeffreys shift ≤ 1/(2N)
    # SE shrinks as N^{-1/2} (4× the prompts, about half the SE)
    assert large.se_p_raw / small.se_p_raw == pytest.approx(0.5, rel=0.15)
    # FPC and κ only shrink it; at n = M the finite population has no sampling error left
    fpc = raee_estimate(s[:100], population=160, kappa=0.85)
    assert fpc.se_p == pytest.approx(small.se_p * math.sqrt(60 / 159) * 0.85)
    assert raee_estimate(s[:100], population=100).se_p == 0.0


def test_monotone_link_preserves_the_order_of_win_rates():
    rng = np.random.default_rng(3)
    sets = [rng.uniform(0, 1, size=50) ** power for power in (0.5, 1.0, 2.0, 4.0)]
    ests = [raee_estimate(s) for s in sets]
    assert np.argsort([e.p_bar for e in ests]).tolist() == np.argsort([e.elo for e in ests]).tolist()


def test_hard_outcomes_take_the_argmax_with_ties_as_half():
    s = outcomes(np.array([0.7, 0.2, 0.3, 0.4]), np.array([0.2, 0.7, 0.3, 0.2]), np.array([0.1, 0.1, 0.4, 0.4]), soft=False)
    assert s.tolist() == [1.0, 0.5, 0.0, 0.0]  # an exact win/loss tie does not count as a win
    soft = outcomes(np.array([0.6]), np.array([0.2]), np.array([0.2]), soft=True)
    assert soft.tolist() == [pytest.approx(0.7)]


def test_icc3k_matches_a_hand_computed_two_way_anova():
    # Shrout & Fleiss (1979) Table 2 data: 6 targets × 4 judges; ICC(3,4) = 0.91
    x = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], dtype=float)
    # by hand: grand mean 5.2917; SS_rows = 56.2083, SS_cols = 97.4583, SS_total = 168.9583
    # MS_rows = 56.2083/5 = 11.2417, MS_error = (168.9583 − 56.2083 − 97.4583)/15 = 1.0194
    assert icc3k(x) == pytest.approx((11.24167 - 1.01944) / 11.24167, abs=1e-4)
    assert icc3k(x) == pytest.approx(0.91, abs=0.005)
    with pytest.raises(ValueError, match="at least 2 prompts × 2 repeated runs"):
        icc3k(x[:, :1])


def test_kappa_and_pooling():
    a = np.array([1, 1, 0, 0.5, 1, 0, 0, 1])
    assert cohen_kappa(a, a) == 1.0
    b = np.array([1, 0, 0, 0.5, 1, 1, 0, 1])
    po, pe = 6 / 8, (4 / 8) * (4 / 8) + (3 / 8) * (3 / 8) + (1 / 8) * (1 / 8)
    assert cohen_kappa(a, b) == pytest.approx((po - pe) / (1 - pe))
    assert kappa_factor([a, b, a]) == pytest.approx(math.sqrt(np.mean([cohen_kappa(a, b), 1.0, cohen_kappa(b, a)])))
    assert pooled_variance(2.0, 0.9, 1) == pytest.approx(2.0)
    assert pooled_variance(2.0, 0.9, 4) == pytest.approx(2.0 * (0.9 + 0.1 / 4))


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="no judgments against the reference"):
        raee_estimate(np.array([]))
    with pytest.raises(ValueError, match="outcomes must lie in"):
        raee_estimate(np.array([0.5, 1.2]))
    with pytest.raises(ValueError, match="smaller than the n"):
        raee_estimate(np.ones(10), population=5)


def test_spread_se_is_the_pooled_anova_variance_shrunk_by_one_bernoulli_pseudo_observation():
    from orchestrator.raee import spread_se

    a = np.array([0.40, 0.45, 0.50, 0.55])
    b = np.array([0.60, 0.62, 0.64])
    total = np.array([a.sum(), b.sum()])
    sumsq = np.array([(a**2).sum(), (b**2).sum()])
    n = np.array([4.0, 3.0])
    pooled = (((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum()) / (3 + 2)
    assert spread_se(total, sumsq, n, np.array([0, 0]), prior_weight=0.0) == pytest.approx(np.sqrt(pooled / n))
    # separate groups: each its own variance
    alone = spread_se(total, sumsq, n, np.array([0, 1]), prior_weight=0.0)
    assert alone[0] == pytest.approx(np.sqrt(a.var(ddof=1) / 4)) and alone[1] == pytest.approx(np.sqrt(b.var(ddof=1) / 3))
    # the pseudo-observation pulls a tiny spread towards the Bernoulli variance, less so with more data
    p_bar = (total + 0.5) / (n + 1)
    shrunk = spread_se(total, sumsq, n, np.array([0, 0]))
    expected = (pooled * 5 + np.mean(p_bar * (1 - p_bar))) / 6
    assert shrunk == pytest.approx(np.sqrt(expected / n))
    rng = np.random.default_rng(0)
    many = rng.uniform(0.45, 0.55, size=(50, 40))
    se = spread_se(many.sum(1), (many**2).sum(1), np.full(50, 40.0), np.zeros(50, dtype=int))
    # 1950 residual degrees of freedom: the pseudo-observation (a variance 300× this spread) adds ~7%
    assert se[0] == pytest.approx(np.sqrt(many.var(axis=1, ddof=1).mean() / 40), rel=0.1)
    # Beta SE assumes win/loss outcomes: for outcomes clustered at ½ it is ~10× the spread one
    assert raee_estimate(many[0]).se_p_raw > 8 * se[0]
