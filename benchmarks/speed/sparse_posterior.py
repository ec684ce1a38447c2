"""Issue #21: the sparse posterior for large N, side by side with the dense one.

Parts (``--part``, default all):

- ``variance``: at N = 2,000 (where Σ fits) the sparse path's estimated pair variances ``V_ab`` and
  marginal variances against the dense Σ, on a random comparison graph and on the graph an
  active-learning loop builds (neighbour-heavy); with and without the control variate.
- ``equal``: an active-learning loop at N = 2,000 (simulated judge), dense selection over all
  pairs vs sparse selection over candidate pairs: Spearman with the truth along the way, s/round.
- ``round``: one round (the engine's fit with judge reliability + candidate pairs + a batch of
  1,000) at N = 3,000 / 30,000 comparisons dense and sparse, N = 20,000 / 200,000 and
  N = 100,000 / 1,000,000 sparse: seconds and peak RSS, each in its own process.
- ``replay``: ``orchestrator replay`` of a 20,000-item, 200,000-comparison log (one prompt),
  ``--batch 5000 --budget 60000``: wall time and peak RSS of the process.

    python -m benchmarks.speed.sparse_posterior [--part variance|equal|round|replay] [--seeds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from benchmarks import harness
from orchestrator.poe import (
    ORDER_IJ,
    ORDER_JI,
    Observations,
    PoEConfig,
    candidate_pairs,
    fit_laplace,
    fit_with_reliability,
    pair_variances,
    select_pairs,
)
from orchestrator.poe.laplace import marginal_variances

SLOPE, NOISE = 1.5, 0.5
"""The simulated judge: P(first better) = σ(1.5 (q_a − q_b) + N(0, 0.5²))."""


def judge(quality: np.ndarray, first: np.ndarray, second: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    logit = SLOPE * (quality[first] - quality[second]) + NOISE * rng.standard_normal(first.size)
    return 1.0 / (1.0 + np.exp(-logit))


def random_pairs(n: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    first = rng.integers(0, n, k)
    second = rng.integers(0, n - 1, k)
    return first, second + (second >= first)


def observations(n, first, second, p) -> Observations:
    return Observations(
        n, torch.as_tensor(np.asarray(first)), torch.as_tensor(np.asarray(second)), torch.as_tensor(np.asarray(p, dtype=np.float64))
    )


def open_candidates(post, asked: set[int] | torch.Tensor, n: int, batch: int, generator) -> torch.Tensor:
    """Candidate pairs with availability bits: an ordered pair is open until asked (``asked``:
    keys ``first · n + second``)."""
    pairs = candidate_pairs(
        post, window=4, uncertain=min(n // 10, batch), uncertain_window=12, n_random=max(batch, 256), generator=generator
    )
    i, j = pairs[:, 0], pairs[:, 1]
    asked_t = asked if isinstance(asked, torch.Tensor) else torch.tensor(sorted(asked), dtype=torch.long)
    bits = (~torch.isin(i * n + j, asked_t)).long() * ORDER_IJ + (~torch.isin(j * n + i, asked_t)).long() * ORDER_JI
    keep = bits > 0
    return torch.stack([i[keep], j[keep], bits[keep]], 1)


# -- variance -----------------------------------------------------------------------------------
def part_variance(seeds: int) -> None:
    n = 2000
    print(f"\n## variance estimates vs the dense Σ, N = {n}, S = 32 draws ({seeds} seeds)")
    print("| graph | comparisons | quantity | mean rel. error | sd | 95th pct abs | plain MC sd |")
    print("|---|---|---|---|---|---|---|")
    for graph in ("random", "active"):
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            quality = rng.standard_normal(n)
            if graph == "random":
                first, second = random_pairs(n, 10 * n, rng)
            else:  # what a reorder loop builds: mostly near neighbours in the true ranking
                order = np.argsort(-quality)
                pos = rng.integers(0, n, 10 * n)
                gap = 1 + rng.geometric(0.4, 10 * n)
                keep = pos + gap < n
                first, second = order[pos[keep]], order[(pos + gap)[keep]]
            obs = observations(n, first, second, judge(quality, first, second, rng))
            dense = fit_laplace(obs, method="dense")
            sparse = fit_laplace(obs, method="sparse", seed=seed)
            order = torch.argsort(dense.mean, descending=True)
            a, b = random_pairs(n, 20000, rng)
            sets = {"V, ranking neighbours": (order[:-1], order[1:]), "V, random pairs": (torch.as_tensor(a), torch.as_tensor(b))}
            for name, (x, y) in sets.items():
                exact = pair_variances(dense, x, y)
                rel = pair_variances(sparse, x, y) / exact - 1
                assert sparse.sparse is not None
                d = sparse.sparse.draws
                plain = ((d[:, x] - d[:, y]) ** 2).mean(0) / exact - 1
                print(
                    f"| {graph} (seed {seed}) | {len(first):,} | {name} | {float(rel.mean()):+.3f} | {float(rel.std()):.3f} | "
                    f"{float(rel.abs().quantile(0.95)):.3f} | {float(plain.std()):.3f} |"
                )
            rel = marginal_variances(sparse) / marginal_variances(dense) - 1
            print(
                f"| {graph} (seed {seed}) | {len(first):,} | Σ_ii | {float(rel.mean()):+.3f} | {float(rel.std()):.3f} | {float(rel.abs().quantile(0.95)):.3f} | |"
            )
            print(f"| {graph} (seed {seed}) | | max abs(μ dense − μ sparse) | {float((dense.mean - sparse.mean).abs().max()):.1e} | | | |")


# -- equal --------------------------------------------------------------------------------------
def active_loop(method: str, n: int, budget: int, batch: int, seed: int) -> tuple[list[float], float]:
    rng = np.random.default_rng(seed)
    quality = rng.standard_normal(n)
    generator = torch.Generator().manual_seed(seed)
    first: list[int] = []
    second: list[int] = []
    probs: list[float] = []
    asked: set[int] = set()
    post = fit_laplace(observations(n, [], [], []), method=method)
    curve, seconds = [], 0.0
    available = None
    if method == "dense":
        available = torch.ones(n, n, dtype=torch.bool)
        available.fill_diagonal_(False)
    while len(probs) < budget:
        t0 = time.perf_counter()
        size = min(batch, budget - len(probs))
        if available is not None:
            pairs = select_pairs(post, "reorder", available, size, generator=generator)
        else:
            pairs = select_pairs(post, "reorder", open_candidates(post, asked, n, size, generator), size, generator=generator)
        f = np.array([p[0] for p in pairs])
        s = np.array([p[1] for p in pairs])
        for i, j in pairs:
            asked.add(i * n + j)
            if available is not None:
                available[i, j] = False
        first += f.tolist()
        second += s.tolist()
        probs += judge(quality, f, s, rng).tolist()
        post = fit_laplace(observations(n, first, second, probs), method=method, seed=seed)
        seconds += time.perf_counter() - t0
        curve.append(float(spearmanr(post.mean.numpy(), quality).statistic))
    return curve, seconds / len(curve)


def part_equal(seeds: int) -> None:
    n, batch, budget = 2000, 500, 10000
    print(f"\n## active loop, N = {n}, batch {batch}, reorder, {budget:,} comparisons ({seeds} seeds): Spearman with the truth")
    marks = [1, 4, 10, 20]
    print("| path | " + " | ".join(f"after {m * batch:,}" for m in marks) + " | s/round |")
    print("|---|" + "---|" * (len(marks) + 1))
    results: dict[str, list] = {}
    for method in ("dense", "sparse"):
        curves, secs = [], []
        for seed in range(seeds):
            curve, s = active_loop(method, n, budget, batch, seed)
            curves.append(curve)
            secs.append(s)
        mean = np.mean(curves, axis=0)
        results[method] = mean
        print(f"| {method} | " + " | ".join(f"{mean[m - 1]:.4f}" for m in marks) + f" | {np.mean(secs):.2f} |")
    print(f"final Spearman difference (sparse − dense): {results['sparse'][-1] - results['dense'][-1]:+.4f}")


# -- round --------------------------------------------------------------------------------------
def one_round(n: int, k: int, method: str, batch: int = 1000) -> dict:
    """Run in a child process: two rounds, the second timed (the first pays for imports/warm-up)."""
    rng = np.random.default_rng(0)
    quality = rng.standard_normal(n)
    first, second = random_pairs(n, k, rng)
    probs = judge(quality, first, second, rng)
    asked = torch.unique(torch.as_tensor(first * n + second))
    config = PoEConfig(judge_sharpness=True, judge_precision=True, posterior=method)
    generator = torch.Generator().manual_seed(0)
    timing = {}
    for _ in range(2):
        t0 = time.perf_counter()
        post = fit_with_reliability(observations(n, first, second, probs), config)
        t1 = time.perf_counter()
        if method == "dense":
            available = torch.ones(n, n, dtype=torch.bool)
            available.fill_diagonal_(False)
            available.view(-1)[asked] = False
            pairs = select_pairs(post, "reorder", available, batch, generator=generator)
        else:
            pairs = select_pairs(post, "reorder", open_candidates(post, asked, n, batch, generator), batch, generator=generator)
        t2 = time.perf_counter()
        timing = {"fit_s": t1 - t0, "select_s": t2 - t1, "round_s": t2 - t0, "picked": len(pairs)}
        f = np.array([p[0] for p in pairs])
        s = np.array([p[1] for p in pairs])
        first, second = np.concatenate([first, f]), np.concatenate([second, s])
        probs = np.concatenate([probs, judge(quality, f, s, rng)])
        asked = torch.unique(torch.cat([asked, torch.as_tensor(f * n + s)]))
    timing["spearman"] = float(spearmanr(post.mean.numpy(), quality).statistic)
    timing["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return timing


def part_round() -> None:
    print(f"\n## one round (reliability fit + candidate pairs + batch of 1,000), {os.cpu_count()} cores, each in its own process")
    print("| N | comparisons | path | fit s | select s | round s | peak RSS MiB | Spearman |")
    print("|---|---|---|---|---|---|---|---|")
    for n, k, method in [(3000, 30000, "dense"), (3000, 30000, "sparse"), (20000, 200000, "sparse"), (100000, 1000000, "sparse")]:
        out = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps([n, k, method])], capture_output=True, text=True, check=True
        ).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(
            f"| {n:,} | {k:,} | {method} | {r['fit_s']:.2f} | {r['select_s']:.2f} | {r['round_s']:.2f} | "
            f"{r['peak_rss_mib']:.0f} | {r['spearman']:.4f} |"
        )


# -- replay -------------------------------------------------------------------------------------
def part_replay(n: int = 20000, k: int = 200000, batch: int = 5000, budget: int = 60000) -> None:
    rng = np.random.default_rng(0)
    quality = rng.standard_normal(n)
    first, second = random_pairs(n, k, rng)
    keys = np.unique(first * n + second)  # one judgment per ordered pair
    first, second = keys // n, keys % n
    probs = judge(quality, first, second, rng)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        names = [f"r{c:05d}" for c in range(n)]
        with open(folder / "responses.jsonl", "w") as fh:
            for c in range(n):
                fh.write(json.dumps({"prompt_id": "p0", "candidate": names[c], "human": {"quality": float(quality[c])}}) + "\n")
        with open(folder / "log.jsonl", "w") as fh:
            for a, b, p in zip(first.tolist(), second.tolist(), probs.tolist()):
                fh.write(
                    json.dumps(
                        {
                            "kind": "pairwise",
                            "judge": "sim",
                            "prompt_id": "p0",
                            "candidates": [names[a], names[b]],
                            "probs": {"A": p, "B": 1 - p},
                        }
                    )
                    + "\n"
                )
        command = [
            sys.executable, "-m", "orchestrator", "replay", str(folder / "log.jsonl"), "--responses", str(folder / "responses.jsonl"),
            "--truth", "quality", "--scope", "per_prompt", "--batch", str(batch), "--budget", str(budget), "--json",
        ]  # fmt: skip
        t0 = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"\n## replay of a {n:,}-item, {len(first):,}-comparison log, --batch {batch} --budget {budget}")
    if done.returncode != 0:
        print("FAILED:", done.stderr[-2000:])
        return
    report = json.loads(done.stdout)
    calls, final, _ = report["curve"][-1]
    print(
        f"wall {wall:.0f} s, peak RSS {peak:.0f} MiB, {calls:,} calls in {len(report['curve'])} rounds; Spearman with the truth "
        f"{final:.4f} (all {len(first):,} logged comparisons: {report['full_spearman']:.4f})"
    )
    print(f"command: orchestrator replay LOG --responses R --truth quality --scope per_prompt --batch {batch} --budget {budget} --json")


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--part", default="all", choices=["all", "variance", "equal", "round", "replay"])
    ap.add_argument("--seeds", type=harness.count, default=2)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        n, k, method = json.loads(args.child)
        print(json.dumps(one_round(n, k, method)))
        return
    t0 = time.time()
    if args.part in ("all", "variance"):
        part_variance(args.seeds)
    if args.part in ("all", "equal"):
        part_equal(args.seeds)
    if args.part in ("all", "round"):
        part_round()
    if args.part in ("all", "replay"):
        part_replay()
    print(f"\nelapsed {time.time() - t0:.0f} s")


if __name__ == "__main__":
    harness.run(main, __file__)
