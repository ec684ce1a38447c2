"""Dispatch throughput through litellm and real HTTP: a test server that takes 1 s per request,
concurrency 64. The ideal is 64 judgments/s; goal ≥ 90% of it.

The server runs in its own process (as a remote API would; in-process it would compete with the
loop for the GIL). Reported: the whole run, and the steady state from the first committed judgment
to the last (excludes interpreter-level one-offs such as opening 64 connections).

    python -m benchmarks.speed.loop_throughput [--delay 1.0] [--concurrency 64] [--calls 1280]
"""

import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness
from benchmarks.harness import ROOT

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(ROOT / "tests"))

import litellm  # noqa: E402,F401  (imported before timing: a one-off ~2 s a real run pays at start)

from judgekit import write_config  # noqa: E402
from orchestrator import api  # noqa: E402


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--delay", type=float, default=1.0)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--calls", type=int, default=1280)
    args = ap.parse_args()
    server_code = (
        "import sys, time; sys.path.insert(0, sys.argv[2]); from judgekit import quality_behaviour; "
        "from orchestrator.judging.testserver import FakeOpenAIServer\n"
        "with FakeOpenAIServer(quality_behaviour, delay_s=float(sys.argv[1])) as s:\n"
        "    print(s.url, flush=True); time.sleep(3600)"
    )
    tests = str(ROOT / "tests")
    proc = subprocess.Popen([sys.executable, "-c", server_code, str(args.delay), tests], stdout=subprocess.PIPE, text=True)
    url = proc.stdout.readline().strip()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rng = random.Random(0)
        with (folder / "p.jsonl").open("w") as fp, (folder / "r.jsonl").open("w") as fr:
            for p in range(20):
                fp.write(json.dumps({"id": f"p{p}", "text": f"Article {p}."}) + "\n")
                for c in range(16):
                    fr.write(
                        json.dumps(
                            {
                                "prompt_id": f"p{p}",
                                "candidate": f"M{c}",
                                "text": f"Summary <<q={rng.random():.4f}>>",
                                "human": {"coherence": 1.0},
                            }
                        )
                        + "\n"
                    )
        config = write_config(
            folder,
            url,
            name="throughput",
            prompts=folder / "p.jsonl",
            responses=folder / "r.jsonl",
            batch=args.concurrency,
            concurrency=args.concurrency,
            max_calls=args.calls,
        )
        started = time.perf_counter()
        path, reason = api.start(config)
        elapsed = time.perf_counter() - started
        calls = api.status(path).as_dict()["spent"]["calls"]
        first, last = sqlite3.connect(path).execute("select min(created_at), max(created_at) from judgments").fetchone()
    proc.kill()
    rate = calls / elapsed
    steady = (calls - 1) / (last - first)
    ideal = args.concurrency / args.delay
    print(
        f"{calls} judgments in {elapsed:.2f} s with a {args.delay:.1f} s server at concurrency {args.concurrency} "
        f"(run creation included): {rate:.1f} judgments/s = {rate / ideal:.1%} of the ideal {ideal:.0f}/s"
    )
    print(f"steady state (first to last commit): {steady:.1f} judgments/s = {steady / ideal:.1%} of the ideal (goal ≥ 90%)")


if __name__ == "__main__":
    harness.run(main, __file__)
