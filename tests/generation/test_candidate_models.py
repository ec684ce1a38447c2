"""Candidates that are models: answers generated only where a planned request needs them, once,
committed with their provenance before any judge sees them — through the real engine, a real
HTTP server on 127.0.0.1 and real run files."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess

import childkit
import pytest

from genkit import Writers, candidate_tables, model_campaign
from judgekit import run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.errors import OrchestratorError
from orchestrator.judging.testserver import FakeOpenAIServer


def answers(path) -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        return db.execute(
            "select prompt_id, candidate, status, text, prompt_tokens, completion_tokens, finish_reason, truncated, error_type, settings "
            "from answers order by prompt_id, candidate"
        ).fetchall()
    finally:
        db.close()


def shown_in_requests(path, candidate: str) -> list[tuple[str, str]]:
    db = sqlite3.connect(path)
    try:
        return db.execute(
            "select prompt_id, messages from requests where status = 'done' and candidates like ?", [f'%"{candidate}"%']
        ).fetchall()
    finally:
        db.close()


def test_a_run_generates_only_the_answers_it_judges_once_each_and_shows_them_to_the_judge(tmp_path, capsys):
    writers = Writers()
    with FakeOpenAIServer(behaviour=writers) as server:
        config = model_campaign(tmp_path, server.url, prompts=8, max_calls=24)
        path, _ = api.start(config, cache=False)
    stored = answers(path)
    judged = {(p, c) for c in ("good", "bad") for p, _ in shown_in_requests(path, c)}
    generated = {(p, c) for p, c, status, *_ in stored if status == "ok"}
    assert generated == judged  # every judged answer generated, nothing generated that no judge saw
    assert len(generated) < 16  # 8 prompts × 2 models: the run judged fewer
    assert max(writers.asked.values()) == 1 and sum(writers.asked.values()) == len(generated)
    for prompt_id, messages in shown_in_requests(path, "good"):
        text = next(t for p, c, _, t, *_ in stored if (p, c) == (prompt_id, "good"))
        assert text in json.loads(messages)[1]["content"]  # the judge was shown the generated answer itself
    for _, _, _, text, prompt_tokens, completion_tokens, finish, truncated, _, settings in stored:
        assert (prompt_tokens, completion_tokens, finish, truncated) == (50, 20, "stop", 0)
        assert json.loads(settings)["model"].startswith("openai/writer-")
    exported = tmp_path / "answers.jsonl"
    assert run_cli(["export", str(path), "--format", "answers", "--out", str(exported)]) == 0
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    assert {(r["prompt_id"], r["candidate"]) for r in rows} == generated
    assert all(
        r["model"].startswith("openai/writer-") and r["completion_tokens"] == 20 and r["settings"]["max_tokens"] == 512 for r in rows
    )
    assert run_cli(["export", str(path), "--format", "answers", "--out", str(exported), "--include-failed"]) == 2
    capsys.readouterr()
    assert run_cli(["rank", str(path), "--details"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    n_good = sum(1 for _, c in generated if c == "good")
    assert (
        f"answers of good (openai/writer-good): {n_good} generated of 8 prompts ({70 * n_good - 20 * n_good}+{20 * n_good} tokens"
        in printed
    )
    assert "flagged: good" not in printed and "flagged: bad" not in printed  # unwritten answers are not empty answers
    ranking = api.ranking(path).as_dict()["groups"][0]["ranking"]
    order = [r["candidate"] for r in ranking]
    assert order[0] == "good" and order[-1] == "bad"  # the hidden qualities: 0.95, 0.3–0.7, 0.05
    status = api.status(path).as_dict()
    assert status["answers"]["good"]["ok"] + status["answers"]["bad"]["ok"] == len(generated)
    assert status["answers"]["good"]["prompts"] == 8
    # what the answers cost is in the run's tokens: 70 per answer beside the judges' own
    db = sqlite3.connect(path)
    judge_tokens = db.execute("select sum(prompt_tokens + completion_tokens) from judgments").fetchone()[0]
    db.close()
    assert status["spent"]["tokens"] == judge_tokens + 70 * len(generated)


def test_answers_from_a_file_replay_the_campaign_without_any_model(tmp_path):
    with FakeOpenAIServer(behaviour=Writers()) as server:
        config = model_campaign(tmp_path, server.url, prompts=6, max_calls=20, name="live")
        live, _ = api.start(config, cache=False)
        rows = [{"prompt_id": p, "candidate": c, "text": t} for p, c, s, t, *_ in answers(live) if s == "ok"]
        recorded = tmp_path / "answers.jsonl"
        recorded.write_text("".join(json.dumps(r) + "\n" for r in rows))
        writers = Writers()
        server.behaviour = writers
        replay_config = model_campaign(tmp_path / "replay", server.url, prompts=6, max_calls=20, name="replay")
        assert run_cli(["run", str(replay_config), "--answers-from", str(recorded), "--no-cache", "--no-report"]) == 0
    assert sum(writers.asked.values()) == 0  # no candidate model was called
    replayed = tmp_path / "replay" / "runs" / "replay.sqlite"
    assert [(p, c, t) for p, c, s, t, *_ in answers(replayed) if s == "ok"] == [(r["prompt_id"], r["candidate"], r["text"]) for r in rows]
    assert [r["candidate"] for r in api.ranking(replayed).as_dict()["groups"][0]["ranking"]] == [
        r["candidate"] for r in api.ranking(live).as_dict()["groups"][0]["ranking"]
    ]


def test_an_answer_that_cannot_be_had_is_a_stored_failure_and_no_judge_is_asked(tmp_path):
    recorded = tmp_path / "answers.jsonl"
    recorded.write_text(
        "".join(
            json.dumps({"prompt_id": "p0", "candidate": c, "text": f"Answer <<q={q}>>"}) + "\n" for c, q in (("good", 0.9), ("bad", 0.1))
        )
    )
    with FakeOpenAIServer(behaviour=Writers(empty={"writer-bad"}, truncate={"writer-good"})) as server:
        # an empty answer and one that stopped at max_tokens, from the models
        path, _ = api.start(model_campaign(tmp_path / "live", server.url, prompts=4, max_calls=16), cache=False)
        stored = answers(path)
        assert {(c, s, e) for _, c, s, _, *_, e, _ in stored} <= {("good", "ok", None), ("bad", "failed", "empty")}
        assert all(t == 1 for _, c, s, *_, t, _, _ in stored if c == "good")  # truncated, flagged, judged as it is
        db = sqlite3.connect(path)
        no_answer = db.execute("select count(*), sum(coalesce(completions, 1)) from judgments where error_type = 'no_answer'").fetchone()
        assert no_answer[0] >= 1 and no_answer[1] == 0  # failed requests that paid no judge call
        assert shown_in_requests(path, "bad") == []  # no judge was shown an answer that does not exist
        db.close()
        # from a file that lacks most answers: each missing one is a failure that names the file
        path2, _ = api.start(model_campaign(tmp_path / "file", server.url, prompts=4, max_calls=16), cache=False, answers_from=recorded)
    reasons = {e for _, _, s, _, *_, e, _ in answers(path2) if s == "failed"}
    assert reasons == {"not_in_file"}


def test_kill_9_while_answers_are_generated_then_resume_generates_nothing_twice(tmp_path):
    writers = Writers()
    with FakeOpenAIServer(behaviour=writers) as server:
        config = model_campaign(tmp_path, server.url, prompts=6, max_calls=24, name="victim")
        path = tmp_path / "runs" / "victim.sqlite"
        command = ["run", str(config), "--no-cache", "--no-report"]
        committed_at_kill: dict[tuple[str, str], int] = {}
        for point in ("answer_committed:2", "commit_answer:3"):
            env = {**os.environ, "ORCHESTRATOR_FAILPOINTS": point}
            proc = childkit.popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
            proc.wait(timeout=120)
            assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
            models = {"good": "writer-good", "bad": "writer-bad"}
            prompts = {f"p{k}": f"Article {k}: the council approved a library." for k in range(6)}
            for p, c, status, *_ in answers(path):
                if status == "ok":  # committed: how often its model had been asked by then
                    committed_at_kill.setdefault((p, c), writers.asked[(models[c], prompts[p])])
            command = ["resume", str(path), "--no-cache", "--no-report"]
        env = {k: v for k, v in os.environ.items() if k != "ORCHESTRATOR_FAILPOINTS"}
        final = childkit.run(command, capture_output=True, text=True, timeout=300, env=env)
        assert final.returncode == 0, final.stderr
    assert committed_at_kill
    # an answer committed before a kill is never asked for again (one in flight at the kill, never
    # committed, is asked again on resume)
    asked_again = [
        key
        for key, n in committed_at_kill.items()
        if writers.asked[({"good": "writer-good", "bad": "writer-bad"}[key[1]], f"Article {key[0][1:]}: the council approved a library.")]
        != n
    ]
    assert asked_again == []
    committed = [(p, c) for p, c, s, *_ in answers(path) if s == "ok"]
    # every answer generated once, but those in flight at one of the two kills (concurrency 4)
    assert len(committed) >= len(committed_at_kill) and sum(writers.asked.values()) - len(committed) <= 2 * 4
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("select count(*) from answers where status = 'pending'").fetchone()[0] == 0


def test_extend_grows_a_run_with_candidate_models_and_generates_nothing_twice(tmp_path, capsys):
    writers = Writers()
    with FakeOpenAIServer(behaviour=writers) as server:
        path, _ = api.start(model_campaign(tmp_path, server.url, prompts=4, max_calls=12), cache=False)
        before = {k: v for k, v in writers.asked.items()}
        newcomer = tmp_path / "newcomer.jsonl"
        newcomer.write_text(
            "".join(json.dumps({"prompt_id": f"p{k}", "candidate": "M9", "text": f"Summary 9 <<q=0.6{k}>>"}) + "\n" for k in range(4))
        )
        assert run_cli(["extend", str(path), "--responses", str(newcomer), "--add-calls", "12", "--no-cache", "--no-report"]) == 0
        # a response of a candidate model cannot be added: its answers are generated
        model_rows = tmp_path / "model-rows.jsonl"
        model_rows.write_text(json.dumps({"prompt_id": "p0", "candidate": "good", "text": "typed by hand"}) + "\n")
        capsys.readouterr()
        assert run_cli(["extend", str(path), "--responses", str(model_rows), "--add-calls", "4", "--no-cache"]) == 2
        assert "is a candidate model of the run" in capsys.readouterr().err
    assert all(writers.asked[k] == n for k, n in before.items())  # nothing generated before was asked again
    assert max(writers.asked.values()) == 1
    assert "M9" in [r["candidate"] for r in api.ranking(path).as_dict()["groups"][0]["ranking"]]
    assert api.status(path).as_dict()["answers"]["good"]["ok"] == sum(1 for (m, _), n in writers.asked.items() if m == "writer-good")


def test_the_generation_cache_answers_a_second_run_with_nothing_generated(tmp_path):
    cache = tmp_path / "cache.sqlite"
    writers = Writers()
    with FakeOpenAIServer(behaviour=writers) as server:
        first, _ = api.start(model_campaign(tmp_path / "a", server.url, prompts=5, max_calls=16, name="a"), cache=cache)
        paid = sum(writers.asked.values())
        second, _ = api.start(model_campaign(tmp_path / "b", server.url, prompts=5, max_calls=16, name="b"), cache=cache)
    assert paid > 0 and sum(writers.asked.values()) == paid  # the second run generated nothing
    assert api.status(second).as_dict()["answers"]["good"]["cached"] == api.status(second).as_dict()["answers"]["good"]["ok"] > 0
    assert [a[3] for a in answers(second)] == [a[3] for a in answers(first)]


def test_a_hostile_answer_stays_data_inside_the_templates_delimiters(tmp_path):
    with FakeOpenAIServer(behaviour=Writers(hostile=True)) as server:
        path, _ = api.start(model_campaign(tmp_path, server.url, prompts=4, max_calls=12), cache=False)
    stored = {(p, c): t for p, c, status, t, *_ in answers(path) if status == "ok"}
    shown = shown_in_requests(path, "good")
    assert shown
    for prompt_id, messages in shown:
        user = json.loads(messages)[1]["content"]
        text = stored[(prompt_id, "good")]
        at = user.index(text)
        # the whole answer, instruction and quotes included, sits between the template's delimiters,
        # and the template's own question comes after it
        assert user[at - 3 : at] == '"""' and user[at + len(text) : at + len(text) + 3] == '"""'
        assert user.index("Which Summary is more coherent") > at + len(text)


@pytest.mark.parametrize(
    "tables, says",
    [
        ('[candidates.M0]\nmodel = "openai/x"\n', "'M0' is a candidate that is a model"),
        ('[candidates.mine]\nmodel = "no-such-provider-model"\n', "litellm cannot route"),
        ('[candidates.mine]\nmodel = "openai/x"\nmax_tokens = 0\n', "max_tokens"),
        ('[candidates.mine]\nmodel = "openai/x"\nparams = {messages = []}\n', "params.messages"),
        ('[candidates.""]\nmodel = "openai/x"\n', "is empty"),
        ('[candidates.mine]\nmodel = "openai/x"\ntemperature = "hot"\n', "temperature"),
    ],
)
def test_a_bad_candidate_model_is_one_line_and_exit_2_before_anything_is_paid(tmp_path, tables, says, capsys):
    p, r = write_dataset(tmp_path / "data", prompts=3, candidates=3)
    config = write_config(tmp_path, "http://127.0.0.1:9/v1", prompts=p, responses=r, extra=tables)
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
    err = capsys.readouterr().err
    assert says in " ".join(err.split()) and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs" / "test.sqlite").exists()


def test_a_campaign_of_models_only_needs_no_responses_file(tmp_path):
    p, _ = write_dataset(tmp_path / "data", prompts=4, candidates=2)
    with FakeOpenAIServer(behaviour=Writers()) as server:
        text = f"""
name = "models"
runs_dir = "{(tmp_path / "runs").as_posix()}"
[data]
prompts = "{p.as_posix()}"
scope = "global"
[judging]
judges = ["local-openai"]
[budget]
max_calls = 8
[dispatch]
api_base = "{server.url}"
backoff_initial_s = 0.01
{candidate_tables(server.url, {"good": "writer-good", "bad": "writer-bad"})}
"""
        config = tmp_path / "models.toml"
        config.write_text(text)
        path, _ = api.start(config, cache=False)
    assert [r["candidate"] for r in api.ranking(path).as_dict()["groups"][0]["ranking"]] == ["good", "bad"]
    config.write_text(text.split("[candidates.good]")[0])
    with pytest.raises(OrchestratorError, match="give a responses file, or candidates that are models"):
        api.load_config(config)


@pytest.mark.parametrize("bad", ["missing", "lacks a model"])
def test_a_bad_answers_file_on_resume_is_refused_before_any_model_or_judge_is_asked(tmp_path, bad, capsys):
    writers = Writers()
    with FakeOpenAIServer(behaviour=writers) as server:
        path, reason = api.start(model_campaign(tmp_path, server.url, prompts=6, max_calls=40), cache=False, pilot=8)
        assert "pilot" in str(reason)
        asked, requests = sum(writers.asked.values()), len(server.requests)
        before = answers(path)
        recorded = tmp_path / "answers.jsonl"
        if bad == "lacks a model":
            recorded.write_text(json.dumps({"prompt_id": "p0", "candidate": "good", "text": "an answer"}) + "\n")
        assert run_cli(["resume", str(path), "--answers-from", str(recorded), "--no-cache", "--no-report"]) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert ("no such file" if bad == "missing" else "no answer of the candidate model 'bad'") in err, err
        assert sum(writers.asked.values()) == asked and len(server.requests) == requests  # nothing asked, nothing paid
    assert answers(path) == before
