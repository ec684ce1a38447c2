"""A gate never says "pass" when it should not: every command that reports on a comparison exits
with the comparison's own code (or refuses), a baseline judged by another model than the candidate
would be is refused before anything is paid, and a comparison that read no prompt says so in words
(never "nan%")."""

from __future__ import annotations

import json
import sqlite3

import pytest

from judgekit import quality_behaviour, reference_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer


def _compare(tmp_path, url, *, name, candidate, baseline, extra="", max_calls=80, prompts=40):
    p, r = write_dataset(tmp_path / f"data-{name}", prompts=prompts, candidates=3, seed=5, base=[0.2, 0.8, 0.8], spread=0.3)
    config = write_config(tmp_path, url, name=name, prompts=p, responses=r, max_calls=max_calls, batch=4)
    config.write_text(config.read_text() + f'\n[compare]\ncandidate = "{candidate}"\nbaseline = "{baseline}"\n{extra}')
    return config


@pytest.mark.parametrize(
    "candidate, baseline, extra, require, code",
    [
        ("M0", "M1", "", None, 10),  # worse
        ("M1", "M2", "margin = 30\n", None, 11),  # equivalent within the margin, better required
        ("M1", "M2", "margin = 30\n", "not-worse", 0),  # equivalent passes not-worse, stored with the run
        ("M1", "M0", "", None, 0),  # better
    ],
)
def test_every_command_that_reports_on_a_comparison_exits_with_its_code(tmp_path, capsys, candidate, baseline, extra, require, code):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _compare(tmp_path, server.url, name="gate", candidate=candidate, baseline=baseline, extra=extra)
        args = ["compare", str(config), "--no-cache", *(["--require", require] if require else [])]
        assert run_cli(args) == code
        run = tmp_path / "runs" / "gate.sqlite"
        capsys.readouterr()
        asked = len(server.requests)
        # the advice after a stop is `resume`: it must give the same answer, never a bare "nothing to do" and 0
        assert run_cli(["resume", str(run), "--no-cache"]) == code
        out = capsys.readouterr()
        assert "nothing to do" in out.err and f"exit {code})" in out.out
        assert len(server.requests) == asked  # nothing paid again
    for command in (["status", str(run)], ["status", str(run), "--json"], ["rank", str(run)], ["rank", str(run), "--json"]):
        assert run_cli(command) == code, command
    assert api.status(run).as_dict()["comparison"]["exit_code"] == code


def test_a_comparison_still_running_reports_not_yet_known(tmp_path, capsys):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _compare(tmp_path, server.url, name="early", candidate="M1", baseline="M0")
        assert run_cli(["compare", str(config), "--no-cache"]) == 0
    run = tmp_path / "runs" / "early.sqlite"
    db = sqlite3.connect(run)  # as if killed after its first round: the decision is not known yet
    db.execute("delete from judgments where round > 1")
    db.execute("update requests set status = 'pending' where round > 1")
    db.execute("update runs set status = 'interrupted'")
    db.commit()
    assert run_cli(["status", str(run)]) == 12 and run_cli(["rank", str(run), "--json"]) == 12


def test_extend_of_a_comparison_is_one_line_and_changes_nothing(tmp_path, capsys):
    with FakeOpenAIServer(quality_behaviour) as server:
        config = _compare(tmp_path, server.url, name="ext", candidate="M1", baseline="M0")
        assert run_cli(["compare", str(config), "--no-cache"]) == 0
        run = tmp_path / "runs" / "ext.sqlite"
        before = sqlite3.connect(run).execute("select count(*) from judgments").fetchone()[0]
        more = tmp_path / "more.jsonl"
        more.write_text(json.dumps({"prompt_id": "p0", "candidate": "M9", "text": "Summary 9 <<q=0.9>>"}) + "\n")
        capsys.readouterr()
        assert run_cli(["extend", str(run), "--responses", str(more), "--add-calls", "10"]) == 2
        err = capsys.readouterr().err
        assert "a comparison's run is not extended" in err and len(err.strip().splitlines()) == 1
    assert sqlite3.connect(run).execute("select count(*) from judgments").fetchone()[0] == before
    assert api.ranking(run).as_dict()["comparison"]["decision"] == "better"


def test_a_baseline_run_whose_judge_now_names_another_model_is_refused_before_any_call(tmp_path, capsys, monkeypatch):
    judges = tmp_path / "judges"
    judges.mkdir()
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(judges))
    profile = judges / "gatekeeper.toml"
    profile.write_text('name = "gatekeeper"\nmodel = "openai/first-model"\nlogprobs = true\ntop_logprobs = 5\nprefill = true\n')
    prompts, responses = write_dataset(tmp_path / "data", prompts=40, candidates=3, seed=5, base=[0.2, 0.8, 0.5], spread=0.3, reference=0.5)
    with FakeOpenAIServer(reference_behaviour()) as server:
        board_config = write_config(
            tmp_path,
            server.url,
            name="board",
            prompts=prompts,
            responses=responses,
            judges='["gatekeeper"]',
            max_calls=None,
            reference="soft = true\n",
        )
        board, _ = api.start(board_config, cache=False)
        config = write_config(
            tmp_path, server.url, name="gate", prompts=prompts, responses=responses, judges='["gatekeeper"]', max_calls=40
        )
        config.write_text(config.read_text() + '\n[compare]\ncandidate = "M1"\nbaseline = "M0"\n')
        profile.write_text(profile.read_text().replace("first-model", "second-model"))  # the profile edited since
        before = len(server.requests)
        assert run_cli(["compare", str(config), "--baseline", str(board), "--no-cache"]) == 2
        err = capsys.readouterr().err
        assert "answered the baseline" in err and "'openai/first-model'" in err and "'openai/second-model'" in err, err
        assert len(err.strip().splitlines()) == 1 and len(server.requests) == before
        assert not (tmp_path / "runs" / "gate.sqlite").exists()
        profile.write_text(profile.read_text().replace("second-model", "first-model"))  # restored: the gate runs
        assert run_cli(["compare", str(config), "--baseline", str(board), "--no-cache"]) in (0, 10, 11, 12, 13)


def test_a_comparison_from_a_log_with_one_shown_order_says_why_it_cannot_decide(tmp_path, capsys):
    with FakeOpenAIServer(quality_behaviour) as server:
        source = _compare(tmp_path, server.url, name="source", candidate="M1", baseline="M0", max_calls=40)
        run_cli(["compare", str(source), "--no-cache"])
    log = tmp_path / "log.jsonl"
    api.export(tmp_path / "runs" / "source.sqlite", out=log)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows if r["candidates"][0] == "M1"))  # one shown order only
    config = _compare(tmp_path, None, name="one-order", candidate="M1", baseline="M0", max_calls=40)
    capsys.readouterr()
    assert run_cli(["compare", str(config), "--from-log", str(log), "--json"]) == 12
    result = json.loads(capsys.readouterr().out)
    assert "nan" not in json.dumps(result).lower()
    assert result["win_rate"] is None and "no prompt has been judged in both shown orders" in result["sentence"]
    run = tmp_path / "runs" / "one-order.sqlite"
    assert run_cli(["rank", str(run)]) == 12
    assert "nan" not in capsys.readouterr().out.lower()
