"""Every campaign kind with candidates that are models: the comparison gate head to head and
through the anchor, a reference leaderboard, absolute scores — each through the command a user
runs, each generating only the answers its judges were shown."""

from __future__ import annotations

import json
import sqlite3

from genkit import Writers, model_campaign
from judgekit import reference_behaviour, run_cli
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer


def generated_and_judged(path) -> dict[str, tuple[int, int]]:
    """Per candidate model: answers generated, and prompts on which a judge was shown its answer."""
    db = sqlite3.connect(path)
    try:
        made = dict(db.execute("select candidate, count(*) from answers where status = 'ok' group by candidate").fetchall())
        judged: dict[str, set[str]] = {}
        for prompt, shown in db.execute("select prompt_id, candidates from judgments where status = 'ok'"):
            for c in json.loads(shown):
                judged.setdefault(c, set()).add(prompt)
    finally:
        db.close()
    return {c: (n, len(judged.get(c, ()))) for c, n in made.items()}


def test_the_gate_head_to_head_with_a_candidate_model_generates_only_what_it_judged(tmp_path, capsys):
    with FakeOpenAIServer(behaviour=Writers()) as server:
        config = model_campaign(tmp_path, server.url, prompts=40, max_calls=120, name="gate", scope="global")
        config.write_text(config.read_text() + '\n[compare]\ncandidate = "good"\nbaseline = "M0"\n')
        assert run_cli(["compare", str(config), "--json", "--no-cache"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["decision"] == "better"
    counts = generated_and_judged(result["run"])
    assert set(counts) == {"good"}  # the other candidate model is not part of the comparison
    made, judged = counts["good"]
    assert made == judged < 40  # it stopped early, and generated no answer it did not judge


def test_the_gate_through_the_anchor_with_two_candidate_models(tmp_path, capsys):
    with FakeOpenAIServer(behaviour=Writers(judge=reference_behaviour())) as server:
        config = model_campaign(tmp_path, server.url, prompts=40, max_calls=200, name="anchored", reference_quality=0.5)
        config.write_text(config.read_text() + '\n[compare]\ncandidate = "good"\nbaseline = "bad"\nanchor = "dataset"\n')
        assert run_cli(["compare", str(config), "--json", "--no-cache"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["decision"] == "better"
    counts = generated_and_judged(result["run"])
    assert all(made == judged for made, judged in counts.values()) and set(counts) == {"good", "bad"}


def test_a_reference_leaderboard_and_absolute_scores_with_candidate_models(tmp_path):
    with FakeOpenAIServer(behaviour=Writers(judge=reference_behaviour())) as server:
        ref = model_campaign(
            tmp_path / "ref", server.url, prompts=6, max_calls=40, name="ref", reference_quality=0.5, reference="soft = true\n"
        )
        ref_path, _ = api.start(ref, cache=False)
        absolute = model_campaign(tmp_path / "abs", server.url, prompts=6, max_calls=20, name="abs", absolute="repeats = 1\n")
        abs_path, _ = api.start(absolute, cache=False)
    page = api.report(ref_path, out=tmp_path / "ref.html")
    assert page is not None
    html = page.read_text()
    assert "Answers of the candidate models" in html and "(openai/writer-good)" in html and "Answer by writer-good" in html
    board = [r["candidate"] for r in api.ranking(ref_path).as_dict()["groups"][0]["ranking"]]
    assert board[0] == "good" and board[-1] == "bad"
    for path in (ref_path, abs_path):
        assert all(made == judged for made, judged in generated_and_judged(path).values())


def test_a_candidate_model_with_several_endpoints_goes_through_the_router(tmp_path):
    one, two, judge = Writers(), Writers(), Writers()
    with FakeOpenAIServer(behaviour=one) as a, FakeOpenAIServer(behaviour=two) as b, FakeOpenAIServer(behaviour=judge) as j:
        (tmp_path / "judges").mkdir()
        (tmp_path / "judges" / "writer-pool.toml").write_text(
            'name = "writer-pool"\nmodel = "openai/writer-good"\ncooldown_s = 60\ntimeout_s = 5\n'
            + "".join(f'[[deployments]]\napi_base = "{s.url}"\nmax_concurrency = 2\nname = "w{k}"\n' for k, s in enumerate((a, b)))
        )
        config = model_campaign(tmp_path, j.url, prompts=10, max_calls=40, name="pooled")
        config.write_text(config.read_text().replace('model = "openai/writer-good"', 'model = "writer-pool"', 1))
        path, _ = api.start(config, cache=False)
    served = sum(one.asked.values()) + sum(two.asked.values())
    made, _ = generated_and_judged(path)["good"]
    assert sum(judge.asked.values()) == generated_and_judged(path)["bad"][0]  # the other model stays on its own address
    assert served == made > 2 and one.asked and two.asked  # both endpoints answered, each answer once


def test_a_rate_limited_model_is_asked_again_and_a_model_that_is_down_fails_with_its_reason(tmp_path):
    writers = Writers(rate_limited=3, failing={"writer-bad"})
    with FakeOpenAIServer(behaviour=writers) as server:
        path, _ = api.start(model_campaign(tmp_path, server.url, prompts=4, max_calls=16), cache=False)
    db = sqlite3.connect(path)
    rows = db.execute("select candidate, status, error_type, error from answers").fetchall()
    judged_bad = db.execute("select count(*) from judgments where status = 'ok' and candidates like '%\"bad\"%'").fetchone()[0]
    no_answer = db.execute("select count(*) from judgments where error_type = 'no_answer'").fetchone()[0]
    db.close()
    assert {(c, s) for c, s, _, _ in rows} == {("good", "ok"), ("bad", "failed")}  # the 429s were retried; the 500s failed for good
    assert all("the model is down" in e for c, _, _, e in rows if c == "bad")
    assert judged_bad == 0 and no_answer >= 1  # no judge was asked about an answer that does not exist
    assert api.status(path).as_dict()["answers"]["bad"]["failed"] == sum(1 for c, *_ in rows if c == "bad")
