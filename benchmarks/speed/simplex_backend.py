"""Which HMC library for the simplex model: pyro-ppl (torch) vs numpyro (JAX), same model, same data.

Issue #6 asked for pyro-ppl first and numpyro only if pyro cannot meet the speed goal
(K = 12, J = 5, M = 5, 100 questions, 4 × (1000 + 1000) NUTS iterations ≤ 60 s on 2 cores).
Both run the base model (ω = 0, β_max = 5: weight-propagation prior, vectorised Dirichlets, the
count likelihood as one einsum — the parameterisation that matters, per the issue) on the bundled
SummEval log (5 judges × 12 systems × 100 articles, coherence 1–5):

- pyro: ``NUTS(jit_compile=True, ignore_jit_warnings=True)``, 1 chain, a short run; seconds per
  iteration after warm-up, extrapolated to 4 × 2000 iterations (chains in parallel on 2 cores at best);
- numpyro: the product's sampler (:func:`orchestrator.simplex.fit_simplex`), 4 chains × 2000.

    python -m benchmarks.speed.simplex_backend [--pyro-iterations 60]
"""

import time

import numpy as np

from benchmarks import harness
from benchmarks.harness import ROOT
from orchestrator.offline.simplex.fit import load_absolute_judgments
from orchestrator.simplex import SimplexSettings, build_score_data, fit_simplex
from orchestrator.simplex.prior import confusion_matrix, edge_concentrations


def pyro_seconds_per_iteration(counts: np.ndarray, iterations: int) -> tuple[float, float]:
    import pyro
    import pyro.distributions as dist
    import torch
    from pyro.infer import MCMC, NUTS

    torch.set_num_threads(2)
    levels = counts.shape[-1]
    data = torch.tensor(counts, dtype=torch.float32)

    def model(counts):
        n_judges, n_cands, _ = counts.shape
        with pyro.plate("judges", n_judges):
            rho = pyro.sample("rho", dist.Beta(1.0, 1.0))
            root = pyro.sample("root", dist.Dirichlet(torch.ones(levels)))
            concs = edge_concentrations(levels, rho * 5.0, xp=torch)
            steps = [pyro.sample(f"edges{s}", dist.Dirichlet(conc).to_event(1)) for s, conc in enumerate(concs)]
        theta = confusion_matrix(root, steps, xp=torch)
        with pyro.plate("candidates", n_cands):
            pi_bar = pyro.sample("pi_bar", dist.Dirichlet(torch.ones(levels)))
        gamma = torch.einsum("km,jms->jks", pi_bar, theta)
        pyro.factor("likelihood", (counts * gamma.clamp_min(1e-30).log()).sum())

    pyro.set_rng_seed(0)
    warm = max(10, iterations // 2)
    mcmc = MCMC(
        NUTS(model, jit_compile=True, ignore_jit_warnings=True),
        num_samples=iterations - warm,
        warmup_steps=warm,
        num_chains=1,
        disable_progbar=True,
    )
    started = time.perf_counter()
    mcmc.run(data)
    total = time.perf_counter() - started
    return total, total / iterations


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--log", default=str(ROOT / "examples/summeval-likert/coherence.log.jsonl"))
    ap.add_argument("--pyro-iterations", type=int, default=60)
    args = ap.parse_args()
    records, _ = load_absolute_judgments(args.log, log=True)
    data = build_score_data(records, levels=5)
    print(f"data: {len(data.judges)} judges × {len(data.candidates)} candidates × {len(data.questions)} questions, M = 5")

    started = time.perf_counter()
    fit = fit_simplex(data, SimplexSettings(omega=0.0, beta_max=5.0))
    numpyro_s = time.perf_counter() - started
    print(
        f"numpyro: 4 chains × (1000 + 1000) in {numpyro_s:.1f} s (compile included), "
        f"R-hat {fit.rhat['expected_centred']:.3f} (ranking) / {fit.max_rhat:.3f} (all), {fit.divergences} divergences"
    )

    total, per_iteration = pyro_seconds_per_iteration(data.hard_counts, args.pyro_iterations)
    per_chain = per_iteration * 2000
    print(
        f"pyro:    1 chain × {args.pyro_iterations} iterations in {total:.1f} s = {per_iteration:.2f} s/iteration → "
        f"4 × 2000 iterations ≈ {4 * per_chain / 60:.0f} min sequential, ≥ {2 * per_chain / 60:.0f} min with 2 chains "
        f"at a time on 2 cores"
    )
    print(f"ratio (pyro, 2 parallel chains at best / numpyro): {2 * per_chain / numpyro_s:.0f}×")


if __name__ == "__main__":
    harness.run(main, __file__)
