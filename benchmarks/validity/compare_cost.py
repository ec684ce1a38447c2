"""Is mine better, at the cost the question needs (issue #70): the comparison gate's two designs on
AlpacaEval 2.0's real judgments, through the anchor, as the product decides them.

Data: ``../shared/data/alpacaeval`` — GPT-4-turbo's soft preferences of 37 models against one anchor
on 805 instructions. Two models ``a``, ``b`` are compared through the anchor: on prompt ``j`` the
outcome is ``X_j = (1 + y_aj − y_bj)/2`` (their win shares against the anchor; with ``--verdicts``
each ``y`` is one verdict drawn from it), the decision is about ``d = 100(2 E[X] − 1)``, the
difference of their win rates, and the truth is the full-data difference. Runs draw prompts at
random from the 805 (with replacement: AlpacaEval resampled, so a run may read more than 805),
read in rounds of ``--batch``; every decision is made by the product's own function
(``orchestrator.run.planners.compare_anchor.anchored_decision`` on a ``[compare]`` section, as
``orchestrator compare`` makes it), its horizon ``max_prompts`` as a run's budget would fix it.

1. **False decisions**, every look: pairs whose true difference is within 1 point, and A/A
   comparisons of each model with a verdict twin of itself; both designs; margin 0 (better/worse)
   and margin 2 (adding equivalent and not better). A decision is false when the truth contradicts
   it (better with ``d ≤ δ``, worse with ``d ≥ −δ``, equivalent with ``|d| ≥ δ``, not better with
   ``d ≥ δ``).
2. **Power and cost** at a 3-point and a 10-point difference: pairs whose true difference is
   2.5–3.5 (9–11) points; against the fixed-size two-sided paired z-test with 80% power at the
   pair's own difference and spread (``n_fixed``), each design is given the most prompts the plan
   (``compare --plan``, told the pair's spread and difference) says it needs for a power of 0.8
   (``anytime``: 1.5 × n_fixed; ``planned``: the O'Brien–Fleming inflation for its looks, and what
   the intervals' starting variance costs) and reports its power, its mean prompts and its most, as
   × n_fixed.
3. **No-op changes**: a model against its verdict twin with margin 2 and ``require = better``, on
   the 805 prompts without replacement: the share of runs that stop before 805 prompts with
   ``not better`` or ``equivalent``, and any ``better``/``worse``.

What was tuned on what: the stakes' horizon and the truncation follow Waudby-Smith & Ramdas (2024)
as published; the anytime inflation (1.5) and the planned design's O'Brien–Fleming spending come
from the literature and simulations of Bernoulli/three-point outcomes (``tests/run/test_compare.py``),
not from AlpacaEval, which this script only measures.

    python -m benchmarks.validity.compare_cost [--runs 200] [--seeds 3] [--batch 8]
"""

from __future__ import annotations

import numpy as np

from benchmarks import harness
from benchmarks.leaderboards.common import load
from orchestrator.gate.designs import plan
from orchestrator.records.compare_config import CompareConfig
from orchestrator.run.planners.compare_anchor import anchored_decision


def false_decision(decision: str, truth: float, margin: float) -> bool:
    return {
        "better": truth <= margin,
        "worse": truth >= -margin,
        "equivalent": abs(truth) >= margin,
        "not better": truth >= margin,
        "not worse": truth <= -margin,
    }.get(decision, False)


def decided(x: np.ndarray, *, design: str, margin: float, max_prompts: int, batch: int, require: str = "better", alpha: float = 0.05):
    """The product's decision on the outcomes ``x`` (read in rounds of ``batch``)."""
    section = CompareConfig(
        candidate="a", baseline="b", anchor="dataset", margin=margin, alpha=alpha, require=require, design=design, max_prompts=max_prompts
    )
    looks = list(range(batch, x.size + 1, batch))
    if not looks or looks[-1] != x.size:
        looks.append(x.size)
    return anchored_decision(x, section, looks)


def false_decisions(y: np.ndarray, *, seeds: int, batch: int, verdicts: bool) -> list[dict]:
    """Module docstring, item 1."""
    rates = np.nanmean(y, axis=1)
    models = range(len(y))
    close = [(a, b) for a in models for b in models if a < b and abs(rates[a] - rates[b]) * 100 * 1 < 1]
    out = []
    for design in ("anytime", "planned"):
        for margin in (0.0, 2.0):
            counts = {"design": design, "margin": margin, "comparisons": 0, "aa": 0, "false": 0, "decided": 0, "kinds": {}}
            for seed in range(seeds):
                rng = np.random.default_rng(1000 * seed + int(margin) + (7 if verdicts else 0))
                for a, b in close + [(m, m) for m in models]:
                    both = np.nonzero(~np.isnan(y[a]) & ~np.isnan(y[b]))[0]
                    order = rng.permutation(both)
                    ya, yb = y[a, order], y[b, order]
                    if a == b or verdicts:  # a verdict twin (A/A), or one verdict per call
                        ya = (rng.random(order.size) < ya).astype(float)
                        yb = (rng.random(order.size) < yb).astype(float)
                    truth = 0.0 if a == b else 100 * float(np.mean(y[a, both] - y[b, both]))
                    found = decided((1 + ya - yb) / 2, design=design, margin=margin, max_prompts=order.size, batch=batch)
                    counts["comparisons"] += 1
                    counts["aa"] += a == b
                    counts["decided"] += found.decision != "not yet known"
                    counts["kinds"][found.decision] = counts["kinds"].get(found.decision, 0) + 1
                    counts["false"] += false_decision(found.decision, truth, margin)
            out.append(counts)
    return out


def cost(y: np.ndarray, *, low: float, high: float, runs: int, batch: int, limit: int = 8) -> list[dict]:
    """Module docstring, item 2: per pair with a true difference in [low, high] points."""
    rates = np.nanmean(y, axis=1)
    pairs = []
    for a in range(len(y)):
        for b in range(len(y)):
            both = ~np.isnan(y[a]) & ~np.isnan(y[b])
            d = 100 * float(np.mean(y[a, both] - y[b, both]))
            if a != b and low <= d <= high and rates[a] > rates[b]:
                pairs.append((a, b, d))
    rng0 = np.random.default_rng(5)
    pairs = [pairs[k] for k in rng0.permutation(len(pairs))[:limit]]
    rows = []
    for a, b, d in pairs:
        both = np.nonzero(~np.isnan(y[a]) & ~np.isnan(y[b]))[0]
        x_all = (1 + y[a, both] - y[b, both]) / 2
        sd = float(np.std(x_all, ddof=1))
        # what `compare --plan --spread S --effect d` tells a user (through the anchor the mean moves d/2 points)
        told = plan(effect=d / 2, alpha=0.05, available=x_all.size, spread=sd, looks=10**6)
        n_fixed = told.fixed
        for design in ("anytime", "planned"):
            n_max = told.anytime if design == "anytime" else told.planned
            rng = np.random.default_rng(11)
            used, right, wrong = [], 0, 0
            for _ in range(runs):
                x = x_all[rng.integers(0, x_all.size, n_max)]
                found = decided(x, design=design, margin=0.0, max_prompts=n_max, batch=batch)
                used.append(found.at if found.decision != "not yet known" else n_max)
                right += found.decision == "better"
                wrong += found.decision == "worse"
            rows.append(
                {
                    "pair": f"{a}-{b}",
                    "difference": round(d, 2),
                    "spread": round(sd, 3),
                    "design": design,
                    "n_fixed": n_fixed,
                    "n_max": n_max,
                    "power": right / runs,
                    "wrong": wrong,
                    "mean_ratio": float(np.mean(used)) / n_fixed,
                    "max_ratio": n_max / n_fixed,
                }
            )
    return rows


def no_ops(y: np.ndarray, *, seeds: int, batch: int, margin: float = 2.0) -> list[dict]:
    """Module docstring, item 3."""
    out = []
    for design in ("anytime", "planned"):
        counts = {"design": design, "runs": 0, "stopped_early": 0, "not_better_or_equivalent": 0, "better_or_worse": 0, "prompts": []}
        for seed in range(seeds):
            rng = np.random.default_rng(50 + seed)
            for m in range(len(y)):
                seen = np.nonzero(~np.isnan(y[m]))[0]
                order = rng.permutation(seen)
                first = (rng.random(order.size) < y[m, order]).astype(float)
                second = (rng.random(order.size) < y[m, order]).astype(float)
                found = decided((1 + first - second) / 2, design=design, margin=margin, max_prompts=order.size, batch=batch)
                counts["runs"] += 1
                early = found.decision != "not yet known" and found.at < order.size
                counts["stopped_early"] += early
                counts["not_better_or_equivalent"] += early and found.decision in ("not better", "equivalent")
                counts["better_or_worse"] += found.decision in ("better", "worse")
                counts["prompts"].append(found.at)
        counts["mean_prompts"] = float(np.mean(counts.pop("prompts")))
        out.append(counts)
    return out


def main() -> None:
    p = harness.parser(__doc__, quick="1 seed, 40 power runs, 3 pairs")
    p.add_argument("--seeds", type=harness.count, default=3)
    p.add_argument("--runs", type=harness.count, default=200, help="resampled runs per pair and design (power)")
    p.add_argument("--batch", type=harness.count, default=8, help="prompts per round: the planned design's looks")
    args = p.parse_args()
    seeds, runs, limit = (1, 40, 3) if args.quick else (args.seeds, args.runs, 8)
    _, y = load(harness.shared("alpacaeval"))
    print(f"AlpacaEval 2.0 through the anchor: {len(y)} models × {y.shape[1]} prompts, α = 0.05, rounds of {args.batch} prompts\n")
    print("False decisions (every look; true |d| < 1 point and A/A verdict twins):\n")
    print("| outcomes | design | margin | comparisons (A/A) | decided | decisions | false decisions | share |")
    print("|---|---|---|---|---|---|---|---|")
    for verdicts in (False, True):
        for c in false_decisions(y, seeds=seeds, batch=args.batch, verdicts=verdicts):
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(c["kinds"].items()))
            print(
                f"| {'one verdict per call' if verdicts else 'probabilities'} | {c['design']} | {c['margin']:g} | {c['comparisons']} ({c['aa']}) | "
                f"{c['decided']} | {kinds} | {c['false']} | {c['false'] / c['comparisons']:.4f} |"
            )
    for low, high, name in ((2.5, 3.5, "3-point"), (9.0, 11.0, "10-point")):
        rows = cost(y, low=low, high=high, runs=runs, batch=args.batch, limit=limit)
        print(f"\n{name} differences (AlpacaEval resampled; ratios × the fixed test's prompts at the pair's own difference and spread):\n")
        print(
            "| design | pairs | power (min–max over pairs) | mean prompts (× fixed), mean over pairs | most prompts (× fixed) | wrong-sign decisions |"
        )
        print("|---|---|---|---|---|---|")
        for design in ("anytime", "planned"):
            mine = [r for r in rows if r["design"] == design]
            if not mine:
                continue
            power = [r["power"] for r in mine]
            print(
                f"| {design} | {len(mine)} | {np.mean(power):.2f} ({min(power):.2f}–{max(power):.2f}) | "
                f"{np.mean([r['mean_ratio'] for r in mine]):.2f}× | {np.mean([r['max_ratio'] for r in mine]):.2f}× | {sum(r['wrong'] for r in mine)} |"
            )
    print("\nNo-op changes (a model against its verdict twin, margin 2, require better, 805 prompts without replacement):\n")
    print("| design | runs | stopped before the end | with not better or equivalent | better or worse | mean prompts |")
    print("|---|---|---|---|---|---|")
    for c in no_ops(y, seeds=seeds, batch=args.batch):
        print(
            f"| {c['design']} | {c['runs']} | {c['stopped_early'] / c['runs']:.2f} | {c['not_better_or_equivalent'] / c['runs']:.2f} | "
            f"{c['better_or_worse']} | {c['mean_prompts']:.0f} |"
        )


if __name__ == "__main__":
    harness.run(main, __file__)
