"""PoE paper Table 2 layout on simulated LLM judges: comparisons to reach 90% of the all-pairs
Spearman (k90), per strategy, biased and permutation-debiased, N=16 (240 ordered pairs).

Each seed simulates fresh prompts with the chosen judge preset (orchestrator.offline.replay.simulate) and runs
every strategy through the same replay engine as `orchestrator replay`. k90 is per prompt, averaged
over prompts, then mean ± sd over seeds. Debiased k counts judge calls (two per pair).

    python -m benchmarks.selection.table2_k90 [--judge llm] [--seeds 8] [--prompts 8]
"""

import time

import numpy as np

from benchmarks import harness
from orchestrator.offline.replay.replay import build_groups, replay
from orchestrator.offline.replay.simulate import JUDGE_PRESETS, simulate_dataset
from orchestrator.records.log import LogRecord, ResponseRow

STRATEGIES = ["min_uncertainty", "variance", "reorder", "eps:0.5", "random"]


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--judge", default="llm", choices=sorted(JUDGE_PRESETS))
    ap.add_argument("--seeds", type=harness.count, default=8)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--candidates", type=int, default=16)
    args = ap.parse_args()
    judge = JUDGE_PRESETS[args.judge]
    print(f"judge preset {args.judge}: {judge}")
    print(f"N={args.candidates}, {args.prompts} prompts per seed, {args.seeds} seeds; truth = simulated human mean of 3 ratings")
    results = {}
    full = {}
    t0 = time.time()
    for seed in range(args.seeds):
        records, responses = simulate_dataset(args.prompts, args.candidates, judge, seed=1000 + seed, absolute=False)
        recs = [(i, LogRecord.model_validate(r)) for i, r in enumerate(records, 1)]
        rows = [(i, ResponseRow.model_validate(r)) for i, r in enumerate(responses, 1)]
        groups = build_groups(recs, rows, "quality", "per_prompt")
        for debias in ("none", "permutation"):
            for strategy in STRATEGIES:
                report = replay(groups, strategy, debias=debias, seeds=1)
                results.setdefault((strategy, debias), []).append((report.k90, report.k_self90))
                full.setdefault(debias, []).append(report.full_spearman)
    print(f"elapsed {time.time() - t0:.0f} s")
    for debias in ("none", "permutation"):
        print(f"all-pairs Spearman vs truth ({'debiased' if debias == 'permutation' else 'biased'}): {np.mean(full[debias]):.3f}")
    print()
    print("| selection | debiased | k90 (calls) | k_self90 (calls) |")
    print("|---|---|---|---|")
    for debias in ("none", "permutation"):
        for strategy in STRATEGIES:
            values = results[(strategy, debias)]
            k90 = np.array([v[0] for v in values if v[0] is not None])
            kself = np.array([v[1] for v in values if v[1] is not None])
            mark = "✓" if debias == "permutation" else "✗"
            print(f"| {strategy} | {mark} | {k90.mean():.1f} ± {k90.std(ddof=1):.1f} | {kself.mean():.1f} ± {kself.std(ddof=1):.1f} |")


if __name__ == "__main__":
    harness.run(main, __file__)
