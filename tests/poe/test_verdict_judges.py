"""Judges without log-probabilities: verdicts are counts, fitted as such; a log of
verdicts replays as verdicts; a record whose probabilities cannot come from its method is refused."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from judgekit import quality_behaviour, write_config, write_dataset
from orchestrator import api
from orchestrator.errors import OrchestratorError
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.poe import Observations, PoEConfig, fit_with_reliability, get_expert, permutation_debias, rank_intervals
from orchestrator.poe.laplace import fit_laplace
from orchestrator.poe.verdicts import MIXTURE_MIN_WEIGHT, PRIOR_GRID, fit_prior_scale
from orchestrator.records.log import LogRecord, load_log
from orchestrator.store import open_run

CONFIG = PoEConfig(expert=get_expert("soft_bt"), judge_sharpness=True, judge_precision=True)


def _verdicts(seed: int, *, n: int = 12, pairs: int = 60, tau: float = 0.2, bias: float = 1.5) -> tuple[np.ndarray, Observations]:
    """True scores and the verdicts of a Bradley–Terry judge with position bias that returns one
    verdict per shown order (both orders of each pair, permutation-debiased)."""
    rng = np.random.default_rng(seed)
    true = rng.normal(0.0, tau, n)
    comparisons = []
    for _ in range(pairs):
        i, j = rng.choice(n, 2, replace=False)
        first = rng.random() < 1 / (1 + np.exp(-(true[i] - true[j] + bias)))
        second = rng.random() < 1 / (1 + np.exp(-(true[j] - true[i] + bias)))
        comparisons.append((int(i), int(j), float(permutation_debias(float(first), float(second)))))
    return true, Observations.from_lists(n, comparisons)


def _verdict_coverage(empirical: bool, *, seeds: int = 30, **simulation) -> float:
    """Coverage of the true ranks by the 95% rank intervals fitted to :func:`_verdicts`."""
    covered = []
    for seed in range(seeds):
        true, obs = _verdicts(seed, **simulation)
        ranks = (-true).argsort().argsort() + 1
        post = fit_with_reliability(obs, dataclasses.replace(CONFIG, empirical_prior_scale=empirical))
        intervals = rank_intervals(post, generator=torch.Generator().manual_seed(seed))
        low, high = intervals.lower.numpy(), intervals.upper.numpy()
        covered.extend(((low <= ranks) & (ranks <= high)).tolist())
    return float(np.mean(covered))


def test_rank_intervals_from_verdicts_cover_the_true_ranking_at_their_level():
    # read as stated probabilities under the unit prior, the verdicts' intervals miss (0.85 here);
    # with the prior's scale averaged over by its evidence they cover, without covering everything
    assert _verdict_coverage(False) < 0.9
    assert 0.93 <= _verdict_coverage(True) <= 0.985
    # scores far closer together than the verdicts resolve: still covered
    assert _verdict_coverage(True, seeds=20, tau=0.05) >= 0.93


def test_the_lower_end_of_the_scale_grid_does_not_decide_how_wide_the_intervals_are():
    # under a proper prior on the scale the mass below τ shrinks like τ, so a grid taken two
    # decades further down (τ to 0.0001) moves neither the scale nor the intervals
    config = dataclasses.replace(CONFIG, empirical_prior_scale=True)
    low_grid = PRIOR_GRID + tuple(float(10 ** (k / 2)) for k in range(9, 17))
    for seed, tau in [(0, 0.2), (1, 0.02)]:
        _, obs = _verdicts(seed, tau=tau)
        start = fit_laplace(obs, config)
        post, extended = (fit_prior_scale(obs, config, start, grid=grid) for grid in (PRIOR_GRID, low_grid))
        assert extended.mixture is not None and post.mixture is not None
        assert float(extended.judges["prior_scale"][0]) == pytest.approx(float(post.judges["prior_scale"][0]), rel=0.1)
        intervals = [rank_intervals(p, generator=torch.Generator().manual_seed(0)) for p in (post, extended)]
        widths = [float((i.upper - i.lower).double().mean()) for i in intervals]
        assert abs(widths[0] - widths[1]) < 0.3


def test_the_scale_mixture_is_what_the_intervals_sample_and_its_moments_are_the_posterior():
    _, obs = _verdicts(3)
    post = fit_with_reliability(obs, dataclasses.replace(CONFIG, empirical_prior_scale=True))
    mixture = post.mixture
    assert mixture is not None and post.cov is not None
    assert float(mixture.weights.sum()) == pytest.approx(1.0)
    assert bool((mixture.weights >= MIXTURE_MIN_WEIGHT).all()) and len(mixture.weights) > 1
    mean = mixture.weights @ mixture.means
    second = torch.einsum("k,kij->ij", mixture.weights, mixture.covs + mixture.means[:, :, None] * mixture.means[:, None, :])
    assert torch.allclose(mean, post.mean, atol=1e-3)
    assert torch.allclose(second - torch.outer(mean, mean), post.cov, atol=1e-3)
    # the intervals come from the mixture's draws, not from one Gaussian with its moments
    draws = mixture.draws(4000, torch.Generator().manual_seed(5))
    assert torch.allclose(draws.mean(0), post.mean, atol=0.02)
    gaussian = dataclasses.replace(post, mixture=None)
    sampled = rank_intervals(post, generator=torch.Generator().manual_seed(5))
    matched = rank_intervals(gaussian, generator=torch.Generator().manual_seed(5))
    assert sampled.rank_probs is not None and matched.rank_probs is not None
    assert not torch.equal(sampled.rank_probs, matched.rank_probs)


def _record(**fields) -> dict:
    return {"kind": "pairwise", "judge": "j", "prompt_id": "p", "candidates": ["a", "b"], **fields}


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"probs": {"A": 0.7, "B": 0.3}, "method": "verdict"}, "one option at 1"),
        ({"probs": {"A": 0.5, "B": 0.5}, "method": "verdict"}, "one option at 1"),
        ({"probs": {"A": 1.0, "B": 0.0}, "method": "verdict", "samples": 3}, "use method 'samples'"),
        ({"probs": {"A": 0.5, "B": 0.5}, "method": "samples", "samples": 3}, "steps of 1/3"),
        ({"probs": {"A": 0.7, "B": 0.3}, "method": "logprobs", "samples": 5}, "only 'samples'"),
        ({"probs": {"A": 1.0, "B": 0.0}, "method": "samples", "samples": 0}, "greater than or equal to 1"),
    ],
)
def test_a_record_whose_probabilities_cannot_come_from_its_method_is_refused(tmp_path, fields, message):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(_record(probs={"A": 1.0, "B": 0.0})) + "\n" + json.dumps(_record(**fields)) + "\n")
    with pytest.raises(OrchestratorError, match=message) as error:
        load_log(log)
    assert "log.jsonl" in str(error.value) and "2" in str(error.value)  # file and line


@pytest.mark.parametrize(
    "fields",
    [
        {"probs": {"A": 1.0, "B": 0.0}, "method": "logprobs"},  # a confident judge
        {"probs": {"A": 0.0, "B": 0.0, "C": 1.0}, "method": "verdict", "samples": 1},  # a tie verdict
        {"probs": {"A": 2 / 3, "B": 1 / 3}, "method": "samples", "samples": 3},
        {"probs": {"A": 0.6, "B": 0.4}, "method": "samples"},  # an older log without k
    ],
)
def test_records_that_can_come_from_their_method_are_read(fields):
    assert LogRecord.model_validate(_record(**fields)).method == fields["method"]


def test_a_log_of_verdicts_replays_as_verdicts_and_is_fitted_as_counts(tmp_path):
    prompts, responses = write_dataset(tmp_path / "data", prompts=3, candidates=4, seed=3)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, name="lp", prompts=prompts, responses=responses, max_calls=24)
        path, _ = api.start(config)
    exported = tmp_path / "lp.jsonl"
    api.export(path, out=exported)
    verdicts = tmp_path / "verdicts.jsonl"
    with verdicts.open("w") as out:
        for line in exported.read_text().splitlines():
            row = json.loads(line)
            if row["kind"] == "pairwise":
                best = max(row["probs"], key=row["probs"].get)
                row.update(probs={o: float(o == best) for o in row["probs"]}, method="verdict", samples=1)
            out.write(json.dumps(row) + "\n")
    again, _ = api.start(config, from_log=verdicts, runs_dir=tmp_path / "again")
    with open_run(again, write=False) as store:
        rows = [r for r in store.judgments() if r.kind == "pairwise"]
    assert rows and {(r.method, r.samples) for r in rows} == {("verdict", 1)}
    exported_again = tmp_path / "again.jsonl"
    api.export(again, out=exported_again)
    lines = [json.loads(x) for x in exported_again.read_text().splitlines()]
    assert {(x["method"], x.get("samples")) for x in lines if x["kind"] == "pairwise"} == {("verdict", 1)}
    ranking = api.ranking(again).as_dict()
    assert ranking["groups"]
