"""Issue #17: a broken judge is stopped before it eats the budget; the dry run's smoke call shows
each judge's parsed answer (a real HTTP server on 127.0.0.1, real run files)."""

import pytest

from judgekit import quality_behaviour, run_cli, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer, completion, logprob_entry
from orchestrator.run.health import JudgeHealth


def panel_behaviour(body):
    """judge-good answers from the hidden qualities; judge-broken answers in a language the
    template cannot read (no A/B option among its top tokens): a permanent `unparsed` failure."""
    if body.get("model") == "judge-broken":
        return 200, {}, completion("Z", [logprob_entry("Z", [("Z", 0.9), ("Q", 0.1)])])
    return quality_behaviour(body)


@pytest.fixture
def world(tmp_path, monkeypatch):
    folder = tmp_path / "judges"
    for name in ("judge-good-openai", "judge-broken-openai"):
        write_judge(folder, name)
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(folder))
    data = write_dataset(tmp_path / "data", prompts=2, candidates=6)
    with FakeOpenAIServer(panel_behaviour) as server:
        yield tmp_path, data, server


def test_health_window():
    health = JudgeHealth()
    assert not any(health.record("a", True) for _ in range(7))
    assert health.record("a", True) and health.stopped == {"a": 8}  # 8 of its first 8
    assert not health.record("a", True)  # reported only once
    mixed = JudgeHealth()
    outcomes = [k % 3 == 0 for k in range(60)]  # a third fail: never stopped
    assert not any(mixed.record("b", failed) for failed in outcomes)


def test_a_broken_judge_in_a_panel_is_stopped_and_the_others_go_on(world):
    tmp_path, (prompts, responses), server = world
    config = write_config(
        tmp_path,
        server.url,
        name="panel",
        prompts=prompts,
        responses=responses,
        judges='["judge-good-openai", "judge-broken-openai"]',
        max_calls=80,
        budget_extra='[stopping]\nrule = "budget"\n',
    )
    path, reason = api.start(config)
    broken = sum(1 for _, body in server.requests if body.get("model") == "judge-broken")
    good = sum(1 for _, body in server.requests if body.get("model") == "judge-good")
    assert broken <= 8 + 4 * 2  # stopped after 8 failures; at most the rounds in flight (batch 4, depth 2) follow
    assert good == 60  # every ordered pair of both prompts was still asked of the working judge
    assert "judge 'judge-broken-openai' stopped after 8 of its last 8 calls failed" in reason
    assert "no_option" in reason and "poe-pairwise" in reason
    assert api.status(path).as_dict()["state"] == "finished"
    (judges,) = {tuple(j["judge"] for j in g["judges"]) for g in api.ranking(path).as_dict()["groups"]}
    assert "judge-good-openai" in judges


def test_a_run_whose_only_judge_is_broken_fails_fast(world):
    tmp_path, (prompts, responses), server = world
    config = write_config(
        tmp_path, server.url, name="alone", prompts=prompts, responses=responses, judges='["judge-broken-openai"]', max_calls=80
    )
    assert run_cli(["run", str(config)]) == 2
    assert len(server.requests) <= 8 + 8  # not 80


def test_dry_run_makes_one_smoke_call_per_judge_and_shows_the_answer(world, capsys):
    tmp_path, (prompts, responses), server = world
    good = write_config(tmp_path, server.url, name="good", prompts=prompts, responses=responses, judges='["judge-good-openai"]')
    assert run_cli(["run", str(good), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert len(server.requests) == 1  # one judge × one template
    assert "smoke call" in out and "A: " in out and "B: " in out
    assert not (tmp_path / "runs").exists()
    assert run_cli(["run", str(good), "--dry-run", "--offline"]) == 0
    assert len(server.requests) == 1  # --offline sends nothing
    assert run_cli(["run", str(good), "--offline"]) == 2  # alone it would promise what a run cannot keep
    assert len(server.requests) == 1 and not (tmp_path / "runs").exists()
    both = write_config(
        tmp_path,
        server.url,
        name="both",
        prompts=prompts,
        responses=responses,
        judges='["judge-good-openai", "judge-broken-openai"]',
        warm_start=True,
    )
    capsys.readouterr()
    assert run_cli(["run", str(both), "--dry-run"]) == 2  # a judge that cannot answer: exit 2, one line
    out, err = capsys.readouterr()
    asked = {(key.split(":")[0], body["model"]) for key, body in server.requests[1:]}  # (":1": a two-token option's follow-up)
    assert asked == {(f"smoke-{t}", m) for t in ("pairwise", "absolute") for m in ("judge-good", "judge-broken")}
    assert "FAILED" in out
    assert err.strip().splitlines()[-1].startswith("error: judge 'judge-broken-openai' did not answer template")
