"""PoE paper Fig. 3 setting on a simulated judge: N=1056 items, batches of 100 and 400, up to 1%
of all ordered pairs (11,140 comparisons): random vs minimum uncertainty vs probability of
reordering vs the diverse batch. Prints Spearman vs truth at 0.25%, 0.5% and 1% of all pairs.

    python -m benchmarks.selection.large_scale [--seeds 2] [--n 1056]
"""

import time

import numpy as np
import torch
from scipy.stats import spearmanr

from benchmarks import harness
from orchestrator.offline.replay.simulate import JUDGE_PRESETS, judge_latent, pairwise_probabilities
from orchestrator.poe import Observations, fit_laplace, select_pairs

STRATEGIES = ["random", "min_uncertainty", "reorder", "diverse"]


def run(strategy, batch, n, budget, probs, truth, seed):
    generator = torch.Generator().manual_seed(seed)
    available = torch.ones(n, n, dtype=torch.bool)
    available.fill_diagonal_(False)
    first, second, p = [], [], []
    post = fit_laplace(Observations.from_lists(n))
    checkpoints = {}
    marks = [budget // 4, budget // 2, budget]
    while len(p) < budget:
        pairs = select_pairs(post, strategy, available, min(batch, budget - len(p)), generator=generator)
        for i, j in pairs:
            first.append(i)
            second.append(j)
            p.append(float(probs[i, j]))
            available[i, j] = False
        obs = Observations(n, torch.tensor(first), torch.tensor(second), torch.tensor(p, dtype=torch.float64))
        post = fit_laplace(obs, warm_start=post)
        for m in marks:
            if len(p) >= m and m not in checkpoints:
                checkpoints[m] = spearmanr(post.mean.numpy(), truth).statistic
    return [checkpoints[m] for m in marks]


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--n", type=int, default=1056)
    ap.add_argument("--seeds", type=harness.count, default=2)
    ap.add_argument("--judge", default="llm", choices=sorted(JUDGE_PRESETS))
    args = ap.parse_args()
    n = args.n
    budget = n * (n - 1) // 100
    judge = JUDGE_PRESETS[args.judge]
    print(f"N={n}, budget {budget} comparisons (1% of {n * (n - 1)}), judge preset {args.judge}, {args.seeds} seeds")
    rows = {}
    t0 = time.time()
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        quality = rng.normal(size=n)
        probs = pairwise_probabilities(judge_latent(quality, judge, rng), judge, rng)
        for batch in (100, 400):
            for strategy in STRATEGIES:
                t = time.time()
                rows.setdefault((batch, strategy), []).append((run(strategy, batch, n, budget, probs, quality, seed), time.time() - t))
    print(f"elapsed {time.time() - t0:.0f} s")
    print()
    print(f"| batch | selection | Spearman @ {budget // 4} | @ {budget // 2} | @ {budget} (1%) | s per run |")
    print("|---|---|---|---|---|---|")
    for (batch, strategy), values in rows.items():
        sp = np.array([v[0] for v in values])
        secs = np.mean([v[1] for v in values])
        cells = " | ".join(f"{sp[:, c].mean():.3f} ± {sp[:, c].std():.3f}" for c in range(3))
        print(f"| {batch} | {strategy} | {cells} | {secs:.1f} |")


if __name__ == "__main__":
    harness.run(main, __file__)
