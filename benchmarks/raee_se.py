"""RAEE analytic vs empirical standard error on AlpacaEval 2.0 (RAEE paper §4, Fig. 4, Table 9).

For each model, subsample n ∈ {16, 32, 64, 128, 256} of the M = 805 instructions without replacement
(R draws), compute the soft win probability p̂ on each draw, and compare the empirical SD of p̂ with
the analytic SE of Eq. (4), raw and with the finite-population correction (M − n)/(M − 1).
Reported: the median over models of analytic / empirical (1.00 = exact; the paper reports FPC-corrected
analytic SEs within ±12% of the empirical ones).

    python benchmarks/raee_se.py [--draws 2000] [--data ../shared/data/alpacaeval]
"""

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from orchestrator.raee import outcomes, raee_estimate

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared/data/alpacaeval"))
    ap.add_argument("--draws", type=int, default=2000)
    args = ap.parse_args()
    runs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with open(Path(args.data) / "annotations.jsonl") as fh:
        for line in fh:
            row = json.loads(line)
            runs[row["model"]][row["instruction_id"]].append(row["preference"])
    sizes = [16, 32, 64, 128, 256]
    for soft in (True, False):
        rng = np.random.default_rng(0)
        ratios_raw = {n: [] for n in sizes}
        ratios_fpc = {n: [] for n in sizes}
        skipped = []
        for model, by_instruction in sorted(runs.items()):
            pref = np.array([np.mean(v) for v in by_instruction.values()])
            s = outcomes(pref - 1, np.zeros_like(pref), 2 - pref, soft=soft)
            if np.ptp(s) == 0:
                skipped.append(model)  # every outcome equal: no sampling variability to compare
                continue
            m = s.size
            for n in sizes:
                draws = np.array([s[rng.choice(m, size=n, replace=False)].mean() for _ in range(args.draws)])
                empirical = draws.std(ddof=1)
                # the analytic SE a user with n prompts would report, averaged over subsamples
                ests = [raee_estimate(s[rng.choice(m, size=n, replace=False)], population=m) for _ in range(50)]
                ratios_raw[n].append(np.mean([e.se_p_raw for e in ests]) / empirical)
                ratios_fpc[n].append(np.mean([e.se_p for e in ests]) / empirical)
        kind = "soft outcomes P(win)" if soft else "hard outcomes (argmax)"
        print(f"\n{kind}: {len(runs) - len(skipped)} models (skipped, constant: {', '.join(skipped) or 'none'}), "
              f"M = 805 instructions (run-averaged), {args.draws} subsamples per n")
        print(f"{'n':>5} {'analytic/empirical raw: median [min, max]':>42} {'FPC: median [min, max]':>28} {'FPC within ±12%':>16}")
        for n in sizes:
            raw, fpc = np.array(ratios_raw[n]), np.array(ratios_fpc[n])
            print(f"{n:>5} {np.median(raw):>30.3f} [{raw.min():.2f}, {raw.max():.2f}] "
                  f"{np.median(fpc):>16.3f} [{fpc.min():.2f}, {fpc.max():.2f}] {np.mean(np.abs(fpc - 1) <= 0.12):>15.0%}")


if __name__ == "__main__":
    main()
