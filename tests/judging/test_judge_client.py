"""The litellm judge client against a real OpenAI-compatible HTTP server on 127.0.0.1."""

import asyncio

import pytest

from orchestrator.errors import OrchestratorError
from orchestrator.judging import get_template
from orchestrator.judging.client import JudgeProfile, JudgeRequest, LiteLLMJudge, get_profile
from orchestrator.judging.testserver import FakeOpenAIServer, completion, logprob_entry

PROFILE = JudgeProfile(name="fake", model="openai/fake", logprobs=True, top_logprobs=5, prefill=True, timeout_s=10)


def _request(template="poe-pairwise", key="k1", **values):
    t = get_template(template)
    defaults = {name: f"<{name}>" for name in t.placeholders}
    return JudgeRequest(key=key, template=t, messages=t.render({**defaults, **values}), prompt_id="p", candidates=["M1", "M2"])


def run(coro):
    return asyncio.run(coro)


def test_pairwise_logprobs_through_litellm():
    with FakeOpenAIServer() as server:
        judgment = run(LiteLLMJudge(PROFILE, api_base=server.url).judge(_request()))
        key, body = server.requests[0]
    assert judgment.status == "ok" and judgment.method == "logprobs"
    assert judgment.probs[0] == pytest.approx({"A": 0.7 / 0.95, "B": 0.25 / 0.95})
    assert key == "k1"  # the idempotency key reaches the server
    assert body["logprobs"] is True and body["top_logprobs"] == 5 and body["max_tokens"] == 2
    assert body["messages"][-1] == {"role": "assistant", "content": "Summary "}  # prefill sent
    assert judgment.prompt_tokens == 100 and judgment.cost_usd == 0.0 and judgment.latency_s > 0
    assert judgment.top_logprobs[0][0] == ("A", pytest.approx(-0.35667, abs=1e-4))


def test_no_prefill_profile_drops_the_assistant_prefix():
    profile = PROFILE.model_copy(update={"prefill": False})
    with FakeOpenAIServer() as server:
        run(LiteLLMJudge(profile, api_base=server.url).judge(_request()))
        body = server.requests[0][1]
    assert body["messages"][-1]["role"] == "user"


def test_missing_option_json_answer_and_multi_token():
    def behaviour(body):
        text = body["messages"][0]["content"]
        if "json" in text:  # RAEE: JSON answer, option after the score key
            tokens = ["{", '"', "score", '":', ' "']
            entries = [logprob_entry(t, [(t, 0.99)]) for t in tokens] + [logprob_entry("B", [("B", 0.6), ("C", 0.3), ("A", 0.1)])]
            return 200, {}, completion('{"score": "B"', entries)
        # absolute 1-10 where "10" is "1" + "0", and levels 2..9 missing from the top-k
        return 200, {}, completion("10", [logprob_entry("1", [("1", 0.8), ("The", 0.2)]), logprob_entry("0", [("0", 0.5), ("\n", 0.5)])])

    with FakeOpenAIServer(behaviour) as server:
        judge = LiteLLMJudge(PROFILE, api_base=server.url)
        ref = run(judge.judge(_request("raee-pairwise-mtbench")))
        absolute = run(judge.judge(_request("poe-absolute")))
    assert ref.probs[0] == pytest.approx({"A": 0.1, "B": 0.6, "C": 0.3})
    assert absolute.probs[0]["10"] == pytest.approx(absolute.probs[0]["1"])  # 0.8·0.5 each
    assert set(absolute.capped[0]) == {str(i) for i in range(2, 10)}
    assert sum(absolute.probs[0].values()) == pytest.approx(1.0)


def test_no_logprobs_falls_back_to_verdict_and_samples():
    with FakeOpenAIServer(lambda body: (200, {}, completion("Summary B"))) as server:
        profile = PROFILE.model_copy(update={"logprobs": False})
        judgment = run(LiteLLMJudge(profile, api_base=server.url).judge(_request()))
        assert judgment.status == "ok" and judgment.method == "verdict" and judgment.probs[0] == {"A": 0.0, "B": 1.0}
        assert "no log-probabilities" in judgment.note
    answers = iter(["A", "B", "A", "A", "nonsense"])
    with FakeOpenAIServer(lambda body: (200, {}, completion(next(answers)))) as server:
        profile = PROFILE.model_copy(update={"logprobs": False, "samples": 5, "prefill": False})
        judgment = run(LiteLLMJudge(profile, api_base=server.url).judge(_request("poe-pairwise-noprefill")))
        assert len(server.requests) == 5
    assert judgment.method == "samples" and judgment.probs[0] == {"A": 0.75, "B": 0.25}
    assert judgment.note == "4 of 5 samples parsed"


def test_garbage_and_failures_are_recorded_not_raised():
    with FakeOpenAIServer(lambda body: (200, {}, completion("I refuse", [logprob_entry("I", [("I", 0.9), ("Sorry", 0.1)])]))) as server:
        judgment = run(LiteLLMJudge(PROFILE, api_base=server.url).judge(_request()))
    assert judgment.status == "failed" and judgment.error_type == "no_option" and not judgment.retryable
    assert judgment.text == "I refuse" and judgment.top_logprobs
    faults = [
        (429, {"Retry-After": "7"}, {"error": {"message": "slow down"}}),
        (500, {}, {"error": {"message": "boom"}}),
        (400, {}, {"error": {"message": "bad request"}}),
    ]
    with FakeOpenAIServer(faults=faults) as server:
        judge = LiteLLMJudge(PROFILE.model_copy(update={"params": {"num_retries": 0}}), api_base=server.url)
        rate = run(judge.judge(_request()))
        server_error = run(judge.judge(_request()))
        bad = run(judge.judge(_request()))
        ok = run(judge.judge(_request()))
    assert (rate.status, rate.error_type, rate.retryable, rate.retry_after_s) == ("failed", "rate_limit", True, 7.0)
    assert (server_error.error_type, server_error.retryable) == ("server", True)
    assert (bad.error_type, bad.retryable) == ("bad_request", False)
    assert ok.status == "ok"


def test_unreachable_server_is_a_retryable_connection_failure():
    judge = LiteLLMJudge(PROFILE.model_copy(update={"params": {"num_retries": 0}, "timeout_s": 3}), api_base="http://127.0.0.1:9/v1")
    judgment = run(judge.judge(_request()))
    assert judgment.status == "failed" and judgment.retryable and judgment.error_type in ("connection", "server", "timeout")


def test_shipped_profiles_load():
    for name in ("gemma270m", "qwen1.5b", "gpt-4o-mini", "claude-3-5-haiku", "local-openai"):
        assert get_profile(name).name == name
    assert get_profile("claude-3-5-haiku").logprobs is False
    people = get_profile("human")
    assert people.kind == "human" and people.per_round == 2 and people.order == "random" and not people.model
    with pytest.raises(OrchestratorError, match="no judge profile 'nope'"):
        get_profile("nope")
    # a model needs its model string; people have none
    with pytest.raises(ValueError, match="needs a litellm model string"):
        JudgeProfile(name="x")
    with pytest.raises(ValueError, match='kind = "human" is people'):
        JudgeProfile(name="x", kind="human", model="openai/gpt-4o-mini")


def test_unresolved_two_token_option_is_resolved_by_a_follow_up_call():
    def behaviour(body):
        last = body["messages"][-1]
        if last["role"] == "assistant" and last["content"].endswith("Score: 1"):
            return 200, {}, completion("0", [logprob_entry("0", [("0", 0.8), ("\n", 0.2)])])
        # the judge answers 8; "1" is in the top-k but its split into 1 / 10 is unknown
        return 200, {}, completion("8", [logprob_entry("8", [("8", 0.5), ("1", 0.4), ("7", 0.1)])])

    with FakeOpenAIServer(behaviour) as server:
        judgment = run(LiteLLMJudge(PROFILE, api_base=server.url).judge(_request("poe-absolute")))
        assert len(server.requests) == 2 and server.requests[1][0] == "k1:1"
    probs = judgment.probs[0]
    total = 0.5 + 0.4 + 0.1 + 6 * 0.1  # six levels capped at the smallest returned probability
    assert probs["10"] == pytest.approx(0.4 * 0.8 / total) and probs["1"] == pytest.approx(0.4 * 0.2 / total)
    assert judgment.unresolved == [[]]


def test_the_advice_after_a_failure_is_keyed_by_its_code_not_its_words():
    from orchestrator.judging.extract import ADVICE, failure_advice
    from orchestrator.records.judgments import FAILURE_CODES

    assert set(ADVICE) <= set(FAILURE_CODES)
    said = failure_advice("no_option", "j", "generic-pairwise")
    assert "generic-pairwise-noprefill" in said and failure_advice("thinking_unclosed", "j", "t").startswith("the thinking ran out")
    # the words of a message change nothing: only the code is read
    assert failure_advice("rate_limit", "j", "t") == "" and failure_advice(None, "j", "t") == ""
