"""Issue #17: the value of a request per unit of cost, for comparisons and absolute scores alike."""

import sqlite3

import torch

from judgekit import quality_behaviour, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.poe import reorder_probability, soft_bradley_terry
from orchestrator.poe.experts import expected_curvature
from orchestrator.run.planners.cost import absolute_values, pairwise_values, value_parameters


def random_posterior(n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    mean = torch.randn(n, generator=g, dtype=torch.float64)
    a = torch.randn(n, n, generator=g, dtype=torch.float64)
    return mean, a @ a.T / n + 0.1 * torch.eye(n, dtype=torch.float64)


def pair_variance(cov):
    d = cov.diagonal()
    return d[:, None] + d[None, :] - 2 * cov


def test_an_absolute_score_is_worth_the_variance_it_removes_from_every_pair_of_its_candidate():
    """``absolute_values`` equals the brute-force rank-one update of the precision (Sherman–Morrison)."""
    mean, cov = random_posterior()
    scores = reorder_probability(mean, cov)
    c = 0.7
    values = absolute_values(cov, scores, c)
    v = pair_variance(cov)
    for i in range(len(mean)):
        e = torch.zeros(len(mean), dtype=torch.float64)
        e[i] = 1.0
        updated = torch.linalg.inv(torch.linalg.inv(cov) + c * torch.outer(e, e))
        removed = (v - pair_variance(updated)) / v.clamp_min(1e-300)
        expected = sum(float((scores[i, k] + scores[k, i]) / 2 * removed[i, k]) for k in range(len(mean)) if k != i)
        assert abs(float(values[i]) - expected) < 1e-10


def test_a_comparison_is_worth_the_fraction_of_its_pairs_variance_it_removes():
    mean, cov = random_posterior(seed=1)
    scores = reorder_probability(mean, cov)
    expert = soft_bradley_terry()
    t, kappa = 1.7, 3.0
    values = pairwise_values(mean, cov, scores, t, kappa, expert)
    v = pair_variance(cov)
    for a, b in [(0, 1), (2, 5), (4, 3)]:
        c = kappa * t**2 * float(expected_curvature(expert, torch.tensor([t * float(mean[a] - mean[b])], dtype=torch.float64))[0])
        assert abs(float(values[a, b]) - float(scores[a, b]) * c * float(v[a, b]) / (1 + c * float(v[a, b]))) < 1e-12


def test_judges_not_asked_yet_are_valued_by_price_and_measured_ones_at_their_upper_sharpness():
    costs = {"cheap": 0.1, "good": 1.0, "new": 0.5}
    # nothing measured: every judge (1, 1), the price decides
    assert value_parameters({}, costs) == {j: (1.0, 1.0) for j in costs}
    fitted = {"cheap": (2.0, 2.5, 3.0), "good": (4.0, 6.0, 10.0)}
    params = value_parameters(fitted, costs)
    assert params["cheap"] == (2.5, 3.0) and params["good"] == (6.0, 10.0)
    # best measured κ t² per cost: good's 10 · 6² / 1 = 360 (cheap's 3 · 2.5² / 0.1 = 187.5); a judge
    # never asked counts as twice that per cost: κ = 2 · 10 · 0.5 / 1 at good's sharpness
    assert params["new"] == (6.0, 10.0)


def test_mixed_kinds_ask_absolute_scores_where_they_pay_and_comparisons_elsewhere(tmp_path):
    """``selection.kinds = "mixed"``: absolute scores compete with comparisons for the budget (not a
    fixed warm start) and the ranking across prompts comes out right."""
    prompts, responses = write_dataset(tmp_path / "data", prompts=3, candidates=6, spread=0.0, base=[0.9, 0.75, 0.6, 0.45, 0.3, 0.15])
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(
            tmp_path,
            server.url,
            name="mixed",
            prompts=prompts,
            responses=responses,
            scope="global",
            max_calls=30,
            extra='[stopping]\nrule = "budget"\n',
        )
        config.write_text(config.read_text().replace('strategy = "reorder"', 'strategy = "reorder"\nkinds = "mixed"'))
        path, reason = api.start(config)
    assert reason.startswith("budget"), reason
    db = sqlite3.connect(path)
    kinds = dict(db.execute("select kind, count(*) from judgments where status = 'ok' group by kind"))
    assert kinds.get("absolute", 0) >= 1 and kinds.get("pairwise", 0) >= 1, kinds
    first_pairwise = db.execute("select min(round) from judgments where kind = 'pairwise'").fetchone()[0]
    last_absolute = db.execute("select max(round) from judgments where kind = 'absolute'").fetchone()[0]
    print(kinds, list(db.execute("select round, kind, count(*) from judgments group by round, kind")))
    assert first_pairwise <= last_absolute  # interleaved by value, not a warm start followed by comparisons
    (group,) = api.ranking(path).as_dict()["groups"]
    assert [r["candidate"] for r in group["ranking"][:3]] == ["M0", "M1", "M2"]
