"""Leaderboards for a fraction of the calls (issue #30): allocation rules against cutting the benchmark.

On AlpacaEval 2.0's real annotations (``../shared/data/alpacaeval``: soft GPT-4-turbo preferences of
every model against gpt4_1106_preview on 805 instructions) each method spends a fraction of the
M × P calls and is scored against the full-data leaderboard (the official win rates):

- ``fixed``: one random prompt subset for every model (cutting the benchmark), plain means;
- ``fixed-100``: the same with 100 prompts (tinyAlpacaEval's size) whatever the budget;
- ``uniform``: an independent random subset per model;
- ``adaptive``: the reference planner's rule — one prompt order shared by all models (the fixed
  subset's, so the comparison is paired: same seed, same prompts first;
  any two models are compared on common prompts), ``warmup`` prompts each, then rounds of ``batch``
  picks by :func:`orchestrator.raee.allocation.allocation_gains`, estimates and intervals from
  :func:`~orchestrator.raee.allocation.leaderboard_state` (prompt-difficulty corrected);
- ``adaptive-no-width``: the same with ``width_weight = 0`` (misordered pairs only).

Answers come from the log, so this measures the allocation rule itself (the planner calls the same
two functions); Kendall τ, Spearman, max/mean error in win-rate points, top-5 exact (same models in
the same order), coverage of the full-data win rates by the 95% intervals.

    python -m benchmarks.leaderboards.leaderboard_budget [--seeds 10] [--budgets 0.05 0.1 0.2 0.4]
    python -m benchmarks.leaderboards.leaderboard_budget --through-product [--budgets 0.1]
    python -m benchmarks.leaderboards.leaderboard_budget --stratify [--seeds 10]

``--through-product`` runs the same comparison as a user would instead: the annotations as a judgment
log, a reference campaign (``anchor = "dataset"``, ``soft = true``, ``allocation`` = ``all`` then
``adaptive``) driven by ``orchestrator run CONFIG --from-log LOG`` with ``max_calls`` = the budget,
scored from ``orchestrator rank --json`` (its ``win_rate`` and interval): one seed, wall seconds
of each command.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau, norm

from benchmarks import harness
from benchmarks.leaderboards.common import load, plain, scores
from orchestrator.raee.allocation import (
    WIDTH_WEIGHT,
    allocation_gains,
    leaderboard_state,
    lockstep_choice,
    slice_gains,
    stratified_order,
    win_rate_intervals,
)


def adaptive(
    y: np.ndarray,
    budget: int,
    order: np.ndarray,
    warmup: int,
    batch: int,
    width_weight: float,
    slices: np.ndarray | None = None,
    slice_weight: float = 0.0,
    rule: str = "gains",
):
    """The reference planner's allocation on a table of known outcomes: ``rule`` ``lockstep`` (the
    product's ``adaptive`` since issue #52) or ``gains`` (before it; ``width_weight`` and the slices
    apply to it)."""
    answered = ~np.isnan(y)
    population = answered.sum(1)
    ranks = [order[answered[m, order]] for m in range(len(y))]  # each model's prompts in the shared order
    n = np.minimum(np.full(len(y), warmup), population)
    if slices is not None:
        slice_population = np.stack([(answered & (slices == s)[None, :]).sum(1) for s in range(int(slices.max()) + 1)], 1)
    while n.sum() < budget:
        seen = np.zeros_like(answered)
        for m, k in enumerate(n):
            seen[m, ranks[m][:k]] = True
        est, sigma, _ = leaderboard_state(np.where(seen, y, np.nan))
        if rule == "lockstep":
            chosen = lockstep_choice(est, sigma, n, population, min(batch, int(budget - n.sum())))
            if not len(chosen):
                break
            n[chosen] += 1
            continue
        gains = allocation_gains(est, sigma, n, population, width_weight=width_weight)
        if slices is not None and slice_weight:
            next_slice = np.array([slices[ranks[m][k]] if k < len(ranks[m]) else -1 for m, k in enumerate(n)])
            gains = gains + slice_weight * slice_gains(np.where(seen, y, np.nan), slices, next_slice, slice_population)
        for m in np.argsort(-gains)[:batch]:
            if n.sum() >= budget or not np.isfinite(gains[m]):
                break
            n[m] += 1
    seen = np.zeros_like(answered)
    for m, k in enumerate(n):
        seen[m, ranks[m][:k]] = True
    est, half, *_ = win_rate_intervals(np.where(seen, y, np.nan), population)  # the product's interval (`rank`)
    return est, half / 1.96, n


def stratify(data: Path, seeds: int, budgets: list[float], warmup: int, batch: int, slice_weights: list[float]) -> None:
    """``--stratify``: the adaptive allocation on a plain random prompt order against the product's
    order stratified by category (AlpacaEval's 5 source sets, :func:`~orchestrator.raee.allocation.stratified_order`),
    same seeds: the overall board, and per category (its win rates against the category's full-data
    ones, from the same judgments) the largest error, the coverage of the product's 95% interval and
    the fewest prompts a model had in it."""
    annotations = [json.loads(line) for line in (data / "annotations.jsonl").open()]
    source = {a["instruction_id"]: a["dataset"] for a in annotations}
    models, y = load(data)
    prompts = sorted({a["instruction_id"] for a in annotations if a["model"] != a["reference_model"]})  # load()'s columns
    category = np.array([source[p] for p in prompts])
    names = sorted(set(category))
    slice_index = np.array([names.index(c) for c in category])
    truth = np.nanmean(y, 1)
    total = int((~np.isnan(y)).sum())
    answered = ~np.isnan(y)
    print(
        "| calls | order | Kendall τ | max error | coverage | per category: mean of max errors | worst max error | coverage | fewest prompts |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for fraction in budgets:
        budget = int(fraction * total)
        for kind, weight in [("random", 0.0), ("stratified", 0.0)] + [("stratified", w) for w in slice_weights]:
            rows = []
            for seed in range(seeds):
                rng = np.random.default_rng(seed)
                order = rng.permutation(y.shape[1])
                if kind == "stratified":
                    offsets = {c: float(rng.uniform()) for c in names}
                    strata = {str(i): str(category[i]) for i in order}
                    order = np.array([int(i) for i in stratified_order([str(i) for i in order], strata, offsets)])  # type: ignore[arg-type]
                est, se, n = adaptive(y, budget, order, warmup, batch, WIDTH_WEIGHT, slice_index, weight)
                seen = np.zeros_like(answered)
                for m, k in enumerate(n):
                    seen[m, order[answered[m, order]][:k]] = True
                tau, _, err, _, _, cover = scores(est, se, truth)
                worst, covers, fewest = [], [], []
                for c in names:
                    columns = category == c
                    part = np.where(seen[:, columns], y[:, columns], np.nan)
                    c_est, half, _, c_n, _ = win_rate_intervals(part, answered[:, columns].sum(1))
                    c_truth = np.nanmean(y[:, columns], 1)
                    judged = c_n > 0
                    worst.append(100 * float(np.max(np.abs(c_est - c_truth)[judged])) if judged.any() else np.nan)
                    covers.append(float(np.mean((np.abs(c_est - c_truth) <= half)[judged])) if judged.any() else np.nan)
                    fewest.append(int(c_n.min()))
                rows.append([tau, err, cover, float(np.nanmean(worst)), float(np.nanmax(worst)), float(np.nanmean(covers)), min(fewest)])
            m = np.mean(rows, 0)
            print(
                f"| {fraction:.0%} | {kind}{f', slice weight {weight:g}' if weight else ''} | {m[0]:.3f} | {m[1]:.2f} | {m[2]:.2f} | {m[3]:.2f} | {m[4]:.2f} | {m[5]:.3f} | "
                f"{min(r[6] for r in rows)} |",
                flush=True,
            )


def oracle(data: Path, seeds: int, budgets: list[float]) -> None:
    """``--oracle``: how far *any* allocation on the shared prompt order can go. Depths chosen
    greedily (8 prompts at a time) to minimise the expected misordered pairs computed from the
    *true* full-data win rates and residual sds, then the product's estimate
    (:func:`~orchestrator.raee.allocation.leaderboard_state`) — and, beside it, an estimate that
    knows every prompt's difficulty from the full data (no model fitted on a subset can know more)
    — over random prompt orders; the fixed subset of the same budget beside them."""
    models, y = load(data)
    truth = np.nanmean(y, 1)
    m, p = y.shape
    _, sigma, _ = leaderboard_state(y)
    answered = ~np.isnan(y)
    values = np.where(answered, y, 0.0)
    ability, difficulty = truth.copy(), np.zeros(p)
    for _ in range(30):
        difficulty = ((values - ability[:, None]) * answered).sum(0) / np.maximum(answered.sum(0), 1)
        ability = ((values - difficulty[None, :]) * answered).sum(1) / answered.sum(1)

    def misordered(n: np.ndarray) -> float:
        v = sigma**2 / n * np.clip(1 - n / p, 0, 1)
        gap = np.abs(truth[:, None] - truth[None, :])
        return float(norm.cdf(-gap / (np.sqrt(v[:, None] + v[None, :]) + 1e-12)).sum() / 2)

    print("| calls | oracle allocation, product's estimate | oracle allocation, true prompt difficulties | fixed subset | depths |")
    print("|---|---|---|---|---|")
    for fraction in budgets:
        budget = int(fraction * answered.sum())
        n = np.full(m, 4.0)
        while n.sum() < budget:
            base = misordered(n)
            gains = [base - misordered(n + 8.0 * (np.arange(m) == k)) if n[k] < p else -1.0 for k in range(m)]
            n[int(np.argmax(gains))] += 8
        depths = np.minimum(n, p).astype(int)
        taus: dict[str, list[float]] = defaultdict(list)
        for seed in range(seeds):
            order = np.random.default_rng(seed).permutation(p)
            seen = np.full_like(y, np.nan)
            for k in range(m):
                seen[k, order[: depths[k]]] = y[k, order[: depths[k]]]
            taus["product"].append(float(kendalltau(leaderboard_state(seen)[0], truth)[0]))
            known = np.nanmean(seen - difficulty[None, :], 1) + difficulty.mean()
            taus["known"].append(float(kendalltau(known, truth)[0]))
            taus["fixed"].append(float(kendalltau(np.nanmean(y[:, order[: budget // m]], 1), truth)[0]))
        print(
            f"| {fraction:.0%} | {np.mean(taus['product']):.3f} | {np.mean(taus['known']):.3f} | {np.mean(taus['fixed']):.3f} | "
            f"{depths.min()}–{depths.max()} |",
            flush=True,
        )


def paired_with_fixed(rows: list[list[float]], fixed: list[list[float]]) -> dict:
    """A method's Kendall τ and largest error against the fixed subset's on the same seeds (same
    prompt order): the mean paired difference and its standard error."""
    out = {}
    for key, column in (("tau", 0), ("max_error", 2)):
        diff = np.array([r[column] - f[column] for r, f in zip(rows, fixed)])
        se = float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else float("nan")
        out |= {f"{key}_vs_fixed": round(float(diff.mean()), 4), f"{key}_vs_fixed_se": round(se, 4)}
    return out


def main() -> None:
    parser = harness.parser(__doc__, quick="3 seeds (the main table), the first budget only (--through-product)")
    parser.add_argument("--data", type=Path, default=harness.SHARED_DATA / "alpacaeval")
    parser.add_argument("--seeds", type=harness.count, default=10)
    parser.add_argument("--budgets", type=float, nargs="+", default=[0.05, 0.1, 0.2, 0.4])
    parser.add_argument("--warmup", type=int, default=4, help="prompts each before the adaptive rounds")
    parser.add_argument("--warmup-share", type=float, default=0.0, help="or this share of each candidate's budget, if more")
    parser.add_argument("--batch", type=int, default=8, help="candidates picked per adaptive round")
    parser.add_argument("--through-product", action="store_true", help="drive orchestrator run --from-log instead (one seed)")
    parser.add_argument("--slices", type=int, metavar="DRAWS", help="per-category interval coverage over DRAWS prompt subsets")
    parser.add_argument("--workdir", type=Path, help="with --through-product: keep the data, log and run files here")
    parser.add_argument("--stratify", action="store_true", help="adaptive on a random against a category-stratified prompt order")
    parser.add_argument(
        "--slice-weights", type=float, nargs="*", default=[], help="with --stratify: also the slice-aware allocation at these weights"
    )
    parser.add_argument("--oracle", action="store_true", help="the best any allocation on the shared order can do (true win rates known)")
    args = parser.parse_args()
    if args.quick:
        args.seeds = 3
        if args.through_product:
            args.budgets = args.budgets[:1]
    if args.oracle:
        oracle(args.data, args.seeds, args.budgets)
        return
    if args.stratify:
        stratify(args.data, args.seeds, args.budgets, args.warmup, args.batch, args.slice_weights)
        return
    if args.slices:
        from benchmarks.leaderboards.budget_product import slices

        slices(args.data, args.slices)
        return
    if args.through_product:
        from benchmarks.leaderboards.budget_product import through_product

        rows = through_product(args.data, args.budgets, args.workdir)
        slowest = max(rows, key=lambda r: r["rank_s"])
        summary = f"`rank` of a {slowest['models']} × {slowest['prompts']} run: {slowest['rank_s']:.2f} s at most over {len(rows)} runs"
        harness.record(__file__, args, summary, {"mode": "through-product", "rows": rows})
        return
    models, y = load(args.data)
    truth = np.nanmean(y, 1)
    total = int((~np.isnan(y)).sum())
    print(
        f"{len(models)} models × {y.shape[1]} prompts, {total} judgments in full; {args.seeds} seeds; warmup {args.warmup} (or {args.warmup_share:.0%} of a share), batch {args.batch}"
    )
    print("| calls | method | Kendall τ | Spearman | max error | mean error | top-5 exact | coverage | s/run |")
    print("|---|---|---|---|---|---|---|---|---|")
    table: list[dict] = []
    for fraction in args.budgets:
        budget = int(fraction * total)
        per_model = budget // len(models)
        results: dict[str, list[list[float]]] = defaultdict(list)
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed)
            methods = {}
            subset = rng.permutation(y.shape[1])
            for name, size in (("fixed", per_model), ("fixed-100", 100)):
                seen = np.zeros(y.shape, bool)
                seen[:, subset[:size]] = True
                methods[name] = lambda seen=seen: plain(y, seen & ~np.isnan(y))
            seen = np.zeros(y.shape, bool)
            for m in range(len(models)):
                seen[m, rng.permutation(y.shape[1])[:per_model]] = True
            methods["uniform"] = lambda seen=seen: plain(y, seen & ~np.isnan(y))
            for name, weight, rule in (
                ("adaptive", WIDTH_WEIGHT, "lockstep"),
                ("gains", WIDTH_WEIGHT, "gains"),
                ("gains-no-width", 0.0, "gains"),
            ):
                methods[name] = lambda weight=weight, subset=subset, rule=rule: adaptive(
                    y, budget, subset, max(args.warmup, int(args.warmup_share * per_model)), args.batch, weight, rule=rule
                )[:2]
            for name, method in methods.items():
                start = time.perf_counter()
                est, se = method()
                results[name].append(scores(est, se, truth) + [time.perf_counter() - start])
        for name, rows in results.items():
            m = np.mean(rows, 0)
            sd_tau = np.std([r[0] for r in rows]) / np.sqrt(len(rows))
            calls = "100 prompts" if name == "fixed-100" else f"{fraction:.0%}"
            print(
                f"| {calls} | {name} | {m[0]:.3f} ± {sd_tau:.3f} | {m[1]:.3f} | {m[2]:.2f} | {m[3]:.2f} | {m[4]:.2f} | {m[5]:.2f} | {m[6]:.2f} |",
                flush=True,
            )
            table.append(
                {
                    "budget": fraction,
                    "method": name,
                    "tau": round(float(m[0]), 3),
                    "tau_se": round(float(sd_tau), 3),
                    "spearman": round(float(m[1]), 3),
                }
                | {"max_error": round(float(m[2]), 2), "mean_error": round(float(m[3]), 2), "coverage": round(float(m[5]), 3)}
                | paired_with_fixed(rows, results["fixed"])
            )

    def cell(method: str, key: str) -> str:
        return " / ".join(f"{r[key]:g}" for r in table if r["method"] == method)

    summary = (
        f"{args.seeds} seeds at {' / '.join(f'{b:.0%}' for b in args.budgets)} of the calls: Kendall τ adaptive {cell('adaptive', 'tau')}, "
        f"fixed subset {cell('fixed', 'tau')}; largest error adaptive {cell('adaptive', 'max_error')}, fixed {cell('fixed', 'max_error')}; "
        f"coverage adaptive {cell('adaptive', 'coverage')}"
    )
    harness.record(__file__, args, summary, {"seeds": args.seeds, "budgets": args.budgets, "rows": table})


if __name__ == "__main__":
    main()
