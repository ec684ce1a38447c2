"""Issue #17: per-judge reliability in the PoE posterior and stopping that tolerates ties."""

import dataclasses
import math
import random

import pytest
import torch
from scipy.stats import norm

from judgekit import quality_behaviour, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.poe import (
    IndifferenceZone,
    Observations,
    PoEConfig,
    fit_laplace,
    fit_with_reliability,
    indifference_stop,
    neighbour_status,
)
from orchestrator.poe.objective import NegLogPosterior


def panel(n=12, seed=0, repeats=2):
    """Three judges on every ordered pair: a sharp one (t = 3) favouring the first-shown (Δ = −0.5),
    a plain one (t = 1), and one answering at random."""
    rng = random.Random(seed)
    q = [rng.gauss(0, 1) for _ in range(n)]
    comparisons = []
    for _ in range(repeats):
        for i in range(n):
            for j in range(n):
                if i != j:
                    comparisons.append((i, j, 1 / (1 + math.exp(-3 * (q[i] - q[j] + 0.5))), 0))
                    comparisons.append((i, j, 1 / (1 + math.exp(-(q[i] - q[j]))), 1))
                    comparisons.append((i, j, rng.random(), 2))
    return q, comparisons


def test_gradient_and_hessian_with_per_judge_parameters_match_autograd():
    obs = Observations.from_lists(
        5, [(0, 1, 0.7, 0), (1, 2, 0.4, 1), (2, 3, 0.9, 0), (3, 4, 0.2, 1), (4, 0, 0.6, 1)], [(0, 7.0, 1.0, 0), (3, 4.0, 2.0, 1)]
    )
    for home in (False, True):
        for sharp in (False, True):
            objective = NegLogPosterior(obs, PoEConfig(home_advantage=home, judge_sharpness=sharp))
            theta = objective.initial() + 0.3 * torch.randn(objective.dim, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
            _, grad, hess = objective.evaluate(theta)
            assert torch.allclose(grad, torch.autograd.functional.jacobian(objective.value, theta), atol=1e-10)
            assert torch.allclose(hess, torch.autograd.functional.hessian(objective.value, theta), atol=1e-10)
    # graded verdicts on two of the comparisons: the ordered-logit expert's terms too
    graded = dataclasses.replace(
        obs,
        grades=torch.tensor(
            [[0.1, 0.5, 0.2, 0.1, 0.1], [float("nan")] * 5, [0, 0, 1, 0, 0], [float("nan")] * 5, [0, 0, 0, 0.3, 0.7]], dtype=torch.float64
        ),
        cuts=torch.tensor([[0.4, 1.5], [0.8, 2.5]], dtype=torch.float64),
    )
    objective = NegLogPosterior(graded, PoEConfig(home_advantage=True, judge_sharpness=True))
    theta = objective.initial() + 0.3 * torch.randn(objective.dim, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    _, grad, hess = objective.evaluate(theta)
    assert torch.allclose(grad, torch.autograd.functional.jacobian(objective.value, theta), atol=1e-10)
    assert torch.allclose(hess, torch.autograd.functional.hessian(objective.value, theta), atol=1e-10)


def test_per_judge_bias_and_sharpness_are_recovered_and_a_random_judge_weighs_almost_nothing():
    q, comparisons = panel()
    post = fit_laplace(Observations.from_lists(len(q), comparisons), PoEConfig(home_advantage=True, judge_sharpness=True))
    sharp, plain, coin = post.judges["sharpness"].tolist()
    # the scale of the scores is the prior's, so sharpness is identified up to a common factor:
    # the sharp judge is three times the plain one
    assert sharp / plain == pytest.approx(3.0, rel=0.15)
    # a comparison's weight in the posterior is t²: the coin's is < 2% of the plain judge's
    assert (coin / plain) ** 2 < 0.02
    # Δ is on the score scale (d = t(s_i − s_j − Δ)); only the first judge favours the first-shown
    scale = 3.0 / sharp  # the fitted scores are scale · q
    delta = post.judges["delta"].tolist()
    assert delta[0] == pytest.approx(-0.5 * scale, abs=0.05) and delta[0] < -2 * post.judges["delta_sd"][0]
    assert abs(delta[1]) < 3 * float(post.judges["delta_sd"][1])
    ranking = torch.argsort(post.mean, descending=True).tolist()
    assert ranking == sorted(range(len(q)), key=lambda c: -q[c])


def test_precision_rewards_a_reproducible_judge_and_not_a_scattered_one():
    q, comparisons = panel(n=10, seed=2, repeats=1)
    exact = [(i, j, p, 0) for i, j, p, judge in comparisons if judge == 1]  # probabilities exactly σ(q_i − q_j)
    rng = random.Random(4)
    scattered = [(i, j, 1 / (1 + math.exp(-(math.log(p / (1 - p)) + rng.gauss(0, 1.5)))), 0) for i, j, p, _ in exact]
    config = PoEConfig(judge_sharpness=True, judge_precision=True)
    sharp = fit_with_reliability(Observations.from_lists(10, exact), config)
    blurred = fit_with_reliability(Observations.from_lists(10, scattered), config)
    assert float(sharp.judges["precision"][0]) > 10  # grows with n/ν: the prior's pseudo-judgments bound it
    assert float(sharp.judges["precision"][0]) > 4 * float(blurred.judges["precision"][0])


def test_the_panel_ranks_as_well_as_its_good_judges_despite_the_coin():
    q, comparisons = panel(n=10, seed=3, repeats=1)
    few = comparisons[: 3 * 30]  # a third of the pairs: where the coin could do harm
    shared = fit_laplace(Observations.from_lists(len(q), [c[:3] for c in few]), PoEConfig())
    weighted = fit_laplace(Observations.from_lists(len(q), few), PoEConfig(judge_sharpness=True))
    from scipy.stats import spearmanr

    assert spearmanr(weighted.mean, q).statistic >= spearmanr(shared.mean, q).statistic


def test_indifference_zone_error_and_expected_gain_follow_their_formulas():
    q, comparisons = panel(n=6, seed=1, repeats=1)
    post = fit_laplace(Observations.from_lists(6, [c for c in comparisons if c[3] == 1][:12]), PoEConfig())
    status = neighbour_status(post, IndifferenceZone(0.5))
    a, b = int(status.order[0]), int(status.order[1])
    mu = float(post.mean[a] - post.mean[b])
    v = float(post.cov[a, a] + post.cov[b, b] - 2 * post.cov[a, b])
    assert float(status.error[0]) == pytest.approx(norm.cdf(-(mu + 0.5) / math.sqrt(v)), rel=1e-9)
    assert float(status.tie_probability[0]) == pytest.approx(norm.cdf((0.5 - mu) / v**0.5) - norm.cdf((-0.5 - mu) / v**0.5), rel=1e-9)
    # expected gain by Monte Carlo over the preposterior mean
    c = 1 / (1 + math.exp(-mu)) / (1 + math.exp(mu))
    v_next = v - c * v * v / (1 + c * v)
    m = torch.randn(400_000, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * math.sqrt(v - v_next) + mu
    expected = float(torch.tensor(norm.cdf(-(m.abs().numpy() + 0.5) / math.sqrt(v_next))).mean())
    assert float(status.gain[0]) == pytest.approx(float(status.error[0]) - expected, abs=5e-4)


def test_top_k_asks_less_than_the_whole_ranking():
    n = 8
    q = [3.0, 1.5, 0.5, 0.0, -0.2, -0.4, -0.6, -0.8]
    comparisons = [(i, j, 1 / (1 + math.exp(-4 * (q[i] - q[j]))), 0) for i in range(n) for j in range(n) if i != j and min(i, j) < 2]
    post = fit_with_reliability(Observations.from_lists(n, comparisons), PoEConfig(judge_sharpness=True, judge_precision=True))
    assert indifference_stop(post, IndifferenceZone(top_k=1)).stop
    assert not indifference_stop(post).stop  # the tail was hardly compared with itself


@pytest.fixture
def tie_world(tmp_path):
    """One prompt, ten candidates of which six are exactly equal; the judge answers from the true
    qualities (P(A) = σ(6 (q_A − q_B)))."""
    data = write_dataset(tmp_path / "data", prompts=1, candidates=10, base=[0.5] * 6 + [0.9, 0.75, 0.25, 0.1], spread=0.0)
    with FakeOpenAIServer(quality_behaviour) as server:
        yield tmp_path, data, server


def test_the_default_config_stops_by_itself_on_ties_and_says_which_are_tied(tie_world):
    tmp_path, (prompts, responses), server = tie_world
    config = write_config(tmp_path, server.url, name="ties", prompts=prompts, responses=responses, max_calls=90)
    path, reason = api.start(config)
    spent = len(server.requests)
    assert reason.startswith("stopping rule:"), reason
    assert spent <= 60, f"{spent} of 90 calls"  # today: all 90
    (group,) = api.ranking(path).as_dict()["groups"]
    tied = {c for pair in group["ties"] for c in pair}
    assert tied and tied <= {f"M{c}" for c in range(6)}
    assert group["spearman_vs_truth"] >= 0.8
    top = [r["candidate"] for r in group["ranking"][:2]]
    assert top == ["M6", "M7"]
    (judge,) = group["judges"]
    # one judge: its sharpness is not fitted (it would only trade against the prior's scale); its
    # reproducible answers make each worth several coin flips
    assert judge["judge"] == "local-openai" and "sharpness" not in judge and judge["precision"] > 3 and judge["agreement"] >= 0.9


def test_stopping_can_be_switched_off_and_rank_stability_stops_too(tie_world):
    tmp_path, (prompts, responses), server = tie_world
    off = write_config(
        tmp_path, server.url, name="off", prompts=prompts, responses=responses, max_calls=40, budget_extra='[stopping]\nrule = "budget"\n'
    )
    _, reason = api.start(off)
    assert reason.startswith("budget: max_calls (40 of 40"), reason
    stable = write_config(
        tmp_path,
        server.url,
        name="stable",
        prompts=prompts,
        responses=responses,
        max_calls=90,
        budget_extra='[stopping]\nrule = "budget"\nstable_rounds = 3\n',
    )
    _, reason = api.start(stable)
    assert reason == "stopping rule: the ranking has not changed for 3 rounds"


def test_a_run_file_from_before_keeps_its_behaviour_and_an_unreadable_config_is_one_line():
    from orchestrator.errors import OrchestratorError
    from orchestrator.records.config import RunConfig

    stored = RunConfig.model_validate({"data": {"prompts": "p.jsonl", "responses": "r.jsonl"}}).to_json()
    # what a run made before judge reliability and stopping rules were stored
    del stored["model"]["judge_reliability"], stored["stopping"]["rule"]
    old = RunConfig.from_stored(stored)
    assert old.model.judge_reliability is False and old.stopping.rule == "budget"
    assert RunConfig.from_stored(RunConfig.model_validate({"data": stored["data"]}).to_json()).stopping.rule == "indifference"
    with pytest.raises(OrchestratorError, match=r"cannot be read by this version \(model.colour: Extra inputs are not permitted\)"):
        RunConfig.from_stored({**stored, "model": {**stored["model"], "colour": 1}})


def test_a_small_gap_known_precisely_is_ordered_and_never_called_a_tie_of_unknown_order():
    import torch

    from orchestrator.poe import Posterior, neighbour_status

    mean = torch.tensor([0.2, 0.0, -0.05], dtype=torch.float64)
    # candidates 0 and 1: gap 0.2 < δ = 0.5 with sd 0.02 (ordered); 1 and 2: gap 0.05 with sd 0.14
    cov = torch.tensor([[1.0, 0.9998, 0.99], [0.9998, 1.0, 0.99], [0.99, 0.99, 1.0]], dtype=torch.float64)
    post = Posterior(mean, cov, mean, cov, None, None, None, 1, True, 10)
    status = neighbour_status(post, IndifferenceZone(0.5))
    assert status.tied.tolist() == [True, True]
    assert status.ordered(0.05).tolist() == [True, False]
