"""How much any allocation of verdicts can gain over a fixed number per call (issue #62: the bound of
the "adaptive sampling ≤ 0.6× the best fixed k" goal).

An oracle that knows every judgment's probability ``p`` and the judge's full-data scores chooses,
one paid completion at a time, where the next verdict goes — a new judgment or one more verdict of a
judgment already asked (up to a ceiling, as the product) — greedily minimising the expected number of
candidate pairs in the wrong order. Against it, the same oracle with a fixed ``k`` verdicts per
judgment (it still chooses the judgments). Both read the verdicts at their information, and the
log-probability judge is given the same oracle, so that the targets are comparable:

- the judge's logits are ``logit p_j = β + θ_a − θ_b + ε_j`` (a least-squares fit on all 1,440 of the
  embedded Qwen 1.5B judge's SummEval judgments: position bias ``β``, scores ``θ``, each judgment's own
  scatter ``ε_j`` with variance ``τ²``); the full-data ranking is that of ``θ``;
- a log-probability call on judgment ``j`` reads ``logit p_j``: information ``1/τ²`` about ``θ_a − θ_b``;
- ``k`` verdicts of judgment ``j`` estimate ``logit p_j`` with variance ``1/(k p_j (1 − p_j))``
  (Bernoulli), so they are worth ``1/(τ² + 1/(k p_j (1 − p_j)))``: more verdicts never remove the
  judgment's own scatter;
- the posterior is Gaussian with the scores' true spread as prior; the expected Spearman with the
  full-data ranking is read from 1,000 draws of it.

Everything the oracle is given (the probabilities, the scores, the nuisance parameters, Gaussian
errors) makes it better than any method that must estimate them, so where the oracle's adaptive
allocation gains little over its best fixed ``k``, no allocation gains more on this judge.

    python -m benchmarks.selection.verdict_oracle [--ceiling 8] [--ks 1,2,3,4]
"""

from __future__ import annotations

import os

import numpy as np
from scipy.stats import norm

os.environ.setdefault("ORCHESTRATOR_JUDGMENT_CACHE", "off")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks import harness  # noqa: E402
from benchmarks.selection.verdict_judges import CONFIG, one_group, pairwise_records  # noqa: E402
from orchestrator.offline.replay.replay import group_dataset  # noqa: E402
from orchestrator.offline.replay.report import spearman  # noqa: E402
from orchestrator.run.groups import build_groups_for, fit_group  # noqa: E402

STEP = 60
"""Completions between two readings of the expected Spearman."""


class Judge:
    """The judge's logits as a least-squares model (module docstring) and the design of its judgments."""

    def __init__(self, p_first: np.ndarray, first: np.ndarray, second: np.ndarray, n: int):
        logit = np.log(np.clip(p_first, 1e-4, 1 - 1e-4) / np.clip(1 - p_first, 1e-4, 1 - 1e-4))
        self.design = np.zeros((len(p_first), n))
        self.design[np.arange(len(p_first)), first] = 1.0
        self.design[np.arange(len(p_first)), second] = -1.0
        coef, *_ = np.linalg.lstsq(np.column_stack([np.ones(len(p_first)), self.design]), logit, rcond=None)
        self.beta, self.theta = float(coef[0]), coef[1:] - coef[1:].mean()
        self.tau2 = float((logit - coef[0] - self.design @ coef[1:]).var())
        self.bernoulli = p_first * (1 - p_first)
        pairs = np.array([(a, b) for a in range(n) for b in range(a + 1, n)])
        self.pa, self.pb = pairs[:, 0], pairs[:, 1]
        self.gap = np.abs(self.theta[self.pa] - self.theta[self.pb])

    def worth(self, k: np.ndarray) -> np.ndarray:
        """Information of ``k`` verdicts of each judgment about its score difference (0 for none)."""
        return np.where(k > 0, 1.0 / (self.tau2 + 1.0 / (np.maximum(k, 1) * self.bernoulli)), 0.0)

    def expected_spearman(self, precision: np.ndarray, draws: int = 1000) -> float:
        chol = np.linalg.cholesky(np.linalg.inv(precision))
        sample = self.theta[None, :] + np.random.default_rng(0).standard_normal((draws, len(self.theta))) @ chol.T
        true_rank = self.theta.argsort().argsort()
        return float(np.mean([np.corrcoef(true_rank, s.argsort().argsort())[0, 1] for s in sample]))

    def allocate(self, budget: int, gain_of, cost: int, open_, every: int = STEP) -> dict[int, float]:
        """Greedy: each step buys the judgment whose ``gain_of(k)`` most lowers the expected number
        of wrongly ordered pairs; the expected Spearman every ``every`` completions."""
        precision = np.eye(len(self.theta)) / self.theta.var()
        k = np.zeros(len(self.bernoulli), int)
        curve: dict[int, float] = {}
        for spent in range(cost, budget + 1, cost):
            gain = gain_of(k)
            cov = np.linalg.inv(precision)
            u = cov @ self.design.T
            quad = np.einsum("jn,nj->j", self.design, u)
            var = cov[self.pa, self.pa] + cov[self.pb, self.pb] - 2 * cov[self.pa, self.pb]
            new_var = var[:, None] - gain[None, :] * (u[self.pa] - u[self.pb]) ** 2 / (1 + gain * quad)[None, :]
            wrong = norm.cdf(-self.gap[:, None] / np.sqrt(np.maximum(new_var, 1e-12))).sum(0)
            wrong[~open_(k)] = np.inf
            if not np.isfinite(wrong).any():
                break
            j = int(np.argmin(wrong))
            precision += gain[j] * np.outer(self.design[j], self.design[j])
            k[j] += 1
            if spent % every == 0:
                curve[spent] = self.expected_spearman(precision)
        return curve


def first(curve: dict[int, float], target: float) -> int | None:
    return next((spent for spent, rho in sorted(curve.items()) if rho >= target), None)


def main() -> None:
    p = harness.parser(__doc__, quick="budgets to 2,160 completions, k = 1 and 3")
    p.add_argument("--ceiling", type=harness.count, default=8)
    p.add_argument("--ks", default="1,2,3,4")
    p.add_argument("--budget", type=harness.count, default=5760, help="paid completions")
    args = p.parse_args()
    ks, budget = ([1, 3], 2160) if args.quick else ([int(k) for k in args.ks.split(",")], args.budget)
    records = pairwise_records()
    group = one_group(records)
    index = {name: i for i, name in enumerate(group.names)}
    p_first = np.array([r.probs.get("A", 0.0) / sum(r.probs.values()) for r in records])
    judge = Judge(
        p_first, np.array([index[r.candidates[0]] for r in records]), np.array([index[r.candidates[1]] for r in records]), len(index)
    )
    run_group = build_groups_for(group_dataset(group), "global")[0]
    full = fit_group(run_group, group.rows, CONFIG, debias="permutation", with_absolute=False).mean.numpy()
    product = np.asarray([full[run_group.names.index(n)] for n in group.names])
    print(
        f"the judge's logits: position bias β = {judge.beta:.2f}, scores' sd {judge.theta.std():.3f}, a judgment's own scatter "
        f"τ² = {judge.tau2:.2f}; one verdict's Bernoulli variance p(1−p) {np.quantile(judge.bernoulli, 0.05):.3f}–"
        f"{np.quantile(judge.bernoulli, 0.95):.3f} (5–95%); Spearman of these scores with the product's full-data ranking "
        f"{spearman(judge.theta, product):.3f}"
    )
    call = np.full(len(judge.bernoulli), 1.0 / judge.tau2)  # a log-probability call: asked once, read exactly
    logprob = judge.allocate(200, lambda k: call, 1, lambda k: k < 1, every=100)
    targets = {calls: logprob[calls] for calls in (100, 200)}
    print(
        "oracle log-probability judge: expected Spearman "
        + ", ".join(f"{rho:.3f} at {calls} calls" for calls, rho in targets.items())
        + " (the targets below)\n"
    )
    rows: dict[str, dict[int, float]] = {}
    for k in ks:
        rows[f"oracle, fixed k = {k}"] = judge.allocate(
            min(budget, 1440 * k), lambda n, k=k: judge.worth(np.full(len(n), k)), k, lambda n: n < 1
        )
        print(f"  fixed k = {k} done", flush=True)
    rows[f"oracle, adaptive, ceiling {args.ceiling}"] = judge.allocate(
        budget, lambda n: judge.worth(n + 1) - judge.worth(n), 1, lambda n: n < args.ceiling
    )
    print()
    print(
        "| allocation | "
        + " | ".join(f"completions to Spearman {rho:.3f} ({calls} log-prob calls)" for calls, rho in targets.items())
        + " |"
    )
    print("|---|" + "---|" * len(targets))
    for name, curve in rows.items():
        cells = [str(first(curve, rho) or f"> {max(curve)}") for rho in targets.values()]
        print(f"| {name} | " + " | ".join(cells) + " |")
    adaptive = rows[f"oracle, adaptive, ceiling {args.ceiling}"]
    for calls, rho in targets.items():
        fixed = [first(curve, rho) for name, curve in rows.items() if "fixed" in name]
        best, own = min((x for x in fixed if x is not None), default=None), first(adaptive, rho)
        if best is None or own is None:
            print(f"target at {calls} calls: oracle adaptive {own}, best fixed k {best}: no ratio (not reached)")
        else:
            print(f"target at {calls} calls: oracle adaptive / oracle best fixed k = {own} / {best} = {own / best:.2f}")


if __name__ == "__main__":
    harness.run(main, __file__)
