"""The reliability campaign of issue #7, at a larger scale than the tests: numbers for RESULTS.md.

1. Fault campaign: a run of ``--requests`` judge calls against the fault-injecting test server
   (``FaultPlan``: ~20% of requests get one of 10 fault kinds), concurrency 16, a judge timeout
   below the server's hang. Reports faults injected by kind, retries, permanent failures by reason,
   lost judgments, keys paid twice, keys asked after their commit, budget spent vs the limits, and
   whether the run's ranking equals the one rebuilt from its exported log.
2. Crash campaign: SIGKILL at start-up, inside SQLite transactions (judgment commit, round write),
   in the middle of the posterior update and at random moments, each followed by ``resume``;
   integrity check and comparison with an uninterrupted run.
3. Interrupt campaign: the same run stopped by Ctrl-C (SIGINT) and SIGTERM at random moments,
   each followed by ``resume``: calls in flight at the signal, answers asked again (unlike a
   ``kill -9``, a drain should leave none), comparison with an uninterrupted run.

    python -m benchmarks.reliability.reliability_campaign [--requests 1000] [--seed 1]
"""

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness
from benchmarks.harness import ROOT

sys.path.insert(0, str(ROOT / "tests"))  # the campaign helpers the tests use

# as in the tests (tests/conftest.py): no judgment cache. With the user's default cache the victim
# runs of the crash and interrupt campaigns were answered from the reference run's judgments (same
# config, same requests) and the server saw none of their calls: "in flight" read negative and the
# re-asked answers 0, measuring nothing (found 2026-11-24)
os.environ["ORCHESTRATOR_JUDGMENT_CACHE"] = "off"

from judgekit import campaign_summary, committed_judgments, crash_campaign, quality_behaviour, write_config, write_dataset, write_judge  # noqa: E402
from orchestrator import api  # noqa: E402
from orchestrator.judging.testserver import FAULT_KINDS, FakeOpenAIServer, FaultPlan  # noqa: E402
from orchestrator.offline.replay.replay import replay_files  # noqa: E402


def fault_campaign(tmp: Path, n_requests: int, seed: int) -> dict:
    os.environ["ORCHESTRATOR_JUDGES"] = str(
        write_judge(tmp / "judges", "flaky-openai", price_input_per_mtok=0.5, price_output_per_mtok=1.5, timeout_s=0.5)
    )
    data = write_dataset(tmp / "d", prompts=20, candidates=12, seed=seed)
    plan = FaultPlan({kind: 0.02 for kind in FAULT_KINDS}, seed=seed, retry_after_s=0.02, hang_s=1.0, slow_s=0.2)
    max_usd = 2.0
    with FakeOpenAIServer(quality_behaviour, plan=plan) as server:
        config = write_config(
            tmp,
            server.url,
            name="faults",
            prompts=data[0],
            responses=data[1],
            judges='["flaky-openai"]',
            batch=16,
            max_calls=n_requests,
            concurrency=16,
            budget_extra=f"max_usd = {max_usd}\n",
            extra="max_attempts = 10",
        )
        started = time.perf_counter()
        path, reason = api.start(config)
        seconds = time.perf_counter() - started
        summary = campaign_summary(path, server)
        server_requests = sum(len(v) for v in server.outcomes.values())
    log = tmp / "faults.jsonl"
    api.export(path, out=log, fmt="jsonl")
    ranking = {g["group"]: [r["candidate"] for r in g["ranking"]] for g in api.ranking(path).as_dict()["groups"]}
    rebuilt = replay_files(log, data[1], "coherence", "reorder").to_json()["rankings"]
    spent = api.status(path).as_dict()["spent"]
    failed = {}
    for reason_type in summary["failed"].values():
        failed[reason_type] = failed.get(reason_type, 0) + 1
    return {
        "stop": reason,
        "seconds": round(seconds, 1),
        "requests": summary["requests"],
        "server_requests": server_requests,
        "faults_injected": summary["injected"],
        "faults_total": sum(summary["injected"].values()),
        "retries": summary["retries"],
        "permanent_failures": failed,
        "unfinished": len(summary["unfinished"]),
        "lost": len(summary["lost"]),
        "paid_twice": len(summary["paid_twice"]),
        "asked_after_commit": len(summary["asked_after_commit"]),
        "spent": spent,
        "budget": {"calls": n_requests, "usd": max_usd},
        "ranking_equals_rebuilt_from_log": ranking == rebuilt,
    }


def interrupt_campaign(tmp: Path, server, data, *, stops: int, max_calls: int, seed: int) -> dict:
    """Stop a run ``stops`` times with SIGINT/SIGTERM (alternating) after a random number of new
    judgments, resuming after each; then compare with an uninterrupted run of the same config."""
    rng = random.Random(seed)
    common = dict(prompts=data[0], responses=data[1], max_calls=max_calls, batch=4, concurrency=4)
    reference, _ = api.start(write_config(tmp, server.url, name="reference", **common))
    before_victim = dict(server.key_counts())
    victim = tmp / "runs" / "victim.sqlite"
    command = [sys.executable, "-m", "orchestrator", "run", str(write_config(tmp, server.url, name="victim", **common))]
    stopped, in_flight, exit_codes = 0, [], []
    for k in range(stops):
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        target = committed_judgments(victim) + rng.randint(2, 10)
        while committed_judgments(victim) < target and proc.poll() is None:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.1))
        if proc.poll() is None:
            sent = sum(server.key_counts().values())
            done = committed_judgments(victim)
            proc.send_signal(signal.SIGINT if k % 2 == 0 else signal.SIGTERM)
            exit_codes.append(proc.wait(timeout=120))
            stopped += 1
            # requests the server had received (this run's) minus those committed: in flight
            in_flight.append(sent - sum(before_victim.values()) - done)
        else:
            proc.wait()
        command = [sys.executable, "-m", "orchestrator", "resume", str(victim)]
    final = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    db = sqlite3.connect(victim)

    def asked(path):
        return sorted(sqlite3.connect(path).execute("select judge, prompt_id, candidates from judgments where status = 'ok'"))

    victim_keys = {k for (k,) in db.execute("select key from requests")}
    counts = {k: n - before_victim.get(k, 0) for k, n in server.key_counts().items() if k in victim_keys}
    return {
        "interrupts": stopped,
        "exit_codes": sorted(set(exit_codes)),
        "calls_in_flight_at_signal": in_flight,
        "integrity": db.execute("PRAGMA integrity_check").fetchone()[0],
        "same_as_uninterrupted": asked(victim) == asked(reference),
        "calls": api.status(victim).as_dict()["spent"]["calls"],
        "asked_twice": sum(1 for n in counts.values() if n > 1),
    }


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = fault_campaign(Path(tmp), args.requests, args.seed)
    print("fault campaign:", json.dumps(result, indent=1))
    plan = [
        "startup",
        "commit_judgment:2",
        "add_round:2",
        "refit:2",
        "random",
        "commit_judgment:5",
        "add_round:3",
        "refit:3",
        "random",
        "commit_judgment:1",
        "add_round:1",
        "refit:1",
        "random",
        "commit_judgment:9",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = write_dataset(tmp / "d", prompts=4, candidates=6, seed=args.seed)
        with FakeOpenAIServer(quality_behaviour, delay_s=0.03) as server:
            started = time.perf_counter()
            crash = crash_campaign(tmp, server, data, plan=plan, max_calls=120, seed=args.seed)
            crash["seconds"] = round(time.perf_counter() - started, 1)
    crash["crashes_survived"] = len(crash["kills"])
    crash["asked_after_commit"] = len(crash["asked_after_commit"])
    print("crash campaign:", json.dumps(crash, indent=1))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = write_dataset(tmp / "d", prompts=4, candidates=6, seed=args.seed)
        with FakeOpenAIServer(quality_behaviour, delay_s=0.3) as server:
            started = time.perf_counter()
            interrupts = interrupt_campaign(tmp, server, data, stops=10, max_calls=120, seed=args.seed)
            interrupts["seconds"] = round(time.perf_counter() - started, 1)
    print("interrupt campaign:", json.dumps(interrupts))


if __name__ == "__main__":
    harness.run(main, __file__)
