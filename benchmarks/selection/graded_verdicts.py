"""Graded five-way verdicts against A/B verdicts (issue #33 item 4): calls to 90% of the all-pairs
Spearman with the truth, through the product's replay engine.

A simulated arena-hard-style judge reads each comparison as ``z = s_i − s_j + ε`` (ε logistic: the
ordered-logit model, with cut-points ``c1, c2``) and writes its verdict as text (one-hot: judges
that reason first give no usable option log-probabilities). The *same* draws make two exhaustive
logs per article (every ordered pair of 12 answers): the graded verdict (``A>>B`` … ``B>>A``) and
its A/B collapse (``A`` when ``z > 0``) — the judge and its noise are identical, only what it
reports differs. Each log is replayed with the product's engine (`orchestrator replay`'s code
path: the default `lookahead` selection, permutation debiasing, batch 1) and with random pairs;
the fit reads graded verdicts with the ordered-logit expert (cut-points fitted per judge) and A/B
verdicts with soft Bradley–Terry.

Reported: the mean curve's Spearman with the true scores after 20/40/60 calls, the calls at which
it first reaches 90% of the A/B log's all-pairs Spearman (one target for both), and the all-pairs
Spearman of each log; the recovered cut-points.

    python -m benchmarks.selection.graded_verdicts [--seeds 5] [--articles 8] [--budget 100]
"""

from __future__ import annotations

import os
import time

import numpy as np

os.environ.setdefault("ORCHESTRATOR_JUDGMENT_CACHE", "off")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks import harness
from orchestrator.offline.replay.log_groups import build_groups  # noqa: E402
from orchestrator.offline.replay.replay import group_dataset, replay_group  # noqa: E402
from orchestrator.offline.replay.report import spearman  # noqa: E402
from orchestrator.poe import PoEConfig, get_expert, threads_for  # noqa: E402
from orchestrator.records.log import GRADES, LogRecord, ResponseRow  # noqa: E402
from orchestrator.run.groups import build_groups_for, fit_group  # noqa: E402

CANDIDATES = 12


def simulate(articles: int, cuts: tuple[float, float], seed: int):
    """Responses and the two exhaustive logs (graded, A/B) of the same verdict draws."""
    rng = np.random.default_rng(seed)
    responses, graded, ab = [], [], []
    for a in range(articles):
        scores = rng.normal(0.0, 1.0, CANDIDATES)
        for c in range(CANDIDATES):
            responses.append({"prompt_id": f"a{a}", "candidate": f"m{c}", "text": f"answer {c}", "human": {"quality": float(scores[c])}})
        for i in range(CANDIDATES):
            for j in range(CANDIDATES):
                if i == j:
                    continue
                z = scores[i] - scores[j] + rng.logistic()
                grade = 0 if z > cuts[1] else 1 if z > cuts[0] else 2 if z > -cuts[0] else 3 if z > -cuts[1] else 4
                base = {"kind": "pairwise", "judge": "arena", "prompt_id": f"a{a}", "candidates": [f"m{i}", f"m{j}"]}
                graded.append({**base, "probs": {g: float(k == grade) for k, g in enumerate(GRADES)}})
                ab.append({**base, "probs": {"A": float(z > 0), "B": float(z <= 0)}})
    return responses, graded, ab


def groups_of(records: list[dict], responses: list[dict]):
    recs = [(i, LogRecord.model_validate(r)) for i, r in enumerate(records, 1)]
    rows = [(i, ResponseRow.model_validate(r)) for i, r in enumerate(responses, 1)]
    return build_groups(recs, rows, "quality", "per_prompt")


def config() -> PoEConfig:
    """What `orchestrator replay` fits by default (soft BT, per-judge reliability)."""
    return PoEConfig(expert=get_expert("soft_bt"), judge_sharpness=True, judge_precision=True)


def all_pairs(group) -> tuple[float, dict]:
    run_group = build_groups_for(group_dataset(group), "per_prompt")[0]
    post = fit_group(run_group, group.rows, config(), debias="permutation", with_absolute=False)
    position = [run_group.names.index(name) for name in group.names]
    return spearman(post.mean.numpy()[position], group.truth), post.judges


def curve_of(group, strategy: str, budget: int, seed: int) -> np.ndarray:
    """Spearman with the truth after each call 1..budget (the last fit's)."""
    out = np.zeros(budget)
    for calls, truth_sp, _ in replay_group(group, strategy, config(), debias="permutation", budget=budget, seed=seed).curve:
        if 1 <= calls <= budget:
            out[calls - 1 :] = truth_sp
    return out


def first_reaching(curve: np.ndarray, level: float) -> int | None:
    hits = np.nonzero(curve >= level)[0]
    return int(hits[0]) + 1 if hits.size else None


def main() -> None:
    ap = harness.parser(__doc__, quick="1 seed, 4 articles, a budget of 40")
    ap.add_argument("--seeds", type=harness.count, default=5)
    ap.add_argument("--articles", type=int, default=8)
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--cuts", type=float, nargs=2, default=(0.5, 2.0), help="the simulated judge's c1 c2")
    ap.add_argument("--strategies", nargs="+", default=["lookahead", "random"])
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.articles, args.budget = 1, 4, 40
    t0 = time.time()
    curves: dict[tuple[str, str], list[np.ndarray]] = {}
    full: dict[str, list[float]] = {"graded": [], "A/B": []}
    cuts = []
    for seed in range(args.seeds):
        responses, graded, ab = simulate(args.articles, tuple(args.cuts), seed)
        for verdicts, records in (("graded", graded), ("A/B", ab)):
            with threads_for(16):
                for group in groups_of(records, responses):
                    sp, judges = all_pairs(group)
                    full[verdicts].append(sp)
                    if "tie_cut" in judges:
                        cuts.append((float(judges["tie_cut"][0]), float(judges["strong_cut"][0])))
                    for strategy in args.strategies:
                        curves.setdefault((verdicts, strategy), []).append(curve_of(group, strategy, args.budget, seed))
        print(f"seed {seed} done ({time.time() - t0:.0f} s)", flush=True)
    target = 0.9 * float(np.mean(full["A/B"]))
    print(
        f"\n{args.seeds} seeds × {args.articles} articles × {CANDIDATES} answers; judge cut-points {args.cuts[0]}, {args.cuts[1]}; "
        f"budget {args.budget} calls per article ({CANDIDATES * (CANDIDATES - 1)} in the exhaustive log)"
    )
    print(
        f"all-pairs Spearman with the truth: graded {np.mean(full['graded']):.3f}, A/B {np.mean(full['A/B']):.3f}; target 0.9 × A/B = {target:.3f}"
    )
    c = np.asarray(cuts)
    print(
        f"cut-points recovered from the all-pairs logs: c1 {c[:, 0].mean():.3f} (sd {c[:, 0].std():.3f}), c2 {c[:, 1].mean():.3f} (sd {c[:, 1].std():.3f})\n"
    )
    print("| verdicts | selection | Spearman @20 / @40 / @60 | calls to the target (mean curve) |")
    print("|---|---|---|---|")
    for (verdicts, strategy), runs in curves.items():
        mean = np.asarray(runs).mean(axis=0)
        at = " / ".join(f"{mean[k - 1]:.3f}" for k in (20, 40, 60) if k <= args.budget)
        print(f"| {verdicts} | {strategy} | {at} | {first_reaching(mean, target) or f'> {args.budget}'} |")
    print(f"\n{time.time() - t0:.0f} s")


if __name__ == "__main__":
    harness.run(main, __file__)
