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

    python benchmarks/leaderboard_budget.py [--seeds 10] [--budgets 0.05 0.1 0.2 0.4]
    python benchmarks/leaderboard_budget.py --through-product [--budgets 0.1]
    python benchmarks/leaderboard_budget.py --stratify [--seeds 10]

``--through-product`` runs the same comparison as a user would instead: the annotations as a judgment
log, a reference campaign (``anchor = "dataset"``, ``soft = true``, ``allocation`` = ``all`` then
``adaptive``) driven by ``orchestrator run CONFIG --from-log LOG`` with ``max_calls`` = the budget,
scored from ``orchestrator rank --json`` (its ``win_rate`` and interval): one seed, wall seconds
of each command.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau, norm, spearmanr

from orchestrator.raee.allocation import (
    WIDTH_WEIGHT,
    allocation_gains,
    leaderboard_state,
    slice_gains,
    stratified_order,
    win_rate_intervals,
)


def load(data: Path) -> tuple[list[str], np.ndarray]:
    items: dict[tuple[str, str], list[float]] = defaultdict(list)
    for line in (data / "annotations.jsonl").open():
        a = json.loads(line)
        if a["model"] != a["reference_model"]:
            items[a["model"], a["instruction_id"]].append(a["preference"] - 1.0)
    models = sorted({m for m, _ in items})
    prompts = sorted({p for _, p in items})
    y = np.full((len(models), len(prompts)), np.nan)
    row, col = {m: k for k, m in enumerate(models)}, {p: k for k, p in enumerate(prompts)}
    for (m, p), v in items.items():
        y[row[m], col[p]] = float(np.mean(v))
    return models, y


def plain(y: np.ndarray, seen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = seen.sum(1)
    values = np.where(seen, y, 0.0)
    mean = values.sum(1) / n
    var = np.where(seen, (y - mean[:, None]) ** 2, 0.0).sum(1) / np.maximum(n - 1, 1)
    population = (~np.isnan(y)).sum(1)
    return mean, np.sqrt(var / n * np.clip(1 - n / population, 0, 1))


def adaptive(
    y: np.ndarray,
    budget: int,
    order: np.ndarray,
    warmup: int,
    batch: int,
    width_weight: float,
    slices: np.ndarray | None = None,
    slice_weight: float = 0.0,
):
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
    est, half, _, _, _ = win_rate_intervals(np.where(seen, y, np.nan), population, y.shape[1])  # the product's interval (`rank`)
    return est, half / 1.96, n


def scores(est: np.ndarray, se: np.ndarray, truth: np.ndarray) -> list[float]:
    err = np.abs(est - truth) * 100
    top = list(np.argsort(-est)[:5]) == list(np.argsort(-truth)[:5])
    return [
        float(kendalltau(est, truth)[0]),
        float(spearmanr(est, truth)[0]),
        float(err.max()),
        float(err.mean()),
        float(top),
        float(np.mean(np.abs(est - truth) <= 1.96 * se + 1e-12)),
    ]


def through_product(data: Path, fractions: list[float], workdir: Path | None) -> None:
    """The comparison through the CLI (module docstring, ``--through-product``); the run files stay
    in ``workdir`` when one is given."""
    models, y = load(data)
    truth = dict(zip(models, np.nanmean(y, 1)))
    total = int((~np.isnan(y)).sum())
    annotations = [json.loads(line) for line in (data / "annotations.jsonl").open()]
    print("| calls | allocation | Kendall τ | max error | mean error | coverage | fewest prompts | run s | rank s |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        root = workdir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        source = {a["instruction_id"]: a["dataset"] for a in annotations}  # AlpacaEval's source sets: the slices
        prompts = sorted(source)
        with (root / "prompts.jsonl").open("w") as fh:
            fh.writelines(
                json.dumps({"id": p, "text": p, "reference": "the reference answer", "category": source[p]}) + "\n" for p in prompts
            )
        # each slice's full-data win rate: the mean over its prompts of each model's (repeat-averaged) outcome
        outcomes: dict[tuple[str, str], list[float]] = defaultdict(list)
        for a in annotations:
            if a["model"] != a["reference_model"]:
                outcomes[(a["model"], a["instruction_id"])].append(a["preference"] - 1)
        per_slice: dict[tuple[str, str], list[float]] = defaultdict(list)
        for (model, prompt), values in outcomes.items():
            per_slice[(model, source[prompt])].append(float(np.mean(values)))
        slice_truth = {key: float(np.mean(v)) for key, v in per_slice.items()}
        slice_lines = []
        repeats: dict[tuple[str, str], int] = defaultdict(int)
        with (root / "responses.jsonl").open("w") as responses, (root / "log.jsonl").open("w") as log:
            for a in annotations:
                if a["model"] == a["reference_model"]:
                    continue
                key = (a["model"], a["instruction_id"])
                if key not in repeats:
                    responses.write(json.dumps({"prompt_id": a["instruction_id"], "candidate": a["model"], "text": "an answer"}) + "\n")
                record = {
                    "kind": "reference",
                    "judge": "local-openai",
                    "prompt_id": a["instruction_id"],
                    "candidates": ["reference", a["model"]],
                    "repeat": repeats[key],
                    "probs": {"A": 2 - a["preference"], "B": a["preference"] - 1},
                }
                repeats[key] += 1
                log.write(json.dumps(record) + "\n")
        for fraction in fractions:
            for allocation in ("all", "adaptive"):
                name = f"lb-{allocation}-{int(fraction * 100)}"
                config = root / f"{name}.toml"
                config.write_text(
                    f'name = "{name}"\nruns_dir = "{root}"\n\n[data]\nprompts = "prompts.jsonl"\nresponses = "responses.jsonl"\n\n'
                    '[judging]\njudges = ["local-openai"]\n\n'
                    f'[reference]\nanchor = "dataset"\nsoft = true\nallocation = "{allocation}"\n\n'
                    f"[selection]\nbatch = 8\n\n[budget]\nmax_calls = {int(fraction * total)}\n"
                )
                start = time.perf_counter()
                run = subprocess.run(
                    [sys.executable, "-m", "orchestrator", "run", str(config), "--from-log", str(root / "log.jsonl")],
                    capture_output=True,
                    text=True,
                )
                run_s = time.perf_counter() - start
                if run.returncode != 0:
                    sys.exit(f"run failed ({run.returncode}): {run.stderr.strip()[-2000:]}")
                start = time.perf_counter()
                rank = subprocess.run(
                    [sys.executable, "-m", "orchestrator", "rank", str(root / f"{name}.sqlite"), "--json"],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                rank_s = time.perf_counter() - start
                (group,) = json.loads(rank.stdout)["groups"]
                rows = group["ranking"]
                for part in group.get("slices", []):
                    ranked = part["ranking"]
                    s_est = np.array([r["win_rate"] / 100 for r in ranked])
                    s_half = np.array([(r["win_rate_high"] - r["win_rate_low"]) / 200 for r in ranked])
                    s_t = np.array([slice_truth[(r["candidate"], part["slice"])] for r in ranked])
                    s_err = np.abs(s_est - s_t) * 100
                    slice_lines.append(
                        f"| {fraction:.0%} | {allocation} | {part['slice']} | {part['prompts']} | {kendalltau(s_est, s_t)[0]:.3f} | "
                        f"{s_err.max():.2f} | {np.mean(np.abs(s_est - s_t) <= s_half + 1e-9):.2f} | {min(r['prompts'] for r in ranked)} |"
                    )
                names = [r["candidate"] for r in rows]
                est = np.array([r["win_rate"] / 100 for r in rows])
                half = np.array([(r["win_rate_high"] - r["win_rate_low"]) / 200 for r in rows])
                t = np.array([truth[c] for c in names])
                err = np.abs(est - t) * 100
                print(
                    f"| {fraction:.0%} | {allocation} | {kendalltau(est, t)[0]:.3f} | {err.max():.2f} | {err.mean():.2f} | "
                    f"{np.mean(np.abs(est - t) <= half + 1e-9):.2f} | {min(r['prompts'] for r in rows)} | {run_s:.0f} | {rank_s:.1f} |",
                    flush=True,
                )
        print("\nPer category (AlpacaEval's source sets), from the same runs' `rank --json` slices:\n")
        print("| calls | allocation | category | prompts judged | Kendall τ | max error | coverage | fewest prompts |")
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(slice_lines))


def slices(data: Path, draws: int) -> None:
    """Per-category win-rate intervals (``--slices``): for each of AlpacaEval's source sets and a
    number k of its prompts, ``draws`` random k-prompt subsets shared by every model (a cut
    category); coverage of the category's full-data win rates by the product's 95% interval
    (:func:`~orchestrator.raee.allocation.win_rate_intervals`, as `rank` prints it) against the
    interval from each model's own residual sd alone (the variance before 2026-11-26)."""
    annotations = [json.loads(line) for line in (data / "annotations.jsonl").open()]
    source = {a["instruction_id"]: a["dataset"] for a in annotations}
    models, y = load(data)
    prompts = sorted({a["instruction_id"] for a in annotations})
    print("| category | its prompts | k judged | coverage, the product's interval | own sd only (z) | median half-width (points) |")
    print("|---|---|---|---|---|---|")
    for name in sorted(set(source.values())):
        columns = [j for j, p in enumerate(prompts) if source[p] == name]
        part_y = y[:, columns]
        truth = np.nanmean(part_y, 1)
        for k in (5, 10, 20, 40):
            covered, covered_own, halves = [], [], []
            for draw in range(draws):
                chosen = np.random.default_rng(draw).choice(len(columns), k, replace=False)
                cut = np.full_like(part_y, np.nan)
                cut[:, chosen] = part_y[:, chosen]
                est, half, own_sd, _ = win_rate_intervals(cut, (~np.isnan(part_y)).sum(1), len(columns))
                covered.append(np.mean(np.abs(est - truth) <= half))
                covered_own.append(np.mean(np.abs(est - truth) <= 1.96 * own_sd))
                halves.append(100 * np.median(half))
            print(f"| {name} | {len(columns)} | {k} | {np.mean(covered):.3f} | {np.mean(covered_own):.3f} | {np.median(halves):.1f} |")


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
                    c_est, half, _, c_n = win_rate_intervals(part, answered[:, columns].sum(1), int(columns.sum()))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/alpacaeval")
    parser.add_argument("--seeds", type=int, default=10)
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
    if args.oracle:
        oracle(args.data, args.seeds, args.budgets)
        return
    if args.stratify:
        stratify(args.data, args.seeds, args.budgets, args.warmup, args.batch, args.slice_weights)
        return
    if args.slices:
        slices(args.data, args.slices)
        return
    if args.through_product:
        through_product(args.data, args.budgets, args.workdir)
        return
    models, y = load(args.data)
    truth = np.nanmean(y, 1)
    total = int((~np.isnan(y)).sum())
    print(
        f"{len(models)} models × {y.shape[1]} prompts, {total} judgments in full; {args.seeds} seeds; warmup {args.warmup} (or {args.warmup_share:.0%} of a share), batch {args.batch}"
    )
    print("| calls | method | Kendall τ | Spearman | max error | mean error | top-5 exact | coverage | s/run |")
    print("|---|---|---|---|---|---|---|---|---|")
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
            for name, weight in (("adaptive", WIDTH_WEIGHT), ("adaptive-no-width", 0.0)):
                methods[name] = lambda weight=weight, subset=subset: adaptive(
                    y, budget, subset, max(args.warmup, int(args.warmup_share * per_model)), args.batch, weight
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


if __name__ == "__main__":
    main()
