"""The Bayesian simplex model (simplex paper §3–5, App. B): the weight-propagation prior for any M,
score data, baselines, NUTS inference on simulated judges, degenerate data, the likelihoods
(the CLI and the absolute campaign: tests/simplex/test_simplex_cli.py)."""

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import spearmanr

from conftest import ROOT
from orchestrator.errors import OrchestratorError
from orchestrator.simplex import (
    SimplexSettings,
    build_score_data,
    collapse_levels,
    confusion_matrix,
    edge_concentrations,
    fit_simplex,
    n_judge_parameters,
    parse_self_map,
    propagation_table,
)
from orchestrator.simplex import baselines as B
from orchestrator.simplex.simulate import from_model, misspecified, sample_confusion

LIKERT = ROOT / "examples" / "summeval-likert" / "coherence.log.jsonl"
TRUTH = ROOT / "examples" / "summeval-gpt35" / "responses.jsonl"
QUICK = dict(chains=2, warmup=300, draws=300)


# -- the prior ---------------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [2, 3, 5, 7])
def test_weight_propagation_rows_are_distributions_ordered_by_stochastic_dominance(levels):
    rng = np.random.default_rng(levels)
    theta = sample_confusion(200, levels, beta_max=5.0, rng=rng)
    assert theta.shape == (200, levels, levels)
    assert np.allclose(theta.sum(axis=-1), 1.0) and (theta >= 0).all()
    cdf = np.cumsum(theta, axis=-1)
    # a higher true score never makes a low assigned score more likely (App. B.3.3): no label switching
    assert (np.diff(cdf, axis=1) <= 1e-12).all()


def test_graph_structure_for_m3_matches_the_paper_and_counts_parameters():
    edges = propagation_table(3)
    assert len(edges) == 2 * (3 + 2 + 1)  # two transitions; nodes with 3, 2, 1 children
    boosted = {(e["from"], e["to"]) for e in edges if e["concentration"] == "1 + ρβ_max"}
    assert boosted == {((1, 1), (2, 2)), ((1, 2), (2, 3)), ((2, 1), (3, 2)), ((2, 2), (3, 3))}
    # App. B.3.2: the Dirichlet out of node (1, 1) is [1, 1 + ρβ_max, 1]
    conc = edge_concentrations(3, np.array([0.5 * 10.0]))
    assert conc[0][0, 0].tolist() == [1.0, 6.0, 1.0] and conc[1][0, 0].tolist() == [1.0, 6.0]
    assert n_judge_parameters(3) == 2 + 2 * 3 and n_judge_parameters(5) == 4 + 4 * 10


def test_a_discriminating_judge_moves_one_level_per_true_level():
    """Root on level 1 and every edge weight on the one-step-up child gives the identity matrix;
    every edge on "stay" gives a judge that ignores the answer."""
    levels = 5
    root = np.eye(levels)[0][None]
    step_up = [np.tile(np.eye(levels - s)[1 % (levels - s)], (1, levels - 1, 1)) for s in range(levels - 1)]
    assert np.allclose(confusion_matrix(root, step_up)[0], np.eye(levels))
    stay = [np.tile(np.eye(levels - s)[0], (1, levels - 1, 1)) for s in range(levels - 1)]
    assert np.allclose(confusion_matrix(root, stay)[0], np.tile(np.eye(levels)[0], (levels, 1)))
    # larger β_max concentrates the prior on discriminating judges: more mass on the diagonal
    rng = np.random.default_rng(0)
    diag = [np.mean(np.trace(sample_confusion(400, 3, b, rng), axis1=1, axis2=2)) for b in (0.0, 20.0)]
    assert diag[1] > diag[0] + 0.2


# -- data --------------------------------------------------------------------------------------


def test_score_data_counts_repeats_and_refuses_bad_levels():
    recs = [("j", "a", "q1", {"3": 1.0}), ("j", "a", "q1", {"4": 1.0}), ("j", "b", "q1", {"1": 0.2, "2": 0.8})]
    data = build_score_data(recs, levels=5)
    assert data.hard_counts[0, 0].tolist() == [0, 0, 1, 1, 0] and data.runs[0, 0, 0] == 2
    assert data.soft_counts[0, 1].tolist() == pytest.approx([0.2, 0.8, 0, 0, 0])
    assert data.item_scores()[0, 0, 0] == 3.5 and data.item_scores(soft=True)[0, 1, 0] == pytest.approx(1.8)
    with pytest.raises(OrchestratorError, match="score '7' of judge 'j' on candidate 'a', prompt 'q1' is outside 1..5"):
        build_score_data([("j", "a", "q1", {"7": 1.0})], levels=5)
    with pytest.raises(OrchestratorError, match="outside 1..5"):
        build_score_data([("j", "a", "q1", {"2.5": 1.0})], levels=5)
    with pytest.raises(OrchestratorError, match="no absolute judgments"):
        build_score_data([], levels=5)
    with pytest.raises(OrchestratorError, match="at least 2"):
        build_score_data(recs, levels=1)
    collapsed = collapse_levels(data, [1, 1, 2, 2, 3])
    assert collapsed.levels == 3 and collapsed.hard_counts[0, 0].tolist() == [0, 2, 0]  # 3 and 4 both become 2
    with pytest.raises(OrchestratorError, match="non-decreasing"):
        collapse_levels(data, [2, 1, 2, 3, 3])


def test_self_judging_map_is_checked_and_excluded():
    recs = [(j, c, f"q{i}", {"2": 1.0}) for j in ("gpt", "claude") for c in ("gpt-4o", "claude-3") for i in range(3)]
    data = build_score_data(
        recs, levels=3, self_map=parse_self_map("gpt=gpt-4o; claude=claude-3", ["claude", "gpt"], ["claude-3", "gpt-4o"])
    )
    assert data.self_pairs.tolist() == [[True, False], [False, True]]  # judges/candidates sorted
    assert data.without_self().hard_counts.sum() == 6
    for bad, message in (
        ("gpt", "is not JUDGE=CANDIDATE"),
        ("llama=gpt-4o", "unknown judge 'llama'"),
        ("gpt=gpt-5", "unknown candidate 'gpt-5'"),
    ):
        with pytest.raises(OrchestratorError, match=message):
            parse_self_map(bad, ["claude", "gpt"], ["claude-3", "gpt-4o"])


# -- baselines -----------------------------------------------------------------------------------


def test_rao_kupper_recovers_strengths_and_the_tie_parameter():
    rng = np.random.default_rng(0)
    true, theta = np.linspace(-1, 1, 5), 1.5
    wins, ties = np.zeros((5, 5)), np.zeros((5, 5))
    for _ in range(20000):
        i, j = rng.choice(5, 2, replace=False)
        pi, pj = np.exp(true[i]), np.exp(true[j])
        p_win, p_loss = pi / (pi + theta * pj), pj / (pj + theta * pi)
        u = rng.random()
        if u < p_win:
            wins[i, j] += 1
        elif u < p_win + p_loss:
            wins[j, i] += 1
        else:
            ties[i, j] += 1
            ties[j, i] += 1
    strength, tie = B.rao_kupper(wins, ties)
    assert strength == pytest.approx(true - true.mean(), abs=0.05) and tie == pytest.approx(theta, abs=0.05)


def test_baselines_on_score_data_and_their_coverage_rules():
    data, truth = misspecified(3, 6, 5, 60, seed=1)
    scores = data.item_scores()
    average = B.simple_average(scores)
    assert average == pytest.approx(np.nanmean(B.judge_means(scores), axis=0))
    boot = B.bootstrap_average(scores, draws=200)
    point = B.ranks(boot.estimate)
    assert ((boot.rank_low <= point) & (point <= boot.rank_high)).all()
    bt = B.bradley_terry(scores, draws=50)
    assert spearmanr(bt.estimate, average).statistic > 0.8
    wins, ties = B.score_pairs(scores)
    assert (wins + wins.T + ties)[0, 1] == np.sum(~np.isnan(scores[:, 0]) & ~np.isnan(scores[:, 1]))
    # a point method "covers" a true rank only by hitting it exactly
    exact = B.evaluate(B.MethodResult("x", truth.copy()), truth)
    assert exact == {"spearman": pytest.approx(1.0), "coverage": 1.0}


# -- inference -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.isolated(fast_compile=True)
def test_fit_recovers_the_ranking_of_data_drawn_from_the_model():
    data, truth = from_model(4, 8, 3, 120, seed=3)
    fit = fit_simplex(data, SimplexSettings(beta_max=5.0, **QUICK))
    assert fit.rhat["expected_centred"] < 1.05 and fit.divergences == 0
    assert spearmanr(fit.expected_mean, truth).statistic > 0.85
    ranks = fit.ranks()
    true_rank = B.ranks(truth)
    assert np.mean((ranks.lower.numpy() <= true_rank) & (true_rank <= ranks.upper.numpy())) >= 0.75
    theta = fit.confusion_mean()
    assert theta.shape == (4, 3, 3) and np.allclose(theta.sum(-1), 1, atol=1e-4)
    assert (np.diff(np.cumsum(theta, -1), axis=1) <= 1e-6).all()  # the posterior keeps the ordering


@pytest.mark.slow
@pytest.mark.isolated(fast_compile=True)
def test_more_chains_than_host_devices_run_in_turns_and_one_compilation_serves_other_numbers():
    """Chains beyond the host devices (≥ 4) run in a second turn; a sampler built for one model
    structure fits other data of the same shapes and other ω without compiling again."""
    import jax

    from orchestrator.simplex.sampler import Sampler, structure

    data, _ = from_model(2, 4, 3, 40, seed=2)
    chains = jax.local_device_count() + 1
    fit = fit_simplex(data, SimplexSettings(chains=chains, warmup=30, draws=20))
    assert fit.draws["expected"].shape == (chains, 20, 4) and np.isfinite(fit.rhat["ranking"])
    settings = SimplexSettings(omega=1.0, chains=2, warmup=30, draws=20)
    sampler = Sampler(data.levels, structure(settings, False), settings, False)
    other, _ = from_model(2, 4, 3, 40, seed=3)

    def compilations(fit) -> list[str]:
        """jax.log_compiles' messages about the sampler program while ``fit`` runs."""
        import logging

        seen: list[str] = []
        handler = logging.Handler()
        handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
        logger = logging.getLogger("jax")
        logger.addHandler(handler)
        try:
            with jax.log_compiles():
                fit()
        finally:
            logger.removeHandler(handler)
        return [m for m in seen if m.startswith("Compiling jit(_fun)")]  # jax.pmap names the program _fun

    assert compilations(lambda: fit_simplex(data, settings, sampler=sampler))  # the first fit compiles (and is seen)
    assert compilations(lambda: fit_simplex(other, settings, sampler=sampler)) == []  # other data, same shapes
    assert compilations(lambda: fit_simplex(data, replace(settings, omega=4.0), sampler=sampler)) == []  # other ω


@pytest.mark.slow
@pytest.mark.isolated(fast_compile=True)
def test_degenerate_data_gives_warnings_not_crashes():
    same = build_score_data([(j, c, f"q{i}", {"4": 1.0}) for j in ("a", "b") for c in ("x", "y", "z") for i in range(10)], levels=5)
    fit = fit_simplex(same, SimplexSettings(chains=2, warmup=150, draws=150))
    assert any("every score is 4" in w for w in fit.warnings)
    ranks = fit.ranks()
    assert (ranks.upper - ranks.lower).max() >= 1  # nothing separates the candidates
    one = build_score_data([("a", "x", f"q{i}", {str(1 + i % 3): 1.0}) for i in range(12)], levels=3)
    fit = fit_simplex(one, SimplexSettings(chains=2, warmup=100, draws=100))
    assert any("one candidate" in w for w in fit.warnings) and fit.ranks().lower.tolist() == [1]
    with pytest.raises(OrchestratorError, match=r"omega \(--omega\) must be ≥ 0"):
        fit_simplex(one, SimplexSettings(omega=-1.0))
    with pytest.raises(OrchestratorError, match=r"delta \(--delta\) needs 3 positive numbers"):
        fit_simplex(one, SimplexSettings(delta=(1.0, 2.0)))
    with pytest.raises(OrchestratorError, match=r"delta \(--delta\) needs positive numbers"):
        SimplexSettings(delta=(1.0, 0.0, 2.0))


@pytest.mark.slow
@pytest.mark.isolated(fast_compile=True)
def test_self_preference_shift_is_estimated_for_the_biased_judge():
    rng = np.random.default_rng(5)
    data, _ = from_model(3, 6, 3, 100, seed=5)
    scores = data.item_scores().astype(int)
    # judge0 inflates its own family's candidates (cand00, cand01) by one level with probability 0.8
    bump = rng.random(scores[0, :2].shape) < 0.8
    scores[0, :2] = np.minimum(scores[0, :2] + bump, 3)
    recs = [
        (data.judges[j], data.candidates[k], f"q{i}", {str(scores[j, k, i]): 1.0}) for j in range(3) for k in range(6) for i in range(100)
    ]
    biased = build_score_data(recs, levels=3, self_map={"judge0": {"cand00", "cand01"}})
    fit = fit_simplex(biased, SimplexSettings(beta_max=5.0, self_preference="shift", **QUICK))
    tau = fit.draws["tau"].reshape(-1, 3).mean(0)
    assert tau[0] > 0.4 and tau[0] > tau[1] + 0.2  # the biased judge's shift is found, the others' is prior noise
    excluded = fit_simplex(biased, SimplexSettings(beta_max=5.0, **QUICK))
    assert "tau" not in excluded.draws


# -- the CLI on real judges ---------------------------------------------------------------------------


# -- the loop's absolute campaign ------------------------------------------------------------------------


def test_quick_coverage_of_the_misspecified_generator_is_reported_honestly():
    """The misspecified world's truth is the exact E[S*]: a sanity check of the generator itself."""
    data, truth = misspecified(4, 10, 5, 200, seed=0)
    assert data.shape == (4, 10, 200, 5)
    means = B.simple_average(data.item_scores())
    assert spearmanr(means, truth).statistic > 0.8  # judges see quality, with noise and leniency
    assert math.isclose(float(np.sum(data.hard_counts)), 4 * 10 * 200)


def test_design_effect_counts_judges_who_agree_on_an_answer_as_fewer_observations():
    """Issue #20: the default fit discounts each score by the judges' design effect."""
    from orchestrator.simplex.data import build_score_data, design_effect

    rng = np.random.default_rng(0)
    quality = {(c, q): int(rng.integers(1, 6)) for c in ("a", "b", "c") for q in range(40)}
    agree = [(j, c, str(q), {str(s): 1.0}) for (c, q), s in quality.items() for j in ("j1", "j2", "j3", "j4")]
    assert design_effect(build_score_data(agree, levels=5)) == pytest.approx(4.0)  # four copies of one score
    noise = [(j, c, str(q), {str(int(rng.integers(1, 6))): 1.0}) for (c, q) in quality for j in ("j1", "j2", "j3", "j4")]
    assert design_effect(build_score_data(noise, levels=5)) < 1.3  # independent judges: about 1
    one = [(r[0], r[1], r[2], r[3]) for r in agree if r[0] == "j1"]
    assert design_effect(build_score_data(one, levels=5)) == 1.0


def test_answer_likelihood_shares_the_true_score_and_keeps_each_judges_marginal():
    """Issue #20 extension: with one judge per answer the answers likelihood is Eq. B.3 exactly;
    judges agreeing on an answer are evidence about the answer, not independent observations."""
    import jax.numpy as jnp

    from orchestrator.simplex.model import answer_log_likelihood

    rng = np.random.default_rng(2)
    J, K, Q, M = 3, 4, 6, 3
    theta = rng.dirichlet(np.ones(M), size=(J, M))  # (J, M, M)
    pi_bar = rng.dirichlet(np.ones(M), size=K)
    seen = np.broadcast_to(theta[:, None], (J, K, M, M))
    scores = rng.integers(0, M, size=(J, K, Q))
    item_counts = np.zeros((J, K, Q, M))
    item_counts[np.arange(J)[:, None, None], np.arange(K)[None, :, None], np.arange(Q)[None, None, :], scores] = 1.0

    def ours(counts):
        log_seen = jnp.log(jnp.asarray(seen[: len(counts)]))
        return float(answer_log_likelihood(jnp.asarray(counts), jnp.log(jnp.asarray(pi_bar)), log_seen))

    def paper(counts):  # Eq. B.3: every score with its own latent true score
        gamma = np.einsum("km,jms->jks", pi_bar, theta[: len(counts)])
        return float(np.sum(counts.sum(axis=2) * np.log(gamma)))

    one_judge = item_counts[:1]
    assert ours(one_judge) == pytest.approx(paper(one_judge), rel=1e-5)
    # three judges on the same answers: the joint differs from Eq. B.3 (shared latent score) ...
    assert abs(ours(item_counts) - paper(item_counts)) > 1e-3
    # ... and by hand for one answer: log Σ_m π_m Π_j θ_j[m, s_j]
    by_hand = np.log(sum(pi_bar[0, m] * np.prod([theta[j, m, scores[j, 0, 0]] for j in range(J)]) for m in range(M)))
    single = np.zeros_like(item_counts)
    single[:, 0, 0] = item_counts[:, 0, 0]
    assert ours(single) == pytest.approx(by_hand, rel=1e-5)


def test_the_ranking_r_hat_ignores_the_latent_scales_location_and_spread():
    """Chains that agree on the order but not on the scale's spread (simplex paper, Theorem 2) are
    converged for the ranking: its R-hat reads standardised expected scores."""
    from orchestrator.simplex.diagnostics import ranking_draws, split_diagnostics

    rng = np.random.default_rng(0)
    base = np.linspace(2.0, 4.0, 6) + rng.normal(0, 0.05, size=(4, 500, 6))
    stretched = base.copy()
    stretched[2] = 3.0 + 1.15 * (stretched[2] - 3.0)  # one chain's scale is 15% wider
    stretched[3] += 0.2  # another sits higher
    centred = stretched - stretched.mean(-1, keepdims=True)
    rhat, _ = split_diagnostics({"expected_centred": centred, "ranking": ranking_draws(stretched)}, chains=4)
    assert rhat["expected_centred"] > 1.05 and rhat["ranking"] < 1.01
    swapped = base.copy()
    swapped[1][:, [0, 5]] = swapped[1][:, [5, 0]]  # a chain that ranks differently is not converged
    assert split_diagnostics({"ranking": ranking_draws(swapped)}, chains=4)[0]["ranking"] > 1.1
    assert np.all(ranking_draws(np.ones((1, 3, 4))) == 0)  # no spread: zeros, not NaN
