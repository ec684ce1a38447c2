"""The run loop end to end against a real-HTTP OpenAI-compatible test server and a real SQLite file."""

import json
import sqlite3
import subprocess
import sys

import pytest

from judgekit import STOP_AT_BUDGET, quality_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.cli import main
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.offline.replay.replay import replay_files
from orchestrator.store import SCHEMA_VERSION


@pytest.fixture
def server():
    with FakeOpenAIServer(quality_behaviour) as s:
        yield s


@pytest.fixture
def data(tmp_path):
    return write_dataset(tmp_path / "data", prompts=3, candidates=6)


def _run(tmp_path, server, data, **kwargs):
    config = write_config(tmp_path, server.url, prompts=data[0], responses=data[1], **kwargs)
    path, reason = api.start(config)
    return path, reason


def test_run_commits_every_judgment_with_its_logprobs_and_ranks(tmp_path, server, data):
    path, reason = _run(tmp_path, server, data, max_calls=60, budget_extra=STOP_AT_BUDGET)
    assert reason.startswith("budget: max_calls (60 of 60")
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("select count(*) from judgments where status = 'ok'").fetchone()[0] == 60
    assert db.execute("select count(*) from requests where status != 'done'").fetchone()[0] == 0
    probs, top, raw, p_first = db.execute("select probs, top_logprobs, raw, p_first from judgments limit 1").fetchone()
    assert sum(json.loads(probs)[0].values()) == pytest.approx(1.0)
    assert {t for t, _ in json.loads(top)[0]} == {"A", "B", "\n"}
    assert json.loads(raw)["choices"][0]["logprobs"]["content"]
    assert 0 < p_first < 1
    # every request key reached the server exactly once
    assert set(server.key_counts().values()) == {1}
    assert len(server.key_counts()) == 60
    rounds = db.execute("select count(*), sum(n_requests) from rounds").fetchone()
    assert rounds == (15, 60)
    # the loop found the hidden order: 60 of 90 ordered pairs give a near-perfect ranking
    report = api.ranking(path).as_dict()
    assert [g["group"] for g in report["groups"]] == ["p0", "p1", "p2"]
    assert min(g["spearman_vs_truth"] for g in report["groups"]) >= 0.9
    assert api.status(path).as_dict()["state"] == "finished"


def test_export_replays_to_the_same_ranking_in_every_format(tmp_path, server, data):
    path, _ = _run(tmp_path, server, data, max_calls=30, debias="permutation")
    out = tmp_path / "log.jsonl"
    assert api.export(path, out=out, fmt="jsonl") == 30
    ranked = {g["group"]: [r["candidate"] for r in g["ranking"]] for g in api.ranking(path).as_dict()["groups"]}
    # with the dataset's responses every candidate is ranked, judged or not
    with_truth = replay_files(out, data[1], "coherence", "reorder", debias="permutation")
    assert with_truth.to_json()["rankings"] == ranked
    # from the log alone: the same order over the candidates the log mentions
    alone = replay_files(out, None, None, "reorder", debias="permutation").to_json()["rankings"]
    assert alone == {g: [c for c in order if c in alone[g]] for g, order in ranked.items()}
    assert sum(map(len, alone.values())) < 18  # 15 debiased pairs leave a candidate unjudged
    csv_path, parquet_path = tmp_path / "j.csv", tmp_path / "j.parquet"
    assert api.export(path, out=csv_path, fmt="csv") == 30
    assert len(csv_path.read_text().strip().splitlines()) == 31
    pq = pytest.importorskip("pyarrow.parquet")
    assert api.export(path, out=parquet_path, fmt="parquet") == 30
    table = pq.read_table(parquet_path)
    assert table.num_rows == 30 and "p_first" in table.column_names


def test_permutation_asks_both_orders_and_warm_start_scores_every_candidate(tmp_path, server, data):
    path, _ = _run(tmp_path, server, data, max_calls=18 + 12, debias="permutation", warm_start=True)
    db = sqlite3.connect(path)
    kinds = dict(db.execute("select kind, count(*) from judgments group by kind").fetchall())
    assert kinds == {"absolute": 18, "pairwise": 12}
    first_round = db.execute("select kind, n_requests from rounds where round = 0").fetchone()
    assert first_round == ("absolute", 18)
    pairs = [tuple(json.loads(c)) + (p,) for p, c in db.execute("select prompt_id, candidates from requests where kind = 'pairwise'")]
    assert all((b, a, p) in pairs for a, b, p in pairs)


def test_global_scope_spreads_comparisons_over_prompts(tmp_path, server, data):
    path, _ = _run(tmp_path, server, data, max_calls=24, scope="global")
    db = sqlite3.connect(path)
    per_prompt = dict(db.execute("select prompt_id, count(*) from judgments group by prompt_id").fetchall())
    # least-used prompt first among those where the pair is still open: a pair asked again (the
    # global scope repeats close pairs on other prompts) may have only one prompt left (
    # with judge precision the posterior is surer, and the reorder metric repeats its closest pairs)
    assert sum(per_prompt.values()) == 24 and max(per_prompt.values()) - min(per_prompt.values()) <= 2
    report = api.ranking(path).as_dict()
    assert len(report["groups"]) == 1 and len(report["groups"][0]["ranking"]) == 6


def test_token_and_usd_budgets_are_never_exceeded(tmp_path, server, data):
    judges = tmp_path / "judges"
    judges.mkdir()
    (judges / "priced.toml").write_text(
        'name = "priced"\nmodel = "openai/priced"\nprefill = true\nprice_input_per_mtok = 1000.0\nprice_output_per_mtok = 2000.0\n'
    )
    import os

    os.environ["ORCHESTRATOR_JUDGES"] = str(judges)
    try:
        path, reason = _run(
            tmp_path, server, data, name="usd", judges='["priced"]', max_calls=None, budget_extra="max_usd = 1.0\nmax_tokens = 2000\n"
        )
    finally:
        del os.environ["ORCHESTRATOR_JUDGES"]
    spent = api.status(path).as_dict()["spent"]
    assert reason.startswith("budget: max_")
    assert spent["tokens"] <= 2000 and spent["usd"] <= 1.0
    assert spent["calls"] > 0


def test_retries_honour_retry_after_and_permanent_failures_are_recorded(tmp_path, data):
    faults = [(429, {"Retry-After": "0.05"}, {"error": {"message": "slow down"}}), (503, {}, {"error": {"message": "busy"}})]
    with FakeOpenAIServer(quality_behaviour, faults=faults) as server:
        path, _ = _run(tmp_path, server, data, max_calls=8, concurrency=1, batch=2)
        db = sqlite3.connect(path)
        attempts = [a for (a,) in db.execute("select attempts from judgments order by round, key")]
        assert sum(attempts) == 8 + 2 and db.execute("select count(*) from judgments where status='ok'").fetchone()[0] == 8
    # a server that always answers 400: permanent failures with the reason; the run ends as failed
    # (never "finished" from no data), and its file keeps every failure
    from orchestrator.errors import RunFailed

    with FakeOpenAIServer(lambda body: (400, {}, {"error": {"message": "bad request"}})) as server:
        with pytest.raises(RunFailed, match="no judgment succeeded.*bad_request"):
            _run(tmp_path, server, data, name="bad", max_calls=6)
        path = tmp_path / "runs" / "bad.sqlite"
        db = sqlite3.connect(path)
        assert db.execute("select status from runs").fetchone()[0] == "failed"
        rows = db.execute("select status, error_type, attempts from judgments").fetchall()
        assert len(rows) == 6 and {r[:2] for r in rows} == {("failed", "bad_request")} and {r[2] for r in rows} == {1}
        assert db.execute("select count(*) from requests where status = 'failed'").fetchone()[0] == 6


def test_resuming_a_finished_run_says_so_and_a_second_writer_is_refused(tmp_path, server, data, capsys):
    path, _ = _run(tmp_path, server, data, max_calls=8)
    assert run_cli(["resume", str(path)]) == 0
    assert "already finished" in capsys.readouterr().err
    lock_holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from orchestrator.store import open_run; s = open_run(sys.argv[1]); print('locked', flush=True); time.sleep(30)"
            ),
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert lock_holder.stdout.readline().strip() == "locked"
        assert run_cli(["resume", str(path)]) == 2
        assert "in use by another orchestrator process" in capsys.readouterr().err
        # readers are not blocked
        main(["status", str(path), "--json"])
        assert json.loads(capsys.readouterr().out)["spent"]["calls"] == 8
    finally:
        lock_holder.kill()
        lock_holder.wait()


def test_dry_run_sends_nothing_and_writes_nothing(tmp_path, server, data, capsys):
    config = write_config(tmp_path, server.url, prompts=data[0], responses=data[1], max_calls=20)
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 0  # (without --offline, one smoke call)
    out = capsys.readouterr().out
    assert "possible requests" in out and "90" in out and "20" in out
    assert server.requests == [] and not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "edit, message",
    [
        (("batch = 4", "batch = 0"), "selection.batch: Input should be greater than or equal to 1"),
        (("max_calls = 40", "max_calls = -5"), "budget.max_calls: Input should be greater than 0"),
        (("[selection]", "[selection]\ncolour = 1"), "selection.colour: Extra inputs are not permitted"),
        (('strategy = "reorder"', 'strategy = "best"'), "selection.strategy: unknown strategy"),
        # ("items" is a live scope now)
        (('scope = "per_prompt"', 'scope = "stories"'), "data.scope: Input should be 'per_prompt', 'global' or 'items'"),
        (('judges = ["local-openai"]', 'judges = ["nobody"]'), "no judge profile 'nobody'"),
        (('judges = ["local-openai"]', 'judges = "local-openai"'), "judging.judges: Input should be a valid list"),
        (('truth = "coherence"', 'truth = "wit"'), "has no human score 'wit'"),
        (("concurrency = 4", "concurrency = 'many'"), "dispatch.concurrency: Input should be a valid integer"),
        (('judges = ["local-openai"]', 'judges = ["gpt-4o-mini"]'), "judge 'gpt-4o-mini' does not continue an assistant prefix"),
        (
            ('judges = ["local-openai"]', 'judges = ["gpt-4o-mini"]\npairwise_template = "poe-pairwise-noprefill"'),
            "needs its API key in the environment variable OPENAI_API_KEY",
        ),
    ],
)
def test_config_errors_name_the_field(tmp_path, server, data, capsys, monkeypatch, edit, message):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = write_config(tmp_path, None, prompts=data[0], responses=data[1])
    config.write_text(config.read_text().replace(*edit))
    assert run_cli(["run", str(config)]) == 2
    err = capsys.readouterr().err
    assert message in " ".join(err.split()), err
    assert "Traceback" not in err and not (tmp_path / "runs").exists() and server.requests == []


@pytest.mark.parametrize(
    "bad_rows, message",
    [
        (
            '{"prompt_id": "p0", "candidate": "M0", "text": "x"}\n{"prompt_id": "p0", "candidate": "M0", "text": "y"}',
            "responses.jsonl:2: duplicate response of 'M0' to prompt 'p0' (first at line 1)",
        ),
        ('{"prompt_id": "p9", "candidate": "M0", "text": "x"}', "responses.jsonl:1: prompt 'p9' is not in"),
        ('{"prompt_id": "p0", "candidate": "M0", "text": "   "}', "responses.jsonl:1: text: is empty"),
        ('{"prompt_id": "p0", "candidate": 3, "text": "x"}', "responses.jsonl:1: candidate: Input should be a valid string"),
        ('{"prompt_id": "p0", "candidate": "M0", "text": "x"}', "no prompt has 2 or more responses"),
    ],
)
def test_dataset_errors_name_file_and_line(tmp_path, server, data, capsys, bad_rows, message):
    data[1].write_text(bad_rows + "\n")
    config = write_config(tmp_path, server.url, prompts=data[0], responses=data[1])
    assert run_cli(["run", str(config)]) == 2
    assert message in " ".join(capsys.readouterr().err.split())


def test_run_file_errors(tmp_path, capsys):
    not_sqlite = tmp_path / "notes.sqlite"
    not_sqlite.write_text("hello")
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).execute("create table t (x)").connection.close()
    newer = tmp_path / "newer.sqlite"
    conn = sqlite3.connect(newer)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    for path, message in (
        (not_sqlite, "not a run file (not an SQLite database)"),
        (empty, "not a run file (missing tables"),
        (newer, "written by a newer orchestrator"),
        (tmp_path / "absent.sqlite", "no such run file"),
    ):
        before = path.read_bytes() if path.exists() else None
        for command in (["status", str(path)], ["resume", str(path)], ["export", str(path), "--out", str(tmp_path / "x.jsonl")]):
            assert run_cli(command) == 2
            assert message in capsys.readouterr().err
        assert (path.read_bytes() if path.exists() else None) == before


def test_items_scope_live_run_ranks_every_response_and_replays_the_same(tmp_path, server, data):
    """Issue #15: ``scope = "items"`` in a live run: one posterior over every response (compared
    within its prompt, linked across prompts by the absolute warm start); rank shows it, and the
    export replays to the same ranking."""
    from orchestrator.offline.replay.replay import replay_files

    config = write_config(
        tmp_path, server.url, name="items", prompts=data[0], responses=data[1], scope="items", warm_start=True, max_calls=60
    )
    path, reason = api.start(config)
    board = api.ranking(path).as_dict()
    assert board["scope"] == "items" and len(board["groups"]) == 1
    ranking = board["groups"][0]["ranking"]
    n_responses = sum(1 for _ in open(data[1]))
    assert len(ranking) == n_responses and all("::" in r["candidate"] for r in ranking)
    assert board["groups"][0]["spearman_vs_truth"] > 0.5  # the judge answers from the true qualities
    db = sqlite3.connect(path)
    pairs = db.execute("select prompt_id, candidates from requests where kind = 'pairwise'").fetchall()
    assert pairs and all(len(json.loads(c)) == 2 for _, c in pairs)  # every comparison within one prompt
    assert db.execute("select count(*) from requests where kind = 'absolute'").fetchone()[0] == n_responses
    log = tmp_path / "items.jsonl"
    api.export(path, out=log, fmt="jsonl")
    replayed = replay_files(log, data[1], "coherence", "reorder", scope="items", with_absolute=True).to_json()
    assert replayed["rankings"]["items"] == [r["candidate"] for r in ranking]
