"""The simplex fit on data it was not tuned on (issue #35): the judge-panel test bed of
:func:`orchestrator.simplex.simulate.panel` — a dominant candidate above a close pack, compressed
and shifted judge scales, judges of very different quality, 20 candidates.

Each replicate is fitted with the default settings as `fit simplex` runs them (the fallback
included; ``--settings`` overrides); reported per shape and pooled: the share of replicates whose
ranking R-hat is ≤ 1.01 for the fit asked for and for the fit reported (the fallback's when it
stepped in), coverage of the true ranks by
the 95% rank intervals, Spearman of the posterior means with the truth next to simple averaging's,
seconds per fit, and what the fit fell back to when it did not converge. Each fit runs in a worker
process (a fresh JAX per few fits: many sampler compiles in one process exhaust LLVM's section
memory; spawned, since a forked JAX process can hang).

    python -m benchmarks.validity.simplex_foreign [--replicates 6] [--shapes dominant compressed mixed wide] [--settings JSON] [--json OUT]
    python -m benchmarks.validity.simplex_foreign --table OUT.json ...
"""

import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from scipy.stats import spearmanr

from benchmarks import harness


def one(shape: str, rep: int, settings: dict) -> dict:
    from orchestrator.simplex import SimplexSettings, fit_or_fallback
    from orchestrator.simplex import baselines as B
    from orchestrator.simplex.simulate import panel

    data, truth = panel(shape, seed=100 * rep + 7)
    fit = fit_or_fallback(data, SimplexSettings(seed=rep, **settings))  # what `fit simplex` runs
    ranks = fit.ranks()
    true_rank = B.ranks(truth)
    lo, hi = ranks.lower.numpy(), ranks.upper.numpy()
    average = B.simple_average(data.item_scores())
    return {
        "shape": shape,
        "rep": rep,
        "candidates": len(data.candidates),
        "rhat_ranking": fit.rhat.get("ranking"),
        "asked_rhat_ranking": fit.rhat.get("ranking") if fit.fallback_from is None else fit.fallback_from["rhat_ranking"],
        "max_rhat": fit.max_rhat,
        "converged": fit.converged,
        "coverage": float(np.mean((lo <= true_rank) & (true_rank <= hi))),
        "width": float(np.mean(hi - lo + 1)),
        "spearman": float(spearmanr(fit.expected_mean, truth).statistic),
        "spearman_average": float(spearmanr(average, truth).statistic),
        "seconds": fit.seconds,
        "chains": fit.chains,
        "method": "nuts" if fit.fallback_from is None else f"fallback (asked R-hat {fit.fallback_from['rhat_ranking']:.3f})",
    }


def table(rows: list[dict], shapes: list[str]) -> str:
    """The per-shape and pooled table of benchmarks/RESULTS.md."""
    out = [
        "| shape | replicates | asked fit's R-hat ≤ 1.01 | reported fit's R-hat ≤ 1.01 | coverage | mean width (ranks) "
        "| Spearman | simple average | worst Spearman − average | s per fit |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for shape in shapes + ["all"]:
        sel = [r for r in rows if shape in ("all", r["shape"])]
        asked = sum(r["asked_rhat_ranking"] <= 1.01 for r in sel)
        ok = sum(r["rhat_ranking"] <= 1.01 for r in sel)
        gap = min(r["spearman"] - r["spearman_average"] for r in sel)
        out.append(
            f"| {shape} | {len(sel)} | {asked}/{len(sel)} | {ok}/{len(sel)} | {np.mean([r['coverage'] for r in sel]):.3f} | "
            f"{np.mean([r['width'] for r in sel]):.2f} | {np.mean([r['spearman'] for r in sel]):.3f} | "
            f"{np.mean([r['spearman_average'] for r in sel]):.3f} | {gap:+.3f} | {np.mean([r['seconds'] for r in sel]):.0f} |"
        )
    return "\n".join(out)


def main() -> None:
    from orchestrator.simplex.simulate import PANEL_SHAPES

    ap = harness.parser(__doc__, quick="1 replicate of the first panel shape")
    ap.add_argument("--replicates", type=int, default=6)
    ap.add_argument("--shapes", nargs="+", default=list(PANEL_SHAPES), choices=PANEL_SHAPES)
    ap.add_argument("--settings", default="{}", help="SimplexSettings overrides as JSON, e.g. '{\"omega\": 0}'")
    ap.add_argument("--json", help="write every replicate's row here")
    ap.add_argument("--table", nargs="+", metavar="JSON", help="only print the table of earlier --json files")
    args = ap.parse_args()
    if args.quick:
        args.replicates, args.shapes = 1, args.shapes[:1]
    if args.table:
        for path in args.table:
            with open(path) as f:
                rows = json.load(f)
            print(f"{path}:\n{table(rows, [s for s in args.shapes if any(r['shape'] == s for r in rows)])}")
        return
    settings = json.loads(args.settings)
    jobs = [(s, r) for s in args.shapes for r in range(args.replicates)]
    started = time.perf_counter()
    rows = []
    spawn = multiprocessing.get_context("spawn")
    for start in range(0, len(jobs), 5):  # a fresh worker every five fits (max_tasks_per_child hangs on 3.11)
        chunk = jobs[start : start + 5]
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
            for row in pool.map(one, *zip(*chunk), [settings] * len(chunk)):
                rows.append(row)
                print(
                    f"{row['shape']:<10} rep {row['rep']}: R-hat {row['rhat_ranking']:.3f} (max {row['max_rhat']:.2f}), "
                    f"coverage {row['coverage']:.2f}, Spearman {row['spearman']:.3f} (average {row['spearman_average']:.3f}), "
                    f"{row['seconds']:.0f} s, {row['method']}",
                    flush=True,
                )
    print(f"\n{len(rows)} fits in {time.perf_counter() - started:.0f} s, settings {settings or 'default'}")
    print(table(rows, args.shapes))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    harness.run(main, __file__)
