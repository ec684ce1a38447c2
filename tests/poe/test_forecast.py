"""Cost estimates: the forecast of comparisons to the stopping rule, `run --pilot N`,
the forecast in `status`, and the dry run's expected figure beside its worst case."""

import json

import pytest
import torch

from judgekit import quality_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.poe import IndifferenceZone, Posterior
from orchestrator.poe.forecast import MAX_COMPARISONS_PER_PAIR, comparisons_to_settle


def _posterior(mean, sd):
    mean = torch.tensor(mean, dtype=torch.float64)
    cov = torch.diag(torch.tensor(sd, dtype=torch.float64) ** 2)
    return Posterior(mean, cov, mean, cov, None, None, None, 1, True, 10)


def test_settled_rankings_need_nothing_and_uncertain_ones_more_the_less_is_known():
    assert comparisons_to_settle(_posterior([3.0, 0.0, -3.0], [0.05, 0.05, 0.05])).max() == 0
    wide = comparisons_to_settle(_posterior([1.0, 0.0, -1.0], [1.0, 1.0, 1.0]))
    narrow = comparisons_to_settle(_posterior([1.0, 0.0, -1.0], [0.4, 0.4, 0.4]))
    assert narrow.mean() < wide.mean()
    assert 0 < narrow.mean() and wide.max() < 2 * MAX_COMPARISONS_PER_PAIR
    # the forecast is a distribution: its 90th percentile is at or above its mean
    assert torch.quantile(torch.as_tensor(wide), 0.9) >= wide.mean()
    # only the top-1 boundary matters: fewer comparisons than the whole order
    assert comparisons_to_settle(_posterior([1.0, 0.0, -1.0], [1.0, 1.0, 1.0]), IndifferenceZone(top_k=1)).mean() < wide.mean()


@pytest.fixture
def data(tmp_path):
    return write_dataset(tmp_path / "data", prompts=2, candidates=5, seed=4)


def test_a_pilot_stops_resumably_with_a_forecast_and_the_run_then_finishes(tmp_path, data, capsys):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(
            tmp_path, server.url, prompts=data[0], responses=data[1], max_calls=120, batch=2, budget_extra="max_usd = 5.0"
        )
        assert run_cli(["run", str(config), "--pilot", "8", "--no-report"]) == 0
        err = capsys.readouterr().err
        path = tmp_path / "runs" / "test.sqlite"
        assert "pilot of 8 calls done" in err and f"orchestrator resume {path}" in err
        status = api.status(path).as_dict()
        assert status["state"] == "interrupted"
        forecast = status["forecast"]
        assert forecast["after_calls"] == 8
        assert 8 <= forecast["calls"] <= forecast["calls_p90"] <= forecast["worst_calls"] == 40  # every ordered pair of 2 × 5
        assert forecast["tokens"] <= forecast["tokens_p90"] <= forecast["worst_tokens"]
        assert run_cli(["status", str(path)]) == 0
        assert "expected to stop by" in capsys.readouterr().out
        assert run_cli(["status", str(path), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["forecast"]["calls"] == forecast["calls"]
        api.resume(path)
        actual = api.status(path).as_dict()["spent"]["calls"]
    assert api.status(path).as_dict()["forecast"] is None  # a finished run has nothing left to forecast
    assert 0.25 <= forecast["calls"] / actual <= 4.0, (forecast, actual)


def test_pilot_with_dry_run_and_bad_pilot_are_refused(tmp_path, data, capsys):
    config = write_config(tmp_path, None, prompts=data[0], responses=data[1])
    assert run_cli(["run", str(config), "--pilot", "0"]) == 2
    assert run_cli(["run", str(config), "--pilot", "5", "--dry-run"]) == 2
    assert "--pilot" in capsys.readouterr().err
    assert not (tmp_path / "runs" / "test.sqlite").exists()


def test_dry_run_shows_an_expected_figure_below_the_worst_case(tmp_path, data):
    config = write_config(tmp_path, "http://127.0.0.1:9/v1", prompts=data[0], responses=data[1], max_calls=40)
    estimate = api.dry_run(config)
    assert 0 < estimate["expected_tokens"] < estimate["max_tokens"]
    assert estimate["expected_tokens_per_request"] < estimate["worst_case_tokens_per_request"]


@pytest.mark.parametrize("batch,pilot", [(10, 7), (3, 4), (1, 1)])
def test_a_pilot_never_pays_for_more_calls_than_it_names(tmp_path, data, capsys, batch, pilot):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, prompts=data[0], responses=data[1], max_calls=120, batch=batch)
        assert run_cli(["run", str(config), "--pilot", str(pilot), "--no-report"]) == 0
        assert f"pilot of {pilot} calls done" in capsys.readouterr().err
        # what the judge was asked (paid for), not only what the run file says
        assert len(server.requests) == pilot
    assert api.status(tmp_path / "runs" / "test.sqlite").as_dict()["spent"]["calls"] == pilot


def test_a_dry_run_refuses_a_run_name_that_exists_as_the_real_run_does(tmp_path, data, capsys):
    config = write_config(tmp_path, None, prompts=data[0], responses=data[1])
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "test.sqlite").write_bytes(b"a run of that name")
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "runs" / "test.sqlite").read_bytes() == b"a run of that name"


def test_progress_is_printed_as_lines_when_the_output_is_not_a_terminal(tmp_path, data, capsys, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_PROGRESS_EVERY_S", "0")
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, prompts=data[0], responses=data[1], max_calls=12, batch=4)
        assert run_cli(["run", str(config), "--no-report"]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("[0:") and " calls · " in line]
    assert len(lines) >= 3, err  # captured output is not a terminal: lines, not a bar
    assert "of 12 calls" in lines[-1]
