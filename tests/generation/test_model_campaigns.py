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
    board = [r["candidate"] for r in api.ranking(ref_path)["groups"][0]["ranking"]]
    assert board[0] == "good" and board[-1] == "bad"
    for path in (ref_path, abs_path):
        assert all(made == judged for made, judged in generated_and_judged(path).values())
