"""The candidate models' answers within the budget: reserved before each call as judge calls are,
counted in the totals (``max_tokens``, ``max_usd``) and in their own limits (``max_answer_tokens``,
``max_answer_usd``); the words of the stop equal the numbers."""

from __future__ import annotations

import sqlite3

from genkit import Writers, model_campaign
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer


def answer_totals(path) -> tuple[int, int, float]:
    db = sqlite3.connect(path)
    try:
        n, tokens, usd = db.execute(
            "select count(*), coalesce(sum(prompt_tokens + completion_tokens), 0), coalesce(sum(cost_usd), 0) from answers where status = 'ok'"
        ).fetchone()
    finally:
        db.close()
    return n, tokens, usd


def answer_pending(path) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("select count(*) from answers where status = 'pending'").fetchone()[0]
    finally:
        db.close()


def test_max_answer_tokens_stops_generation_within_it_and_says_so(tmp_path):
    writers = Writers()
    with FakeOpenAIServer(behaviour=writers) as server:
        # each answer reserves its prompt's bytes and max_tokens (512) until it is written (70 tokens):
        # 700 tokens never hold two reservations at once, and run out after a few answers
        config = model_campaign(tmp_path, server.url, prompts=6, max_calls=40, budget_extra="max_answer_tokens = 700\n")
        path, reason = api.start(config, cache=False)
    n, tokens, _ = answer_totals(path)
    assert 1 <= n == sum(writers.asked.values()) < 12 and tokens <= 700
    assert "max_answer_tokens" in str(reason) and "of 700 spent or reserved by generated answers" in str(reason)
    # the stop counts what the answers cost once they were written, as the run file does: nothing
    # is pending when it stops, so no reservation is left in the figure
    said = int(str(reason).split("max_answer_tokens (")[1].split(" of 700")[0])
    assert said == tokens and answer_pending(path) == 0


def test_the_answers_count_in_max_usd_with_their_own_prices(tmp_path):
    writers = Writers()
    with FakeOpenAIServer(behaviour=writers) as server:
        config = model_campaign(tmp_path, server.url, prompts=8, max_calls=60, budget_extra="max_usd = 0.01\nmax_answer_usd = 0.004\n")
        # the candidates' prices: $10 / $30 per million tokens; the judge is local (free)
        priced = 'max_tokens = 64\nprice_input_per_mtok = 10.0\nprice_output_per_mtok = 30.0\nmodel = "openai/writer-'
        config.write_text(config.read_text().replace('model = "openai/writer-', priced))
        path, reason = api.start(config, cache=False)
    n, _, usd = answer_totals(path)
    assert n >= 1 and usd == n * (50 * 10 + 20 * 30) / 1e6  # what the server said each answer took, at the stated prices
    assert usd <= 0.004 and api.status(path).as_dict()["spent"]["usd"] <= 0.01
    assert "max_answer_usd" in str(reason)


def test_a_pilot_forecasts_the_answers_the_whole_run_will_generate(tmp_path):
    writers = Writers()
    with FakeOpenAIServer(behaviour=writers) as server:
        path, reason = api.start(model_campaign(tmp_path, server.url, prompts=10, max_calls=60), cache=False, pilot=8)
        forecast = api.status(path).as_dict()["forecast"]
        made = sum(writers.asked.values())
        assert "pilot" in str(reason) and made >= 1
        # at most one answer per prompt and model; never fewer than already generated
        assert forecast["answers_of"] == 20 and made <= forecast["answers"] <= forecast["answers_p90"] <= 20
        api.resume(path, cache=False)
    assert sum(writers.asked.values()) <= 20 and max(writers.asked.values()) == 1  # the resume generated nothing twice
