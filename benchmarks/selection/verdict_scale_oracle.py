"""How narrow can a verdict judge's rank intervals be at their nominal level? The product's verdict
fit against posteriors that are told more than the data hold.

Same data and replay as :mod:`benchmarks.selection.verdict_judges` (the embedded 1.5B judge's
SummEval logs, each judgment turned into one categorical draw or the shares of k, global scope,
permutation debiasing, ``lookahead``, batch 10). The replay's last fit is captured with what it
was fitted on, and its 95% rank intervals are read from:

- ``product``: the posterior the product reports (the prior's scale averaged over by its evidence
  times a half-Cauchy(1) prior on τ ∈ [0.01, 1], the mixture of Laplace posteriors sampled:
  :mod:`orchestrator.poe.verdicts`);
- ``before``: the posterior the product reported when the goal was set (a log-uniform prior on τ
  over the same grid, the mixture moment-matched to one Gaussian);
- ``half-Cauchy, moment-matched``: the product's weights, one Gaussian (what sampling adds);
- ``grid to τ = 0.001``: the product with its grid extended a decade further down (whether the
  grid's lower end still decides the width);
- ``oracle scale``: one Laplace posterior at the true scale, τ = the standard deviation of the
  reference scores (the judge's own full-data ranking, which the intervals are scored against): a
  Bayesian posterior told the spread of the truth;
- ``τ = 1`` and ``τ = 0.25``: fixed priors wider than the truth's scale (the unit prior of PoE §4.2,
  and one between), to show what narrower intervals cost in coverage;
- ``simulated from the fit``: the check by simulation: scores drawn from the product's posterior,
  counts drawn from the fitted model on the same comparisons (each judge's sharpness and position
  bias at the fit, as many trials as the judgment's precision κ), refitted by the product; the
  coverage of the drawn scores' ranks is what the intervals promise when the model holds.

    python -m benchmarks.selection.verdict_scale_oracle [--seeds 8] [--budgets 100,400] [--ks 1,3] [--ranking-seeds 48]
"""

from __future__ import annotations

import contextlib
import dataclasses
import time

import numpy as np
import torch

from benchmarks import harness
from benchmarks.selection import verdict_judges as vj
from orchestrator.offline.replay.replay import replay_group
from orchestrator.offline.replay.report import spearman
from orchestrator.poe import reliability, verdicts
from orchestrator.poe.laplace import Posterior, fit_laplace
from orchestrator.poe.objective import NegLogPosterior
from orchestrator.poe.uncertainty import rank_intervals, rank_intervals_from_draws
from orchestrator.poe.verdicts import PRIOR_GRID, fit_prior_scale, log_evidence, log_scale_prior

DRAWS = 4000
SIMULATIONS = 4
"""Data sets simulated from each seed's fit."""


class LastVerdictFit:
    """Keeps what the last verdict fit (``fit_prior_scale``) was given while the replay runs."""

    def __init__(self) -> None:
        self.args: tuple | None = None
        self._real = reliability.fit_prior_scale

    def __enter__(self) -> LastVerdictFit:
        def keep(obs, config, posterior):
            self.args = (obs, config, posterior)
            return self._real(obs, config, posterior)

        reliability.fit_prior_scale = keep
        return self

    def __exit__(self, *exc: object) -> None:
        reliability.fit_prior_scale = self._real


def rank_draws(posterior: Posterior, gen: torch.Generator) -> torch.Tensor:
    assert posterior.mixture is not None
    return posterior.mixture.draws(DRAWS, gen)


def gaussian_draws(mean: torch.Tensor, cov: torch.Tensor, n: int, gen: torch.Generator) -> torch.Tensor:
    chol = torch.linalg.cholesky(cov + 1e-10 * torch.eye(len(mean), dtype=torch.float64))
    return mean + torch.randn(n, len(mean), generator=gen, dtype=torch.float64) @ chol.T


def grid_fits(obs, config, posterior) -> list[tuple[float, torch.Tensor, torch.Tensor, float]]:
    """``(τ, mean, cov, log evidence)`` at every λ of the product's grid (warm-started along it)."""
    out, post = [], posterior
    for lam in PRIOR_GRID:
        grid_config = dataclasses.replace(config, prior_precision=lam)
        post = fit_laplace(obs, grid_config, warm_start=post)
        out.append((lam**-0.5, post.mean.clone(), post.dense_cov().clone(), log_evidence(obs, grid_config, post)))
    return out


def moment_matched_draws(fits, log_prior: list[float], n: int, gen: torch.Generator) -> torch.Tensor:
    """Draws of one Gaussian with the evidence-weighted mixture's mean and covariance."""
    weight = torch.softmax(torch.tensor([f[3] + p for f, p in zip(fits, log_prior)], dtype=torch.float64), 0)
    mean = sum(float(w) * f[1] for w, f in zip(weight, fits))
    second = sum(float(w) * (f[2] + torch.outer(f[1], f[1])) for w, f in zip(weight, fits))
    cov = second - torch.outer(mean, mean)
    return gaussian_draws(mean, 0.5 * (cov + cov.T), n, gen)


def simulated_from_fit(obs, config, product: Posterior, gen: torch.Generator) -> tuple[np.ndarray, Posterior]:
    """Scores drawn from the product's posterior, counts drawn from the fitted model at them on the
    same comparisons, and the product's refit: ``(drawn scores, refitted posterior)``."""
    assert product.mixture is not None
    truth = product.mixture.draws(1, gen)[0]
    theta = product.theta.clone()
    theta[: obs.n] = truth
    p = config.expert.predict(NegLogPosterior(obs, config)._differences(theta)).clamp(1e-6, 1 - 1e-6)
    trials = (obs.weight if obs.weight is not None else torch.ones_like(p)).round().clamp_min(1.0)
    simulated = dataclasses.replace(obs, prob=torch.binomial(trials, p, generator=gen) / trials)
    fitted = fit_laplace(simulated, config, warm_start=product)
    return truth.numpy(), fit_prior_scale(simulated, config, fitted)


def at_scale(obs, config, posterior, tau: float, gen: torch.Generator) -> torch.Tensor:
    post = fit_laplace(obs, dataclasses.replace(config, prior_precision=tau**-2), warm_start=posterior)
    return gaussian_draws(post.mean, post.dense_cov(), DRAWS, gen)


def replay(derived, budget: int, seed: int, reference: np.ndarray):
    """The product's replay of a derived verdict log, as :mod:`benchmarks.selection.verdict_judges` runs it."""
    return replay_group(
        derived, "lookahead", vj.CONFIG, scope="global", debias="permutation", batch=10, budget=budget, seed=seed, reference=reference
    )


class LogUniformScalePrior:
    """The product's fit with the log-uniform prior on τ it had before (every grid point weighted
    by its evidence alone), while the replay runs."""

    def __enter__(self) -> None:
        self._real = verdicts.log_scale_prior
        verdicts.log_scale_prior = lambda tau: 0.0

    def __exit__(self, *exc: object) -> None:
        verdicts.log_scale_prior = self._real


def ranking_under_each_prior(records, reference: np.ndarray, seeds: int) -> None:
    """The selection reads the posterior, so the prior decides which judgments a run collects:
    the Spearman of the replay's final ranking with the reference, one verdict at 400 calls, the
    same draw seeds under the product's prior and the log-uniform one (a paired difference)."""
    rhos: dict[str, list[float]] = {"half-Cauchy (the product)": [], "log-uniform (before)": []}
    for seed in range(seeds):
        derived = vj.one_group(vj.as_verdicts(records, 1, 1000 + seed))
        for name, found in rhos.items():
            with LogUniformScalePrior() if name.startswith("log") else contextlib.nullcontext():
                result = replay(derived, 400, seed, reference)
            order = [result.names.index(n) for n in derived.names]
            found.append(spearman(result.final.mean.numpy()[order], reference))
    print(f"\nthe ranking a run ends with, one verdict at 400 calls, {seeds} draw seeds (the selection reads each prior)\n")
    print("| prior on τ | mean Spearman with the reference | seeds 0–15 |")
    print("|---|---|---|")
    for name, found in rhos.items():
        print(f"| {name} | {np.mean(found):.3f} | {np.mean(found[:16]):.3f} |")
    diff = np.subtract(*rhos.values())
    print(f"\npaired difference (product − before): {diff.mean():+.3f} ± {diff.std(ddof=1) / np.sqrt(len(diff)):.3f} (standard error)")


def main() -> None:
    p = harness.parser(__doc__, quick="2 draw seeds, 400 calls, one verdict")
    p.add_argument("--seeds", type=harness.count, default=8)
    p.add_argument("--budgets", default="100,400")
    p.add_argument("--ks", default="1,3")
    p.add_argument("--ranking-seeds", type=harness.count, default=48, help="draw seeds of the ranking comparison")
    p.add_argument("--no-ranking", action="store_true", help="skip the ranking comparison")
    args = p.parse_args()
    seeds, budgets, ks = (
        (2, [400], [1]) if args.quick else (args.seeds, [int(b) for b in args.budgets.split(",")], [int(k) for k in args.ks.split(",")])
    )
    records = vj.pairwise_records()
    reference = vj.reference_scores(records)
    ref_rank = (-reference).argsort().argsort() + 1
    true_tau = float(reference.std())
    print(f"reference: the log-probability judge's full-data fit; the truth's scale τ = {true_tau:.3f}\n")
    print("| judge | calls | posterior | coverage of the judge's own ranks | mean width (ranks of 16) |")
    print("|---|---|---|---|---|")
    seconds = []
    for k in ks:
        for budget in budgets:
            t0 = time.time()
            found: dict[str, tuple[list, list]] = {}
            for seed in range(seeds):
                derived = vj.one_group(vj.as_verdicts(records, k, 1000 + seed))
                with LastVerdictFit() as last:
                    result = replay(derived, budget, seed, reference)
                assert last.args is not None, "the replay made no verdict fit"
                obs, config, posterior = last.args
                order = [result.names.index(n) for n in derived.names]
                gen = torch.Generator().manual_seed(seed)
                fits = grid_fits(obs, config, posterior)
                half_cauchy = [log_scale_prior(tau) for tau, *_ in fits]
                low_grid = PRIOR_GRID + tuple(float(10 ** (j / 2)) for j in range(9, 13))  # τ down to 0.001
                assert result.final.mixture is not None
                draws = {
                    "product": result.final.mixture.draws(DRAWS, gen),
                    "before": moment_matched_draws(fits, [0.0] * len(fits), DRAWS, gen),
                    "half-Cauchy, moment-matched": moment_matched_draws(fits, half_cauchy, DRAWS, gen),
                    "grid to τ = 0.001": rank_draws(fit_prior_scale(obs, config, posterior, grid=low_grid), gen),
                    "oracle scale": at_scale(obs, config, posterior, true_tau, gen),
                    "τ = 1": at_scale(obs, config, posterior, 1.0, gen),
                    "τ = 0.25": at_scale(obs, config, posterior, 0.25, gen),
                }
                for name, d in draws.items():
                    intervals = rank_intervals_from_draws(d)
                    low, high = intervals.lower.numpy()[order], intervals.upper.numpy()[order]
                    covered, widths = found.setdefault(name, ([], []))
                    covered.extend(((low <= ref_rank) & (ref_rank <= high)).tolist())
                    widths.extend((high - low + 1).tolist())
                for _ in range(SIMULATIONS):
                    truth, refit = simulated_from_fit(obs, config, result.final, gen)
                    truth_rank = (-truth).argsort().argsort() + 1
                    intervals = rank_intervals(refit, generator=gen)
                    low, high = intervals.lower.numpy(), intervals.upper.numpy()
                    covered, widths = found.setdefault("simulated from the fit", ([], []))
                    covered.extend(((low <= truth_rank) & (truth_rank <= high)).tolist())
                    widths.extend((high - low + 1).tolist())
            judge = "one verdict" if k == 1 else f"{k} sampled verdicts"
            for name, (covered, widths) in found.items():
                print(f"| {judge} | {budget} | {name} | {np.mean(covered):.3f} | {np.mean(widths):.2f} |", flush=True)
            seconds.append(f"{judge} at {budget} calls {time.time() - t0:.0f} s")
    print(f"\n{seeds} draw seeds × 16 systems per cell ({'; '.join(seconds)})")
    if not args.no_ranking:
        ranking_under_each_prior(records, reference, 4 if args.quick else args.ranking_seeds)


if __name__ == "__main__":
    harness.run(main, __file__)
