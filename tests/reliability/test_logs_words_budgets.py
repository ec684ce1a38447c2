"""Logs that cannot mean what they say are refused by every reader (file:line, one line, exit 2); no
path spends past its budget and the words equal the numbers; a thinking judge's answer and its
stated confidence are read as the docs say; nothing is claimed from no judgment; help texts and
docs say what is true."""

from __future__ import annotations

import itertools
import json
import random
import re
import sqlite3
from pathlib import Path

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st

from judgekit import run_cli, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.api import lifecycle
from orchestrator.judging.extract import stated_confidence
from orchestrator.judging.testserver import FakeOpenAIServer, completion

ROOT = Path(__file__).resolve().parents[2]

# --- a log of sampled verdicts, and logs that cannot mean what they say -----------------------------


def _samples_log(folder: Path, *, k: int = 3, prompts: int = 6, candidates: int = 5) -> tuple[Path, Path, Path]:
    rng = random.Random(1)
    names = [f"M{i}" for i in range(candidates)]
    log, prompt_rows, response_rows = [], [], []
    for p in range(prompts):
        prompt_rows.append({"id": f"p{p}", "text": f"prompt {p}"})
        response_rows += [
            {"prompt_id": f"p{p}", "candidate": c, "text": f"{c} on {p}", "human": {"coherence": float(i)}} for i, c in enumerate(names)
        ]
        for a, b in itertools.permutations(names, 2):
            wins = sum(rng.random() < (0.75 if a > b else 0.25) for _ in range(k))
            log.append(
                {"kind": "pairwise", "judge": "v", "prompt_id": f"p{p}", "candidates": [a, b],
                 "probs": {"A": wins / k, "B": (k - wins) / k}, "method": "samples", "samples": k}
            )  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    paths = folder / "log.jsonl", folder / "prompts.jsonl", folder / "responses.jsonl"
    for path, rows in zip(paths, (log, prompt_rows, response_rows)):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return paths


BAD_LINES = {
    "unknown method": lambda row: {**row, "method": "banana", "samples": None, "probs": {"A": 0.6, "B": 0.4}},
    "a misspelt method": lambda row: {**row, "method": "logprob", "samples": None, "probs": {"A": 0.6, "B": 0.4}},
    "a billion samples": lambda row: {**row, "samples": 1e9},
    "a NaN probability": lambda row: {**row, "probs": {"A": float("nan"), "B": 0.5}},
    "a verdict that is not one": lambda row: {**row, "method": "verdict", "samples": None, "probs": {"A": 0.7, "B": 0.3}},
    "shares of another k": lambda row: {**row, "probs": {"A": 0.5, "B": 0.5}},
}


def _readers(tmp_path: Path, log: Path, prompts: Path, responses: Path) -> dict[str, list[str]]:
    config = tmp_path / "from-log.toml"
    config.write_text(
        f'name = "from-log"\nseed = 1\nruns_dir = "{(tmp_path / "runs").as_posix()}"\n[data]\nprompts = "{prompts.as_posix()}"\n'
        f'responses = "{responses.as_posix()}"\nscope = "global"\n[judging]\njudges = ["v"]\n[budget]\nmax_calls = 10\n'
    )
    compare = tmp_path / "gate.toml"
    compare.write_text(config.read_text().replace('name = "from-log"', 'name = "gate"') + '[compare]\ncandidate = "M1"\nbaseline = "M0"\n')
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"prompt_id": "p0", "first": "M0", "second": "M1", "winner": "M1"}) + "\n")
    return {
        "replay": ["replay", str(log), "--responses", str(responses)],
        "run --from-log": ["run", str(config), "--from-log", str(log)],
        "compare --from-log": ["compare", str(compare), "--from-log", str(log)],
        "fit raee --log": ["fit", "raee", "--log", str(log)],
        "fit simplex --log": ["fit", "simplex", "--log", str(log), "--levels", "5"],
        "calibrate --log": ["calibrate", "--log", str(log), "--responses", str(responses), "--truth", "coherence"],
        "judges --log": ["judges", "--log", str(log), "--human", str(labels)],
    }


@pytest.mark.parametrize("bad", list(BAD_LINES))
@pytest.mark.parametrize(
    "reader", ["replay", "run --from-log", "compare --from-log", "fit raee --log", "fit simplex --log", "calibrate --log", "judges --log"]
)
def test_every_reader_of_logs_refuses_a_line_that_cannot_mean_what_it_says(tmp_path, capsys, monkeypatch, reader, bad):
    judges = write_judge(tmp_path / "judges", "v", logprobs=False, samples=3)
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(judges))
    log, prompts, responses = _samples_log(tmp_path / "data")
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    rows[7] = BAD_LINES[bad](rows[7])
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert run_cli(_readers(tmp_path, log, prompts, responses)[reader]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {log}:8: ") and len(err.splitlines()) == 1, err
    assert "resume" not in err and "sqlite" not in err  # never a temporary run file's advice
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").glob("*.sqlite"))


@pytest.mark.parametrize("command", ["run", "replay"])
def test_a_replayed_log_of_sampled_verdicts_never_spends_past_its_budget_and_says_what_it_spent(tmp_path, monkeypatch, capsys, command):
    judges = write_judge(tmp_path / "judges", "v", logprobs=False, samples=3, sampling="adaptive")
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(judges))
    log, prompts, responses = _samples_log(tmp_path / "data")
    cli = _readers(tmp_path, log, prompts, responses)
    if command == "replay":
        assert run_cli(["replay", str(log), "--responses", str(responses), "--budget", "10", "--json"]) == 0
        curve = json.loads(capsys.readouterr().out)["curve"]
        assert curve[-1][0] <= 10  # completions counted, within the budget
        return
    config = Path(cli["run --from-log"][1])
    config.write_text(config.read_text() + '[stopping]\nrule = "budget"\n')
    assert run_cli(cli["run --from-log"]) == 0
    run = tmp_path / "runs" / "from-log.sqlite"
    completions = sqlite3.connect(run).execute("select sum(coalesce(completions, 1)), count(*) from judgments").fetchone()
    assert completions[0] <= 10 and completions[0] == 3 * completions[1]
    status = api.status(run).as_dict()
    assert status["spent"]["calls"] == completions[0]
    said = re.search(r"max_calls \((\d+) of 10 used\)", status["stop_reason"])
    assert said and int(said.group(1)) == completions[0]
    text, _ = lifecycle.summary(run)
    assert f"It spent {completions[0]} judge calls over {completions[1]} requests" in text


# --- thinking and stated confidence -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text, value",
    [
        ("Confidence: 0,8", 0.8),
        ("Confidence: 80,5%", 0.805),
        ("Confidence: 0.8", 0.8),
        ("Confidence: 8/10", 0.8),
        ("Confidence: 0,8,1", None),
        ("Confidence: high", None),
        ("Confidence: 1e5", None),
        ("Confidence: 0", 0.0),
        ("Confidence: -5", None),
    ],
)
def test_a_stated_confidence_is_its_number_or_no_number_never_zero_by_accident(text, value):
    got, note = stated_confidence(text, "Confidence:")
    assert got == (pytest.approx(value) if value is not None else None)
    assert (note is None) == (value is not None)


@given(st.text(alphabet="0123456789,.%/ eE-abc", max_size=12))
@settings(max_examples=400, deadline=None)
def test_any_stated_confidence_reads_as_a_number_it_holds_or_as_none(tail):
    got, _ = stated_confidence("Confidence: " + tail, "Confidence:")
    if got is not None:
        assert 0.0 <= got <= 1.0
        first = re.search(r"\d+", tail)
        assert first, tail  # a number was there
        if got == 0.0:
            assert set(first.group()) == {"0"}, tail  # zero only from a written zero


def test_an_answer_quoting_a_stray_think_tag_is_read_whole_when_the_thinking_came_in_its_field(tmp_path, monkeypatch):
    """docs/judges.md: where the provider returns the thinking in a reasoning field, the whole answer is read."""

    def behaviour(body):
        text = " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "user")
        qs = [float(x) for x in re.findall(r"<<q=([0-9.]+)>>", text)]
        pick = "A" if qs[0] >= qs[1] else "B"
        out = completion(f"Summary A ends with a stray </think> tag, oddly.\nVerdict: {pick}")
        out["choices"][0]["message"]["reasoning_content"] = "I compare the two summaries."
        return 200, {}, out

    folder = write_judge(tmp_path / "judges", "think-openai", logprobs=False, thinking=True, prefill=False)
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(folder))
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3, seed=1)
    with FakeOpenAIServer(behaviour) as server:
        config = write_config(
            tmp_path, server.url, name="stray", prompts=prompts, responses=responses, judges='["think-openai"]', max_calls=6
        )
        config.write_text(
            config.read_text().replace(
                'judges = ["think-openai"]',
                'judges = ["think-openai"]\npairwise_template = "generic-pairwise-think"\ntask = "summarise"\ncriterion = "coherence"',
            )
        )
        path, _ = api.start(config, cache=False)
    rows = sqlite3.connect(path).execute("select status, method from judgments").fetchall()
    assert rows and set(rows) == {("ok", "verdict")}


# --- claims from nothing -------------------------------------------------------------------------------


def test_with_no_judgment_nothing_leads(tmp_path, capsys):
    def refuses(body):
        return 400, {}, {"error": {"message": "no"}}

    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3, seed=1)
    with FakeOpenAIServer(refuses) as server:
        config = write_config(tmp_path, server.url, name="none", prompts=prompts, responses=responses, scope="global", max_calls=6)
        assert run_cli(["run", str(config), "--no-cache"]) == 2
    run = tmp_path / "runs" / "none.sqlite"
    capsys.readouterr()
    ranking, status = api.ranking(run).as_dict(), api.status(run).as_dict()
    assert ranking["leader"] is False and status["top"] == {}
    assert "No judgment has succeeded yet" in ranking["warnings"][0]
    assert run_cli(["status", str(run)]) == 0
    assert "top of" not in capsys.readouterr().out


# --- words that are true --------------------------------------------------------------------------------


def _commands(group, path=()):
    for name, command in group.commands.items():
        yield (*path, name), command
        if hasattr(command, "commands"):  # a group of commands (fit, cache, judge)
            yield from _commands(command, (*path, name))


def test_no_help_text_loses_a_bracketed_word():
    """``[compare]`` is a config section: a help renderer that reads it as markup prints "a  section"."""
    from typer.testing import CliRunner

    from orchestrator.cli import app

    root = typer.main.get_command(app)

    runner = CliRunner()
    checked = 0
    for path, command in _commands(root):
        shown = " ".join(runner.invoke(app, [*path, "--help"], terminal_width=400).output.split())
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        for text in filter(None, texts):  # every help text printed whole, as written
            assert " ".join(text.split()) in shown, f"{' '.join(path)} --help does not print {text!r}"
            checked += 1
    assert checked > 100


def test_the_docs_say_what_is_true():
    from orchestrator.store import SCHEMA_VERSION

    compare = (ROOT / "docs" / "compare.md").read_text()
    assert "not built yet" not in compare.lower()
    configuration = (ROOT / "docs" / "configuration.md").read_text()
    assert f"now {SCHEMA_VERSION};" in configuration and "lock file beside it" not in configuration
    assert "provider" in (ROOT / "judges" / "README.md").read_text()
    assert "What is code and what is data" in (ROOT / "docs" / "reliability.md").read_text()


@pytest.mark.parametrize("task", ["answer\ncooking questions", "tabs\tand\nnewlines", 'quotes " and \\ backslashes'])
def test_init_writes_a_task_of_several_lines_as_toml_holds_it(tmp_path, task):
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3)
    out = tmp_path / "mine.toml"
    assert (
        run_cli(["init", "--prompts", str(prompts), "--responses", str(responses), "--out", str(out), "--task", task, "--criterion", task])
        == 0
    )
    config = api.load_config(out)
    assert config.judging.task == task and config.judging.criterion == task


def test_init_refuses_what_toml_cannot_hold_and_leaves_no_file(tmp_path, capsys):
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3)
    out = tmp_path / "mine.toml"
    assert run_cli(["init", "--prompts", str(prompts), "--responses", str(responses), "--out", str(out), "--task", "a\ud800b"]) == 2
    assert "TOML" in capsys.readouterr().err and not out.exists()


def test_a_log_whose_probabilities_were_rounded_is_read_as_the_log_format_reads_it(tmp_path, monkeypatch):
    """A log's probabilities are normalised when read (its format's rule): three options rounded to
    0.333 each replay as a tie, never as a refused answer."""
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(write_judge(tmp_path / "judges", "v")))
    log, prompts, responses = _samples_log(tmp_path / "data", prompts=3, candidates=3)
    rows = [
        {**json.loads(line), "method": "logprobs", "samples": None, "probs": {"A": 0.333, "B": 0.333, "C": 0.333}}
        for line in log.read_text().splitlines()
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert run_cli(["replay", str(log), "--responses", str(responses), "--scope", "global", "--json"]) == 0
