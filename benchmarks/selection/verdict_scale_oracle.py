"""How narrow can a verdict judge's rank intervals be at their nominal level? The product's verdict
fit against posteriors that are told more than the data hold.

Same data and replay as :mod:`benchmarks.selection.verdict_judges` (the embedded 1.5B judge's
SummEval logs, each judgment turned into one categorical draw or the shares of k, global scope,
permutation debiasing, ``lookahead``, batch 10). The replay's last fit is captured with what it
was fitted on, and its 95% rank intervals are read from:

- ``product``: the posterior the product reports (the prior's scale averaged over by its evidence on
  a log-uniform grid τ ∈ [0.01, 1], the mixture moment-matched: :mod:`orchestrator.poe.verdicts`);
- ``half-Cauchy, sampled``: a proper half-Cauchy(1) prior on τ over the same grid, the mixture of
  Laplace posteriors sampled component by component instead of moment-matched;
- ``oracle scale``: one Laplace posterior at the true scale, τ = the standard deviation of the
  reference scores (the judge's own full-data ranking, which the intervals are scored against): a
  Bayesian posterior told the spread of the truth;
- ``τ = 1`` and ``τ = 0.25``: fixed priors wider than the truth's scale (the unit prior of PoE §4.2,
  and one between), to show what narrower intervals cost in coverage at 100 calls.

    python -m benchmarks.selection.verdict_scale_oracle [--seeds 8] [--budgets 100,400] [--ks 1,3]
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import torch

from benchmarks import harness
from benchmarks.selection import verdict_judges as vj
from orchestrator.offline.replay.replay import group_dataset, replay_group
from orchestrator.poe import reliability
from orchestrator.poe.laplace import fit_laplace
from orchestrator.poe.uncertainty import rank_intervals_from_draws
from orchestrator.poe.verdicts import PRIOR_GRID, log_evidence
from orchestrator.run.groups import build_groups_for, fit_group

DRAWS = 4000


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


def mixture_draws(fits, log_prior: list[float], n: int, gen: torch.Generator) -> torch.Tensor:
    """Draws of the evidence-weighted mixture of the grid's Laplace posteriors (component, then score)."""
    weight = torch.softmax(torch.tensor([f[3] + p for f, p in zip(fits, log_prior)], dtype=torch.float64), 0)
    component = torch.multinomial(weight, n, replacement=True, generator=gen)
    draws = torch.empty(n, len(fits[0][1]), dtype=torch.float64)
    for i, (_, mean, cov, _) in enumerate(fits):
        rows = (component == i).nonzero().flatten()
        if len(rows):
            draws[rows] = gaussian_draws(mean, cov, len(rows), gen)
    return draws


def at_scale(obs, config, posterior, tau: float, gen: torch.Generator) -> torch.Tensor:
    post = fit_laplace(obs, dataclasses.replace(config, prior_precision=tau**-2), warm_start=posterior)
    return gaussian_draws(post.mean, post.dense_cov(), DRAWS, gen)


def main() -> None:
    p = harness.parser(__doc__, quick="2 draw seeds, 400 calls, one verdict")
    p.add_argument("--seeds", type=harness.count, default=8)
    p.add_argument("--budgets", default="100,400")
    p.add_argument("--ks", default="1,3")
    args = p.parse_args()
    seeds, budgets, ks = (
        (2, [400], [1]) if args.quick else (args.seeds, [int(b) for b in args.budgets.split(",")], [int(k) for k in args.ks.split(",")])
    )
    records = vj.pairwise_records()
    group = vj.one_group(records)
    run_group = build_groups_for(group_dataset(group), "global")[0]
    full = fit_group(run_group, group.rows, vj.CONFIG, debias="permutation", with_absolute=False).mean.numpy()
    reference = np.asarray([full[run_group.names.index(n)] for n in group.names])
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
                    result = replay_group(
                        derived,
                        "lookahead",
                        vj.CONFIG,
                        scope="global",
                        debias="permutation",
                        batch=10,
                        budget=budget,
                        seed=seed,
                        reference=reference,
                    )
                assert last.args is not None, "the replay made no verdict fit"
                obs, config, posterior = last.args
                order = [result.names.index(n) for n in derived.names]
                gen = torch.Generator().manual_seed(seed)
                fits = grid_fits(obs, config, posterior)
                half_cauchy = [math.log(tau / (1 + tau**2)) for tau, *_ in fits]  # density on τ times τ: the grid is even in log τ
                assert result.final.cov is not None
                draws = {
                    "product": gaussian_draws(result.final.mean, result.final.cov, DRAWS, gen),
                    "half-Cauchy, sampled": mixture_draws(fits, half_cauchy, DRAWS, gen),
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
            judge = "one verdict" if k == 1 else f"{k} sampled verdicts"
            for name, (covered, widths) in found.items():
                print(f"| {judge} | {budget} | {name} | {np.mean(covered):.3f} | {np.mean(widths):.2f} |", flush=True)
            seconds.append(f"{judge} at {budget} calls {time.time() - t0:.0f} s")
    print(f"\n{seeds} draw seeds × 16 systems per cell ({'; '.join(seconds)})")


if __name__ == "__main__":
    harness.run(main, __file__)
