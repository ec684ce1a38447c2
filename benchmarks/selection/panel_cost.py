"""Cost-aware judge panels (issue #17): USD until the ranking reaches Spearman 0.9 — with the truth,
and with the panel's own all-pairs ranking — for a panel of a cheap noisy judge ($0.1 a call), a good
expensive one ($1 a call) and a near-random one ($0.1 a call), through the real engine
(`benchmarks/simjudge.py`), side by side in one run:

- every judge asked every selected comparison, shared judge parameters (before issue #17);
- each judge alone (the best of the three is "best single judge");
- the default config: per-judge reliability and cost-aware choice of the judge.

    python -m benchmarks.selection.panel_cost [--datasets 5] [--candidates 12] [--cheap-noise 1.5] [--cheap-resolution 0]

``--cheap-noise`` is the cheap judge's logit noise (at 1.5 and at 3.0 it is the best single judge);
``--cheap-resolution R`` makes it blind to quality gaps below R (a small model that sees clear
differences only): alone it then stalls below Spearman 0.9 and a panel must use the good judge.
"""

import itertools
import math
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from benchmarks import harness
from benchmarks.simjudge import SimSpec, run
from orchestrator.poe import Observations, PoEConfig, fit_with_reliability

CHEAP = SimSpec("cheap", slope=2.0, noise=1.5, usd_per_call=0.1)
GOOD = SimSpec("good", slope=5.0, noise=0.3, usd_per_call=1.0)
COIN = SimSpec("coin", coin=True, usd_per_call=0.1)
PANEL = [CHEAP, GOOD, COIN]
TODAY = {"model": {"judge_reliability": False}, "selection": {"panel": "all"}}
ALWAYS = {"stopping": {"rule": "budget"}}


def panel_all_pairs(quality: dict[str, float], seed: int) -> np.ndarray:
    """The panel's own ranking: every judge on every ordered pair, fitted with per-judge reliability."""
    names = list(quality)
    rng = random.Random(seed)
    comparisons = []
    for k, spec in enumerate(PANEL):
        for i, j in itertools.permutations(range(len(names)), 2):
            gap = quality[names[i]] - quality[names[j]]
            if spec.coin:
                p = rng.uniform(0.3, 0.7)
            else:
                seen = gap if abs(gap) >= spec.resolution else 0.0
                p = 1 / (1 + math.exp(-(spec.slope * seen + rng.gauss(0, spec.noise))))
            comparisons.append((i, j, p, k))
    post = fit_with_reliability(Observations.from_lists(len(names), comparisons), PoEConfig(judge_sharpness=True, judge_precision=True))
    return post.mean.numpy()


def usd_to_reach(curve: list[tuple[float, float, float]], target: float = 0.9) -> tuple[float, float]:
    """First USD at which Spearman with the truth / with the panel reaches ``target`` (inf: never)."""
    truth = next((usd for usd, t, _ in curve if t >= target), math.inf)
    panel = next((usd for usd, _, p in curve if p >= target), math.inf)
    return truth, panel


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--datasets", type=int, default=5)
    ap.add_argument("--candidates", type=int, default=12)
    ap.add_argument("--cheap-noise", type=float, default=1.5)
    ap.add_argument("--cheap-resolution", type=float, default=0.0)
    args = ap.parse_args()
    global CHEAP, PANEL
    CHEAP = SimSpec("cheap", slope=2.0, noise=args.cheap_noise, usd_per_call=0.1, resolution=args.cheap_resolution)
    PANEL = [CHEAP, GOOD, COIN]
    started = time.perf_counter()
    modes = {"every judge (before)": (PANEL, TODAY), "cost-aware (default)": (PANEL, {})}
    modes.update({f"{s.name} alone": ([s], {}) for s in PANEL})
    results: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for d in range(args.datasets):
            rng = random.Random(500 + d)
            quality = {f"M{c}": rng.gauss(0, 1) for c in range(args.candidates)}
            truth = np.array(list(quality.values()))
            panel = panel_all_pairs(quality, seed=d)
            n_pairs = args.candidates * (args.candidates - 1)
            for mode, (specs, overrides) in modes.items():
                curve: list[tuple[float, float, float]] = []

                def observe(spend, planner, curve=curve) -> None:
                    post = planner.posteriors[0]
                    names = planner.groups[0].names
                    mean = np.array([float(post.mean[names.index(c)]) for c in quality])
                    rho = [0.0 if np.ptp(mean) == 0 else spearmanr(mean, other).statistic for other in (truth, panel)]
                    curve.append((spend.usd, rho[0], rho[1]))

                settings = {**ALWAYS, **overrides, "budget": {"max_calls": n_pairs * len(specs)}}
                run(folder, f"{d}-{mode.split()[0]}", quality, specs, overrides=settings, seed=d, observe=observe)
                results[mode].append(usd_to_reach(curve))
    print(
        f"cheap judge: slope 2, logit noise {args.cheap_noise}, resolution {args.cheap_resolution}, $0.1; good: slope 5, noise 0.3, $1; coin: U(0.3, 0.7), $0.1"
    )
    print(f"{args.datasets} datasets × {args.candidates} candidates; USD until Spearman ≥ 0.9 (mean; inf = never within all pairs)")
    print(f"{'mode':24} {'vs truth':>10} {'vs panel':>10}")
    table = {}
    for mode, values in results.items():
        truth_usd = float(np.mean([t for t, _ in values]))
        panel_usd = float(np.mean([p for _, p in values]))
        table[mode] = (truth_usd, panel_usd)
        print(f"{mode:24} {truth_usd:10.2f} {panel_usd:10.2f}")
    singles = [m for m in table if m.endswith("alone")]
    best = min(singles, key=lambda m: table[m][0])
    new, before = table["cost-aware (default)"], table["every judge (before)"]
    print(f"best single judge: {best}")
    print(f"cost-aware / every judge: {new[0] / before[0]:.2f} (truth), {new[1] / before[1]:.2f} (panel)")
    print(f"cost-aware / best single: {new[0] / table[best][0]:.2f} (truth), {new[1] / table[best][1]:.2f} (panel)")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    harness.run(main, __file__)
