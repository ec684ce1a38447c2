"""Candidate models against endpoints that fail, need keys or answer too much, through the command a
user runs: the profile's key, parameters and time limit are sent; attempts are bounded by
``dispatch.max_attempts``; an answer too long to show is judged by no request; a model none of whose
answers could be had is not ranked; the cache keeps candidates apart; the closing summary counts
the judge calls made; a failure the user can fix is asked again by ``resume``."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter

from genkit import WRITERS, Writers, model_campaign
from judgekit import quality_behaviour, reference_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer, completion


def _rows(path, sql, args=()):
    db = sqlite3.connect(path)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def _keyed_profile(folder, url, **fields) -> None:
    (folder / "judges").mkdir(exist_ok=True)
    text = f'name = "writer-keyed"\nmodel = "openai/writer-good"\napi_base = "{url}"\napi_key_env = "WRITER_TEST_KEY"\n'
    text += "".join(f"{k} = {json.dumps(v)}\n" for k, v in fields.items() if k != "params")
    if "params" in fields:
        text += "[params]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in fields["params"].items())
    (folder / "judges" / "writer-keyed.toml").write_text(text)


def test_a_profiles_key_parameters_and_time_limit_are_sent_with_every_generation(tmp_path, monkeypatch):
    monkeypatch.setenv("WRITER_TEST_KEY", "sk-writer-secret")
    with FakeOpenAIServer(behaviour=Writers()) as server:
        _keyed_profile(tmp_path, server.url, timeout_s=7, params={"top_p": 0.5})
        config = model_campaign(tmp_path, server.url, prompts=3, max_calls=8, name="keyed")
        config.write_text(config.read_text().replace('model = "openai/writer-good"', 'model = "writer-keyed"', 1))
        path, _ = api.start(config, cache=False)
        sent = [(auth, body) for auth, (_, body) in zip(server.authorizations, server.requests) if body.get("model") == "writer-good"]
    assert sent and all(auth == "Bearer sk-writer-secret" for auth, _ in sent)  # not "not-needed"
    assert all(body.get("top_p") == 0.5 for _, body in sent)
    settings = json.loads(_rows(path, "select settings from answers where candidate = 'good'")[0][0])
    assert settings["timeout_s"] == 7 and settings["api_key_env"] == "WRITER_TEST_KEY"
    assert "sk-writer-secret" not in path.read_bytes().decode("latin-1")  # the key itself is never stored


def test_a_failing_model_is_asked_at_most_max_attempts_times_per_answer(tmp_path):
    writers = Writers(failing={"writer-bad"})
    with FakeOpenAIServer(behaviour=writers) as server:
        config = model_campaign(tmp_path, server.url, prompts=3, max_calls=12, extra="max_attempts = 2\n")  # (in [dispatch])
        path, _ = api.start(config, cache=False)
    asked = Counter({prompt: n for (model, prompt), n in writers.asked.items() if model == "writer-bad"})
    failed = _rows(path, "select count(*) from answers where candidate = 'bad' and status = 'failed'")[0][0]
    assert failed >= 1 and len(asked) == failed and set(asked.values()) == {2}  # 2 requests per answer, not 6


class Huge(Writers):
    """``writer-bad`` answers with 300 kB (its max_tokens allow at most 8 bytes × 512)."""

    def __call__(self, body):
        if body.get("model") == "writer-bad":
            with self.lock:
                self.asked[("writer-bad", body["messages"][-1]["content"])] += 1
            return 200, {}, completion("word " * 60_000 + f"<<q={WRITERS['writer-bad']:.4f}>>")
        return super().__call__(body)


def test_an_answer_too_long_to_show_is_judged_by_no_request_with_its_own_code(tmp_path):
    writers = Huge()
    with FakeOpenAIServer(behaviour=writers) as server:
        path, _ = api.start(model_campaign(tmp_path, server.url, prompts=3, max_calls=24), cache=False)  # no budget on tokens
        shown = [body for _, body in server.requests if body.get("model") not in WRITERS]
    assert all("word word word" not in json.dumps(body) for body in shown)  # no judge saw it, ever
    answers = _rows(path, "select status, error_type from answers where candidate = 'bad'")
    assert answers and set(answers) == {("failed", "answer_too_long")}
    codes = Counter(t for (t,) in _rows(path, "select error_type from judgments where candidates like '%\"bad\"%'"))
    assert set(codes) == {"answer_too_long"} and "budget" not in codes
    assert _rows(path, "select count(*) from judgments where status = 'ok' and candidates like '%\"bad\"%'")[0][0] == 0


def test_a_model_with_no_answer_is_shown_as_not_judged_never_ranked(tmp_path, capsys):
    with FakeOpenAIServer(behaviour=Writers(failing={"writer-bad"})) as server:
        path, _ = api.start(model_campaign(tmp_path, server.url, prompts=3, max_calls=16), cache=False)
    capsys.readouterr()
    assert run_cli(["rank", str(path), "--json"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    ranked = [r["candidate"] for r in group["ranking"]]
    assert group["not_judged"] == ["bad"] and "bad" not in ranked and len(ranked) == 4
    assert sorted(r["rank"] for r in group["ranking"]) == [1, 2, 3, 4] and max(r["rank_high"] for r in group["ranking"]) <= 4
    assert run_cli(["rank", str(path)]) == 0
    assert "not judged (none of their answers could be generated): bad" in capsys.readouterr().out
    assert run_cli(["report", str(path), "--out", str(tmp_path / "r.html")]) == 0
    assert "Not judged (none of their answers could be generated): bad" in (tmp_path / "r.html").read_text()


def test_the_closing_summary_counts_the_calls_a_judge_received(tmp_path, capsys):
    with FakeOpenAIServer(behaviour=Writers(failing={"writer-bad"})) as server:
        config = model_campaign(tmp_path, server.url, prompts=3, max_calls=16)
        capsys.readouterr()
        assert run_cli(["run", str(config), "--no-cache"]) == 0
        judged = sum(1 for _, body in server.requests if body.get("model") not in WRITERS)
    out = capsys.readouterr().out
    unasked = _rows(tmp_path / "runs" / "gen.sqlite", "select count(*) from judgments where error_type = 'no_answer'")[0][0]
    assert unasked >= 1 and f"It spent {judged} judge calls over {judged + unasked} requests" in " ".join(out.split())


def test_two_candidates_of_the_same_model_get_answers_of_their_own_from_the_cache(tmp_path):
    writers = Writers()
    with FakeOpenAIServer(behaviour=writers) as server:
        config = model_campaign(tmp_path, server.url, prompts=3, max_calls=12, candidates=1)
        config.write_text(config.read_text().replace("writer-bad", "writer-good"))  # good and bad: one model, one setting
        path, _ = api.start(config, cache=tmp_path / "cache.sqlite")
    made = _rows(path, "select prompt_id, candidate, cached from answers where status = 'ok'")
    per_prompt = Counter(p for p, _, _ in made)
    assert all(n == 2 for n in per_prompt.values()) and not any(c for *_, c in made)  # none served from the other's answer
    assert sum(writers.asked.values()) == len(made)


def test_resume_asks_again_an_answer_that_failed_for_a_fixable_reason(tmp_path, capsys):
    down = Writers(failing={"writer-bad"})
    with FakeOpenAIServer(behaviour=down) as server:
        config = model_campaign(tmp_path, server.url, prompts=3, max_calls=40, budget_extra='[stopping]\nrule = "budget"\n')
        assert run_cli(["run", str(config), "--no-cache", "--pilot", "8"]) == 0
        path = tmp_path / "runs" / "gen.sqlite"
        failed = _rows(path, "select count(*) from answers where candidate = 'bad' and status = 'failed'")[0][0]
        assert failed >= 1
        down.failing = set()  # the endpoint is fixed
        capsys.readouterr()
        assert run_cli(["resume", str(path), "--no-cache"]) == 0
    assert f"asking again {failed} answer(s) that failed at the endpoint ({failed} server)" in capsys.readouterr().err
    assert _rows(path, "select count(*) from answers where status = 'failed'")[0][0] == 0
    assert _rows(path, "select count(*) from judgments where error_type = 'no_answer'")[0][0] == 0
    assert _rows(path, "select count(*) from judgments where status = 'ok' and candidates like '%\"bad\"%'")[0][0] >= 1


def test_answers_from_a_run_file_says_it_is_a_run_file_and_unused_rows_are_counted(tmp_path, capsys):
    with FakeOpenAIServer(behaviour=Writers()) as server:
        config = model_campaign(tmp_path, server.url, prompts=3, max_calls=8)
        assert run_cli(["run", str(config), "--no-cache"]) == 0
        run_file = tmp_path / "runs" / "gen.sqlite"
        capsys.readouterr()
        other = config.with_name("again.toml")
        other.write_text(config.read_text().replace('name = "gen"', 'name = "again"'))
        assert run_cli(["run", str(other), "--no-cache", "--answers-from", str(run_file)]) == 2
        err = capsys.readouterr().err
        assert "this is a run file (SQLite), not a file of answers" in err and "export" in err and "UTF-8" not in err
        answers = tmp_path / "answers.jsonl"
        assert run_cli(["export", str(run_file), "--format", "answers", "--out", str(answers)]) == 0
        extra = [{"prompt_id": "elsewhere", "candidate": "good", "text": "x"}, {"prompt_id": "p0", "candidate": "stranger", "text": "y"}]
        with answers.open("a") as fh:
            fh.writelines(json.dumps(row) + "\n" for row in extra)
        capsys.readouterr()
        assert run_cli(["run", str(other), "--no-cache", "--answers-from", str(answers)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "1 row(s) for prompts the run does not have" in err and "1 row(s) of 1 candidate(s) that are not its models (stranger)" in err


def test_effect_without_plan_is_refused_even_at_its_default_value(tmp_path, capsys):
    prompts, responses = write_dataset(tmp_path / "d", prompts=30, candidates=2, seed=3, base=[0.3, 0.7], spread=0.2)
    with FakeOpenAIServer(behaviour=quality_behaviour) as server:
        config = write_config(
            tmp_path, server.url, name="gate", prompts=prompts, responses=responses, max_calls=120, scope="global",
            extra='[compare]\ncandidate = "M1"\nbaseline = "M0"\n',
        )  # fmt: skip
        for value in ("3", "3.0", "5"):
            assert run_cli(["compare", str(config), "--effect", value, "--no-cache"]) == 2
            assert "--effect, --spread and --spread-from go with --plan" in capsys.readouterr().err
        assert not server.requests and not (tmp_path / "runs" / "gate.sqlite").exists()  # nothing paid, nothing written


def test_the_judge_is_shown_the_system_message_the_candidate_was_given(tmp_path):
    with FakeOpenAIServer(behaviour=Writers()) as server:
        config = model_campaign(tmp_path, server.url, prompts=2, max_calls=6, candidates=1)
        config.write_text(
            config.read_text().replace(
                'model = "openai/writer-good"\n', 'model = "openai/writer-good"\nsystem = "Answer only in French."\n'
            )
        )
        config.write_text(
            config.read_text().replace('model = "openai/writer-bad"\n', 'model = "openai/writer-bad"\nsystem = "Answer only in French."\n')
        )
        api.start(config, cache=False)
        judged = [body for _, body in server.requests if body.get("model") not in WRITERS]
    shown = [json.dumps(body) for body in judged if "writer-good" in json.dumps(body) and "writer-bad" in json.dumps(body)]
    assert shown and all("System: Answer only in French." in text for text in shown)


def test_a_conversations_system_message_is_kept_however_long_the_history():
    from orchestrator.records.dataset import Turn, shown_conversation

    turns = [Turn(role="system", content="Answer only in French.")]
    turns += [Turn(role=role, content=f"turn {k} " + "x" * 3000) for k, role in enumerate(["user", "assistant"] * 4)]
    turns.append(Turn(role="user", content="And now?"))
    shown = shown_conversation(turns)
    assert shown.startswith("System: Answer only in French.\n\n[") and shown.endswith("User: And now?") and "not shown]" in shown


def test_resume_refuses_a_candidate_whose_settings_changed_unless_allowed(tmp_path, capsys):
    with FakeOpenAIServer(behaviour=Writers()) as server:
        config = model_campaign(tmp_path, server.url, prompts=3, max_calls=40, budget_extra='[stopping]\nrule = "budget"\n')
        assert run_cli(["run", str(config), "--no-cache", "--pilot", "6"]) == 0
        path = tmp_path / "runs" / "gen.sqlite"
        db = sqlite3.connect(path)  # the user edited the candidate since (what the stored config now names)
        stored = json.loads(db.execute("select config from runs").fetchone()[0])
        stored["candidates"]["good"]["temperature"] = 0.7
        db.execute("update runs set config = ?", [json.dumps(stored)])
        db.commit()
        db.close()
        before = _rows(path, "select count(*) from answers")[0][0]
        capsys.readouterr()
        assert run_cli(["resume", str(path), "--no-cache"]) == 2
        err = capsys.readouterr().err
        assert (
            "candidate 'good' would now be asked with other settings" in err and "temperature" in err and len(err.strip().splitlines()) == 1
        )
        assert _rows(path, "select count(*) from answers")[0][0] == before  # nothing asked
        assert run_cli(["resume", str(path), "--no-cache", "--allow-changed-candidates"]) == 0
    temperatures = {json.loads(s)["temperature"] for (s,) in _rows(path, "select settings from answers where candidate = 'good'")}
    assert temperatures == {0.0, 0.7}  # both settings recorded, each with its answers


def test_dry_run_asks_each_candidate_model_and_names_the_failing_ones(tmp_path, capsys):
    writers = Writers(failing={"writer-bad"})
    with FakeOpenAIServer(behaviour=writers) as server:
        config = model_campaign(tmp_path, server.url, prompts=2, max_calls=6)
        capsys.readouterr()
        assert run_cli(["run", str(config), "--dry-run"]) == 2
    printed = capsys.readouterr()
    assert "candidate model(s) 'bad' did not answer: server" in printed.err
    assert writers.asked and {m for m, _ in writers.asked} == {"writer-good", "writer-bad"}
    assert not (tmp_path / "runs" / "gen.sqlite").exists()


class FailsOnEveryThird(Writers):
    """``writer-good`` asked as the candidate ``cand`` (its system message says so) fails on every
    third article (HTTP 500); as ``base`` it always answers."""

    def __call__(self, body):
        first = body.get("messages", [{}])[0]
        article = re.search(r"Article (\d+):", body["messages"][-1]["content"] if body.get("messages") else "")
        if first.get("content") == "cand" and article and int(article.group(1)) % 3 == 0:
            with self.lock:
                self.asked[("cand", article.group(0))] += 1
            return 500, {}, {"error": {"message": "the model is down", "type": "server_error"}}
        return super().__call__(body)


def test_the_gate_counts_a_prompt_whose_answer_failed_as_lost_never_leaves_it_out(tmp_path, capsys):
    """Two copies of one model, the candidate failing on every third prompt: on the prompts both
    answered they are equal, so a gate that left the failed prompts out would read no difference."""
    prompts, responses = write_dataset(tmp_path / "d", prompts=30, candidates=1)
    with FakeOpenAIServer(behaviour=FailsOnEveryThird()) as server:
        tables = "".join(
            f'\n[candidates.{name}]\nmodel = "openai/writer-good"\napi_base = "{server.url}"\nsystem = "{name}"\n'
            for name in ("cand", "base")
        )
        compare = '\n[compare]\ncandidate = "cand"\nbaseline = "base"\ndesign = "anytime"\n'
        config = write_config(
            tmp_path, server.url, name="gate", prompts=prompts, responses=responses, max_calls=60, scope="global", extra=tables + compare
        )
        capsys.readouterr()
        code = run_cli(["compare", str(config), "--no-cache", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["lost"]["cand"] >= 3 and out["lost"]["base"] == 0 and "counted as lost by cand" in out["sentence"]
    assert out["difference"] < -5  # the lost prompts are in the figure: the answered ones read 0
    assert out["decision"] in ("worse", "not better", "not yet known") and code == {"worse": 10, "not better": 13}.get(out["decision"], 12)


def test_ctrl_c_with_generations_in_flight_says_so_and_commits_what_was_paid(tmp_path):
    import signal
    import subprocess
    import time

    import childkit

    with FakeOpenAIServer(behaviour=Writers(), delay_s=1.5) as server:
        config = model_campaign(tmp_path, server.url, prompts=4, max_calls=24)
        proc = childkit.popen(["run", str(config), "--no-cache"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not any(body.get("model") in WRITERS for _, body in list(server.requests)) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
        stderr = proc.stderr.read() if proc.stderr else ""
        asked = sum(1 for _, body in server.requests if body.get("model") in WRITERS)
    path = tmp_path / "runs" / "gen.sqlite"
    said = " ".join(stderr.split())
    assert code == 130 and "answer generation(s) in flight (at most 600 s)" in said and "orchestrator resume" in said, stderr
    made = _rows(path, "select count(*) from answers where status = 'ok'")[0][0]
    assert made == asked >= 1  # every generation that was sent was answered and committed
    assert _rows(path, "select status from runs")[0][0] == "interrupted"


def test_ctrl_c_during_a_comparison_drains_and_says_how_to_go_on(tmp_path):
    import signal
    import subprocess
    import time

    import childkit

    prompts, responses = write_dataset(tmp_path / "d", prompts=30, candidates=2, seed=3, base=[0.45, 0.55], spread=0.2)
    with FakeOpenAIServer(quality_behaviour, delay_s=0.5) as server:
        config = write_config(
            tmp_path, server.url, name="gate", prompts=prompts, responses=responses, max_calls=120, scope="global",
            extra='[compare]\ncandidate = "M1"\nbaseline = "M0"\n',
        )  # fmt: skip
        proc = childkit.popen(["compare", str(config), "--no-cache"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
        stderr = proc.stderr.read() if proc.stderr else ""
    path = tmp_path / "runs" / "gate.sqlite"
    assert code == 130 and f"interrupted; continue with: orchestrator resume {path}" in " ".join(stderr.split()), stderr
    assert _rows(path, "select status from runs")[0][0] == "interrupted"


def test_answers_from_a_prompts_file_says_it_is_not_a_file_of_answers(tmp_path, capsys):
    with FakeOpenAIServer(behaviour=Writers()) as server:
        config = model_campaign(tmp_path, server.url, prompts=2, max_calls=4)
        capsys.readouterr()
        assert run_cli(["run", str(config), "--no-cache", "--answers-from", str(tmp_path / "data" / "prompts.jsonl")]) == 2
        assert not server.requests
    err = " ".join(capsys.readouterr().err.split())
    assert "not a file of answers, it looks like a prompts file (rows with id and text)" in err and "Field required" not in err


def test_a_mistyped_bundled_model_is_suggested_and_a_missing_key_refused_before_anything_loads(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("WRITER_TEST_KEY", raising=False)
    p, r = write_dataset(tmp_path / "d", prompts=2, candidates=1)
    with FakeOpenAIServer(behaviour=Writers()) as server:
        for model, said in (
            ("gemma-270m", "'gemma-270m' is not a model litellm can route; did you mean the bundled model 'gemma270m'?"),
            ("openai/gemma-270m", "candidates.mine: model 'openai/gemma-270m' needs OPENAI_API_KEY in the environment"),
            ("writer-keyed", "candidates.mine: its profile needs the API key in the environment variable WRITER_TEST_KEY"),
        ):
            _keyed_profile(tmp_path, server.url)
            extra = f'[candidates.mine]\nmodel = "{model}"\n'
            config = write_config(tmp_path, server.url, name="keys", prompts=p, responses=r, max_calls=4, extra=extra, scope="global")
            text = config.read_text()
            config.write_text(
                text[: text.index("[candidates.mine]")].replace("[dispatch]", "[dispatch]") + text[text.index("[candidates.mine]") :]
            )
            capsys.readouterr()
            assert run_cli(["run", str(config), "--no-cache"]) == 2, model
            err = " ".join(capsys.readouterr().err.split())
            assert said in err and len(err.splitlines()) == 1, err
        assert not server.requests and not (tmp_path / "runs" / "keys.sqlite").exists()  # nothing asked, nothing written


def test_through_the_anchor_a_system_whose_answer_failed_lost_that_prompt_to_the_anchor(tmp_path, capsys):
    """Two copies of one model against the dataset's reference answers, the candidate failing on
    every third prompt: equal on the prompts both answered, the lost ones weigh against it."""
    prompts, responses = write_dataset(tmp_path / "d", prompts=30, candidates=1, reference=0.5)
    with FakeOpenAIServer(behaviour=FailsOnEveryThird(judge=reference_behaviour())) as server:
        tables = "".join(
            f'\n[candidates.{name}]\nmodel = "openai/writer-good"\napi_base = "{server.url}"\nsystem = "{name}"\n'
            for name in ("cand", "base")
        )
        compare = '\n[compare]\ncandidate = "cand"\nbaseline = "base"\nanchor = "dataset"\ndesign = "anytime"\n'
        config = write_config(
            tmp_path, server.url, name="anchored", prompts=prompts, responses=responses, max_calls=240, scope="global",
            extra=tables + compare,
        )  # fmt: skip
        capsys.readouterr()
        code = run_cli(["compare", str(config), "--no-cache", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["lost"]["cand"] >= 3 and out["lost"]["base"] == 0 and "counted as lost by cand" in out["sentence"]
    assert out["difference"] < -5 and out["candidate_win_rate"] < out["baseline_win_rate"]
    assert code == {"worse": 10, "not better": 13}.get(out["decision"], 12)


def test_resume_of_a_finished_run_asks_again_what_failed_at_the_endpoint(tmp_path, capsys):
    down = Writers(failing={"writer-bad"})
    with FakeOpenAIServer(behaviour=down) as server:
        config = model_campaign(tmp_path, server.url, prompts=3, max_calls=16)
        assert run_cli(["run", str(config), "--no-cache"]) == 0
        path = tmp_path / "runs" / "gen.sqlite"
        assert _rows(path, "select status from runs")[0][0] == "finished"
        failed = _rows(path, "select count(*) from answers where candidate = 'bad' and status = 'failed'")[0][0]
        down.failing = set()
        capsys.readouterr()
        assert run_cli(["resume", str(path), "--no-cache"]) == 0
        assert f"asking again {failed} answer(s)" in capsys.readouterr().err
        assert _rows(path, "select count(*) from answers where status = 'failed'")[0][0] == 0
        assert run_cli(["resume", str(path), "--no-cache"]) == 0  # nothing left to ask: finished, nothing to do
    assert "already finished" in capsys.readouterr().err
