"""docs/own-data.md, run end to end: every `bash` command of the guide, as written,
from a copy of `examples/`, against a real OpenAI-compatible server on 127.0.0.1 (the guide's
`127.0.0.1:8000` becomes the test server's address); its profile and template examples load."""

import math
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from orchestrator.judging.client import JudgeProfile
from orchestrator.judging.testserver import FakeOpenAIServer, completion, logprob_entry
from orchestrator.records.templates import load_template

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "own-data.md"
QUALITY = {"careful-bot": 3.0, "rambling-bot": 2.0, "terse-bot": 1.0, "wrong-bot": 0.0}


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", GUIDE.read_text(), re.S)


def commands() -> list[str]:
    return [line.strip() for block in blocks("bash") for line in block.splitlines() if line.strip() and not line.startswith("#")]


def _texts(body: dict) -> dict[str, str]:
    user = " ".join(m["content"] for m in body["messages"] if m["role"] == "user")
    return dict(re.findall(r'Response ([AB]): """(.*?)"""', user, re.S))


def by_quality(body: dict):
    """A judge that knows which bot wrote a text (by the text itself) and prefers the better bot."""
    import json

    answers = {}
    for line in (ROOT / "examples" / "own-data" / "responses.jsonl").read_text().splitlines():
        row = json.loads(line)
        answers[row["text"]] = QUALITY[row["candidate"]]
    shown = _texts(body)
    qa, qb = answers.get(shown.get("A", ""), 1.5), answers.get(shown.get("B", ""), 1.5)
    p = 1 / (1 + math.exp(-2 * (qa - qb)))
    top = "A" if p >= 0.5 else "B"
    return 200, {}, completion(top, [logprob_entry(top, [("A", 0.95 * p), ("B", 0.95 * (1 - p)), ("C", 0.04), ("\n", 0.01)])])


def test_the_guide_shows_its_commands_and_examples():
    assert any(c.startswith("orchestrator init") for c in commands())
    assert any(c.startswith("orchestrator run") and "--dry-run" not in c for c in commands())
    assert len(blocks("toml")) == 2


def test_the_guides_profile_and_template_examples_load(tmp_path):
    profile_text, template_text = blocks("toml")
    JudgeProfile.model_validate(tomllib.loads(profile_text))
    (tmp_path / "support-tone.toml").write_text(template_text)
    template = load_template(tmp_path / "support-tone.toml")
    assert template.kind == "pairwise" and template.placeholders == {"context", "A", "B"}


@pytest.mark.slow
def test_every_command_of_the_guide_runs_as_written_against_a_local_openai_server(tmp_path):
    shutil.copytree(ROOT / "examples" / "own-data", tmp_path / "examples" / "own-data")
    exe = Path(sys.executable).parent / "orchestrator"
    with FakeOpenAIServer(by_quality) as server:
        for command in commands():
            line = command.replace("http://127.0.0.1:8000/v1", server.url)
            assert line.startswith("orchestrator ")
            result = subprocess.run(
                [str(exe), *__import__("shlex").split(line)[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300
            )
            assert result.returncode == 0, (command, result.stdout[-2000:], result.stderr[-2000:])
        assert server.requests  # the judge was asked
    assert (tmp_path / "cooking.html").is_file()
    import orchestrator as orc

    ranking = orc.ranking(tmp_path / "runs" / "cooking.sqlite").as_dict()["groups"][0]["ranking"]
    assert ranking[0]["candidate"] == "careful-bot" and ranking[-1]["candidate"] == "wrong-bot"
    board = orc.ranking(tmp_path / "runs" / "vs-careful.sqlite").as_dict()["groups"][0]["ranking"]
    assert board[-1]["candidate"] == "wrong-bot"


def test_init_refuses_what_it_cannot_write_well(tmp_path):
    from judgekit import run_cli

    data = ROOT / "examples" / "own-data"
    base = ["init", "--prompts", str(data / "prompts.jsonl"), "--responses", str(data / "responses.jsonl")]
    existing = tmp_path / "mine.toml"
    existing.write_text("keep me")
    assert run_cli([*base, "--out", str(existing)]) == 2 and existing.read_text() == "keep me"
    assert run_cli([*base, "--out", str(tmp_path / "x.toml"), "--kind", "absolutely"]) == 2
    assert run_cli([*base, "--out", str(tmp_path / "x.toml"), "--anchor", "nobody"]) == 2
    assert run_cli([*base, "--out", str(tmp_path / "nope" / "x.toml")]) == 2
    assert run_cli(["init", "--prompts", str(tmp_path / "missing.jsonl"), "--responses", str(data / "responses.jsonl")]) == 2
    assert not (tmp_path / "x.toml").exists()
    from orchestrator import api
    from orchestrator.errors import OrchestratorError

    with pytest.raises(OrchestratorError, match="init: no choice named 'budget'.*max_calls"):
        api.init(data / "prompts.jsonl", data / "responses.jsonl", out=tmp_path / "x.toml", budget=40)
    assert run_cli([*base, "--out", str(tmp_path / "x.toml")]) == 0
    from orchestrator.records.config import load_config

    config = load_config(tmp_path / "x.toml")
    assert config.judging.pairwise_template == "generic-pairwise" and config.data.scope == "global"
    assert config.judging.criterion and config.judging.task


def test_a_generic_template_without_its_criterion_is_refused_by_name(tmp_path):
    from judgekit import run_cli

    data = ROOT / "examples" / "own-data"
    config = tmp_path / "c.toml"
    config.write_text(
        f'name = "c"\n[data]\nprompts = "{(data / "prompts.jsonl").as_posix()}"\nresponses = "{(data / "responses.jsonl").as_posix()}"\n'
        '[judging]\njudges = ["local-openai"]\npairwise_template = "generic-pairwise"\ntask = "cook"\n'
    )
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
