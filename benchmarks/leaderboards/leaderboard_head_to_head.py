"""Close neighbours head-to-head instead of each against the anchor (issue #30 item 2): a simulation
with known truth, since logs of one anchor cannot replay it.

A leaderboard of M candidates against one anchor on P prompts, shaped like AlpacaEval 2.0: the
candidates' abilities are the logits of the official win rates of AlpacaEval's leaderboard.csv (37 models) (or ``--models`` drawn
like them), each answer's quality on a prompt is its candidate's ability plus a per-answer effect
(sd ``--answer-sd``), the anchor's answers have their own (sd ``--anchor-sd``: the prompt's
difficulty, shared by every candidate), and a judge's soft verdict between two answers is the
logistic of their quality difference. The truth is the full-data leaderboard: every candidate's
mean verdict against the anchor over all P prompts (what AlpacaEval reports).

Methods, each at budgets of 5/10/20/40% of the M × P anchor calls, same seeds:

- ``fixed``: one prompt subset for everybody, plain means (cutting the benchmark);
- ``adaptive``: the product's reference allocation (`allocation = "adaptive"`:
  :func:`orchestrator.raee.allocation.allocation_gains` on the shared prompt order, estimates from
  :func:`~orchestrator.raee.allocation.leaderboard_state`);
- ``head-to-head``: ``--anchor-share`` of the budget as ``adaptive``, then the rest on neighbour pairs
  asked against each other on a prompt (each pair walks the shared order): each round the
  ``--batch`` neighbour pairs of the current ranking most likely misordered
  (Φ(−|μ_a − μ_b| / sd_ab)), ranked by the product's PoE posterior (soft Bradley–Terry, Laplace,
  :func:`orchestrator.poe.fit_laplace`) of every verdict, the anchor one more candidate;
- ``anchor + PoE``: the ``adaptive`` verdicts alone ranked by that posterior (what the estimator
  alone changes).

Reported: Kendall τ with the truth (mean over seeds), and the calls each method needs to reach the
fixed subset's τ at 40% (budgets of 2.5% steps).

    python -m benchmarks.leaderboards.leaderboard_head_to_head [--seeds 5] [--anchor-share 0.5]
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import torch
from scipy.special import expit, logit
from scipy.stats import kendalltau, norm

from benchmarks import harness
from benchmarks.harness import SHARED_DATA
from orchestrator.poe import PoEConfig, fit_laplace
from orchestrator.poe.observations import DTYPE, Observations
from orchestrator.raee.allocation import WIDTH_WEIGHT, allocation_gains, leaderboard_state

DATA = SHARED_DATA / "alpacaeval"


def abilities(models: int, rng: np.random.Generator) -> np.ndarray:
    """Logits of AlpacaEval's full-data win rates (the 37 rows of leaderboard.csv), or ``models`` drawn from them."""
    rates = []
    board = DATA / "leaderboard.csv"
    if board.exists():
        import csv

        rates = [float(r["win_rate"]) / 100 for r in csv.DictReader(board.open())]
    if not rates:  # the shape of AlpacaEval's board without the data: many weak models, a few strong
        rates = list(np.concatenate([rng.uniform(0.02, 0.12, 25), rng.uniform(0.12, 0.35, 9), rng.uniform(0.35, 0.8, 5)]))
    rates = np.clip(np.array(rates), 0.01, 0.99)
    if models and models != len(rates):
        rates = rng.choice(rates, models, replace=True)
    return logit(rates)


class World:
    """Answer qualities of one simulated leaderboard; verdicts are read from them."""

    def __init__(self, theta: np.ndarray, prompts: int, answer_sd: float, anchor_sd: float, binary: bool, rng: np.random.Generator):
        self.theta = theta
        self.rng = rng
        self.binary = binary
        self.quality = theta[:, None] + rng.normal(0, answer_sd, (len(theta), prompts))
        self.anchor = rng.normal(0, anchor_sd, prompts)
        self.expected = expit(self.quality - self.anchor[None, :])
        # y[m, i]: the judge's verdict against the anchor (a soft probability, or a win drawn from it)
        self.against_anchor = (rng.random(self.expected.shape) < self.expected).astype(float) if binary else self.expected
        self.truth = self.against_anchor.mean(1)

    def head_to_head(self, a: int, b: int, prompt: int) -> float:
        p = float(expit(self.quality[a, prompt] - self.quality[b, prompt]))
        return float(self.rng.random() < p) if self.binary else p


def adaptive_depths(y: np.ndarray, order: np.ndarray, budget: int, warmup: int = 4, batch: int = 8) -> np.ndarray:
    """How many prompts of the shared order each candidate gets (the product's allocation)."""
    m, p = y.shape
    n = np.full(m, min(warmup, p))
    population = np.full(m, p)
    while n.sum() < budget:
        seen = np.full(y.shape, np.nan)
        for k in range(m):
            seen[k, order[: n[k]]] = y[k, order[: n[k]]]
        est, sigma, _ = leaderboard_state(seen)
        gains = allocation_gains(est, sigma, n, population, width_weight=WIDTH_WEIGHT)
        for k in np.argsort(-gains)[:batch]:
            if n.sum() >= budget or not np.isfinite(gains[k]):
                break
            n[k] += 1
    return n


def poe_fit(m: int, first: list[int], second: list[int], prob: list[float], warm=None):
    """The product's PoE posterior (soft Bradley–Terry, Laplace) over the candidates and the anchor
    (index ``m``); a weak prior (sd 10) so that the logit scale of weak candidates is not shrunk."""
    obs = Observations(
        n=m + 1,
        first=torch.tensor(first, dtype=torch.long),
        second=torch.tensor(second, dtype=torch.long),
        prob=torch.tensor(prob, dtype=DTYPE),
    )
    return fit_laplace(obs, PoEConfig(prior_precision=0.01), warm_start=warm)


def anchor_verdicts(y: np.ndarray, order: np.ndarray, depths: np.ndarray) -> tuple[list[int], list[int], list[float]]:
    m = y.shape[0]
    first, second, prob = [], [], []
    for k in range(m):
        for i in order[: depths[k]]:
            first.append(k)
            second.append(m)
            prob.append(float(y[k, i]))
    return first, second, prob


def head_to_head(world: World, order: np.ndarray, budget: int, anchor_share: float, batch: int) -> np.ndarray:
    y = world.against_anchor
    m = y.shape[0]
    depths = adaptive_depths(y, order, int(anchor_share * budget))
    first, second, prob = anchor_verdicts(y, order, depths)
    spent = int(depths.sum())
    pointer: dict[tuple[int, int], int] = {}
    post = poe_fit(m, first, second, prob)
    while spent < budget:
        mean = post.mean.numpy()[:m]
        cov = post.dense_cov().numpy()[:m, :m]
        ranked = np.argsort(-mean)
        pairs = []
        for a, b in zip(ranked[:-1], ranked[1:]):
            sd = np.sqrt(max(cov[a, a] + cov[b, b] - 2 * cov[a, b], 1e-12))
            pairs.append((float(norm.cdf(-abs(mean[a] - mean[b]) / sd)), int(a), int(b)))
        pairs.sort(reverse=True)
        for _, a, b in pairs[:batch]:
            if spent >= budget:
                break
            key = (min(a, b), max(a, b))
            k = pointer.get(key, 0)
            if k >= len(order):
                continue
            pointer[key] = k + 1
            first.append(a)
            second.append(b)
            prob.append(world.head_to_head(a, b, int(order[k])))
            spent += 1
        post = poe_fit(m, first, second, prob, warm=post)
    return post.mean.numpy()[:m]


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--seeds", type=harness.count, default=5)
    ap.add_argument("--models", type=int, default=0, help="0: the 37 win rates of leaderboard.csv as the abilities")
    ap.add_argument("--prompts", type=int, default=805)
    ap.add_argument("--answer-sd", type=float, default=1.5)
    ap.add_argument("--anchor-sd", type=float, default=1.0)
    ap.add_argument("--anchor-share", type=float, nargs="+", default=[0.5])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument(
        "--verdicts",
        choices=["binary", "soft"],
        default="binary",
        help="a win drawn per verdict (AlpacaEval's judge: 84%% of its soft verdicts are below 0.02 or above 0.98) or the probability itself",
    )
    ap.add_argument("--budgets", type=float, nargs="+", default=[0.05, 0.1, 0.2, 0.4])
    ap.add_argument("--json", type=Path, help="also write the per-seed figures here")
    args = ap.parse_args()
    rows: dict[str, dict[float, list[float]]] = {}
    started = time.perf_counter()
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        theta = abilities(args.models, rng)
        world = World(theta, args.prompts, args.answer_sd, args.anchor_sd, args.verdicts == "binary", rng)
        if seed == 0:
            _, sigma, _ = leaderboard_state(world.against_anchor)
            print(
                f"the simulated board: outcome variance per candidate {np.mean(np.var(world.against_anchor, 1)):.4f}, "
                f"after prompt difficulty {np.mean(sigma**2):.4f}; outcomes below 0.02 or above 0.98: "
                f"{np.mean((world.against_anchor < 0.02) | (world.against_anchor > 0.98)):.2f}",
                flush=True,
            )
        m, p = world.against_anchor.shape
        order = rng.permutation(p)
        for fraction in args.budgets:
            budget = int(fraction * m * p)
            per = budget // m
            fixed = world.against_anchor[:, order[:per]].mean(1)
            depths = adaptive_depths(world.against_anchor, order, budget)
            seen = np.full(world.against_anchor.shape, np.nan)
            for k in range(m):
                seen[k, order[: depths[k]]] = world.against_anchor[k, order[: depths[k]]]
            estimates = {"fixed": fixed, "adaptive": leaderboard_state(seen)[0]}
            post = poe_fit(m, *anchor_verdicts(world.against_anchor, order, depths))
            estimates["anchor + PoE"] = post.mean.numpy()[:m]
            for share in args.anchor_share:
                estimates[f"head-to-head ({share:.0%} anchor)"] = head_to_head(world, order, budget, share, args.batch)
            for name, est in estimates.items():
                rows.setdefault(f"full|{name}", {}).setdefault(fraction, []).append(float(kendalltau(est, world.truth)[0]))
                rows.setdefault(f"expected|{name}", {}).setdefault(fraction, []).append(float(kendalltau(est, world.expected.mean(1))[0]))
        print(f"seed {seed} done ({time.perf_counter() - started:.0f} s)", flush=True)
    print(
        f"\n{len(theta)} candidates × {args.prompts} prompts, {args.verdicts} verdicts, answer sd {args.answer_sd}, "
        f"anchor sd {args.anchor_sd}, batch {args.batch}, {args.seeds} seeds; Kendall τ (± its standard error over seeds) with "
        "the full-data leaderboard (every candidate's verdicts on all prompts: what AlpacaEval reports) and with the "
        "expected one (the win rates the verdicts are drawn from)\n"
    )
    print("| truth | method | " + " | ".join(f"{b:.0%} of the calls" for b in args.budgets) + " |")
    print("|---|---|" + "---|" * len(args.budgets))
    for key, by in rows.items():
        truth, name = key.split("|")
        cells = " | ".join(f"{np.mean(by[b]):.3f} ± {np.std(by[b]) / np.sqrt(len(by[b])):.3f}" for b in args.budgets)
        print(f"| {truth} | {name} | {cells} |")
    if args.json:
        args.json.write_text(json.dumps(rows))


if __name__ == "__main__":
    harness.run(main, __file__)
