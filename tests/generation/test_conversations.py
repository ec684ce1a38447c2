"""Prompts as conversations: a candidate model answers the last user turn of the whole
conversation, the judge is shown the conversation by the documented rule, and a conversation that
cannot be answered is one line before anything is paid."""

from __future__ import annotations

import json
import sqlite3

import pytest

from genkit import Writers, candidate_tables
from judgekit import run_cli
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.records.dataset import MAX_SHOWN_HISTORY_CHARS, Turn, shown_conversation

CHAT = [
    {"role": "system", "content": "You are a travel agent."},
    {"role": "user", "content": "I want to visit Lisbon."},
    {"role": "assistant", "content": "Lovely city. When?"},
    {"role": "user", "content": "In May: what should I pack?"},
]


def _config(tmp_path, url, prompts) -> str:
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in prompts))
    config = tmp_path / "chat.toml"
    config.write_text(
        f'name = "chat"\nruns_dir = "{(tmp_path / "runs").as_posix()}"\n[data]\nprompts = "{path.as_posix()}"\nscope = "global"\n'
        f'[judging]\njudges = ["local-openai"]\n[budget]\nmax_calls = 4\n[dispatch]\napi_base = "{url}"\nbackoff_initial_s = 0.01\n'
        + candidate_tables(url, {"good": "writer-good", "bad": "writer-bad"}, system="Answer in one line.")
    )
    return str(config)


def test_a_candidate_model_answers_the_whole_conversation_and_the_judge_is_shown_it(tmp_path):
    writers = Writers()
    with FakeOpenAIServer(behaviour=writers) as server:
        path, _ = api.start(_config(tmp_path, server.url, [{"id": "c1", "messages": CHAT}]), cache=False)
    # the prompt's own system message wins over the candidate's, every turn is sent as it was
    assert writers.conversations and all(m == CHAT for m in writers.conversations)
    db = sqlite3.connect(path)
    shown = [json.loads(m)[1]["content"] for (m,) in db.execute("select messages from requests where status = 'done'")]
    assert shown and all("Assistant: Lovely city. When?\n\nUser: In May: what should I pack?" in s for s in shown)
    assert all("Answer by writer-" in s for s in shown)  # with both generated answers
    # the conversation survives the run file: resume and rank read it back whole
    stored = db.execute("select messages from prompts").fetchone()[0]
    assert json.loads(stored) == CHAT


def test_a_long_history_shows_the_last_turns_and_says_how_many_were_left_out():
    turns = [Turn(role="user" if k % 2 == 0 else "assistant", content=f"turn {k} " + "x" * 1500) for k in range(11)]
    shown = shown_conversation(turns)
    assert shown.startswith("[") and "earlier turns not shown]" in shown
    assert shown.endswith(turns[-1].content) and len(shown) <= MAX_SHOWN_HISTORY_CHARS + 40
    left_out = int(shown[1:].split()[0])
    assert left_out + shown.count("turn ") == 11  # every turn either shown whole or counted as left out
    assert shown_conversation([Turn(role="user", content="y" * 20_000)]).endswith("y" * 20_000)  # the last turn always whole


@pytest.mark.parametrize(
    "messages, says",
    [
        ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], "must end with the user turn"),
        ([], "non-empty list"),
        (
            [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}, {"role": "user", "content": "c"}],
            "system message may only come first",
        ),
        ([{"role": "bot", "content": "x"}], "role"),
        ([{"role": "user", "content": "  "}], "empty"),
    ],
)
def test_a_conversation_that_cannot_be_answered_is_one_line_and_exit_2(tmp_path, messages, says, capsys):
    config = _config(tmp_path, "http://127.0.0.1:9/v1", [{"id": "c1", "messages": messages}])
    assert run_cli(["run", config, "--dry-run", "--offline"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert says in err and "prompts.jsonl:1" in err
    assert not (tmp_path / "runs" / "chat.sqlite").exists()


@pytest.mark.parametrize(
    "rows, without_models, says",
    [
        ([{"prompt_id": "c1", "candidate": "good", "text": "an answer"}], False, "no answer of the candidate model 'bad'"),
        ([{"prompt_id": "c1", "candidate": "good", "text": ""}], False, "answers.jsonl:1"),
        (
            [{"prompt_id": "c1", "candidate": "good", "text": "a"}, {"prompt_id": "c1", "candidate": "good", "text": "b"}],
            False,
            "a second answer",
        ),
        ([{"prompt_id": "c1", "candidate": "good", "text": "a"}], True, "the config names no candidate models"),
    ],
)
def test_a_bad_answers_file_is_one_line_and_exit_2_before_anything_is_paid(tmp_path, rows, without_models, says, capsys):
    config = _config(tmp_path, "http://127.0.0.1:9/v1", [{"id": "c1", "messages": CHAT}])
    if without_models:
        text = open(config).read().split("[candidates.good]")[0]
        open(config, "w").write(text.replace('scope = "global"', 'responses = "responses.jsonl"\nscope = "global"'))
        (tmp_path / "responses.jsonl").write_text(
            "".join(json.dumps({"prompt_id": "c1", "candidate": c, "text": "t"}) + "\n" for c in ("A", "B"))
        )
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert run_cli(["run", config, "--answers-from", str(answers), "--no-cache"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert says in err, err
    assert not (tmp_path / "runs" / "chat.sqlite").exists()
