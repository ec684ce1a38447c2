"""The gate at the cost the question needs: a planned (group-sequential) design that decides only at
the ends of rounds, an anytime one sized for its horizon, stops on "not better" / "not worse", a plan
before paying, and the hostile cases — each one clear line, nothing paid twice."""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pytest

from judgekit import quality_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.gate.designs import gate_decision, plan, reachable
from orchestrator.gate.group_sequential import group_sequential_bounds, inflation, repeated_intervals
from orchestrator.gate.sequence import confidence_sequence, decide
from orchestrator.judging.testserver import FakeOpenAIServer


def test_the_boundaries_are_the_published_lan_demets_obrien_fleming_ones():
    """ldbounds / gsDesign (sfLDOF), two-sided α = 0.05, five equally spaced looks; and the one-sided
    α = 0.05 bounds at four looks (SeqBounds.jl's example), which a two-sided α = 0.10 design matches."""
    assert group_sequential_bounds(np.arange(1, 6) / 5, 0.05) == pytest.approx([4.8769, 3.3569, 2.6803, 2.2898, 2.0310], abs=2e-3)
    assert group_sequential_bounds(np.array([0.25, 0.5, 0.75, 1.0]), 0.10) == pytest.approx([3.7496, 2.5399, 2.0160, 1.7201], abs=2e-3)
    assert 1.0 < inflation(5) < inflation(20) < 1.06


@pytest.mark.parametrize("looks", [5, 20])
def test_the_planned_design_errs_at_most_alpha_over_all_its_looks(looks):
    """A/A with three-point outcomes (0, ½, 1), 400 runs: the share of runs whose repeated interval
    ever excludes ½ at a look stays at α (here 0.05), normal approximation and variance floor included."""
    rng = np.random.default_rng(looks)
    n = 200
    wrong = 0
    for _ in range(400):
        x = rng.choice([0.0, 0.5, 1.0], n, p=[0.35, 0.3, 0.35])
        found = gate_decision(x, margin=0.0, alpha=0.05, design="planned", max_prompts=n, looks=list(range(n // looks, n + 1, n // looks)))
        wrong += found.decision in ("better", "worse")
    assert wrong / 400 <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 400)


def test_a_planned_decision_is_read_only_at_its_looks_and_its_interval_holds_there():
    rng = np.random.default_rng(2)
    x = np.clip(rng.normal(0.62, 0.2, 240), 0, 1)
    looks = list(range(24, 241, 24))
    found = gate_decision(x, margin=0.0, alpha=0.05, design="planned", max_prompts=240, looks=looks)
    assert found.decision == "better" and found.at in looks
    bounds, read = repeated_intervals(x, looks, 240, 0.05)
    assert read == looks and np.all(np.diff(bounds.low) >= 0) and np.all(np.diff(bounds.high) <= 0)


@pytest.mark.parametrize(
    "mean, margin, require, expected",
    [
        (0.5, 5.0, "better", {"not better", "equivalent"}),  # no difference: settled as soon as +5 is excluded
        (0.47, 3.0, "better", {"not better"}),  # a little worse, not worse by the margin: it cannot pass
        (0.53, 3.0, "not-worse", {"not worse"}),  # a little better: it passes not-worse before better is known
        (0.2, 5.0, "not-worse", {"worse"}),
        (0.8, 0.0, "better", {"better"}),
        (0.5, 0.0, "better", {"not yet known"}),  # no margin: "not better" is "worse", never decided on nothing
    ],
)
@pytest.mark.parametrize("design", ["anytime", "planned"])
def test_a_gate_stops_when_its_question_is_settled(mean, margin, require, expected, design):
    rng = np.random.default_rng(4)
    x = np.clip(mean + rng.normal(0, 0.1, 1500), 0, 1)
    found = gate_decision(x, margin=margin, alpha=0.05, require=require, design=design, max_prompts=1500, looks=list(range(20, 1501, 20)))
    assert found.decision in expected


def test_the_horizon_sizes_the_stakes_and_never_the_validity():
    """Past its horizon (a budget raised) the sequence still holds the mean and keeps learning:
    stakes sized for 50 outcomes, read for 2,000 of mean 0.55."""
    rng = np.random.default_rng(9)
    misses = decided = 0
    for _ in range(100):
        x = (rng.random(2000) < 0.55).astype(float)
        bounds = confidence_sequence(x, 0.05, horizon=50)
        misses += bool(np.any((bounds.low > 0.55) | (bounds.high < 0.55)))
        decided += decide(bounds).decision == "better"
    assert misses <= 9  # α = 0.05 of 100, with room for chance
    assert decided >= 40


def test_the_plan_says_what_each_design_needs():
    said = plan(effect=3.0, alpha=0.05, available=805, spread=0.12)
    assert said.fixed == math.ceil(((1.959964 + 0.841621) * 0.12 / 0.03) ** 2)
    assert said.fixed * inflation(20) < said.planned <= 1.06 * said.fixed + 1 / 12 / 0.12**2 and said.planned < said.anytime
    assert reachable(margin=0.0, alpha=0.05, require="better", design="planned", max_prompts=3, batch=1) == []
    wide = set(reachable(margin=49.9, alpha=0.05, require="better", design="planned", max_prompts=100, batch=10))
    assert "better" not in wide and "not better" in wide


# --- through the command -------------------------------------------------------------------------------


def _config(tmp_path, url, *, name, candidate="M1", baseline="M0", max_calls=160, extra=""):
    prompts, responses = write_dataset(tmp_path / f"data-{name}", prompts=80, candidates=3, seed=5, base=[0.2, 0.8, 0.8], spread=0.3)
    config = write_config(tmp_path, url, name=name, prompts=prompts, responses=responses, max_calls=max_calls, batch=8)
    config.write_text(config.read_text() + f'\n[compare]\ncandidate = "{candidate}"\nbaseline = "{baseline}"\n{extra}')
    return config


def test_a_planned_gate_decides_at_the_end_of_a_round_and_says_which_guarantee_holds(tmp_path, capsys):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _config(tmp_path, server.url, name="planned")
        assert run_cli(["compare", str(config), "--json", "--no-cache"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["design"] == "planned" and result["max_prompts"] == 80  # 160 calls, both orders: 80 prompts
    assert "at the planned looks" in result["guarantee"] and "O'Brien–Fleming" in result["construction"]
    assert result["decided_after"] % 8 == 0  # a look is the end of a round of 8 prompts
    db = sqlite3.connect(result["run"])
    stored = json.loads(db.execute("select config from runs").fetchone()[0])["compare"]
    assert stored["max_prompts"] == 80 and stored["design"] == "planned"  # fixed at the start, in the run file
    assert api.ranking(result["run"]).as_dict()["comparison"]["decision"] == "better"


def test_an_anytime_gate_is_sized_for_its_horizon(tmp_path, capsys):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _config(tmp_path, server.url, name="anytime", extra='design = "anytime"\n')
        assert run_cli(["compare", str(config), "--json", "--no-cache"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["design"] == "anytime" and result["max_prompts"] == 80 and "at every look" in result["guarantee"]
    assert "its stakes sized for 80 prompts" in result["construction"]


def test_a_no_op_change_stops_early_as_equivalent_and_never_passes(tmp_path, capsys):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _config(tmp_path, server.url, name="noop", candidate="M1", baseline="M2", extra="margin = 25\n")
        code = run_cli(["compare", str(config), "--json", "--junit", str(tmp_path / "gate.xml"), "--no-cache"])
    result = json.loads(capsys.readouterr().out)
    # both +25 and -25 are excluded: equivalent (exit 11), which fails a gate that requires better
    assert (code, result["exit_code"], result["decision"]) == (11, 11, "equivalent")
    assert result["prompts_judged"] < result["prompts_available"]  # stopped early
    assert "M1 is equivalent to M2 within 25 points" in result["sentence"]
    assert 'failures="1"' in (tmp_path / "gate.xml").read_text()


def test_plan_before_paying(tmp_path, capsys):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _config(tmp_path, server.url, name="plan", max_calls=40)
        before = len(server.requests)
        assert run_cli(["compare", str(config), "--plan", "--json"]) == 0
        said = json.loads(capsys.readouterr().out)
        assert len(server.requests) == before and not (tmp_path / "runs" / "plan.sqlite").exists()
        assert said["max_prompts"] == 20 and said["spread_from"] == "assumed" and said["power_reached"] is False
        assert run_cli(["compare", str(config), "--max-calls", "160", "--no-cache"]) == 0  # (another run name below)
        run = tmp_path / "runs" / "plan.sqlite"
        capsys.readouterr()
        other = _config(tmp_path, server.url, name="plan2", max_calls=4000)
        assert run_cli(["compare", str(other), "--plan", "--spread-from", str(run), "--effect", "30", "--json"]) == 0
        said = json.loads(capsys.readouterr().out)
        assert said["spread_from"].startswith("measured on") and said["power_reached"] is True


@pytest.mark.parametrize(
    "args, said",
    [
        (["--max-calls", "6"], "no decision can be reached within 3 prompts"),
        (["--plan", "--effect", "0"], "--effect must be a number of points above 0"),
        (["--plan", "--spread", "0.9"], "--spread must be in (0, 0.5]"),
        (["--design", "sometimes"], "--design must be one of anytime, planned"),
        (["--plan", "--spread-from", "{config}"], "not a run file"),
        (["--spread", "0.2"], "go with --plan"),
    ],
)
def test_hostile_gate_options_are_one_line_and_pay_nothing(tmp_path, capsys, args, said):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _config(tmp_path, server.url, name="hostile")
        args = [a.replace("{config}", str(config)) for a in args]
        assert run_cli(["compare", str(config), *args]) == 2
        err = capsys.readouterr().err.strip()
        assert said in err and len(err.splitlines()) == 1, err
        assert not server.requests and not (tmp_path / "runs" / "hostile.sqlite").exists()


def test_a_margin_beyond_any_difference_is_said_and_the_gate_still_answers(tmp_path, capsys):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _config(tmp_path, server.url, name="wide", extra="margin = 49.9\n")
        code = run_cli(["compare", str(config), "--no-cache"])
    err = capsys.readouterr().err
    assert "'better' by 49.9 points cannot be reached" in err
    assert code in (11, 13)  # the data soon exclude a difference of 49.9 points


def test_a_comparison_run_file_from_before_designs_reads_as_the_anytime_sequence_it_ran(tmp_path, capsys):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _config(tmp_path, server.url, name="older")
        assert run_cli(["compare", str(config), "--no-cache"]) == 0
    run = tmp_path / "runs" / "older.sqlite"
    db = sqlite3.connect(run)
    stored = json.loads(db.execute("select config from runs").fetchone()[0])
    for field in ("design", "max_prompts", "require"):
        stored["compare"].pop(field)
    db.execute("update runs set config = ?", [json.dumps(stored)])
    db.commit()
    result = api.ranking(run).as_dict()["comparison"]
    assert result["design"] == "anytime" and result["max_prompts"] is None and "at every look" in result["guarantee"]
    assert run_cli(["status", str(run)]) == result["exit_code"]


def test_a_planned_run_whose_budget_was_raised_under_it_stops_at_its_plan_and_pays_nothing_twice(tmp_path, capsys):
    """The plan is stored with the run: a budget raised in the run file (no command does it) changes
    nothing about how many prompts the planned design reads, and a resume asks nothing again."""
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _config(tmp_path, server.url, name="raised", candidate="M1", baseline="M2", max_calls=48)
        assert run_cli(["compare", str(config), "--no-cache"]) in (11, 12, 13)
        run = tmp_path / "runs" / "raised.sqlite"
        db = sqlite3.connect(run)
        stored = json.loads(db.execute("select config from runs").fetchone()[0])
        stored["budget"]["max_calls"] = 1000
        db.execute("update runs set config = ?, status = 'interrupted'", [json.dumps(stored)])
        db.commit()
        asked, before = len(server.requests), db.execute("select count(distinct prompt_id) from judgments").fetchone()[0]
        code = run_cli(["resume", str(run), "--no-cache"])
        rows = sqlite3.connect(run).execute("select count(distinct prompt_id) from judgments").fetchone()[0]
    assert rows <= 24 and code in (11, 12, 13)  # 48 calls at 2 a prompt: the plan's 24 prompts at most
    assert len(server.requests) - asked == 2 * (rows - before)  # only prompts the plan still allowed, each once
