"""A new model onto an existing board from few prompts (issue #52 item 1): leave-one-model-out on
AlpacaEval 2.0's real judgments (``../shared/data/alpacaeval``: soft GPT-4-turbo preferences of
every model against gpt4_1106_preview on 805 instructions).

For each held-out model the board is every other model (the 2PL fit of
:func:`orchestrator.raee.board.fit_board`); the held-out model is judged on ``n`` prompts and placed
with :func:`~orchestrator.raee.board.place`. Methods:

- ``plain``: random prompts, the plain mean (what a user does without a board);
- ``board``: random prompts, the product's estimator (:func:`~orchestrator.raee.board.place`: within
  the board's range the cross-fitted residual-corrected 2PL prediction, outside it the regression
  estimator on the predictions);
- ``board-adaptive``: 25 random prompts, then the most informative prompt at the current ability
  while the model lies within the board's range, random otherwise; the same estimator.

Error in win-rate points against the model's full-data win rate (all 805 prompts); coverage of the
95% intervals; rank error = |rank among the board's models by the estimate − by the full data|.
Three splits: ``lomo`` (every model held out in turn; "within range" = full-data win rate inside the
board's), ``stronger`` (the board = the models under 20%, the held-out = the models above them,
the FuseChat family among them), and ``summeval`` — data the estimator was not designed on: SummEval's
expert ratings as outcomes against the median system (15 systems × 100 articles,
:func:`~benchmarks.leaderboards.common.summeval_board`), every system held out in turn, at 10 / 20 / 40
prompts.

    python -m benchmarks.leaderboards.board_placement [--seeds 20] [--sizes 25 50 100 200] [--split lomo stronger summeval]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.leaderboards.common import load, summeval_board  # noqa: E402
from orchestrator.raee.board import cross_fitted, fit_board, informative_order, place  # noqa: E402

WARMUP = 25
SUMMEVAL_SIZES = [10, 20, 40]
"""The SummEval board has 100 prompts: these sizes leave most of them to predict."""


def run_model(board, y_m: np.ndarray, sizes: list[int], seeds: int, truth: float, board_rates: np.ndarray, adaptive: bool = True) -> dict:
    answered = np.flatnonzero(~np.isnan(y_m))
    out: dict = {}
    for n in sizes:
        rows = {"plain": [], "board": [], "board-adaptive": []}
        for seed in range(seeds):
            rng = np.random.default_rng(1000 * seed + n)
            order = rng.permutation(answered)
            chosen = order[:n]
            pl = place(board, chosen, y_m[chosen], pool=answered)
            plain_half = 1.96 * np.std(y_m[chosen], ddof=1) / np.sqrt(n) * np.sqrt(max(1 - n / len(answered), 0))
            rows["plain"].append((pl.plain, pl.plain - plain_half, pl.plain + plain_half))
            rows["board"].append((pl.win_rate, pl.low, pl.high))
            if not adaptive:
                continue
            # adaptive: warm-up at random, then informative prompts while in range
            picked = list(order[: min(WARMUP, n)])
            remaining = [p for p in order if p not in set(picked)]
            while len(picked) < n:
                current = place(board, np.array(picked), y_m[picked], pool=answered)
                if current.in_range:
                    nxt = informative_order(board, current.theta, np.array(remaining))[0]
                else:
                    nxt = remaining[0]
                picked.append(int(nxt))
                remaining.remove(int(nxt))
            ad = place(board, np.array(picked), y_m[picked], pool=answered)
            rows["board-adaptive"].append((ad.win_rate, ad.low, ad.high))
        for method, values in rows.items():
            if not values:
                continue
            est = np.array([v[0] for v in values])
            err = 100 * np.abs(est - truth)
            cover = np.mean([lo <= truth <= hi for _, lo, hi in values])
            rank_true = int(np.sum(board_rates > truth))
            rank_err = np.mean([abs(int(np.sum(board_rates > e)) - rank_true) for e in est])
            out[(method, n)] = (err, cover, rank_err)
    return out


def summarise(results: list[tuple[str, bool, dict]], sizes: list[int], label: str) -> list[dict]:
    lines = []
    for subset, keep in (("all", lambda r: True), ("within range", lambda r: r[1]), ("outside range", lambda r: not r[1])):
        chosen = [r for r in results if keep(r)]
        if not chosen:
            continue
        for method in ("plain", "board", "board-adaptive"):
            for n in sizes:
                if (method, n) not in chosen[0][2]:
                    continue
                errs = np.concatenate([r[2][(method, n)][0] for r in chosen])
                # paired with the plain mean on the same prompts: is the method worse, beyond the draws' noise?
                diff = errs - np.concatenate([r[2][("plain", n)][0] for r in chosen])
                cover = float(np.mean([r[2][(method, n)][1] for r in chosen]))
                rank = float(np.mean([r[2][(method, n)][2] for r in chosen]))
                lines.append(
                    {
                        "split": label,
                        "subset": subset,
                        "models": len(chosen),
                        "method": method,
                        "n": n,
                        "mae": round(float(errs.mean()), 2),
                        "p90": round(float(np.percentile(errs, 90)), 2),
                        "coverage": round(cover, 3),
                        "rank_error": round(rank, 2),
                        "vs_plain": round(float(diff.mean()), 3),
                        "vs_plain_se": round(float(diff.std(ddof=1) / np.sqrt(len(diff))), 3),
                        "draws": len(errs),
                    }
                )
    return lines


def oracle(models: list[str], y: np.ndarray, sizes: list[int], seeds: int) -> list[dict]:
    """How close can a 2PL board get at all? The board fitted with the held-out model *in* it (its
    prompts' parameters as well as the data know them) and, for the first row, the model's ability
    known too: the judged prompts as they are plus the 2PL prediction for the rest. What is left is
    the 2PL's misfit for each model — no estimator built on this board goes below it."""
    full = np.nanmean(y, axis=1)
    board = fit_board(models, y)
    errors: dict[tuple[str, int], list[float]] = {}
    for k in range(len(models)):
        others = np.delete(full, k)
        if not others.min() <= full[k] <= others.max():
            continue
        answered = np.flatnonzero(~np.isnan(y[k]))
        known = board.predicted(board.theta[k])
        for n in sizes:
            for seed in range(seeds):
                chosen = np.random.default_rng(1000 * seed + n).permutation(answered)[:n]
                rest = np.setdiff1d(answered, chosen)
                read = board.predicted(place(board, chosen, y[k, chosen], pool=answered).theta)
                for name, estimate in (
                    ("ability and prompts known", (y[k, chosen].sum() + known[rest].sum()) / len(answered)),
                    ("prompts known", (y[k, chosen].sum() + read[rest].sum()) / len(answered)),
                    ("the product's estimator", place(board, chosen, y[k, chosen], pool=answered).win_rate),
                ):
                    errors.setdefault((name, n), []).append(100 * abs(estimate - full[k]))
    return [{"oracle": name, "n": n, "mae": round(float(np.mean(e)), 2), "draws": len(e)} for (name, n), e in errors.items()]


def other_predictors(models: list[str], y: np.ndarray, sizes: list[int], seeds: int) -> list[dict]:
    """Is the 2PL the limit, or the board? Two predictors of the held-out model's unjudged prompts
    that assume no item-response model, each with the same cross-fitted residual correction as the
    product's (the judged prompts in two halves, the predictor fitted on one, the residuals read on
    the other): ``k nearest``, the mean outcome per prompt of the 6 board models whose win rate on
    the judged prompts is nearest the candidate's (a synthetic control); ``ridge``, the candidate's
    outcomes regressed on the board models' on the judged prompts (ridge, λ = 3). Leave-one-model-out,
    models within the board's range; MAE in points beside the product's estimator on the same draws."""
    full = np.nanmean(y, axis=1)
    filled = np.where(np.isnan(y), full[:, None], y)  # two models lack a few answers: their mean there

    def corrected(predict, chosen: np.ndarray, rest: np.ndarray, outcomes: np.ndarray, pool: int) -> float:
        # the product's cross-fitting (orchestrator.raee.board.cross_fitted) around another predictor
        rest_estimate, _ = cross_fitted(lambda train: predict(chosen[train]), chosen, outcomes[chosen], rest)
        return float((outcomes[chosen].sum() + len(rest) * rest_estimate) / pool)

    errors: dict[tuple[str, int], list[float]] = {}
    for k in range(len(models)):
        on = [j for j in range(len(models)) if j != k]
        if not full[on].min() <= full[k] <= full[on].max():
            continue
        others, outcomes = filled[on], filled[k]
        board = fit_board([models[j] for j in on], y[on])
        answered = np.flatnonzero(~np.isnan(y[k]))

        def nearest(idx: np.ndarray, outcomes=outcomes, others=others) -> np.ndarray:
            closest = np.argsort(np.abs(others[:, idx].mean(1) - outcomes[idx].mean()))[:6]
            return others[closest].mean(0)

        def ridge(idx: np.ndarray, outcomes=outcomes, others=others) -> np.ndarray:
            x = others[:, idx].T
            centre, target = x.mean(0), outcomes[idx] - outcomes[idx].mean()
            weights = np.linalg.solve((x - centre).T @ (x - centre) + 3.0 * np.eye(x.shape[1]), (x - centre).T @ target)
            return outcomes[idx].mean() + (others.T - centre) @ weights

        for n in sizes:
            for seed in range(seeds):
                chosen = np.random.default_rng(1000 * seed + n).permutation(answered)[:n]
                rest = np.setdiff1d(answered, chosen)
                for name, estimate in (
                    ("the product's estimator (2PL)", place(board, chosen, y[k, chosen], pool=answered).win_rate),
                    ("k nearest board models", corrected(nearest, chosen, rest, outcomes, len(answered))),
                    ("ridge on the board models", corrected(ridge, chosen, rest, outcomes, len(answered))),
                ):
                    errors.setdefault((name, n), []).append(100 * abs(estimate - full[k]))
    return [{"predictor": name, "n": n, "mae": round(float(np.mean(e)), 2), "draws": len(e)} for (name, n), e in errors.items()]


def main() -> None:
    parser = harness.parser(__doc__, quick="3 seeds, 25 and 100 prompts")
    parser.add_argument("--seeds", type=harness.count, default=20)
    parser.add_argument(
        "--stronger-seeds",
        type=harness.count,
        default=50,
        help="seeds of each model beyond the board (the stronger split's 4, the leave-one-out's weakest and strongest: few models, more draws each)",
    )
    parser.add_argument(
        "--summeval-seeds",
        type=harness.count,
        default=100,
        help="seeds of each model of the SummEval board (15 × 100: a draw costs little)",
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[25, 50, 100, 200])
    parser.add_argument("--split", nargs="+", default=["lomo", "stronger", "summeval"], choices=["lomo", "stronger", "summeval"])
    parser.add_argument("--json", type=Path, help="Write the rows as JSON here too.")
    parser.add_argument(
        "--oracle",
        action="store_true",
        help="only the bound of a 2PL board (function oracle) and predictors without one (other_predictors)",
    )
    args = parser.parse_args()
    if args.oracle:
        models, y = load(harness.shared("alpacaeval"))
        rows = oracle(models, y, [25, 50] if args.quick else args.sizes, 3 if args.quick else 10)
        for r in rows:
            print(f"{r['oracle']:<28} n = {r['n']:>3}: MAE {r['mae']:.2f} ({r['draws']} draws)")
        alternatives = other_predictors(models, y, [25, 100] if args.quick else args.sizes, 3 if args.quick else 10)
        for r in alternatives:
            print(f"{r['predictor']:<30} n = {r['n']:>3}: MAE {r['mae']:.2f} ({r['draws']} draws)")
        at = {r["oracle"]: r["mae"] for r in rows if r["n"] == 100}
        other = {r["predictor"]: r["mae"] for r in alternatives if r["n"] == 100}
        summary = (
            "the oracle 2PL board at 100 prompts: "
            + "; ".join(f"{name} {mae:.2f}" for name, mae in at.items())
            + "; predictors without a 2PL: "
            + "; ".join(f"{name} {mae:.2f}" for name, mae in other.items())
        )
        harness.record(__file__, args, summary, {"mode": "oracle", "rows": rows, "alternatives": alternatives})
        return
    if args.quick:
        args.seeds, args.stronger_seeds, args.summeval_seeds, args.sizes = 3, 10, 10, [25, 100]
    alpaca = load(harness.shared("alpacaeval"))
    started = time.time()
    rows: list[dict] = []
    for split in args.split:
        results = []
        # SummEval: a board the estimator was not designed on (100 prompts: sizes up to 40)
        models, y = summeval_board(harness.shared("summeval")) if split == "summeval" else alpaca
        full = np.nanmean(y, axis=1)
        sizes = SUMMEVAL_SIZES if split == "summeval" else args.sizes
        if split in ("lomo", "summeval"):
            plan = [(k, [j for j in range(len(models)) if j != k]) for k in range(len(models))]
        else:
            old = [j for j in range(len(models)) if full[j] < 0.20]
            plan = [(k, old) for k in range(len(models)) if full[k] >= 0.20]
        for k, on_board in plan:
            board = fit_board([models[j] for j in on_board], y[on_board])
            within = bool(full[on_board].min() <= full[k] <= full[on_board].max())
            # few models beyond the board: more draws each; SummEval's small board: cheap, many draws
            seeds = args.summeval_seeds if split == "summeval" else args.seeds if split == "lomo" and within else args.stronger_seeds
            results.append((models[k], within, run_model(board, y[k], sizes, seeds, float(full[k]), full[on_board])))
            print(f"  {split}: {models[k]} ({100 * full[k]:.1f}%) done, {time.time() - started:.0f} s", file=sys.stderr)
        rows += summarise(results, sizes, split)
    print(
        f"{'split':<9} {'subset':<14} {'models':>6} {'method':<15} {'n':>4} {'MAE':>6} {'p90':>6} {'cover':>6} {'rank err':>8} {'− plain (se)':>14}"
    )
    for r in rows:
        print(
            f"{r['split']:<9} {r['subset']:<14} {r['models']:>6} {r['method']:<15} {r['n']:>4} {r['mae']:>6.2f} {r['p90']:>6.2f} "
            f"{r['coverage']:>6.3f} {r['rank_error']:>8.2f} {r['vs_plain']:>+7.2f} ({r['vs_plain_se']:.2f})"
        )
    print(f"({time.time() - started:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))

    def mae(split: str, subset: str, method: str) -> str:
        return " / ".join(f"{r['mae']:.2f}" for r in rows if (r["split"], r["subset"], r["method"]) == (split, subset, method))

    sizes = " / ".join(map(str, args.sizes))
    summary = (
        f"{args.seeds} seeds, at {sizes} prompts: within the board's range MAE {mae('lomo', 'within range', 'board')} "
        f"(random + plain mean {mae('lomo', 'within range', 'plain')}); stronger than the board {mae('stronger', 'all', 'board')} "
        f"(plain {mae('stronger', 'all', 'plain')}); SummEval's expert board at 10 / 20 / 40 {mae('summeval', 'all', 'board')} "
        f"(plain {mae('summeval', 'all', 'plain')})"
    )
    figures = {"seeds": args.seeds, "stronger_seeds": args.stronger_seeds, "summeval_seeds": args.summeval_seeds, "sizes": args.sizes}
    harness.record(__file__, args, summary, figures | {"rows": rows})


if __name__ == "__main__":
    main()
