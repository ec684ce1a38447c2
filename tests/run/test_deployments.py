"""Several endpoints for one judge through litellm's Router: three local
OpenAI-compatible servers, one slow, one that dies mid-run; the run completes, nothing is lost or
paid twice, the slow server gets less work, and `status` counts each deployment's judgments."""

import threading

import pytest

from judgekit import STOP_AT_BUDGET, quality_behaviour, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.client import get_profile
from orchestrator.judging.testserver import BILLABLE, FakeOpenAIServer, FaultPlan


def _profile(folder, servers, name="pool-openai"):
    folder.mkdir(exist_ok=True)
    text = f'name = "{name}"\nmodel = "openai/local"\nprefill = true\nprice_input_per_mtok = 0.0\nprice_output_per_mtok = 0.0\ncooldown_s = 60\ntimeout_s = 3\n'
    for k, server in enumerate(servers):
        text += f'[[deployments]]\napi_base = "{server.url}"\nmax_concurrency = 2\nname = "server-{k}"\n'
    (folder / f"{name}.toml").write_text(text)
    return folder


# slow: its share of calls per endpoint is a matter of timing that a loaded machine blurs with older
# litellm releases (the lowest-versions job runs the fast suite only; the main job runs this)
@pytest.mark.slow
def test_three_endpoints_one_slow_one_dying_nothing_lost_or_paid_twice(tmp_path, monkeypatch):
    data = write_dataset(tmp_path / "d", prompts=3, candidates=6, seed=2)
    fast = FakeOpenAIServer(quality_behaviour, delay_s=0.05)
    slow = FakeOpenAIServer(quality_behaviour, delay_s=0.6)
    served = {"n": 0}

    def dying(body):  # the third server answers 10 calls, then every connection to it is reset
        served["n"] += 1
        if served["n"] == 10:
            dying_server.plan = FaultPlan(rates={"reset": 1.0})
            threading.Thread(target=dying_server._httpd.shutdown, daemon=True).start()
        return quality_behaviour(body)

    dying_server = FakeOpenAIServer(dying, delay_s=0.05)
    servers = [fast, slow, dying_server]
    for s in servers:
        s.__enter__()
    try:
        monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(_profile(tmp_path / "judges", servers)))
        config = write_config(
            tmp_path,
            None,
            judges='["pool-openai"]',
            prompts=data[0],
            responses=data[1],
            max_calls=60,
            batch=6,
            concurrency=6,
            budget_extra=STOP_AT_BUDGET,
        )
        path, reason = api.start(config)
    finally:
        for s in servers:
            try:
                s.__exit__(None, None, None)
            except Exception:
                pass
    assert reason.startswith("budget: max_calls (60 of 60")
    status = api.status(path).as_dict()
    assert status["failures"] == {} and status["spent"]["calls"] == 60
    counts = status["deployments"]["pool-openai"]
    assert sum(counts.values()) == 60
    assert counts["server-1"] < counts["server-0"]  # the slow server got less work
    assert counts.get("server-2", 0) <= 12  # nothing after it died (10, plus the 2 it may hold in flight)
    # nothing paid twice: every key was answered (billed) by exactly one server
    billed: dict = {}
    for s in servers:
        for key, outcomes in s.outcomes.items():
            billed[key] = billed.get(key, 0) + sum(o in BILLABLE for o in outcomes)
    assert len(billed) >= 60 and max(billed.values()) == 1 and sum(billed.values()) == 60


def test_a_profile_with_deployments_is_checked(tmp_path, monkeypatch):
    folder = tmp_path / "judges"
    folder.mkdir()
    (folder / "bad.toml").write_text(
        'name = "bad"\nmodel = "openai/x"\n[[deployments]]\napi_base = "http://127.0.0.1:1/v1"\nmax_concurrency = 0\n'
    )
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(folder))
    with pytest.raises(Exception, match="max_concurrency"):
        get_profile("bad")
