"""Rebuilding a run's state from its file (what `resume`, `rank` and `status` do): load 100k committed
judgments from SQLite and refit every posterior. Goal: ≤ 5 s.

The run file is made by committing synthetic judgments through the store (420 prompts × 16
candidates × 240 ordered pairs = 100,800 judgments); then it is reopened and timed.

    python -m benchmarks.speed.rebuild [--prompts 420]
"""

import json
import random
import tempfile
import time
from pathlib import Path

from benchmarks import harness
from orchestrator.judging.client import JudgeProfile
from orchestrator.records.config import RunConfig
from orchestrator.records.dataset import load_dataset
from orchestrator.records.templates import get_template
from orchestrator.run.engine import RunEngine
from orchestrator.store import PlannedRequest, create_run, open_run


def main() -> None:
    ap = harness.parser(__doc__, quick="100 prompts (24k judgments) instead of 420 (100k)")
    ap.add_argument("--prompts", type=int, default=420)
    ap.add_argument("--no-reliability", action="store_true", help="shared judge parameters (before issue #17)")
    ap.add_argument("--candidates", type=int, default=16)
    args = ap.parse_args()
    if args.quick:
        args.prompts = 100
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with (folder / "p.jsonl").open("w") as fp, (folder / "r.jsonl").open("w") as fr:
            for p in range(args.prompts):
                fp.write(json.dumps({"id": f"p{p}", "text": "An article."}) + "\n")
                for c in range(args.candidates):
                    fr.write(json.dumps({"prompt_id": f"p{p}", "candidate": f"M{c}", "text": f"Summary {c}."}) + "\n")
        config = RunConfig.model_validate(
            {
                "name": "rebuild",
                "runs_dir": str(folder),
                "data": {"prompts": str(folder / "p.jsonl"), "responses": str(folder / "r.jsonl")},
                "judging": {"judges": ["synthetic"]},
                "model": {"judge_reliability": not args.no_reliability},
            }
        )
        templates = {"pairwise": get_template("poe-pairwise")}
        store = create_run(
            config.run_path,
            name="rebuild",
            config=config.to_json(),
            seed=0,
            dataset=load_dataset(folder / "p.jsonl", folder / "r.jsonl"),
            templates=templates,
        )
        requests, judgments = [], []
        for p in range(args.prompts):
            quality = [rng.gauss(0, 1) for _ in range(args.candidates)]
            for a in range(args.candidates):
                for b in range(args.candidates):
                    if a == b:
                        continue
                    key = f"{p}-{a}-{b}"
                    cands = json.dumps([f"M{a}", f"M{b}"])
                    prob = 1 / (1 + pow(2.718281828, -(quality[a] - quality[b])))
                    requests.append(
                        PlannedRequest(
                            key=key,
                            judge="synthetic",
                            template="poe-pairwise",
                            kind="pairwise",
                            prompt_id=f"p{p}",
                            candidates=[f"M{a}", f"M{b}"],
                            messages=[],
                            reserved_tokens=0,
                            reserved_usd=0.0,
                        )
                    )
                    judgments.append(
                        {
                            "key": key,
                            "judge": "synthetic",
                            "template": "poe-pairwise",
                            "kind": "pairwise",
                            "prompt_id": f"p{p}",
                            "candidates": cands,
                            "status": "ok",
                            "probs": json.dumps([{"A": prob, "B": 1 - prob}]),
                            "p_first": prob,
                            "method": "logprobs",
                            "capped": "[[]]",
                            "unresolved": "[[]]",
                            "top_logprobs": json.dumps([[["A", -0.4], ["B", -1.1]]]),
                            "text": "A",
                            "raw": None,
                            "prompt_tokens": 600,
                            "completion_tokens": 1,
                            "cost_usd": 0.0,
                            "latency_s": 0.5,
                            "attempts": 1,
                            "error": None,
                            "error_type": None,
                            "note": None,
                            "round": 0,
                            "created_at": 0.0,
                        }
                    )
        store.add_round(0, "pairwise", [], requests, {})
        with store._transaction():
            store._insert("judgments", judgments)
            store.db.execute("update requests set status = 'done'")
        store.close()
        size = config.run_path.stat().st_size / 2**20

        started = time.perf_counter()
        store = open_run(config.run_path)
        opened = time.perf_counter()
        engine = RunEngine(
            store, config, {}, {"synthetic": JudgeProfile(name="synthetic", model="x", prefill=True)}, templates, local={"synthetic"}
        )
        loaded = time.perf_counter()
        posteriors = engine.planner.refit()
        fitted = time.perf_counter()
        store.close()
    n = len(judgments)
    print(f"{n} judgments, {args.prompts} posteriors of {args.candidates}, run file {size:.0f} MiB")
    print(
        f"rebuild: {fitted - started:.2f} s (goal ≤ 5 s) = open+snapshot check {opened - started:.2f} s, "
        f"load judgments {loaded - opened:.2f} s, refit {len(posteriors)} posteriors {fitted - loaded:.2f} s"
    )
    figures = {
        "judgments": n,
        "seconds": round(fitted - started, 3),
        "open_s": round(opened - started, 3),
        "load_s": round(loaded - opened, 3),
    }
    figures["refit_s"] = round(fitted - loaded, 3)
    harness.record(__file__, args, f"rebuild of {n} judgments in {figures['seconds']:.2f} s", figures)


if __name__ == "__main__":
    main()
