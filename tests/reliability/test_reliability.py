"""Reliability and security campaign: faults, crashes, bad input, secrets, concurrency,
prompt injection — with real parts: an HTTP test server on 127.0.0.1 that injects faults, real
SQLite files, real `orchestrator` processes killed with SIGKILL."""

import json
import sqlite3

import childkit
import pytest

from judgekit import STOP_AT_BUDGET, campaign_summary, crash_campaign, quality_behaviour, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.judging.testserver import FAULT_KINDS, FakeOpenAIServer, FaultPlan

MIXED = {kind: 0.02 for kind in FAULT_KINDS}  # 20% of requests get a fault, every kind


@pytest.fixture
def fast_judge(tmp_path, monkeypatch):
    """A judge profile whose timeout is shorter than the test server's hang."""
    folder = write_judge(tmp_path / "judges", "flaky-openai", price_input_per_mtok=0.5, price_output_per_mtok=1.5, timeout_s=0.6)
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(folder))
    return "flaky-openai"


@pytest.mark.slow
def test_fault_campaign_every_request_ends_nothing_lost_nothing_paid_twice(tmp_path, fast_judge):
    data = write_dataset(tmp_path / "d", prompts=6, candidates=8)
    plan = FaultPlan(MIXED, seed=3, retry_after_s=0.02, hang_s=1.0, slow_s=0.2)
    with FakeOpenAIServer(quality_behaviour, plan=plan) as server:
        config = write_config(
            tmp_path,
            server.url,
            name="faults",
            prompts=data[0],
            responses=data[1],
            judges=f'["{fast_judge}"]',
            batch=8,
            max_calls=160,
            concurrency=8,
            budget_extra="max_usd = 0.5\n" + STOP_AT_BUDGET,
            extra="max_attempts = 8",
        )
        path, reason = api.start(config)
        summary = campaign_summary(path, server)
    print(json.dumps({k: v if not isinstance(v, list) else len(v) for k, v in summary.items()}, indent=1))
    assert reason.startswith("budget: max_calls (160 of 160")
    assert summary["requests"] == 160
    assert set(summary["injected"]) == set(FAULT_KINDS)  # every kind happened
    assert sum(summary["injected"].values()) >= 0.12 * sum(len(v) for v in server.outcomes.values())
    assert summary["unfinished"] == [] and summary["failed_without_reason"] == []
    assert summary["lost"] == [] and summary["paid_twice"] == [] and summary["asked_after_commit"] == []
    assert summary["retries"] > 0
    # answers with none of the options are permanent failures with their reason; answers without
    # log-probabilities fall back to the parsed verdict, recorded as such
    assert set(summary["failed"].values()) <= {"no_option", "unparsed"}
    db = sqlite3.connect(path)
    assert db.execute("select count(*) from judgments where method = 'verdict'").fetchone()[0] >= 1
    # budget never exceeded
    status = api.status(path).as_dict()
    assert status["spent"]["calls"] <= 160 and status["spent"]["usd"] <= 0.5
    # the posterior of the run equals the one rebuilt from its exported log
    log = tmp_path / "faults.jsonl"
    api.export(path, out=log, fmt="jsonl")
    from orchestrator.offline.replay.replay import replay_files

    ranking = {g["group"]: [r["candidate"] for r in g["ranking"]] for g in api.ranking(path).as_dict()["groups"]}
    assert replay_files(log, data[1], "coherence", "reorder").to_json()["rankings"] == ranking


@pytest.mark.slow
def test_crash_campaign_kills_at_start_up_inside_sqlite_writes_the_posterior_update_and_at_random(tmp_path):
    data = write_dataset(tmp_path / "d", prompts=3, candidates=6)
    plan = [
        "startup",
        "commit_judgment:3",
        "add_round:2",
        "refit:2",
        "random",
        "commit_judgment:7",
        "add_round:3",
        "refit:4",
        "random",
        "commit_judgment:1",
        "add_round:1",
        "refit:1",
        "random",
    ]
    with FakeOpenAIServer(quality_behaviour, delay_s=0.03) as server:
        result = crash_campaign(tmp_path, server, data, plan=plan, max_calls=72)
    print(json.dumps(result, indent=1))
    assert len(result["kills"]) >= 10, result["kills"]
    assert {k.split(":")[0] for k in result["kills"]} >= {"commit_judgment", "add_round", "refit", "random"}
    assert sum(0 < n < 72 for n in result["judgments_at_kill"]) >= 10  # mid-run, not after the end
    assert result["integrity"] == "ok" and result["same_as_uninterrupted"]
    assert result["unfinished"] == 0 and result["asked_after_commit"] == [] and result["calls"] == 72


def _valid_inputs(folder):
    prompts, responses = write_dataset(folder, prompts=2, candidates=3)
    return prompts, responses


def _catalog(tmp_path):
    """(name, files to write {path: bytes|str}, config overrides or None, command) — each must fail
    with one line naming the problem and exit code 2, writing nothing."""
    from orchestrator.store import SCHEMA_VERSION

    d = tmp_path / "data"
    prompts, responses = _valid_inputs(d)
    good_p, good_r = prompts.read_text(), responses.read_text()
    rows = [json.loads(x) for x in good_r.splitlines()]
    cases = []

    def config_case(name, toml_edit, message, data_files=None):
        cases.append((name, data_files or {}, toml_edit, None, message))

    def data_case(name, which, content, message):
        cases.append((name, {which: content}, None, None, message))

    config_case("missing data.prompts", lambda t: t.replace('prompts = "', 'promptz = "'), "prompts")
    config_case("wrong type", lambda t: t.replace("batch = 4", 'batch = "four"'), "selection.batch")
    config_case("negative budget", lambda t: t.replace("max_calls = 10", "max_calls = -5"), "budget.max_calls")
    config_case("zero concurrency", lambda t: t.replace("concurrency = 4", "concurrency = 0"), "dispatch.concurrency")
    config_case("unknown judge", lambda t: t.replace('judges = ["local-openai"]', 'judges = ["gpt-99"]'), "gpt-99")
    config_case(
        "unknown template", lambda t: t.replace("[judging]", '[judging]\npairwise_template = "no-such-template"'), "no-such-template"
    )
    config_case("typo in a field name", lambda t: t.replace("[selection]", '[selection]\nstrategi = "reorder"'), "strategi")
    config_case("unknown strategy", lambda t: t.replace('strategy = "reorder"', 'strategy = "best"'), "strategy")
    config_case("invalid TOML", lambda t: t + "\n[budget\n", "TOML")
    config_case("two campaigns", lambda t: t + "\n[reference]\n[absolute]\n", "at most one")
    config_case(
        "reference campaign with an absolute template",
        lambda t: t + '\n[reference]\ntemplate = "simplex-absolute-5"\n',
        "not a reference-anchored one",
    )
    config_case("truth field missing", lambda t: t.replace('truth = "coherence"', 'truth = "helpfulness"'), "helpfulness")
    data_case("empty prompts file", "prompts", "", "the file has no rows")
    data_case(
        "invalid UTF-8", "responses", good_r.encode() + b'{"prompt_id": "p0", "candidate": "X", "text": "caf\xe9"}\n', "not valid UTF-8"
    )
    data_case("duplicate prompt ids", "prompts", good_p + good_p.splitlines()[0] + "\n", "duplicate")
    data_case("duplicate responses", "responses", good_r + good_r.splitlines()[0] + "\n", "duplicate")
    data_case("response to an unknown prompt", "responses", good_r + json.dumps({**rows[0], "prompt_id": "p99"}) + "\n", "p99")
    data_case("empty response text", "responses", good_r + json.dumps({**rows[0], "candidate": "M9", "text": "  "}) + "\n", "is empty")
    data_case("wrong type in a dataset row", "prompts", good_p + json.dumps({"id": "p9", "text": 42}) + "\n", "text")
    data_case(
        "huge text",
        "responses",
        good_r + json.dumps({**rows[0], "candidate": "M9", "text": "x" * 2_000_000}) + "\n",
        "the limit is 1 MB per text",
    )
    data_case("not JSON", "responses", good_r + "{oops\n", "not valid JSON")
    # run files
    newer = tmp_path / "newer.sqlite"
    conn = sqlite3.connect(newer)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    foreign = tmp_path / "foreign.sqlite"
    sqlite3.connect(foreign).execute("create table notes (x)").connection.close()
    text_file = tmp_path / "notes.sqlite"
    text_file.write_text("hello, not a database\n")
    commands = {
        "resume": ["resume", "{}"],
        "status": ["status", "{}"],
        "rank": ["rank", "{}"],
        "export": ["export", "{}", "--out", str(tmp_path / "x.jsonl")],
        "fit raee": ["fit", "raee", "{}"],
        "fit simplex": ["fit", "simplex", "{}", "--levels", "5"],
    }
    for path, message, which in (
        (newer, "written by a newer orchestrator", ("resume", "status", "fit simplex")),
        (foreign, "not a run file", ("resume", "rank")),
        (text_file, "not a run file (not an SQLite database)", ("resume", "export", "fit raee")),
    ):
        for name in which:
            cases.append((f"{path.name}: {name}", {}, None, [a.replace("{}", str(path)) for a in commands[name]], message))
    return cases, prompts, responses


@pytest.mark.slow
@pytest.mark.parametrize("part", range(3))
def test_bad_input_catalog_one_line_exit_2_nothing_written(tmp_path, part):
    """Every third case from ``part`` (the catalog in three tests, so that xdist workers share it)."""

    cases, prompts, responses = _catalog(tmp_path)
    assert len(cases) >= 20
    cases = cases[part::3]
    base_config = write_config(tmp_path, "http://127.0.0.1:9", name="cat", prompts=prompts, responses=responses, max_calls=10).read_text()
    originals = {p: p.read_bytes() for p in (prompts, responses)}
    failures = []
    for name, files, toml_edit, command, message in cases:
        for which, content in files.items():
            target = prompts if which == "prompts" else responses
            target.write_bytes(content if isinstance(content, bytes) else content.encode())
        config = tmp_path / "cat.toml"
        config.write_text(toml_edit(base_config) if toml_edit else base_config)
        run_files = [p for p in tmp_path.glob("*.sqlite*")]
        before = {p: p.read_bytes() for p in run_files}
        proc = childkit.run([*(command or ["run", str(config)])], capture_output=True, text=True, timeout=120)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        ok = proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr and message.lower() in proc.stderr.lower()
        ok = ok and not (tmp_path / "runs" / "cat.sqlite").exists()
        ok = ok and {p: p.read_bytes() for p in run_files} == before and sorted(tmp_path.glob("*.sqlite*")) == sorted(run_files)
        if not ok:
            failures.append((name, proc.returncode, proc.stderr[-400:]))
        for path, data in originals.items():
            path.write_bytes(data)
    assert failures == [], failures
