"""Stopping that tolerates ties (issue #17), through the real engine with an injected judge that
answers from hidden qualities: P(A) = σ(slope · (q_A − q_B) + noise).

1. The tie scenario: one prompt, ten candidates of which six are exactly equal; `max_calls = 90`.
   Calls until the run stops by itself with the default config, against today's behaviour (no
   stopping rule, shared judge parameters: every ordered pair asked).
2. No ties: random qualities, a noisy judge. The default config's stopping point K and its
   Spearman with the truth, against today's config run to the same K calls (side by side).

    python benchmarks/stopping_ties.py [--reps 20]
"""

import argparse
import asyncio
import json
import math
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from orchestrator import runs
from orchestrator.config import RunConfig
from orchestrator.dataset import load_dataset
from orchestrator.judging.client import JudgeProfile, JudgeRequest, Judgment
from orchestrator.judging.templates import get_template
from orchestrator.run.engine import RunEngine
from orchestrator.store import create_run

TODAY = {"model": {"judge_reliability": False}, "stopping": {"rule": "budget"}}


class QualityJudge:
    def __init__(self, quality: dict[str, float], slope: float, noise: float, seed: int):
        self.name, self.quality, self.slope, self.noise = "sim", quality, slope, noise
        self.rng = random.Random(seed)

    async def judge(self, request: JudgeRequest) -> Judgment:
        a, b = request.candidates
        logit = self.slope * (self.quality[a] - self.quality[b]) + self.rng.gauss(0, self.noise)
        p = 1 / (1 + math.exp(-logit))
        return Judgment(
            key=request.key,
            judge=self.name,
            template=request.template.name,
            kind="pairwise",
            prompt_id=request.prompt_id,
            candidates=list(request.candidates),
            status="ok",
            probs=[{"A": p, "B": 1 - p}],
            method="logprobs",
        )


def run(folder: Path, name: str, quality: dict[str, float], *, max_calls: int, overrides: dict, slope: float, noise: float, seed: int):
    prompts, responses = folder / f"{name}.p.jsonl", folder / f"{name}.r.jsonl"
    prompts.write_text(json.dumps({"id": "p0", "text": "An article."}) + "\n")
    responses.write_text("".join(json.dumps({"prompt_id": "p0", "candidate": c, "text": f"Summary {c}."}) + "\n" for c in quality))
    settings = {
        "name": name,
        "runs_dir": str(folder),
        "data": {"prompts": str(prompts), "responses": str(responses)},
        "judging": {"judges": ["sim"]},
        "budget": {"max_calls": max_calls},
        "dispatch": {"pipeline_depth": 1},
    }
    for section, values in overrides.items():
        settings[section] = {**settings.get(section, {}), **values}
    config = RunConfig.model_validate(settings)
    templates = {"pairwise": get_template("poe-pairwise")}
    store = create_run(
        config.run_path, name=name, config=config.to_json(), seed=0, dataset=load_dataset(prompts, responses), templates=templates
    )
    with store:
        judge = QualityJudge(quality, slope, noise, seed)
        engine = RunEngine(store, config, {"sim": judge}, {"sim": JudgeProfile(name="sim", model="sim")}, templates, local={"sim"})
        reason = asyncio.run(engine.run())
        calls = store.spend().calls
    (group,) = runs.ranking(config.run_path)["groups"]
    scores = {r["candidate"]: r["score"] for r in group["ranking"]}
    rho = spearmanr([scores[c] for c in quality], list(quality.values())).statistic
    return calls, float(rho), reason, group["ties"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tie = {f"M{c}": q for c, q in enumerate([0.5] * 6 + [0.9, 0.75, 0.25, 0.1])}
        print("tie scenario: 10 candidates, 6 equal, judge P(A) = σ(6 (q_A − q_B)), max_calls = 90")
        for label, overrides in (("default", {}), ("today", TODAY)):
            for noise in (0.0, 0.5):
                calls, rho, reason, ties = run(folder, f"tie-{label}-{noise}", tie, max_calls=90, overrides=overrides, slope=6, noise=noise, seed=0)
                tied = sorted({c for pair in ties for c in pair})
                print(f"  {label:8} noise {noise}: {calls:3d} calls, Spearman {rho:.3f}, stop: {reason[:70]}; tied: {tied}")
        print(f"\nno ties: 10 candidates, q ~ N(0, 0.3²), judge slope 6, logit noise 0.5, {args.reps} datasets")
        stops, new, today = [], [], []
        for k in range(args.reps):
            rng = random.Random(100 + k)
            quality = {f"M{c}": rng.gauss(0, 0.3) for c in range(10)}
            calls, rho, _, _ = run(folder, f"free-{k}", quality, max_calls=90, overrides={}, slope=6, noise=0.5, seed=k)
            _, rho_today, _, _ = run(folder, f"today-{k}", quality, max_calls=calls, overrides=TODAY, slope=6, noise=0.5, seed=k)
            stops.append(calls)
            new.append(rho)
            today.append(rho_today)
        print(f"  default config stops after {np.mean(stops):.1f} calls (min {min(stops)}, max {max(stops)}) of 90")
        print(f"  Spearman at that point: default {np.mean(new):.4f}, today's config at the same calls {np.mean(today):.4f}")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
