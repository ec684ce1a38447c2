"""Issue #19: `orchestrator calibrate` (PoE App. B temperature per judge) and `model.temperature`."""

import json
import math
import random

import pytest

from judgekit import quality_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.records.config import RunConfig
from orchestrator.run.calibration import calibrate, temperatures_for
from orchestrator.run.groups import Group, group_observations
from orchestrator.store import JudgmentRecord


def overconfident_rows(n=3000, factor=3.0, seed=0):
    """A judge whose logit is ``factor`` × the true log-odds that the first shown is better."""
    rng = random.Random(seed)
    rows, truth = [], {}
    for k in range(n):
        z = rng.gauss(0, 1.5)
        first_better = rng.random() < 1 / (1 + math.exp(-z))
        truth[(f"p{k}", "a")], truth[(f"p{k}", "b")] = (1.0, 0.0) if first_better else (0.0, 1.0)
        rows.append(
            JudgmentRecord(
                key=str(k), judge="loud", kind="pairwise", prompt_id=f"p{k}", candidates=["a", "b"], p_first=1 / (1 + math.exp(-factor * z))
            )
        )
    return rows, truth


def test_the_fitted_temperature_undoes_an_overconfident_judge():
    rows, truth = overconfident_rows()
    (c,) = calibrate(rows, truth)
    assert c.judge == "loud" and c.n == 3000
    assert c.temperature == pytest.approx(3.0, rel=0.15)
    assert c.ece > 0.1 and c.ece_after < 0.03
    assert sum(n for _, _, n in c.bins) == 3000


def test_a_temperature_scales_the_probabilities_the_posterior_sees():
    group = Group(key="p", names=["a", "b"], index={"a": 0, "b": 1}, origin={}, prompts={})
    row = JudgmentRecord(key="1", judge="j", kind="pairwise", prompt_id="p", candidates=["a", "b"], p_first=0.9)
    (plain,), _, _ = group_observations(group, [row], debias="none")
    (cooled,), _, _ = group_observations(group, [row], debias="none", temperatures={"j": 2.0})
    assert plain[2] == pytest.approx(0.9)
    assert cooled[2] == pytest.approx(1 / (1 + math.exp(-math.log(9) / 2)))  # σ(logit(0.9) / 2) = 0.75
    (everyone,), _, _ = group_observations(group, [row], debias="none", temperatures={"*": 2.0})
    assert everyone[2] == pytest.approx(cooled[2])
    assert temperatures_for(1.5, [], None, None) == {"*": 1.5}  # type: ignore[arg-type]
    assert temperatures_for({"j": 2}, [], None, None) == {"j": 2.0}  # type: ignore[arg-type]


def test_calibrate_cli_on_a_run_and_temperature_fit_in_a_run(tmp_path, capsys):
    prompts, responses = write_dataset(tmp_path / "data", prompts=3, candidates=5)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, name="cal", prompts=prompts, responses=responses, max_calls=40, extra="")
        config.write_text(config.read_text().replace('debias = "none"', 'debias = "none"\ntemperature = "fit"'))
        path, _ = api.start(config)
    assert (
        RunConfig.from_stored(
            json.loads(__import__("sqlite3").connect(path).execute("select config from runs").fetchone()[0])
        ).model.temperature
        == "fit"
    )
    capsys.readouterr()
    assert run_cli(["calibrate", str(path), "--json", "--plot", str(tmp_path / "cal.png")]) == 0
    (judge,) = json.loads(capsys.readouterr().out)["judges"]
    assert judge["judge"] == "local-openai" and judge["n"] >= 5 and judge["temperature"] > 0
    assert (tmp_path / "cal.png").stat().st_size > 1000
    assert api.ranking(path).as_dict()["groups"][0]["ranking"]


def test_bad_calibration_requests_are_one_line(tmp_path, capsys):
    prompts, responses = write_dataset(tmp_path / "data", prompts=1, candidates=3)
    config = write_config(tmp_path, None, name="nofit", prompts=prompts, responses=responses)
    config.write_text(
        config.read_text().replace('truth = "coherence"\n', "").replace('debias = "none"', 'debias = "none"\ntemperature = "fit"')
    )
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
    assert "set data.truth" in capsys.readouterr().err
    config.write_text(config.read_text().replace('temperature = "fit"', "temperature = -1"))
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
    assert "finite number > 0" in capsys.readouterr().err
    assert run_cli(["calibrate", "--log", str(responses)]) == 2
    assert "--responses" in capsys.readouterr().err
