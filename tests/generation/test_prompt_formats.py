"""A candidate model is prompted the way it was trained: an instruction-tuned model through its chat
template, a base model as plain text it continues (``prompt_format = "completion"``, the bundled
``gemma270m``'s default); an answer that is only chat-template markup is a failure with its own
code, shown to no judge."""

from __future__ import annotations

import json

from genkit import WRITERS, BaseModelWriters, model_campaign, stored_rows
from judgekit import run_cli
from orchestrator.generation.settings import COMPLETION_STOP, completion_prompt, generation_settings
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.records.candidate_models import CandidateModel, GenerationSettings


def test_answers_that_are_only_template_markup_fail_with_their_own_code_and_reach_no_judge(tmp_path, capsys):
    with FakeOpenAIServer(behaviour=BaseModelWriters()) as server:
        config = model_campaign(tmp_path, server.url, prompts=3, max_calls=16)
        assert run_cli(["run", str(config), "--no-cache"]) == 0
        shown = [body for _, body in server.requests if body.get("model") not in WRITERS]
    path = tmp_path / "runs" / "gen.sqlite"
    assert set(stored_rows(path, "select status, error_type from answers where candidate = 'bad'")) == {("failed", "template_only")}
    assert shown and all("<|im_start|>" not in json.dumps(body) for body in shown)  # no judge saw the markup
    judged_bad = stored_rows(path, "select status, error_type from judgments where candidates like '%\"bad\"%'")
    assert judged_bad and set(judged_bad) == {("failed", "no_answer")}
    capsys.readouterr()
    assert run_cli(["rank", str(path)]) == 0
    assert "not judged (none of their answers could be generated): bad" in capsys.readouterr().out


def test_a_base_model_is_asked_for_a_plain_text_completion_and_its_answer_judged(tmp_path):
    writers = BaseModelWriters()
    with FakeOpenAIServer(behaviour=writers) as server:
        config = model_campaign(tmp_path, server.url, prompts=3, max_calls=16)
        text = config.read_text().replace('model = "openai/writer-bad"\n', 'model = "openai/writer-bad"\nprompt_format = "completion"\n', 1)
        config.write_text(text)
        assert run_cli(["run", str(config), "--no-cache"]) == 0
    path = tmp_path / "runs" / "gen.sqlite"
    made = stored_rows(path, "select status, text, settings from answers where candidate = 'bad'")
    assert made and all(status == "ok" and "Answer by writer-bad" in text for status, text, _ in made)
    assert all(json.loads(settings)["prompt_format"] == "completion" for *_, settings in made)
    assert writers.completions and all(
        body["prompt"].startswith("Question: ") and body["prompt"].endswith("\nAnswer:") for body in writers.completions
    )
    assert all(body["stop"] == COMPLETION_STOP for body in writers.completions)
    ok_bad = stored_rows(path, "select count(*) from judgments where status = 'ok' and candidates like '%\"bad\"%'")[0][0]
    assert ok_bad >= 1  # its answers were judged


def test_the_bundled_base_model_defaults_to_plain_text_and_the_format_is_part_of_an_answers_identity():
    assert generation_settings("g", CandidateModel(model="gemma270m")).prompt_format == "completion"
    assert generation_settings("q", CandidateModel(model="qwen1.5b")).prompt_format == "chat"
    assert generation_settings("g", CandidateModel(model="gemma270m", prompt_format="chat")).prompt_format == "chat"
    chat = GenerationSettings(model="openai/x")
    assert chat.identity() != chat.model_copy(update={"prompt_format": "completion"}).identity()
    prompt = completion_prompt([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Egg?"}])
    assert prompt == "Be brief.\n\nQuestion: Egg?\nAnswer:"
