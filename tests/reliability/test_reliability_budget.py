"""Reliability, class 3: never more spent than asked, never success
without work. ``run --pilot N`` pays for at most N calls whatever the round's size, judges and
orders; ``extend`` on a spent budget says which limit and which option, exits 2 and writes nothing;
an extension that made no judgment is an error, not "finished". Real runs, a real HTTP judge."""

import json
import sqlite3

import pytest

from judgekit import quality_behaviour, run_cli, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer

PRICED = {"price_input_per_mtok": 1000.0, "price_output_per_mtok": 1000.0}


@pytest.fixture
def server():
    with FakeOpenAIServer(quality_behaviour) as s:
        yield s


def _split(responses, folder, new=("M4",)):
    rows = [json.loads(line) for line in responses.read_text().splitlines()]
    base, added = folder / "base.jsonl", folder / "new.jsonl"
    base.write_text("".join(json.dumps(r) + "\n" for r in rows if r["candidate"] not in new))
    added.write_text("".join(json.dumps(r) + "\n" for r in rows if r["candidate"] in new))
    return base, added


@pytest.mark.parametrize("pilot", [1, 3, 5])
@pytest.mark.parametrize("shape", ["batch-8-two-judges-both-orders", "batch-16-reference"])
def test_a_pilot_never_pays_for_more_calls_than_asked(tmp_path, server, monkeypatch, capsys, pilot, shape):
    folder = write_judge(tmp_path / "judges", "local-openai")
    write_judge(folder, "other-openai")
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(folder))
    if shape.endswith("reference"):
        prompts, responses = write_dataset(tmp_path / "d", prompts=3, candidates=5, reference=0.5)
        config = write_config(
            tmp_path,
            server.url,
            prompts=prompts,
            responses=responses,
            batch=16,
            max_calls=None,
            reference='template = "raee-pairwise-summary"',
        )
    else:
        prompts, responses = write_dataset(tmp_path / "d", prompts=3, candidates=5)
        config = write_config(
            tmp_path,
            server.url,
            prompts=prompts,
            responses=responses,
            batch=8,
            debias="permutation",
            judges='["local-openai", "other-openai"]',
        )
    smallest = 1 if shape.endswith("reference") else 4  # one comparison: two judges, both orders
    if pilot < smallest:  # refused up front, one line, nothing created
        assert run_cli(["run", str(config), "--pilot", str(pilot), "--no-report"]) == 2
        assert f"give --pilot {smallest} or more" in capsys.readouterr().err
        assert not (tmp_path / "runs" / "test.sqlite").exists() and not server.requests
        return
    assert run_cli(["run", str(config), "--pilot", str(pilot), "--no-report"]) == 0
    assert 0 < len(server.requests) <= pilot
    status = api.status(tmp_path / "runs" / "test.sqlite").as_dict()
    assert status["spent"]["calls"] <= pilot and status["state"] == "interrupted"


def _spent_run(tmp_path, server, monkeypatch, max_usd):
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(write_judge(tmp_path / "judges", "local-openai", **PRICED)))
    prompts, responses = write_dataset(tmp_path / "d", prompts=2, candidates=5, seed=4)
    base, added = _split(responses, tmp_path)
    config = write_config(tmp_path, server.url, prompts=prompts, responses=base, max_calls=None, budget_extra=f"max_usd = {max_usd}")
    path, reason = api.start(config, cache=False)
    assert reason.startswith("budget: max_usd"), reason
    return path, added


def _fingerprint(path):
    db = sqlite3.connect(path)
    try:
        return (
            db.execute("select count(*) from responses").fetchone(),
            db.execute("select count(*) from judgments").fetchone(),
            db.execute("select status, stop_reason, config from runs").fetchone(),
        )
    finally:
        db.close()


def test_extend_on_a_spent_budget_names_the_limit_and_the_option_and_writes_nothing(tmp_path, server, monkeypatch, capsys):
    path, added = _spent_run(tmp_path, server, monkeypatch, max_usd=0.5)
    before, sent = _fingerprint(path), len(server.requests)
    capsys.readouterr()
    assert run_cli(["extend", str(path), "--responses", str(added), "--no-cache", "--no-report"]) == 2
    err = capsys.readouterr().err.strip()
    assert "budget.max_usd is spent" in err and "--add-usd" in err and len(err.splitlines()) == 1
    assert _fingerprint(path) == before and len(server.requests) == sent
    assert run_cli(["extend", str(path), "--responses", str(added), "--add-usd", "nan"]) == 2
    assert run_cli(["extend", str(path), "--responses", str(added), "--add-usd", "-1"]) == 2
    assert _fingerprint(path) == before
    # raised: the newcomer is asked and ranked
    assert run_cli(["extend", str(path), "--responses", str(added), "--add-usd", "0.5", "--no-cache", "--no-report"]) == 0
    shown = [json.loads(c) for (c,) in sqlite3.connect(path).execute("select candidates from requests")]
    assert any("M4" in c for c in shown) and len(server.requests) > sent


def test_an_extension_that_made_no_judgment_is_an_error_not_finished(tmp_path, server, monkeypatch, capsys):
    path, added = _spent_run(tmp_path, server, monkeypatch, max_usd=0.5)
    sent = len(server.requests)
    spent = api.status(path).as_dict()["spent"]["usd"]
    assert spent < 0.5  # the rest is smaller than one request's reservation
    # the newcomer's answers are long: a raise that covers a typical request of the run does not
    # cover one of the newcomer's, so the run goes on, asks nothing, and must say so
    rows = [json.loads(line) for line in added.read_text().splitlines()]
    added.write_text("".join(json.dumps({**r, "text": r["text"] + " padding" * 600}) + "\n" for r in rows))
    capsys.readouterr()
    code = run_cli(["extend", str(path), "--responses", str(added), "--add-usd", "0.3", "--no-cache", "--no-report"])
    err = capsys.readouterr().err
    assert code == 2 and "no judgment was made" in err and "--add-usd" in err, err
    assert len(server.requests) == sent
    assert api.status(path).as_dict()["state"] != "failed"  # nothing lost: a later extend/resume goes on
