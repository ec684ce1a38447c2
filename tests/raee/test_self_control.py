"""``fit raee --control self``: a judge's preference for its own model family in a reference
campaign, recovered from a panel with a neutral judge and taken out of its win rates."""

import json

import numpy as np
import pytest
from scipy.stats import spearmanr

from judgekit import run_cli
from orchestrator.offline.replay.simulate import simulate_family_leaderboard
from orchestrator.raee.self_preference import logit_win_rates, self_preference


def _write_log(path, outcomes, judges=None):
    with path.open("w") as out:
        for judge, y in outcomes.items():
            if judges is not None and judge not in judges:
                continue
            for m in range(y.shape[0]):
                for i in range(y.shape[1]):
                    p = float(y[m, i])
                    row = {
                        "kind": "reference",
                        "judge": judge,
                        "prompt_id": f"p{i}",
                        "candidates": ["base", f"c{m}"],
                        "probs": {"A": 1 - p, "B": p},
                    }
                    out.write(json.dumps(row) + "\n")
    return path


def _family_flags(families):
    return [arg for name, family in families.items() for arg in ("--family", f"{name}={family}")]


def test_a_judges_taste_for_its_family_is_recovered_and_taken_out_of_its_win_rates(tmp_path, capsys):
    outcomes, quality, families, truth = simulate_family_leaderboard(candidates=10, prompts=300, taste=1.0, seed=3)
    log = _write_log(tmp_path / "log.jsonl", outcomes)
    args = ["fit", "raee", "--log", str(log), "--soft", "--control", "self", *_family_flags(families)]
    assert run_cli([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    biases = {b["judge"]: b for b in report["judge_biases"]}
    assert set(biases) == {"judge-x", "judge-y"}  # judge-z has no candidate of its family
    x, y = biases["judge-x"], biases["judge-y"]
    assert x["bias"] == "self" and x["candidates"] == 5
    assert x["effect"] == pytest.approx(truth, rel=0.15) and x["low"] < truth < x["high"]
    assert y["low"] < 0 < y["high"]
    rows = {(r["judge"], r["candidate"]): r for r in report["rows"]}
    raw = [rows[("judge-x", f"c{m}")]["win_rate"] for m in range(10)]
    controlled = [rows[("judge-x", f"c{m}")]["win_rate_controlled"] for m in range(10)]
    assert spearmanr(controlled, quality).statistic > spearmanr(raw, quality).statistic
    # only judge-x's own family moves, and downwards; the neutral judge's rates stay as they were
    for m in range(10):
        row = rows[("judge-x", f"c{m}")]
        assert row["win_rate_controlled_low"] <= row["win_rate_controlled"] <= row["win_rate_controlled_high"]
        if m % 2 == 0:
            assert row["win_rate_controlled"] < row["win_rate"] - 5
        else:
            assert row["win_rate_controlled"] == pytest.approx(row["win_rate"], abs=1e-6)
        neutral = rows[("judge-z", f"c{m}")]
        assert neutral["win_rate_controlled"] == pytest.approx(neutral["win_rate"], abs=1e-6)
    assert run_cli(args) == 0
    text = capsys.readouterr().out
    assert "judge-x: prefers answers of its own family by" in text and "self-preference control" in text


def test_without_a_neutral_judge_the_taste_cannot_be_told_from_quality(tmp_path, capsys):
    outcomes, _, families, _ = simulate_family_leaderboard(candidates=6, prompts=60, seed=1)
    log = _write_log(tmp_path / "log.jsonl", outcomes, judges={"judge-x", "judge-y"})
    families = {k: v for k, v in families.items() if k != "judge-z"}  # the neutral judge is not in this log
    assert run_cli(["fit", "raee", "--log", str(log), "--soft", "--control", "self", *_family_flags(families)]) == 2
    err = capsys.readouterr().err.strip()
    assert "a judge of a candidate's family and a judge of none" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "flags, message",
    [
        ([], "--control self needs the model family of every judge and candidate: --family NAME=FAMILY"),
        (["--family", "judge-x"], "--family 'judge-x': expected NAME=FAMILY"),
        (["--family", "judge-x=x", "--family", "c0=x"], "no family for judge 'judge-y'"),
        (
            ["--family", "judge-x=x", "--family", "judge-y=y", "--family", "judge-z=z"],
            "--control self: no candidate has a family in --family",
        ),
        (
            ["--family", "judge-x=x", "--family", "judge-y=y", "--family", "judge-z=z", "--family", "c1=w"],
            "a judge of a candidate's family and a judge of none",
        ),
        (
            ["--family", "judge-x=x", "--family", "judge-y=y", "--family", "judge-z=z", "--family", "c9=x"],
            "--family: 'c9' is neither a judge nor a candidate here",
        ),
        (["--family", "c0=x", "--family", "c0=y"], "--family: 'c0' is given two families ('x' and 'y')"),
        (["--family", "=x"], "--family '=x': expected NAME=FAMILY"),
    ],
)
def test_bad_family_input_is_one_line_and_exit_2(tmp_path, capsys, flags, message):
    outcomes, _, _, _ = simulate_family_leaderboard(candidates=4, prompts=20, seed=2)
    log = _write_log(tmp_path / "log.jsonl", outcomes)
    assert run_cli(["fit", "raee", "--log", str(log), "--soft", "--control", "self", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_the_pure_fit_matches_a_direct_weighted_least_squares_solution():
    """Eq. (1) with the prior switched off is ordinary weighted least squares: compare with numpy's lstsq."""
    outcomes, _, _, _ = simulate_family_leaderboard(candidates=6, prompts=100, seed=5)
    logits, variances = zip(*(logit_win_rates(y) for y in outcomes.values()))
    logit, var = np.array(logits), np.array(variances)
    own = np.array([[m % 2 == 0] * 1 for m in range(6)]).T.repeat(3, axis=0)
    own[2] = False  # judge-z: no candidate of its family
    own[1] = ~own[0]
    fit = self_preference(logit, var, own, prior_sd=1e6)
    rows, target, weight = [], [], []
    for j in range(3):
        for m in range(6):
            x = np.zeros(6 + 2 + 2)
            x[m] = 1
            if j:
                x[6 + j - 1] = 1
            if j < 2 and own[j, m]:
                x[8 + j] = 1
            rows.append(x)
            target.append(logit[j, m])
            weight.append(1 / var[j, m])
    sw = np.sqrt(np.array(weight))
    beta = np.linalg.lstsq(np.array(rows) * sw[:, None], np.array(target) * sw, rcond=None)[0]
    assert fit.effect[:2] == pytest.approx(beta[8:], abs=1e-6)
    assert fit.quality == pytest.approx(beta[:6], abs=1e-6)


def _pairwise_family_log(path, seed=0, taste=1.5):
    """Comparisons across prompts by judge-x (prefers family x by ``taste``), judge-y and a neutral judge-z."""
    from orchestrator.poe.covariates import self_covariate

    rng = np.random.default_rng(seed)
    scores = rng.normal(0, 1, 8)
    families = {f"c{i}": "x" if i % 2 == 0 else "y" for i in range(8)} | {"judge-x": "x", "judge-y": "y", "judge-z": "z"}
    with path.open("w") as out:
        for k in range(500):
            i, j = (int(v) for v in rng.choice(8, 2, replace=False))
            for judge in ("judge-x", "judge-y", "judge-z"):
                z = self_covariate(judge, f"c{i}", f"c{j}", families)
                p = 1 / (1 + np.exp(-(scores[i] - scores[j] + (taste * z if judge == "judge-x" else 0.0) + rng.normal(0, 0.3))))
                row = {
                    "kind": "pairwise",
                    "judge": judge,
                    "prompt_id": f"p{k}",
                    "candidates": [f"c{i}", f"c{j}"],
                    "probs": {"A": p, "B": 1 - p},
                }
                out.write(json.dumps(row) + "\n")
    return scores, families


def test_replay_with_self_control_reports_each_judges_taste(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    _, families = _pairwise_family_log(log)
    # (without the judges' sharpness, which would rescale each judge's β)
    args = ["replay", str(log), "--scope", "global", "--strategy", "random", "--batch", "500", "--no-reliability"]
    args += ["--control", "self", *_family_flags(families), "--json"]
    assert run_cli(args) == 0
    effects = json.loads(capsys.readouterr().out)["control_effects"]["global"]
    assert effects["judge-x"]["self"] == pytest.approx(1.5, rel=0.2)
    assert abs(effects["judge-y"]["self"]) < 3 * effects["judge-y"]["self_sd"] + 0.1
    # without a neutral judge, or without families: one line, exit 2
    base = ["replay", str(log), "--scope", "global", "--control", "self"]
    assert run_cli([*base, *_family_flags(families | {"judge-z": "y"})]) == 2
    assert "a judge of a candidate's family and a judge of none" in capsys.readouterr().err
    assert run_cli(base) == 2
    assert "--control self needs the model family" in capsys.readouterr().err
    assert run_cli([*base, *_family_flags({k: v for k, v in families.items() if k != "judge-z"})]) == 2
    assert "no family for judge 'judge-z'" in capsys.readouterr().err
    assert run_cli(["replay", str(log), "--scope", "global", *_family_flags(families)]) == 2
    assert "--family is for --control self" in capsys.readouterr().err


def test_a_family_without_control_self_is_refused(tmp_path, capsys):
    outcomes, _, families, _ = simulate_family_leaderboard(candidates=4, prompts=20, seed=2)
    log = _write_log(tmp_path / "log.jsonl", outcomes)
    assert run_cli(["fit", "raee", "--log", str(log), "--soft", *_family_flags(families)]) == 2
    err = capsys.readouterr().err.strip()
    assert "families (--family) is for control self" in err and len(err.splitlines()) == 1


def test_self_control_acts_on_the_length_controlled_rates_when_both_are_asked(tmp_path, capsys):
    outcomes, _, families, _ = simulate_family_leaderboard(candidates=6, prompts=150, taste=1.0, seed=4)
    log = _write_log(tmp_path / "log.jsonl", outcomes)
    responses = tmp_path / "responses.jsonl"
    with responses.open("w") as out:  # texts of one length: length control has nothing to take out
        for i in range(150):
            for name in ["base", *(f"c{m}" for m in range(6))]:
                out.write(json.dumps({"prompt_id": f"p{i}", "candidate": name, "text": "w" * 300}) + "\n")
    common = ["fit", "raee", "--log", str(log), "--soft", "--responses", str(responses), "--json"]
    assert run_cli([*common, "--control", "length"]) == 0
    length_only = {(r["judge"], r["candidate"]): r["win_rate_controlled"] for r in json.loads(capsys.readouterr().out)["rows"]}
    assert run_cli([*common, "--control", "length", "--control", "self", *_family_flags(families)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {b["bias"] for b in report["judge_biases"]} == {"length", "self"}
    rows = {(r["judge"], r["candidate"]): r for r in report["rows"]}
    for m in range(6):
        both = rows[("judge-x", f"c{m}")]["win_rate_controlled"]
        if m % 2 == 0:  # judge-x's family: lower than with length control alone
            assert both < length_only[("judge-x", f"c{m}")] - 5
        else:
            assert both == pytest.approx(length_only[("judge-x", f"c{m}")], abs=0.5)
