"""`orchestrator record` writes a replayable judgment log and resumes without asking twice."""

import asyncio
import json

import pytest

from conftest import write_jsonl
from orchestrator.errors import OrchestratorError
from orchestrator.judging import get_template
from orchestrator.judging.client import JudgeProfile, LiteLLMJudge
from orchestrator.judging.dispatch import RetryPolicy
from orchestrator.judging.testserver import FakeOpenAIServer, completion, logprob_entry
from orchestrator.offline.replay.record import load_prompts, plan_recording, record
from orchestrator.offline.replay.replay import build_groups, replay
from orchestrator.records.log import load_log, load_responses


def _behaviour(body):
    text = body["messages"][-1]["content"] if body["messages"][-1]["role"] == "user" else body["messages"][-2]["content"]
    if 'Summary A: """' in text:  # prefer the longer summary
        a = text.split('Summary A: """')[1].split('"""')[0]
        b = text.split('Summary B: """')[1].split('"""')[0]
        p = 0.8 if len(a) > len(b) else 0.2
        return 200, {}, completion("A", [logprob_entry("A", [("A", p), ("B", 1 - p)])])
    return 200, {}, completion("5", [logprob_entry("5", [("5", 0.6), ("6", 0.3), ("4", 0.1)])])


@pytest.fixture
def dataset(tmp_path):
    prompts = write_jsonl(tmp_path / "prompts.jsonl", [{"id": "p1", "text": "An article."}, {"id": "p2", "text": "Another."}])
    responses = write_jsonl(
        tmp_path / "responses.jsonl",
        [{"prompt_id": pid, "candidate": f"M{k}", "text": "word " * (k + 1), "human": {"q": k}} for pid in ("p1", "p2") for k in range(4)],
    )
    return prompts, responses


def test_record_then_resume_then_replay(dataset, tmp_path):
    prompts, responses = dataset
    profile = JudgeProfile(name="fake", model="openai/fake", prefill=True, top_logprobs=5)
    plan = plan_recording(
        load_prompts(prompts),
        responses,
        ["p1", "p2"],
        "fake",
        pairwise=get_template("poe-pairwise"),
        absolute=get_template("poe-absolute"),
        attribute="coherence",
    )
    assert len(plan.requests) == 2 * (4 * 3 + 4)
    out = tmp_path / "log.jsonl"
    with FakeOpenAIServer(_behaviour, faults=[(500, {}, {"error": {"message": "boom"}})]) as server:
        judge = LiteLLMJudge(profile.model_copy(update={"params": {"num_retries": 0}}), api_base=server.url)
        # one attempt per call here, so the injected 500 stays a failure for the next recording to redo
        first = asyncio.run(record(plan, judge, out, attribute="coherence", retry=RetryPolicy(max_attempts=1)))
        second = asyncio.run(record(plan, judge, out, attribute="coherence"))
        third = asyncio.run(record(plan, judge, out, attribute="coherence"))
        counts = server.key_counts()
    assert first == {"planned": 32, "skipped": 0, "written": 31, "failed": 1}
    assert second == {"planned": 32, "skipped": 31, "written": 1, "failed": 0}  # only the failed one again
    assert third["written"] == 0 and third["skipped"] == 32
    assert max(c for k, c in counts.items() if k) <= 2 and sum(c == 2 for c in counts.values()) == 1
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len({line["key"] for line in lines}) == 32
    report = replay(build_groups(load_log(out), load_responses(responses), "q", "per_prompt"), "reorder")
    assert report.full_spearman == pytest.approx(1.0)  # the fake judge prefers longer = higher q


def test_plan_errors(dataset):
    prompts, responses = dataset
    rows = load_prompts(prompts)
    with pytest.raises(OrchestratorError, match="prompt 'p9' is not in the prompts file"):
        plan_recording(rows, responses, ["p9"], "j", pairwise=get_template("poe-pairwise"), absolute=None, attribute="coherence")
