"""Claims at the stop that hold as a whole (issue #52 item 2): a reference campaign with
``resolution = R`` stops when every neighbour pair is ordered or tied within R points; a user reads
that as one statement about the whole board. On AlpacaEval 2.0's real judgments: boards of 20 models
drawn at random (and the whole board), an allocation over a shared seeded prompt order (warm-up 4,
batches of 4) with the stopping rule checked after every round
(:func:`~orchestrator.raee.allocation.settled_leaderboard`), judged against the full-data win rates:

- a claim "a above b" is wrong when the full data order them the other way;
- a claim "a ≈ b within R" is wrong when the full data put them more than R points apart;
- coverage: the share of models whose full-data win rate is inside its 95% interval at the stop
  (all models, and the partly judged ones alone), and the share of runs where any partly judged
  model's simultaneous interval (Bonferroni over them) misses.

Reported per rule (:data:`RULES`: ``per-pair`` — the gains allocation with z = 1.96 for every claim,
the rule before issue #52; ``gains`` — the same allocation with simultaneous claims, Bonferroni over
the board's neighbour claims; ``product`` — the lockstep allocation with simultaneous claims, what a
run does now; ``fixed subset`` — every model on the same prompts, deeper together until the same
claims are settled: cutting the benchmark at the fraction that reaches them): the share of runs with any wrong claim, wrong claims / claims, coverage, and the
calls at the stop as a share of the full data.

    python -m benchmarks.leaderboards.stopping_claims [--seeds 10] [--resolutions 2 3] [--models 20] [--full]
    python -m benchmarks.leaderboards.stopping_claims --board summeval --seeds 200   (a board not designed on)
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.leaderboards.common import load, summeval_board  # noqa: E402
from orchestrator.raee.allocation import (  # noqa: E402
    allocation_gains,
    claim_z,
    leaderboard_state,
    lockstep_choice,
    settled_leaderboard,
    simultaneous_half,
    win_rate_intervals,
)

RULES = {"per-pair": ("gains", False), "gains": ("gains", True), "product": ("lockstep", True), "fixed subset": ("uniform", True)}
"""Each rule: the allocation and whether the claims are simultaneous. ``per-pair``: the gains rule with
each claim at 95% (before issue #52); ``gains``: the same allocation, claims at the simultaneous level;
``product``: what a run does now — the lockstep allocation and simultaneous claims."""


def one_run(y: np.ndarray, resolution: float, seed: int, rule: str, warmup: int = 4, batch: int = 4) -> dict:
    allocation, simultaneous = RULES[rule]
    answered = ~np.isnan(y)
    population = answered.sum(1)
    order = np.random.default_rng(seed).permutation(y.shape[1])
    ranks = [order[answered[m, order]] for m in range(len(y))]
    n = np.minimum(np.full(len(y), warmup), population)
    names = [str(k) for k in range(len(y))]
    z = claim_z(len(y)) if simultaneous else 1.96
    while True:
        seen = np.zeros_like(answered)
        for m, k in enumerate(n):
            seen[m, ranks[m][:k]] = True
        table = np.where(seen, y, np.nan)
        est, sigma, judged = leaderboard_state(table)
        settled = settled_leaderboard(names, est, sigma, judged, population, resolution / 100, z=z)
        if settled is not None or (n >= population).all():
            break
        if allocation in ("lockstep", "uniform"):  # uniform: nobody is ever settled, all go deeper together
            settle = z if allocation == "lockstep" else np.inf
            n[lockstep_choice(est, sigma, n, population, batch, z=settle, resolution=resolution / 100)] += 1
            continue
        gains = allocation_gains(est, sigma, n, population)
        for m in np.argsort(-gains)[:batch]:
            if np.isfinite(gains[m]):
                n[m] += 1
    truth = np.nanmean(y, 1)
    ties = {(int(a), int(b)) for a, b in (settled or [])}
    order_est = np.argsort(-est, kind="stable")
    wrong = claims = 0
    for a, b in zip(order_est[:-1], order_est[1:]):
        claims += 1
        if (int(a), int(b)) in ties:
            wrong += abs(truth[a] - truth[b]) * 100 > resolution
        else:
            wrong += truth[a] < truth[b]
    estimate, half, *_ = win_rate_intervals(table, population)
    inside = np.abs(estimate - truth) <= half + 1e-12
    partly = n < population  # a fully judged model's interval is its own win rate: covered by construction
    # the intervals as one statement, as `rank --json` gives them (one partly judged: its own interval)
    half_all = simultaneous_half(table, population)
    half_all = half if half_all is None else half_all
    any_miss = bool((np.abs(estimate - truth) > half_all + 1e-12)[partly].any())
    return {
        "wrong": wrong,
        "claims": claims,
        "coverage": float(np.mean(inside)),
        "partly": int(partly.sum()),
        "covered_partly": int(inside[partly].sum()),
        "any_simultaneous_miss": any_miss,
        "calls": float(n.sum() / answered.sum()),
        "stopped": settled is not None,
    }


def main() -> None:
    parser = harness.parser(__doc__, quick="3 seeds, R = 2 only")
    parser.add_argument("--seeds", type=harness.count, default=10)
    parser.add_argument("--resolutions", type=float, nargs="+", default=[2.0, 3.0])
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--full", action="store_true", help="Also the whole board at the first resolution.")
    parser.add_argument(
        "--board",
        choices=["alpacaeval", "summeval"],
        default="alpacaeval",
        help="summeval: a board the rule was not designed on — SummEval's experts as outcomes against the median "
        "system, all 15 systems, at --resolutions (default there 5 and 10), the product and the fixed subset",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.resolutions, args.full = 3, [2.0] if args.board == "alpacaeval" else [10.0], False
    rules = list(RULES)
    if args.board == "summeval":
        models, y = summeval_board(harness.shared("summeval"))
        args.models, args.full, rules = len(models), False, ["product", "fixed subset"]
        if args.resolutions == [2.0, 3.0]:
            args.resolutions = [5.0, 10.0]  # 100 prompts: a 2-point claim is out of reach
    else:
        models, y = load(harness.shared("alpacaeval"))
    started = time.time()
    rows = []
    settings = [(r, args.models) for r in args.resolutions] + ([(args.resolutions[0], len(models))] if args.full else [])
    for resolution, size in settings:
        for rule in rules:
            runs = []
            for seed in range(args.seeds):
                pick = np.sort(np.random.default_rng(100 + seed).choice(len(models), size=size, replace=False))
                runs.append(one_run(y[pick], resolution, seed, rule))
            row = {
                "board": args.board,
                "resolution": resolution,
                "models": size,
                "rule": rule,
                "runs": len(runs),
                "runs_with_a_wrong_claim": round(float(np.mean([r["wrong"] > 0 for r in runs])), 3),
                "wrong_claims": f"{sum(r['wrong'] for r in runs)}/{sum(r['claims'] for r in runs)}",
                "coverage": round(float(np.mean([r["coverage"] for r in runs])), 3),
                "coverage_partly": round(sum(r["covered_partly"] for r in runs) / max(sum(r["partly"] for r in runs), 1), 3),
                "partly_judged": sum(r["partly"] for r in runs),
                "runs_with_a_simultaneous_interval_missing": round(float(np.mean([r["any_simultaneous_miss"] for r in runs])), 3),
                "calls_at_stop": round(float(np.mean([r["calls"] for r in runs])), 3),
                "stopped_early": f"{sum(r['stopped'] for r in runs)}/{len(runs)}",
            }
            rows.append(row)
            print(json.dumps(row), f"({time.time() - started:.0f} s)", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    parts = [
        f"R = {r['resolution']:g}, {r['models']} models, {r['rule']}: {r['runs_with_a_wrong_claim']:.0%} of runs with a wrong claim, "
        f"calls {r['calls_at_stop']:.0%}, coverage of the partly judged {r['coverage_partly']:.3f}"
        for r in rows
    ]
    harness.record(__file__, args, f"{args.seeds} seeds; " + "; ".join(parts), {"seeds": args.seeds, "rows": rows})


if __name__ == "__main__":
    main()
