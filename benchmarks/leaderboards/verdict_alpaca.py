"""What one verdict per call costs on a confident judge (issue #62): AlpacaEval's GPT-4-turbo preferences
read as probabilities, or as one verdict each, on the leaderboard campaign's allocation.

Data: AlpacaEval 2.0's annotations (``../shared/data/alpacaeval``: every model against
gpt4_1106_preview on 805 instructions; 68% of the probabilities within 0.001 of 0 or 1). The judge
without log-probabilities is derived as the issue prescribes: each judgment becomes one draw from its
probability (8 draw seeds). The truth is the probability judge's own full-data leaderboard.

Both judges run the reference planner's allocation (``allocation = "adaptive"``: one prompt order
shared by all models, ``lockstep_choice``, estimates from ``leaderboard_state``, the product's
difficulty-corrected win rates from ``win_rate_intervals``: the functions the planner and ``rank``
call), over budgets from 1% to 40% of the M × P judgments, same prompt orders for both. Figures: the
Spearman of each with the truth, and the calls one verdict per call needs to reach the probability
judge's Spearman at 2% and 4% of the calls (log-linear interpolation between budgets).

The oracle: for every model the verdict adds the judge's own coin-flip variance E[p(1 − p)] to the
spread of its probabilities over prompts, so no allocation of prompts can estimate a model's win rate
with one verdict per call in fewer than ``1 + E[p(1−p)] / Var(p)`` times the calls (plain mean), or
``1 + E[p(1−p)] / Var(p − prompt difficulty)`` with the difficulty correction (the product's
estimator, whose residual variance is smaller): printed per board (calls-weighted mean over models).

    python -m benchmarks.leaderboards.verdict_alpaca [--seeds 8]
"""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from benchmarks import harness
from benchmarks.leaderboards.common import load
from benchmarks.leaderboards.leaderboard_budget import adaptive

FRACTIONS = (0.01, 0.015, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32, 0.4)
TARGETS = (0.02, 0.04)


def curve(y: np.ndarray, truth: np.ndarray, total: int, order: np.ndarray) -> np.ndarray:
    return np.array([spearmanr(adaptive(y, int(f * total), order, 4, 4, 0.0, rule="lockstep")[0], truth)[0] for f in FRACTIONS])


def calls_to(target: float, fractions: np.ndarray, rho: np.ndarray) -> float:
    """The fraction at which ``rho`` (non-decreasing in practice) first reaches ``target``,
    interpolated log-linearly; inf beyond the last budget."""
    hit = np.nonzero(rho >= target)[0]
    if not hit.size:
        return float("inf")
    k = int(hit[0])
    if k == 0:
        return float(fractions[0])
    lo, hi = np.log(fractions[k - 1]), np.log(fractions[k])
    t = (target - rho[k - 1]) / max(rho[k] - rho[k - 1], 1e-12)
    return float(np.exp(lo + t * (hi - lo)))


def oracle_ratios(y: np.ndarray) -> tuple[float, float]:
    """(plain, difficulty-corrected) lower bounds on the calls ratio (module docstring)."""
    coin = np.nanmean(y * (1 - y), 1)
    spread = np.nanvar(y, 1)
    difficulty = np.nanmean(y, 0) - np.nanmean(y)  # each prompt's mean over models, centred
    residual = np.nanvar(y - difficulty[None, :], 1)
    return float(np.mean(1 + coin / spread)), float(np.mean(1 + coin / residual))


def main() -> None:
    p = harness.parser(__doc__, quick="2 draw seeds")
    p.add_argument("--seeds", type=harness.count, default=8)
    args = p.parse_args()
    seeds = 2 if args.quick else args.seeds
    models, y = load(harness.shared("alpacaeval"))
    truth = np.nanmean(y, 1)
    total = int((~np.isnan(y)).sum())
    plain_bound, corrected_bound = oracle_ratios(y)
    confident = float(np.mean((np.nan_to_num(y, nan=0.5) < 0.001) | (np.nan_to_num(y, nan=0.5) > 0.999)))
    print(f"{len(models)} models × {y.shape[1]} prompts ({total} judgments; {confident:.0%} of probabilities within 0.001 of 0 or 1)\n")
    soft, verdict = [], []
    for seed in range(seeds):
        order = np.random.default_rng(seed).permutation(y.shape[1])
        rng = np.random.default_rng(100 + seed)
        drawn = np.where(np.isnan(y), np.nan, (rng.random(y.shape) < np.nan_to_num(y)).astype(float))
        soft.append(curve(y, truth, total, order))
        verdict.append(curve(drawn, truth, total, order))
    soft_mean, verdict_mean = np.mean(soft, 0), np.mean(verdict, 0)
    print("| calls (share of all) | probabilities: Spearman | one verdict per call: Spearman |")
    print("|---|---|---|")
    for f, a, b in zip(FRACTIONS, soft_mean, verdict_mean):
        print(f"| {f:.1%} | {a:.3f} | {b:.3f} |")
    print()
    print(
        "| target: the probabilities' Spearman at | target | one verdict per call needs | ratio | oracle bound (plain; difficulty-corrected) |"
    )
    print("|---|---|---|---|---|")
    ratios = []
    for target_fraction in TARGETS:
        target = float(np.interp(np.log(target_fraction), np.log(FRACTIONS), soft_mean))
        needed = calls_to(target, np.array(FRACTIONS), verdict_mean)
        ratio = needed / target_fraction
        ratios.append(ratio)
        print(
            f"| {target_fraction:.0%} of the calls | {target:.3f} | {needed:.1%} | {ratio:.2f} | {plain_bound:.2f}; {corrected_bound:.2f} |"
        )
    print(
        f"\nworst ratio {max(ratios):.2f} (goal ≤ 1.5); no allocation can go below {plain_bound:.2f} with plain means, "
        f"{corrected_bound:.2f} with the difficulty correction ({seeds} draw seeds)"
    )


if __name__ == "__main__":
    harness.run(main, __file__)
