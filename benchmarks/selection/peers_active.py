"""Pair selection against what practitioners do (issue #36): the product's strategies and three peers
on exhaustive judge logs and on simulations, calls to self-Spearman 0.9.

Each article (prompt) is ranked on its own, batch 1, every answer read from an exhaustive log (both
orders of every pair). The product's strategies run through the replay engine (`orchestrator
replay`'s code path); the peers are implemented here and ranked by the product's own fit of what
they asked (soft Bradley–Terry, permutation-debiased), so only the choice of pairs differs:

- `swiss`: Swiss rounds, both orders — each round pairs neighbours by the current scores (first round
  in random order), never a pair twice;
- `random2`: random pairs, both orders;
- `pairs`: PairS merge sort (Liu et al. 2024) on a random start, each comparison asked in both orders
  and decided by the debiased probability; it stops when the sort is done.

"Self" is the judge's own all-pairs ranking (the permutation-debiased fit of all its calls), the same
for every method. Reported per data set: mean Spearman with self after 20/40/60 calls, the calls at
which the mean curve (over articles × seeds) first reaches 0.9, the same for 90% of the all-pairs
Spearman with the truth, and each method's worst paired difference to `random2` over budgets
10..budget (mean and z; negative = worse than random pairs).

    python -m benchmarks.selection.peers_active [--seeds 5] [--budget 120] [--methods ...] [--data ...]
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch

os.environ.setdefault("ORCHESTRATOR_JUDGMENT_CACHE", "off")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks import harness
from benchmarks.harness import ROOT, SHARED_DATA  # noqa: E402
from orchestrator.offline.replay.log_groups import Group, build_groups  # noqa: E402
from orchestrator.offline.replay.replay import group_dataset, replay_group  # noqa: E402
from orchestrator.offline.replay.report import spearman  # noqa: E402
from orchestrator.offline.replay.simulate import JUDGE_PRESETS, simulate_dataset  # noqa: E402
from orchestrator.poe import PoEConfig, get_expert, permutation_debias, select_pairs, threads_for  # noqa: E402
from orchestrator.records.log import LogRecord, ResponseRow, load_log, load_responses  # noqa: E402
from orchestrator.run.groups import build_groups_for, fit_group  # noqa: E402

HERE = ROOT / "benchmarks"
REAL_LOGS = [HERE / "data" / "summeval-qwen1.5b-coherence.jsonl", HERE / "data" / "summeval-qwen1.5b-coherence-4to6.jsonl"]
RESPONSES = SHARED_DATA / "summeval" / "responses.jsonl"
PRODUCT = [
    "lookahead/permutation",
    "reorder/permutation",
    "min_uncertainty/permutation",
    "random/permutation",
    "reorder/home",
    "lookahead/home",
]
PEERS = ["swiss", "random2", "pairs"]


def poe_config(debias: str) -> PoEConfig:
    """What `orchestrator replay` fits by default (soft BT, per-judge reliability)."""
    return PoEConfig(expert=get_expert("soft_bt"), home_advantage=debias == "home", judge_sharpness=True, judge_precision=True)


class Fitter:
    """The product's permutation-debiased fit of any subset of a group's logged comparisons."""

    def __init__(self, group: Group):
        self.group = group
        self.run_group = build_groups_for(group_dataset(group), "per_prompt")[0]
        self.rows = {(r.candidates[0], r.candidates[1]): r for r in group.rows if r.kind == "pairwise"}
        self.position = [self.run_group.names.index(name) for name in group.names]
        self.config = poe_config("permutation")

    def scores(self, asked: list[tuple[str, str]]) -> np.ndarray:
        """Scores in ``group.names`` order."""
        post = fit_group(self.run_group, [self.rows[p] for p in asked], self.config, debias="permutation", with_absolute=False)
        return post.mean.numpy()[self.position]

    def p_first(self, first: str, second: str) -> float:
        row = self.rows[(first, second)]
        return float(row.p_first if row.p_first is not None else 0.5)


def peer_curve(method: str, fitter: Fitter, reference: np.ndarray, truth: np.ndarray, rng: np.random.Generator, budget: int):
    """``[(calls, Spearman truth, Spearman self)]`` after each comparison (two calls) of a peer."""
    names = fitter.group.names
    n = len(names)
    asked: list[tuple[str, str]] = []
    compared: set[frozenset[int]] = set()
    curve: list[tuple[int, float, float]] = []
    scores = np.zeros(n)

    class Spent(Exception):
        pass

    def compare(i: int, j: int) -> float:
        """Ask both orders; the debiased P(i better)."""
        nonlocal scores
        if len(asked) + 2 > budget:
            raise Spent
        if frozenset((i, j)) not in compared:
            compared.add(frozenset((i, j)))
            asked.extend([(names[i], names[j]), (names[j], names[i])])
            scores = fitter.scores(asked)
            curve.append((len(asked), spearman(scores, truth), spearman(scores, reference)))
        return float(permutation_debias(fitter.p_first(names[i], names[j]), fitter.p_first(names[j], names[i])))

    try:
        if method == "random2":
            pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
            for k in rng.permutation(len(pairs)):
                compare(*pairs[k])
        elif method == "swiss":
            while len(compared) < n * (n - 1) // 2:
                order = list(rng.permutation(n)) if not asked else list(np.argsort(-(scores + 1e-9 * rng.random(n))))
                used: set[int] = set()
                round_pairs = []
                for x in order:
                    if x in used:
                        continue
                    for y in order:
                        if y != x and y not in used and frozenset((x, y)) not in compared:
                            round_pairs.append((x, y))
                            used |= {x, y}
                            break
                for x, y in round_pairs:
                    compare(int(x), int(y))
        elif method == "pairs":

            def merge(left: list[int], right: list[int]) -> list[int]:
                out = []
                while left and right:
                    out.append(left.pop(0) if compare(left[0], right[0]) >= 0.5 else right.pop(0))
                return out + left + right

            runs = [[int(i)] for i in rng.permutation(n)]
            while len(runs) > 1:
                runs = [merge(runs[k], runs[k + 1]) if k + 1 < len(runs) else runs[k] for k in range(0, len(runs), 2)]
        else:
            raise ValueError(method)
    except Spent:
        pass
    return curve


def step_curve(curve: list[tuple[int, float, float]], budget: int, column: int) -> np.ndarray:
    """Value after each call 1..budget (the last fit's; 0 before the first)."""
    out = np.zeros(budget)
    for calls, *values in curve:
        if 1 <= calls <= budget:
            out[calls - 1 :] = values[column - 1]
    return out


def first_reaching(curve: np.ndarray, level: float) -> int | None:
    hits = np.nonzero(curve >= level)[0]
    return int(hits[0]) + 1 if hits.size else None


def data_sets(args) -> dict[str, list[Group]]:
    sets: dict[str, list[Group]] = {}
    for spec in args.data:
        if spec.startswith("sim:"):
            preset = spec[4:]
            records, responses = simulate_dataset(args.sim_prompts, 16, JUDGE_PRESETS[preset], seed=7, absolute=False)
            recs = [(i, LogRecord.model_validate(r)) for i, r in enumerate(records, 1)]
            rows = [(i, ResponseRow.model_validate(r)) for i, r in enumerate(responses, 1)]
            sets[spec] = build_groups(recs, rows, "quality", "per_prompt")
        elif spec == "real":
            groups: list[Group] = []
            responses = list(load_responses(RESPONSES)) if RESPONSES.exists() else None
            for path in REAL_LOGS:
                if not path.exists():
                    continue
                records = [(i, r) for i, r in load_log(path) if r.kind == "pairwise"]
                groups += build_groups(records, responses, "coherence", "per_prompt") if responses else []
            if groups:
                sets["real qwen1.5b"] = groups
    return sets


def diagnose(name: str, groups: list[Group], seeds: int) -> None:
    """The issue's hypotheses, measured: is the position bias a constant (so one order of a pair
    would do), is the posterior's sd the prior's, do greedy picks revisit one neighbourhood?"""
    print(f"\n### {name}: why selection pays off or not ({len(groups)} articles)\n")
    resid_const, resid_cand, flips = [], [], []
    for group in groups:
        n = len(group.names)
        rows, targets = [], []
        for (i, j), entries in group.pairwise.items():
            p = min(max(entries[0][1], 1e-4), 1 - 1e-4)
            x = np.zeros(3 * n + 1)
            x[i], x[j], x[-1] = 1, -1, 1  # s_i − s_j + b
            x[n + i], x[2 * n + j] = 1, 1  # + first-shown effect of i, second-shown effect of j
            rows.append(x)
            targets.append(np.log(p / (1 - p)))
            back = group.pairwise.get((j, i))
            if back:
                flips.append((entries[0][1] > 0.5) == (back[0][1] > 0.5))
        X, y = np.asarray(rows), np.asarray(targets)
        for cols, out in ((list(range(n)) + [3 * n], resid_const), (list(range(3 * n + 1)), resid_cand)):
            coef, *_ = np.linalg.lstsq(X[:, cols], y, rcond=None)
            out.append(float(np.std(y - X[:, cols] @ coef)))
    print(
        f"- position: logit residual sd {np.mean(resid_const):.2f} with one constant first-shown bonus, {np.mean(resid_cand):.2f} with a bonus per candidate and position;"
    )
    print(
        f"  both orders of a pair name the same winner in {100 * (1 - np.mean(flips)):.1f}% of pairs (a single order's verdict is the position's)"
    )
    spread, sds, touched = [], [], {"reorder": [], "lookahead": []}
    for group in groups:
        fitter = Fitter(group)
        names = fitter.group.names
        n = len(names)
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
            chosen = [pairs[k] for k in rng.permutation(len(pairs))[:10]]
            asked = [(names[a], names[b]) for i, j in chosen for a, b in ((i, j), (j, i))]
            post = fit_group(fitter.run_group, [fitter.rows[p] for p in asked], fitter.config, debias="permutation", with_absolute=False)
            spread.append(float(post.mean.std()))
            sds.append(float(post.dense_cov().diagonal().sqrt().mean()))
            for strategy in touched:
                asked, seen = [], []
                for _ in range(8):
                    post = fit_group(
                        fitter.run_group, [fitter.rows[p] for p in asked], fitter.config, debias="permutation", with_absolute=False
                    )
                    names_run = fitter.run_group.names
                    available = torch.ones(n, n, dtype=torch.bool)
                    for a, b in asked:
                        available[names_run.index(a), names_run.index(b)] = False
                    i, j = select_pairs(post, strategy, available, 1, ordered=False, generator=torch.Generator().manual_seed(seed))[0]
                    asked += [(names_run[i], names_run[j]), (names_run[j], names_run[i])]
                    seen += [i, j]
                touched[strategy].append(len(set(seen)))
    print(
        f"- prior: after 20 calls (10 random pairs, both orders) the scores' posterior sd is {np.mean(sds):.2f} while the means spread {np.mean(spread):.2f}: the prior (sd 1) sets the intervals"
    )
    print(
        "- exploration: candidates compared at least once after 16 calls (8 picks, batch 1, of 16): "
        + ", ".join(f"{k} {np.mean(v):.1f}" for k, v in touched.items())
    )


def main() -> None:
    ap = harness.parser(__doc__, quick="2 seeds, a budget of 60, the real logs, the default strategy against Swiss rounds")
    ap.add_argument("--seeds", type=harness.count, default=5)
    ap.add_argument("--budget", type=int, default=120)
    ap.add_argument("--methods", nargs="+", default=PRODUCT + PEERS)
    ap.add_argument("--data", nargs="+", default=["real", "sim:qwen1.5b", "sim:llm"])
    ap.add_argument("--sim-prompts", type=int, default=8)
    ap.add_argument("--diagnose", action="store_true", help="only measure the hypotheses (position structure, prior, exploration)")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.budget, args.data, args.methods = 2, 60, ["real"], ["lookahead/permutation", "swiss"]
    for name, groups in data_sets(args).items():
        if args.diagnose:
            diagnose(name, groups, args.seeds)
            continue
        t0 = time.time()
        fitters = [Fitter(g) for g in groups]
        with threads_for(16):
            references = [f.scores(list(f.rows)) for f in fitters]
        full_truth = float(np.mean([spearman(ref, g.truth) for ref, g in zip(references, groups)]))
        self_curves: dict[str, np.ndarray] = {}
        truth_curves: dict[str, np.ndarray] = {}
        for method in args.methods:
            per_self, per_truth = [], []
            for group, fitter, reference in zip(groups, fitters, references):
                for seed in range(args.seeds):
                    with threads_for(16):
                        if method in PEERS:
                            curve = peer_curve(method, fitter, reference, group.truth, np.random.default_rng(seed), args.budget)
                        else:
                            strategy, debias = method.split("/")
                            config = poe_config(debias)
                            curve = replay_group(
                                group, strategy, config, debias=debias, budget=args.budget, seed=seed, reference=reference
                            ).curve
                    per_self.append(step_curve(curve, args.budget, 2))
                    per_truth.append(step_curve(curve, args.budget, 1))
            self_curves[method] = np.asarray(per_self)
            truth_curves[method] = np.asarray(per_truth)
            print(f"  {name}: {method} done ({time.time() - t0:.0f} s)", flush=True)
        print(f"\n### {name}: {len(groups)} articles × {args.seeds} seeds, batch 1, budget {args.budget} calls per article")
        print(f"all-pairs Spearman with the truth: {full_truth:.3f}\n")
        print("| method | self Sp. @20 / @40 / @60 | calls to self 0.9 | calls to 90% of truth Sp. | worst vs random2 (Δ, z, at) |")
        print("|---|---|---|---|---|")
        base = self_curves.get("random2")
        for method in args.methods:
            curves = self_curves[method]
            mean = curves.mean(axis=0)
            k90 = first_reaching(mean, 0.9)
            t90 = first_reaching(truth_curves[method].mean(axis=0), 0.9 * full_truth) if full_truth > 0 else None
            worst = "—"
            if base is not None and method != "random2":
                diff = curves[:, 9:] - base[:, 9:]
                se = diff.std(axis=0, ddof=1) / np.sqrt(diff.shape[0]) + 1e-12
                z = diff.mean(axis=0) / se
                at = int(np.argmin(z))
                worst = f"{diff.mean(axis=0)[at]:+.3f}, z {z[at]:+.1f}, @{at + 10}"
            at = [f"{mean[k - 1]:.3f}" for k in (20, 40, 60) if k <= args.budget]
            print(f"| {method} | {' / '.join(at)} | {k90 or f'> {args.budget}'} | {t90 or f'> {args.budget}'} | {worst} |")
        print(flush=True)


if __name__ == "__main__":
    harness.run(main, __file__)
