"""Issue #20: the simplex model's default fit in numpyro vs the same model written in Stan.

Data sets: SummEval (``../shared/data/summeval``, the paper's three judges, 12 systems × 100 articles,
1–5 scores) for the given aspects; data drawn from the model (5 judges × 12 candidates × 100
questions, 5 levels); the misspecified ordinal-probit simulation. Both fits: 4 chains × 1,000 warm-up
+ 1,000 draws, ω = 1, count weight 1/deff (the default). Reported per data set: the largest |difference of
posterior means| of the expected scores in Monte Carlo standard errors (z; |z| < 3.5 over 12
candidates is what agreement within Monte Carlo error looks like), how many 95% rank intervals are
identical and the largest difference of an interval end, the R-hat of the ranking (standardised
expected scores) of both, and the seconds of both
(Stan's include compiling the model the first time).

    pip install -e '.[stan]'   # and a C++ compiler
    python -m benchmarks.validity.stan_crosscheck [--aspects coherence fluency]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin

from benchmarks import harness
from benchmarks.validity.summeval_scores import SUMMEVAL, paper_judges_scores
from orchestrator.poe import rank_intervals_from_draws
from orchestrator.simplex import SimplexSettings, fit_simplex
from orchestrator.simplex.simulate import from_model, misspecified
from orchestrator.simplex.stan import fit_stan

CHAINS, WARMUP, DRAWS = 4, 1000, 1000


def compare(name: str, data) -> str:
    t0 = time.perf_counter()
    ours = fit_simplex(data, SimplexSettings(chains=CHAINS, warmup=WARMUP, draws=DRAWS, seed=0))
    t1 = time.perf_counter()
    theirs = fit_stan(data, chains=CHAINS, warmup=WARMUP, draws=DRAWS, seed=1)
    t2 = time.perf_counter()
    mine = ours.flat("expected")
    by_chain = {"numpyro": mine.reshape(CHAINS, DRAWS, -1), "stan": theirs.reshape(CHAINS, DRAWS, -1)}
    mcse = {k: v.reshape(-1, v.shape[-1]).std(0) / np.sqrt(effective_sample_size(v)) for k, v in by_chain.items()}
    z = (mine.mean(0) - theirs.mean(0)) / np.sqrt(mcse["numpyro"] ** 2 + mcse["stan"] ** 2)
    centred = {k: v - v.mean(-1, keepdims=True) for k, v in by_chain.items()}
    rhat = {k: float(np.max(split_gelman_rubin(v / v.std(-1, keepdims=True)))) for k, v in centred.items()}
    a, b = rank_intervals_from_draws(mine), rank_intervals_from_draws(theirs)
    same = int(((a.lower == b.lower) & (a.upper == b.upper)).sum())
    worst = int(max((a.lower - b.lower).abs().max(), (a.upper - b.upper).abs().max()))
    k = mine.shape[1]
    return (
        f"| {name} | {np.abs(mine.mean(0) - theirs.mean(0)).max():.4f} | {np.abs(z).max():.2f} | {same}/{k} | {worst} | "
        f"{rhat['numpyro']:.3f} / {rhat['stan']:.3f} | {t1 - t0:.0f} / {t2 - t1:.0f} |"
    )


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--aspects", nargs="*", default=["coherence", "fluency"])
    args = ap.parse_args()
    print(f"numpyro vs Stan, default fit (ω = 1, β_max = 5, counts × 1/deff), {CHAINS} chains × {WARMUP} + {DRAWS}")
    print(
        "| data | max abs(Δ mean) | max abs(z) | identical 95% rank intervals | max Δ interval end | R-hat ranking numpyro / Stan | s numpyro / Stan |"
    )
    print("|---|---|---|---|---|---|---|")
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for aspect in args.aspects if SUMMEVAL.exists() else []:
            print(compare(f"SummEval {aspect} (3 judges)", paper_judges_scores(aspect, Path(tmp))[0]), flush=True)
    print(compare("from the model (5 × 12 × 100, M = 5)", from_model(5, 12, 5, 100, seed=3)[0]), flush=True)
    print(compare("misspecified (5 × 12 × 100, M = 5)", misspecified(5, 12, 5, 100, seed=3)[0]), flush=True)
    print(f"\nelapsed {time.time() - started:.0f} s")


if __name__ == "__main__":
    harness.run(main, __file__)
