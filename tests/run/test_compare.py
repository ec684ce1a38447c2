"""A two-system comparison that stops when it knows: the `compare` command's decisions, exit codes,
JSON and JUnit XML, through a real run against a real HTTP judge on 127.0.0.1 (the statistics
alone: tests/gate/)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from judgekit import quality_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.api import lifecycle
from orchestrator.gate.sequence import confidence_sequence, decide
from orchestrator.judging.testserver import FakeOpenAIServer

# --- the command: a gate for CI ---------------------------------------------------------------------


def _compare_config(tmp_path, url, *, name, candidate, baseline, max_calls=80, extra=""):
    # M0 weak, M1 strong, M2 as strong as M1
    prompts, responses = write_dataset(tmp_path / f"data-{name}", prompts=40, candidates=3, seed=5, base=[0.2, 0.8, 0.8], spread=0.3)
    config = write_config(tmp_path, url, name=name, prompts=prompts, responses=responses, max_calls=max_calls, batch=4)
    config.write_text(config.read_text() + f'\n[compare]\ncandidate = "{candidate}"\nbaseline = "{baseline}"\n{extra}')
    return config


@pytest.mark.parametrize(
    "candidate, baseline, extra, decision, code",
    [("M1", "M0", "", "better", 0), ("M0", "M1", "", "worse", 10), ("M1", "M2", "margin = 30\n", "equivalent", 11)],
)
def test_compare_stops_when_it_knows_and_exits_with_the_decision(tmp_path, capsys, candidate, baseline, extra, decision, code):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _compare_config(tmp_path, server.url, name=decision.replace(" ", "-"), candidate=candidate, baseline=baseline, extra=extra)
        junit = tmp_path / "gate.xml"
        assert run_cli(["compare", str(config), "--json", "--junit", str(junit), "--no-cache"]) == code
    result = json.loads(capsys.readouterr().out)
    assert result["decision"] == decision and result["exit_code"] == code
    assert result["prompts_judged"] < result["prompts_available"]  # stopped as soon as it knew
    assert result["win_rate_low"] <= result["win_rate"] <= result["win_rate_high"]
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == ("0" if code == 0 else "1")
    run = result["run"]
    assert api.ranking(run).as_dict()["comparison"]["decision"] == decision
    assert api.status(run).as_dict()["comparison"]["exit_code"] == code


def test_a_budget_too_small_for_any_decision_is_one_line_and_not_worse_passes(tmp_path, capsys):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _compare_config(tmp_path, server.url, name="small", candidate="M1", baseline="M2", max_calls=8)
        asked = len(server.requests)
        assert run_cli(["compare", str(config), "--json", "--no-cache"]) == 2
        err = capsys.readouterr().err
        assert "no decision can be reached within 4 prompts" in err and len(err.strip().splitlines()) == 1
        assert len(server.requests) == asked and not (tmp_path / "runs" / "small.sqlite").exists()
        config = _compare_config(tmp_path, server.url, name="undecided", candidate="M1", baseline="M2", max_calls=40)
        assert run_cli(["compare", str(config), "--json", "--no-cache"]) == 12
        assert json.loads(capsys.readouterr().out)["decision"] == "not yet known"
        config = _compare_config(tmp_path, server.url, name="noninferior", candidate="M1", baseline="M2", extra="margin = 30\n")
        assert run_cli(["compare", str(config), "--require", "not-worse", "--json", "--no-cache"]) == 0
        assert json.loads(capsys.readouterr().out)["decision"] in ("not worse", "equivalent")


@pytest.mark.parametrize(
    "args, extra, said",
    [
        (["--margin", "-1"], "", "--margin"),
        (["--alpha", "0.7"], "", "--alpha"),
        (["--max-calls", "0"], "", "--max-calls"),
        (["--require", "best"], "", "--require"),
        ([], 'template = "poe-absolute"\n', "not a pairwise one"),
    ],
)
def test_bad_options_are_one_line_and_exit_2_before_any_call(tmp_path, capsys, args, extra, said):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _compare_config(tmp_path, server.url, name="bad", candidate="M1", baseline="M0", extra=extra)
        assert run_cli(["compare", str(config), *args]) == 2
        assert not server.requests
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "runs" / "bad.sqlite").exists()


def test_a_candidate_without_responses_is_refused(tmp_path, capsys):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _compare_config(tmp_path, server.url, name="nobody", candidate="M9", baseline="M0")
        assert run_cli(["compare", str(config)]) == 2
    assert "compare.candidate: 'M9' has no responses" in capsys.readouterr().err


def test_a_one_candidate_adaptive_reference_campaign_spends_its_budget_and_claims_no_order(tmp_path, capsys):
    from judgekit import reference_behaviour, write_judge

    write_judge(tmp_path / "judges", "noisy-openai")
    data = write_dataset(tmp_path / "one", prompts=30, candidates=1, reference=0.5)
    with FakeOpenAIServer(reference_behaviour()) as server:
        config = write_config(
            tmp_path, server.url, name="one", prompts=data[0], responses=data[1], max_calls=20, reference='allocation = "adaptive"\n'
        )
        path, reason = api.start(config)
    assert reason.startswith("budget: max_calls (20 of 20")  # not "separated from its neighbours" after the warm-up
    text, _ = lifecycle.summary(path)
    assert " leads " not in text and "0 of 0" not in text and "no order is claimed" in text


def test_task_and_criterion_a_template_cannot_use_are_refused_at_load(tmp_path, capsys):
    data = write_dataset(tmp_path / "d", prompts=3, candidates=2, reference=0.5)
    config = write_config(tmp_path, None, name="ignored", prompts=data[0], responses=data[1], reference='anchor = "M0"\n')
    config.write_text(
        config.read_text().replace(
            'judges = ["local-openai"]', 'judges = ["local-openai"]\ntask = "answer the question"\ncriterion = "correctness"'
        )
    )
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
    err = capsys.readouterr().err
    assert "judging.task is set, but template 'raee-pairwise-summary' has no ${task}" in err and "generic-reference" in err


@pytest.mark.parametrize("target", ["config", "responses", "folder"])
def test_a_junit_report_pointed_at_an_input_is_refused_before_any_call(tmp_path, capsys, target):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _compare_config(tmp_path, server.url, name="onto", candidate="M1", baseline="M0")
        before = config.read_text()
        path = {"config": config, "responses": tmp_path / "data-onto" / "responses.jsonl", "folder": tmp_path / "nowhere" / "g.xml"}[target]
        assert run_cli(["compare", str(config), "--junit", str(path)]) == 2
        assert not server.requests
    err = capsys.readouterr().err
    assert "--junit" in err and len(err.strip().splitlines()) == 1, err
    assert config.read_text() == before and not (tmp_path / "runs" / "onto.sqlite").exists()


def test_a_judge_that_always_fails_is_one_line_exit_2_and_the_run_file_is_kept(tmp_path, capsys):
    import sqlite3

    def fail(body: dict):
        return 500, {}, {"error": {"message": "boom"}}

    with FakeOpenAIServer(fail) as server:
        config = _compare_config(tmp_path, server.url, name="failing", candidate="M1", baseline="M0", max_calls=60)
        assert run_cli(["compare", str(config), "--json"]) == 2
    err = capsys.readouterr().err
    assert "the run failed" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    db = sqlite3.connect(tmp_path / "runs" / "failing.sqlite")
    assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
    assert db.execute("select status from runs").fetchone()[0] == "failed"


def test_the_printed_win_rate_is_the_mean_of_the_judged_prompts_win_shares(tmp_path, capsys):
    """Every number `compare --json` prints, against a computation by hand from the run file."""
    import sqlite3

    from orchestrator.run.planners.compare import comparison_order
    from orchestrator.store import open_run

    with FakeOpenAIServer(quality_behaviour) as server:
        config = _compare_config(tmp_path, server.url, name="byhand", candidate="M1", baseline="M0")
        assert run_cli(["compare", str(config), "--json", "--no-cache"]) == 0
    result = json.loads(capsys.readouterr().out)
    with open_run(result["run"], write=False) as store:
        order = comparison_order(store.dataset(), "M1", "M0", 7)  # (write_config's seed)
    shares: dict[str, dict[str, float]] = {}
    for prompt, shown, p in sqlite3.connect(result["run"]).execute(
        "select prompt_id, candidates, p_first from judgments where status = 'ok'"
    ):
        shares.setdefault(prompt, {})[json.loads(shown)[0]] = p
    x = [0.5 * (shares[p]["M1"] + 1 - shares[p]["M0"]) for p in order if len(shares.get(p, {})) == 2]
    k = result["decided_after"]
    assert result["prompts_judged"] == len(x) and 1 <= k <= len(x)
    assert result["win_rate"] == pytest.approx(100 * float(np.mean(x[:k])), abs=1e-3)
    assert result["difference"] == pytest.approx(result["win_rate"] - 50, abs=1e-3)
    assert 0 <= result["win_rate_low"] <= result["win_rate"] <= result["win_rate_high"] <= 100
    assert 50 < result["win_rate_low"]  # "better" means the whole interval above 50


def test_compare_from_a_log_decides_as_the_function_does_on_what_it_read(tmp_path, capsys, monkeypatch):
    """`compare --from-log`: the gate on recorded judgments, answered by the same engine."""
    rng = np.random.default_rng(4)
    n = 120
    win = np.clip(0.62 + rng.normal(0, 0.2, n), 0.01, 0.99)
    (tmp_path / "prompts.jsonl").write_text("".join(json.dumps({"id": f"p{k}", "text": f"q {k}"}) + "\n" for k in range(n)))
    (tmp_path / "responses.jsonl").write_text(
        "".join(
            json.dumps({"prompt_id": f"p{k}", "candidate": c, "text": f"{c} {k}"}) + "\n" for k in range(n) for c in ("mine", "shipped")
        )
    )
    with (tmp_path / "log.jsonl").open("w") as log:
        for k in range(n):
            for shown, p in ((["mine", "shipped"], win[k]), (["shipped", "mine"], 1 - win[k])):
                log.write(
                    json.dumps(
                        {"kind": "pairwise", "judge": "sim", "prompt_id": f"p{k}", "candidates": shown, "probs": {"A": p, "B": 1 - p}}
                    )
                    + "\n"
                )
    (tmp_path / "sim.toml").write_text('name = "sim"\nmodel = "openai/sim"\nprice_input_per_mtok = 0\nprice_output_per_mtok = 0\n')
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(tmp_path))
    config = tmp_path / "gate.toml"
    config.write_text(
        f'name = "gate"\nruns_dir = "{(tmp_path / "runs").as_posix()}"\n[data]\nprompts = "{(tmp_path / "prompts.jsonl").as_posix()}"\n'
        f'responses = "{(tmp_path / "responses.jsonl").as_posix()}"\nscope = "global"\n[judging]\njudges = ["sim"]\n'
        'pairwise_template = "poe-pairwise-noprefill"\n[compare]\ncandidate = "mine"\nbaseline = "shipped"\ndesign = "anytime"\n'
    )
    assert run_cli(["compare", str(config), "--from-log", str(tmp_path / "log.jsonl"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    from orchestrator.run.planners.compare import comparison_order
    from orchestrator.store import open_run

    with open_run(result["run"], write=False) as store:
        order = comparison_order(store.dataset(), "mine", "shipped", 0)
    x = np.array([win[int(p[1:])] for p in order[: result["prompts_judged"]]])
    expected = decide(confidence_sequence(x, horizon=result["max_prompts"]))
    assert result["max_prompts"] == n and result["design"] == "anytime"
    assert (expected.decision, expected.at) == (result["decision"], result["decided_after"]) == ("better", result["decided_after"])
    assert result["prompts_judged"] < n


def _even_config(tmp_path, url, name, max_calls):
    """Two systems of the same quality over 60 prompts: 40 calls read 20 of them, not enough to know."""
    prompts, responses = write_dataset(tmp_path / f"data-{name}", prompts=60, candidates=2, seed=5, base=[0.5, 0.5], spread=0.3)
    config = write_config(tmp_path, url, name=name, prompts=prompts, responses=responses, max_calls=max_calls, batch=4)
    config.write_text(config.read_text() + '\n[compare]\ncandidate = "M1"\nbaseline = "M0"\n')
    return config


def test_not_yet_known_says_the_max_calls_that_would_decide_and_the_prompts_the_data_hold(tmp_path, capsys):
    """The next step a not-yet-known gate prints, checked by hand: the plan's prompts at the seen
    difference and the run's own outcomes' spread, times the calls a prompt took."""
    import sqlite3

    from orchestrator.gate.designs import plan
    from orchestrator.run.planners.compare import comparison_order
    from orchestrator.store import open_run

    with FakeOpenAIServer(quality_behaviour) as server:
        config = _even_config(tmp_path, server.url, "even", 40)
        assert run_cli(["compare", str(config), "--json", "--no-cache"]) == 12
        result = json.loads(capsys.readouterr().out)
        step = result["to_decide"]
        with open_run(result["run"], write=False) as store:
            order = comparison_order(store.dataset(), "M1", "M0", 7)
        shares: dict[str, dict[str, float]] = {}
        for prompt, shown, p in sqlite3.connect(result["run"]).execute("select prompt_id, candidates, p_first from judgments"):
            shares.setdefault(prompt, {})[json.loads(shown)[0]] = p
        x = np.array([0.5 * (shares[p]["M1"] + 1 - shares[p]["M0"]) for p in order if len(shares.get(p, {})) == 2])
        effect = abs(100 * float(x.mean()) - 50)
        expected = plan(effect=effect, alpha=0.05, available=60, spread=float(np.std(x, ddof=1)), looks=15).planned
        assert step["effect"] == pytest.approx(effect, abs=1e-3) and step["prompts"] == expected and step["max_calls"] == 2 * expected
        assert step["prompts_available"] == 60 and len(x) == 20
        assert run_cli(["compare", str(config), "--no-cache", "--runs-dir", str(tmp_path / "again")]) == 12
        said = " ".join(capsys.readouterr().out.split())
        assert f"max_calls = {2 * expected} ({expected} prompts × 2 judge calls a prompt)" in said
        assert "the data hold 60 prompts" in said if expected <= 60 else "the data hold only 60 prompts" in said
        # --plan ends with the max_calls to set and the prompts the data hold
        assert run_cli(["compare", str(config), "--plan", "--json"]) == 0
        planned = json.loads(capsys.readouterr().out)
        assert planned["prompts_in_data"] == 60 and planned["max_calls_needed"] == 2 * planned["planned_prompts"]
        assert run_cli(["compare", str(config), "--plan"]) == 0
        said = " ".join(capsys.readouterr().out.split())
        assert said.endswith(
            f"To reach that power: max_calls = {planned['max_calls_needed']} ({planned['planned_prompts']} prompts × 2 judge calls a prompt), "
            f"but the data hold only 60 prompts the comparison can read: give at least {planned['planned_prompts'] - 60} more."
        )
