"""Issue #15: one grouping, debiasing and fitting code path for live runs and replay. Replaying a
run's export with the run's settings reproduces the run's ranking exactly, for every combination
the config allows: scope × debias × absolute warm start × one or several judges × strategy."""

import itertools
import math
import random

import pytest

from judgekit import QUALITY, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer, completion, logprob_entry
from orchestrator.offline.replay.replay import replay_files

JUDGES = {1: '["judge-a-openai"]', 3: '["judge-a-openai", "judge-b-openai", "judge-c-openai"]'}


def judges_that_differ(body):
    """Pairwise P(A) = σ(6·(q_A − q_B) + bias + ε), absolute a peaked 1–10 level; the bias and the
    noise ε (seeded by the text) depend on the judge, so the three judges disagree."""
    model = body.get("model", "")
    text = " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "user")
    rng = random.Random(f"{model}|{text}")
    bias = {"judge-a": 0.0, "judge-b": 0.6, "judge-c": -0.4}.get(model, 0.0)
    qs = [float(x) for x in QUALITY.findall(text)]
    if len(qs) >= 2:
        p = 1 / (1 + math.exp(-(6 * (qs[0] - qs[1]) + bias + rng.gauss(0, 0.8))))
        top = "A" if p >= 0.5 else "B"
        return 200, {}, completion(top, [logprob_entry(top, [("A", 0.98 * p), ("B", 0.98 * (1 - p)), ("\n", 0.02)])])
    level = min(9, max(1, round(1 + 8 * (qs[0] + rng.gauss(0, 0.1)))))
    alts = [(str(level), 0.6)] + [(str(k), 0.4 / 8) for k in range(1, 10) if k != level]
    return 200, {}, completion(str(level), [logprob_entry(str(level), alts)])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("matrix")
    folder = root / "judges"
    for name in ("judge-a-openai", "judge-b-openai", "judge-c-openai"):
        write_judge(folder, name)
    data = write_dataset(root / "data", prompts=2, candidates=4)
    with FakeOpenAIServer(judges_that_differ) as server, pytest.MonkeyPatch.context() as mp:
        mp.setenv("ORCHESTRATOR_JUDGES", str(folder))
        yield root, data, server


def run_and_export(world, name: str, **settings):
    """A live run of ``settings`` against the world's server, exported: ``(run file, log, config)``."""
    root, (prompts, responses), server = world
    config = write_config(root, server.url, name=name, prompts=prompts, responses=responses, batch=3, **settings)
    path, _ = api.start(config)
    log = root / f"{name}.jsonl"
    api.export(path, out=log, fmt="jsonl")
    return path, log, config


MATRIX = list(
    itertools.product(["per_prompt", "global", "items"], ["none", "permutation", "home"], [False, True], [1, 3], ["reorder", "random"])
)


@pytest.mark.slow
@pytest.mark.parametrize("scope, debias, warm, judges, strategy", MATRIX)
def test_replaying_an_export_reproduces_the_run(world, scope, debias, warm, judges, strategy):
    _, (_, responses), _ = world
    name = f"m-{scope}-{debias}-{int(warm)}-{judges}-{strategy}"
    path, log, _ = run_and_export(
        world, name, scope=scope, debias=debias, warm_start=warm, judges=JUDGES[judges], strategy=strategy, max_calls=60
    )
    board = api.ranking(path).as_dict()
    run_rankings = {g["group"]: [r["candidate"] for r in g["ranking"]] for g in board["groups"] if g["comparisons"] > 0}
    assert run_rankings  # something was compared
    report = replay_files(log, responses, "coherence", strategy, scope=scope, debias=debias, with_absolute=warm)
    replayed = report.to_json()["rankings"]
    assert {k: replayed[k] for k in run_rankings} == run_rankings


@pytest.mark.slow
@pytest.mark.parametrize(
    "scope, debias, warm, judges", [("per_prompt", "none", False, 1), ("global", "permutation", True, 3), ("items", "home", True, 3)]
)
def test_the_engine_rerun_on_its_own_export_asks_the_same_and_ranks_the_same(world, scope, debias, warm, judges):
    """Live runs and offline re-runs are one code path: ``run --from-log`` drives the real engine
    with a judge that answers from the export, and asks exactly what the run asked, round by round."""
    import sqlite3

    from orchestrator.cli import main

    root, _, server = world
    name = f"live-{scope}-{debias}-{judges}"
    path, log, config = run_and_export(world, name, scope=scope, debias=debias, warm_start=warm, judges=JUDGES[judges], max_calls=48)
    sent = len(server.requests)
    try:
        main(["run", str(config), "--from-log", str(log), "--runs-dir", str(root / "rerun")])
    except SystemExit as exc:
        assert exc.code in (0, None)
    assert len(server.requests) == sent  # nothing went to the judges
    rerun = root / "rerun" / f"{name}.sqlite"

    def asked(file):
        db = sqlite3.connect(file)
        return sorted(db.execute("select round, judge, prompt_id, candidates, status from judgments"))

    assert asked(rerun) == asked(path)
    ranked = lambda p: {g["group"]: [r["candidate"] for r in g["ranking"]] for g in api.ranking(p).as_dict()["groups"]}  # noqa: E731
    assert ranked(rerun) == ranked(path)


@pytest.mark.slow
@pytest.mark.parametrize(
    "scope, debias, warm, judges", [("global", "permutation", True, 3), ("items", "none", True, 1), ("global", "home", False, 3)]
)
def test_replay_with_the_runs_seed_and_budget_asks_what_the_run_asked(world, scope, debias, warm, judges):
    """`orchestrator replay` is a run whose judges answer from the log: with the run's seed, batch,
    budget and settings (one group, fully adaptive) it asks the run's requests round by round —
    its learning curve steps at the run's cumulative calls — and ends with the run's ranking."""
    import sqlite3

    _, (_, responses), _ = world
    name = f"asks-{scope}-{debias}-{int(warm)}-{judges}"
    path, log, _ = run_and_export(
        world, name, scope=scope, debias=debias, warm_start=warm, judges=JUDGES[judges], max_calls=42, extra="pipeline_depth = 1"
    )
    db = sqlite3.connect(path)
    per_round = dict(db.execute("select round, count(*) from judgments group by round order by round"))
    cumulative = [sum(n for r, n in per_round.items() if r <= last) for last in sorted(per_round)]
    report = replay_files(
        log, responses, "coherence", "reorder", scope=scope, debias=debias, with_absolute=warm, batch=3, budget=42, seed=7
    )
    (group,) = report.groups
    assert [k for k, _, _ in group.curve] == ([] if warm else [0]) + cumulative
    run_ranking = [r["candidate"] for r in api.ranking(path).as_dict()["groups"][0]["ranking"]]
    assert report.to_json()["rankings"][group.key] == run_ranking


@pytest.mark.slow
def test_replay_asks_only_what_the_log_holds(tmp_path):
    """A log with a third of the ordered pairs: the planner never selects a pair the log cannot
    answer (no failed call is spent), and with no budget every logged judgment is used."""
    from conftest import write_jsonl
    from orchestrator.offline.replay.simulate import JUDGE_PRESETS, simulate_dataset
    from orchestrator.records.log import load_log

    records, responses = simulate_dataset(2, 7, JUDGE_PRESETS["llm"], seed=5)
    kept = [r for k, r in enumerate(records) if r["kind"] == "pairwise" and k % 3 == 0]
    log = write_jsonl(tmp_path / "partial.jsonl", kept)
    answers = write_jsonl(tmp_path / "responses.jsonl", responses)
    report = replay_files(log, answers, "quality", "reorder", batch=2)
    per_prompt = {p: sum(r.prompt_id == p for _, r in load_log(log)) for p in {r["prompt_id"] for r in kept}}
    for group in report.groups:
        assert group.curve[-1][0] == per_prompt[group.key]  # every call answered, none wasted
        assert group.curve[-1][2] == pytest.approx(1.0)  # ends on the all-logged posterior
