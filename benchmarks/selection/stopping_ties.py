"""Stopping that tolerates ties (issue #17), through the real engine with an injected judge that
answers from hidden qualities: P(A) = σ(6 (q_A − q_B) + noise) (`benchmarks/simjudge.py`).

1. The tie scenario: one prompt, ten candidates of which six are exactly equal; `max_calls = 90`.
   Calls until the run stops by itself with the default config, against today's behaviour (no
   stopping rule, no judge reliability: every ordered pair asked).
2. No ties: random qualities, a noisy judge. The default config's stopping point K and its
   Spearman with the truth, against today's config run to the same K calls (side by side).

    python -m benchmarks.selection.stopping_ties [--reps 20]
"""

import random
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from benchmarks import harness
from benchmarks.simjudge import SimSpec, run
from orchestrator import api

TODAY = {"model": {"judge_reliability": False}, "stopping": {"rule": "budget"}}


def ranked(path: Path, quality: dict[str, float]) -> tuple[float, list[str]]:
    (group,) = api.ranking(path).as_dict()["groups"]
    scores = {r["candidate"]: r["score"] for r in group["ranking"]}
    rho = spearmanr([scores[c] for c in quality], list(quality.values())).statistic
    return float(rho), sorted({c for pair in group["ties"] for c in pair})


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tie = {f"M{c}": q for c, q in enumerate([0.5] * 6 + [0.9, 0.75, 0.25, 0.1])}
        print("tie scenario: 10 candidates, 6 equal, judge P(A) = σ(6 (q_A − q_B)), max_calls = 90")
        for label, overrides in (("default", {}), ("today", TODAY)):
            for noise in (0.0, 0.5):
                budget = {**overrides, "budget": {"max_calls": 90}}
                path, reason, _, calls = run(folder, f"tie-{label}-{noise}", tie, [SimSpec("sim", noise=noise)], overrides=budget)
                rho, tied = ranked(path, tie)
                print(f"  {label:8} noise {noise}: {calls:3d} calls, Spearman {rho:.3f}, stop: {reason[:60]}; tied: {tied}")
        print(f"\nno ties: 10 candidates, q ~ N(0, 0.3²), judge slope 6, logit noise 0.5, {args.reps} datasets")
        stops, new, today = [], [], []
        for k in range(args.reps):
            rng = random.Random(100 + k)
            quality = {f"M{c}": rng.gauss(0, 0.3) for c in range(10)}
            judge = [SimSpec("sim", noise=0.5)]
            path, _, _, calls = run(folder, f"free-{k}", quality, judge, overrides={"budget": {"max_calls": 90}}, seed=k)
            same = run(folder, f"today-{k}", quality, judge, overrides={**TODAY, "budget": {"max_calls": calls}}, seed=k)[0]
            stops.append(calls)
            new.append(ranked(path, quality)[0])
            today.append(ranked(same, quality)[0])
        print(f"  default config stops after {np.mean(stops):.1f} calls (min {min(stops)}, max {max(stops)}) of 90")
        print(f"  Spearman at that point: default {np.mean(new):.4f}, today's config at the same calls {np.mean(today):.4f}")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    harness.run(main, __file__)
