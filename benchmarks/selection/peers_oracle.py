"""How far below Swiss rounds can any choice of pairs go on the exhaustive logs? (issue #36)

An oracle design: it knows the judge's all-pairs ("self") scores and how much each pair tells
(the curvature of every pair's comparison in the all-pairs Laplace fit, read off the precision
matrix: ``h_ij = −P_ij``), and for a budget of ``m`` pairs (both orders, ``2m`` calls) it anneals
the set of pairs whose Gaussian estimate ``N(μ_self, (P_prior + Σ h_e u_e u_eᵀ)⁻¹)`` has the
highest expected Spearman with the self scores (2,000 common draws). The design is then asked of
the log and ranked by the product's own fit, as `peers_active.py` ranks the peers. ``--scale``
multiplies every pair's information: the all-pairs fit's curvature understates how closely a
subset's fit follows the self ranking (half of the self ranking's data is the subset's own), and
the scale whose expected Spearman matches the realized one is the calibrated oracle.

Beside it, in the same run: Swiss rounds and the default ``lookahead`` selection (both orders),
mean self-Spearman over articles × seeds at the same budgets.

    python -m benchmarks.selection.peers_oracle [--budgets 34 36 38 40 44 48] [--scale 1 10] [--restarts 3] [--seeds 10]
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks import harness
from benchmarks.selection.peers_active import Fitter, data_sets, peer_curve, poe_config, step_curve
from orchestrator.offline.replay.replay import replay_group
from orchestrator.offline.replay.report import spearman
from orchestrator.poe import threads_for
from orchestrator.run.groups import fit_group


def expected_spearman(mu: np.ndarray, precision: np.ndarray, z: np.ndarray) -> float:
    """Mean Spearman of ``μ + L z`` (``L Lᵀ = precision⁻¹``) with ``μ``."""
    n = len(mu)
    lower = np.linalg.cholesky(np.linalg.inv(precision))
    ranks = np.argsort(np.argsort(mu + z @ lower.T, axis=1), axis=1)
    d = ((ranks - np.argsort(np.argsort(mu))) ** 2).sum(axis=1)
    return float(np.mean(1 - 6 * d / (n * (n * n - 1))))


def anneal(mu, prior, info, pairs, m, rng, z, iterations=1500) -> tuple[list[int], float]:
    """The ``m`` pairs (indices into ``pairs``) of highest expected Spearman, by simulated annealing
    over single swaps (start: a random set; temperature 0.01, ×0.997 per step)."""

    def precision(chosen):
        out = np.diag(prior).astype(float)
        for k in chosen:
            i, j = pairs[k]
            h = info[i, j]
            out[i, i] += h
            out[j, j] += h
            out[i, j] -= h
            out[j, i] -= h
        return out

    chosen = list(rng.choice(len(pairs), m, replace=False))
    value = expected_spearman(mu, precision(chosen), z)
    best = (value, list(chosen))
    temperature = 0.01
    for _ in range(iterations):
        outside = [k for k in range(len(pairs)) if k not in chosen]
        trial = list(chosen)
        trial[rng.integers(m)] = outside[rng.integers(len(outside))]
        trial_value = expected_spearman(mu, precision(trial), z)
        if trial_value > value or rng.random() < np.exp((trial_value - value) / temperature):
            chosen, value = trial, trial_value
            if value > best[0]:
                best = (value, list(chosen))
        temperature *= 0.997
    return best[1], best[0]


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--budgets", type=int, nargs="+", default=[34, 36, 38, 40, 44, 48], help="calls (even: both orders of each pair)")
    ap.add_argument("--scale", type=float, nargs="+", default=[1.0, 10.0])
    ap.add_argument("--restarts", type=int, default=3)
    ap.add_argument("--seeds", type=harness.count, default=10, help="seeds of Swiss rounds and lookahead beside the oracle")
    ap.add_argument("--data", nargs="+", default=["real"])
    ap.add_argument("--sim-prompts", type=int, default=8)
    args = ap.parse_args()
    z = np.random.default_rng(0).standard_normal((2000, 16))
    for name, groups in data_sets(args).items():
        t0 = time.time()
        realized = {(s, b): [] for s in args.scale for b in args.budgets}
        expected = {(s, b): [] for s in args.scale for b in args.budgets}
        swiss, lookahead = [], []
        top = max(args.budgets)
        for group in groups:
            fitter = Fitter(group)
            with threads_for(16):
                full = fit_group(
                    fitter.run_group, [fitter.rows[p] for p in fitter.rows], fitter.config, debias="permutation", with_absolute=False
                )
            names = fitter.run_group.names
            n = len(names)
            mu = full.mean.numpy().astype(float)
            full_precision = np.linalg.inv(full.dense_cov().numpy().astype(float))
            info = np.clip(-full_precision + np.diag(np.diag(full_precision)), 0.0, None)
            prior = np.clip(np.diag(full_precision) - info.sum(axis=1), 1e-3, None)
            reference = full.mean.numpy()[fitter.position]
            pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
            for scale in args.scale:
                for budget in args.budgets:
                    for restart in range(args.restarts):
                        chosen, value = anneal(mu, prior, scale * info, pairs, budget // 2, np.random.default_rng(100 + restart), z[:, :n])
                        asked = [(names[a], names[b]) for k in chosen for a, b in (pairs[k], pairs[k][::-1])]
                        with threads_for(16):
                            realized[scale, budget].append(spearman(fitter.scores(asked), reference))
                        expected[scale, budget].append(value)
            for seed in range(args.seeds):
                with threads_for(16):
                    curve = peer_curve("swiss", fitter, reference, group.truth, np.random.default_rng(seed), top)
                    swiss.append(step_curve(curve, top, 2))
                    curve = replay_group(
                        group, "lookahead", poe_config("permutation"), debias="permutation", budget=top, seed=seed, reference=reference
                    ).curve
                    lookahead.append(step_curve(curve, top, 2))
            print(f"  {name}: article {group.key} done ({time.time() - t0:.0f} s)", flush=True)
        swiss_mean, lookahead_mean = np.mean(swiss, axis=0), np.mean(lookahead, axis=0)
        print(
            f"\n### {name}: {len(groups)} articles, oracle designs ({args.restarts} restarts) vs Swiss rounds and lookahead ({args.seeds} seeds)\n"
        )
        head = " | ".join(f"oracle ×{s:g}: realized (expected)" for s in args.scale)
        print(f"| calls | {head} | swiss | lookahead |")
        print("|---|" + "---|" * len(args.scale) + "---|---|")
        for budget in args.budgets:
            cells = " | ".join(f"{np.mean(realized[s, budget]):.3f} ({np.mean(expected[s, budget]):.3f})" for s in args.scale)
            print(f"| {budget} | {cells} | {swiss_mean[budget - 1]:.3f} | {lookahead_mean[budget - 1]:.3f} |")
        print(flush=True)


if __name__ == "__main__":
    harness.run(main, __file__)
