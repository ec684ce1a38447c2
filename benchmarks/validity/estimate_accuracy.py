"""Cost estimates against what runs actually spent (issue #18 item 3).

1. Tokens per request: the dry run's expected figure and its worst case against the tokens the
   embedded judge really used (the quick start, answered from the recorded Qwen log:
   `benchmarks/data/summeval-qwen1.5b-coherence.jsonl`, whose lines carry the real token counts).
2. Calls to the stopping rule: a pilot (`run --pilot N`), its forecast (mean and p90), then the run
   resumed to its end; forecast / actual and whether actual ≤ p90 —
   a. the quick start's settings with the default indifference rule on the two articles the Qwen
      log covers whole (16 systems each), answered from the log (seeds 0–4);
   b. simulations: one prompt, 8 candidates of random quality, a judge P(A) = σ(6 (q_A − q_B) + ε)
      (`benchmarks/simjudge.py`), ε ~ N(0, 1), default stopping (20 datasets).

    python -m benchmarks.validity.estimate_accuracy [--sims 20]
"""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.harness import ROOT
from benchmarks.simjudge import SimJudge, SimSpec
from orchestrator import api
from orchestrator.judging.client import JudgeProfile
from orchestrator.records.config import RunConfig, load_config
from orchestrator.records.dataset import load_dataset
from orchestrator.records.templates import get_template
from orchestrator.run.engine import RunEngine
from orchestrator.run.judges import log_judges
from orchestrator.run.preparation import dry_run, prepare
from orchestrator.store import create_run, open_run

QWEN_LOG = ROOT / "benchmarks" / "data" / "summeval-qwen1.5b-coherence.jsonl"
QUICK = ROOT / "examples" / "summeval.toml"
SAMPLE = ROOT / "examples" / "summeval-sample"


def qwen_config(seed: int, folder: Path) -> RunConfig:
    """The quick start's settings on the two SummEval articles the recorded Qwen log covers whole
    (`examples/summeval-sample`: 16 systems each), with the default stopping rule."""
    quick = load_config(QUICK)
    return RunConfig.model_validate(
        {
            **quick.to_json(),
            "name": f"qwen-{seed}",
            "seed": seed,
            "runs_dir": str(folder),
            "data": {
                "prompts": str(SAMPLE / "prompts.jsonl"),
                "responses": str(SAMPLE / "responses.jsonl"),
                "scope": "per_prompt",
                "truth": "coherence",
            },
            "stopping": {"rule": "indifference"},
            "budget": {"max_calls": 480},
        }
    )


def tokens_per_request() -> dict:
    config = qwen_config(0, Path(tempfile.gettempdir()))
    estimate = dry_run(prepare(config, need_keys=False))
    prompts = set(load_dataset(config.data.prompts, config.data.responses).prompts)
    lines = [json.loads(line) for line in QWEN_LOG.read_text().splitlines()]
    used = [r["prompt_tokens"] + r["completion_tokens"] for r in lines if r["kind"] == "pairwise" and r["prompt_id"] in prompts]
    actual = float(np.mean(used))
    return {
        "expected": estimate["expected_tokens_per_request"],
        "worst": estimate["worst_case_tokens_per_request"],
        "actual": round(actual, 1),
        "expected/actual": round(estimate["expected_tokens_per_request"] / actual, 3),
        "worst/actual": round(estimate["worst_case_tokens_per_request"] / actual, 3),
    }


def quick_start(seed: int, folder: Path, pilot: int) -> tuple[dict, int]:
    config = qwen_config(seed, folder)
    path, _ = api.start(config, from_log=QWEN_LOG, pilot=pilot, cache=False)
    forecast = api.status(path).as_dict()["forecast"]
    api.resume(path, judges=log_judges(QWEN_LOG, config.judging.judges), cache=False)
    return forecast, api.status(path).as_dict()["spent"]["calls"]


def simulation(seed: int, folder: Path, pilot: int) -> tuple[dict, int]:
    rng = random.Random(seed)
    quality = {f"M{i}": rng.random() for i in range(8)}
    prompts, responses = folder / f"{seed}.p.jsonl", folder / f"{seed}.r.jsonl"
    prompts.write_text(json.dumps({"id": "p0", "text": "An article."}) + "\n")
    responses.write_text("".join(json.dumps({"prompt_id": "p0", "candidate": c, "text": f"Summary {c}."}) + "\n" for c in quality))
    config = RunConfig.model_validate(
        {
            "name": f"sim-{seed}",
            "seed": seed,
            "runs_dir": str(folder),
            "data": {"prompts": str(prompts), "responses": str(responses)},
            "judging": {"judges": ["sim"]},
            "selection": {"batch": 4},
            "dispatch": {"pipeline_depth": 1},
        }
    )
    templates = {"pairwise": get_template("poe-pairwise")}
    profiles = {"sim": JudgeProfile(name="sim", model="sim/sim", price_input_per_mtok=1.0)}
    spec = SimSpec("sim", noise=1.0, usd_per_call=0.001)
    dataset = load_dataset(prompts, responses)
    with create_run(config.run_path, name=config.name, config=config.to_json(), seed=seed, dataset=dataset, templates=templates) as store:
        asyncio.run(RunEngine(store, config, {"sim": SimJudge(spec, quality, seed)}, profiles, templates, pilot=pilot).run())  # type: ignore[dict-item]
    forecast = api.status(config.run_path).as_dict()["forecast"]
    with open_run(config.run_path) as store:
        asyncio.run(RunEngine(store, config, {"sim": SimJudge(spec, quality, seed + 1000)}, profiles, templates).run())  # type: ignore[dict-item]
    return forecast, api.status(config.run_path).as_dict()["spent"]["calls"]


def summarise(name: str, rows: list[tuple[dict, int]]) -> None:
    ratios = [f["calls"] / actual for f, actual in rows]
    covered = sum(actual <= f["calls_p90"] for f, actual in rows)
    print(
        f"{name}: forecast/actual calls mean {np.mean(ratios):.2f} (median {np.median(ratios):.2f}, "
        f"range {min(ratios):.2f}–{max(ratios):.2f}); actual ≤ p90 in {covered}/{len(rows)}; "
        f"mean actual {np.mean([a for _, a in rows]):.0f} calls"
    )
    for f, actual in rows[:5]:
        print(f"   pilot {f['after_calls']} → forecast {f['calls']} (p90 {f['calls_p90']}), actual {actual}, stops by {f['stops_by']}")


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--sims", type=int, default=20)
    ap.add_argument("--pilot", type=int, default=12)
    args = ap.parse_args()
    started = time.perf_counter()
    print("tokens per request (quick start, embedded Qwen judge):", tokens_per_request())
    with tempfile.TemporaryDirectory() as tmp:
        summarise(
            "embedded Qwen judge from its log, 2 articles × 16 systems (indifference rule)",
            [quick_start(s, Path(tmp), args.pilot) for s in range(5)],
        )
        summarise(
            f"simulation, 8 candidates, noise 1.0 ({args.sims} datasets)", [simulation(s, Path(tmp), args.pilot) for s in range(args.sims)]
        )
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    harness.run(main, __file__)
