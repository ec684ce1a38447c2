"""A panel whose judges all misplace one candidate (issue #34): does `fit simplex --human` cover it?

`panel_with_levels("mixed", shared_bias=-2)`: 12 candidates × 96 questions, every judge reads
`cand00` two latent sds low. 5% of the answers (58) get a person's score (their true level) at
random; the fit takes them as labels (the path `fit simplex --human` takes) and people's ranking is
read beside it (`orchestrator.offline.simplex.fit.people_beside`'s computation, with and without
the hypothesis that one candidate is misplaced far beyond τ). Reported per seed and in all: whether
each 95% rank interval holds `cand00`'s true rank, the coverage over all candidates, the median width.

    python -m benchmarks.people.simplex_shared_bias [--seeds 8]      # ≈ 20 s a seed
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks import harness
from orchestrator.offline.judges.human_labels import AbsoluteLabel, HumanLabels
from orchestrator.poe.human import people_scores, spread_grid
from orchestrator.poe.uncertainty import rank_intervals_from_draws
from orchestrator.simplex import SimplexSettings, fit_or_fallback, label_grid
from orchestrator.simplex import baselines as B
from orchestrator.simplex.simulate import panel_with_levels


def covered(lower, upper, true_rank) -> np.ndarray:
    return (np.asarray(lower) <= true_rank) & (true_rank <= np.asarray(upper))


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--seeds", type=harness.count, default=8)
    ap.add_argument("--bias", type=float, default=-2.0)
    args = ap.parse_args()
    rows: dict[str, list[tuple[bool, float, float]]] = {}
    print("| seed | cand00's true rank | fit, no labels | labelled fit | people's ranking | people's, no outlier hypothesis |")
    print("|---|---|---|---|---|---|")
    for seed in range(args.seeds):
        t0 = time.time()
        data, truth, levels = panel_with_levels("mixed", seed=seed, shared_bias=args.bias)
        K, Q = levels.shape
        settings = SimplexSettings(seed=seed, chains=2, warmup=300, draws=300)
        pick = np.random.default_rng(seed).choice(K * Q, size=int(round(0.05 * K * Q)), replace=False)
        labels = HumanLabels(
            absolute=[
                AbsoluteLabel(prompt_id=data.questions[i % Q], candidate=data.candidates[i // Q], score=float(levels.flat[i])) for i in pick
            ]
        )
        grid, _ = label_grid(data, labels.mean_scores())
        cells = []
        for name, fit in (
            ("fit, no labels", fit_or_fallback(data, settings)),
            ("labelled fit", fit_or_fallback(data, settings, labels=grid)),
        ):
            order = [data.candidates.index(c) for c in fit.candidates]
            true_rank = B.ranks(truth)[order]
            ranks = fit.ranks()
            ok = covered(ranks.lower.numpy(), ranks.upper.numpy(), true_rank)
            victim = fit.candidates.index("cand00")
            rows.setdefault(name, []).append((bool(ok[victim]), float(ok.mean()), float(np.median(ranks.upper - ranks.lower + 1))))
            cells.append(f"{int(ranks.lower[victim])}–{int(ranks.upper[victim])}")
        # people's ranking on the labelled fit, as `fit simplex --human` prints it
        expected = fit.flat("expected")
        mean, cov = expected.mean(0), np.atleast_2d(np.cov(expected.T))
        cov = cov + 1e-6 * max(float(np.mean(np.diag(cov))), 1e-12) * np.eye(len(mean))
        index = {c: k for k, c in enumerate(fit.candidates)}
        scored = [(index[c], s) for (q, c), s in sorted(labels.mean_scores().items()) if c in index]
        idx, y = np.array([k for k, _ in scored]), np.array([s for _, s in scored])
        for name, outliers in (("people's ranking", True), ("people's, no outlier hypothesis", False)):
            people = people_scores(mean, cov, idx, y, tau_grid=spread_grid(mean, cov), outliers=outliers)
            assert people is not None
            ranks = rank_intervals_from_draws(people.draws)
            ok = covered(ranks.lower.numpy(), ranks.upper.numpy(), true_rank)
            rows.setdefault(name, []).append((bool(ok[victim]), float(ok.mean()), float(np.median(ranks.upper - ranks.lower + 1))))
            cells.append(f"{int(ranks.lower[victim])}–{int(ranks.upper[victim])}")
        print(f"| {seed} | {int(true_rank[victim])} | " + " | ".join(cells) + f" |  ({time.time() - t0:.0f} s)", flush=True)
    print("\n| intervals | cand00 covered | coverage, all candidates | median width |")
    print("|---|---|---|---|")
    for name, values in rows.items():
        v = np.array(values, dtype=float)
        print(f"| {name} | {int(v[:, 0].sum())} of {len(v)} | {v[:, 1].mean():.3f} | {v[:, 2].mean():.2f} |")


if __name__ == "__main__":
    harness.run(main, __file__)
