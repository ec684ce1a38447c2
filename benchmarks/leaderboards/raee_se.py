"""RAEE analytic vs empirical standard error on AlpacaEval 2.0 (RAEE paper §4, Fig. 4, Table 9).

For each model, subsample n ∈ {16, 32, 64, 128, 256} of the M = 805 instructions without replacement
(R draws), compute p̂ on each draw, and compare the empirical SD of p̂ with the analytic SE of Eq. (4),
raw and with the finite-population correction (M − n)/(M − 1)
(:func:`orchestrator.raee.se_calibration`, the same code as ``orchestrator fit raee --se-curve``).
Reported: the median over models of analytic / empirical (1.00 = exact; the paper reports
FPC-corrected analytic SEs within ±12% of the empirical ones).

    python -m benchmarks.leaderboards.raee_se [--draws 2000] [--data ../shared/data/alpacaeval] [--plot FILE.png]
"""

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.harness import SHARED_DATA
from orchestrator.offline.raee.fit import plot_se_curve
from orchestrator.raee import SE_CURVE_SIZES, outcomes, se_calibration


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--data", default=str(SHARED_DATA / "alpacaeval"))
    ap.add_argument("--draws", type=harness.count, default=2000)
    ap.add_argument("--plot", default=None, help="write the analytic-vs-empirical SE curve to this PNG")
    args = ap.parse_args()
    runs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with open(Path(args.data) / "annotations.jsonl") as fh:
        for line in fh:
            row = json.loads(line)
            runs[row["model"]][row["instruction_id"]].append(row["preference"])
    sizes = SE_CURVE_SIZES
    curves = {}
    for soft in (True, False):
        rng = np.random.default_rng(0)
        ratios = {"raw": defaultdict(list), "FPC": defaultdict(list), "spread FPC": defaultdict(list)}
        skipped = []
        for model, by_instruction in sorted(runs.items()):
            pref = np.array([np.mean(v) for v in by_instruction.values()])
            s = outcomes(pref - 1, np.zeros_like(pref), 2 - pref, soft=soft)
            result = se_calibration(s, sizes, draws=args.draws, rng=rng)
            if not result:
                skipped.append(model)  # every outcome equal: no sampling variability to compare
                continue
            for n, r in result.items():
                ratios["raw"][n].append(r["analytic_raw"] / r["empirical"])
                ratios["FPC"][n].append(r["analytic_fpc"] / r["empirical"])
                ratios["spread FPC"][n].append(r["analytic_spread_fpc"] / r["empirical"])
        kind = "soft outcomes P(win)" if soft else "hard outcomes (argmax)"
        print(
            f"\n{kind}: {len(runs) - len(skipped)} models (skipped, constant: {', '.join(skipped) or 'none'}), "
            f"M = 805 instructions (run-averaged), {args.draws} subsamples per n"
        )
        print(
            f"{'n':>5} {'analytic/empirical raw: median [min, max]':>42} {'FPC: median [min, max]':>28} {'FPC within ±12%':>16}"
            f" {'spread+FPC: median [min, max]':>31} {'within ±12%':>12}"
        )
        for n in sizes:
            raw, fpc, spr = (np.array(ratios[k][n]) for k in ("raw", "FPC", "spread FPC"))
            print(
                f"{n:>5} {np.median(raw):>30.3f} [{raw.min():.2f}, {raw.max():.2f}] "
                f"{np.median(fpc):>16.3f} [{fpc.min():.2f}, {fpc.max():.2f}] {np.mean(np.abs(fpc - 1) <= 0.12):>15.0%}"
                f" {np.median(spr):>19.3f} [{spr.min():.2f}, {spr.max():.2f}] {np.mean(np.abs(spr - 1) <= 0.12):>11.0%}"
            )
        curves["soft" if soft else "hard"] = {k: {n: np.array(v) for n, v in by.items()} for k, by in ratios.items()}
    if args.plot:
        path = plot_se_curve(
            {"hard": curves["hard"], "soft": curves["soft"]}, args.plot, title="RAEE on AlpacaEval 2.0 (M = 805): analytic vs empirical SE"
        )
        print(f"\nwrote {path}")


if __name__ == "__main__":
    harness.run(main, __file__)
