"""Judges without log-probabilities (issue #62): do the rank intervals from verdicts cover the judge's
own full-data ranking, and what does a verdict cost against a log-probability?

Data: the embedded Qwen 1.5B judge's exhaustive SummEval logs (`benchmarks/data/`, 6 articles × 16
systems, every ordered pair: 1,440 pairwise judgments with their option probabilities). A judge
without log-probabilities is made from them as the issue prescribes: for each judgment one
categorical draw from its logged option probabilities (`method = "verdict"`, k = 1), or the shares
of k draws (`method = "samples"`); everything else unchanged. The log-probability version is the
reference: its permutation-debiased fit on all 1,440 judgments is "the judge's own full-data
ranking".

Each (k, budget, draw seed) replays the derived log through the product's engine (`orchestrator
replay`'s code path: global scope, `--debias permutation`, `lookahead`, batch 10) and reads the
final posterior's 95% rank intervals: coverage of the reference ranks (over the 16 systems × seeds),
their mean width in ranks, and the Spearman of the posterior mean with the reference. k = 0 is the
log-probability judge itself. "before" re-runs the same draws with verdicts read as stated
probabilities (the fixed unit prior of PoE §4.2: what the product did before issue #62).

    python -m benchmarks.selection.verdict_judges [--seeds 8] [--budgets 100,400] [--ks 0,1,3]
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch

os.environ.setdefault("ORCHESTRATOR_JUDGMENT_CACHE", "off")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks import harness  # noqa: E402
from benchmarks.harness import ROOT  # noqa: E402
from orchestrator.offline.replay.log_groups import Group, build_groups  # noqa: E402
from orchestrator.offline.replay.replay import group_dataset, replay_group  # noqa: E402
from orchestrator.offline.replay.report import spearman  # noqa: E402
from orchestrator.poe import PoEConfig, get_expert, rank_intervals  # noqa: E402
from orchestrator.records.log import LogRecord, ResponseRow, load_log  # noqa: E402
from orchestrator.run.groups import build_groups_for, fit_group  # noqa: E402

LOGS = [
    ROOT / "benchmarks" / "data" / "summeval-qwen1.5b-coherence.jsonl",
    ROOT / "benchmarks" / "data" / "summeval-qwen1.5b-coherence-4to6.jsonl",
]
CONFIG = PoEConfig(expert=get_expert("soft_bt"), judge_sharpness=True, judge_precision=True)  # what `replay` fits by default


def pairwise_records() -> list[LogRecord]:
    return [record for log in LOGS for _, record in load_log(log) if record.kind == "pairwise"]


def as_verdicts(records: list[LogRecord], k: int, seed: int) -> list[LogRecord]:
    """Each judgment as a judge without log-probabilities returns it: the shares of ``k`` categorical
    draws from its logged option probabilities (k = 0: the log-probability judgment itself)."""
    if k == 0:
        return records
    rng = np.random.default_rng(seed)
    out = []
    for record in records:
        options = list(record.probs)
        p = np.asarray([record.probs[o] for o in options], dtype=float)
        counts = rng.multinomial(k, p / p.sum())
        probs = {o: c / k for o, c in zip(options, counts)}
        out.append(
            LogRecord.model_validate({**record.model_dump(), "probs": probs, "method": "verdict" if k == 1 else "samples", "samples": k})
        )
    return out


def one_group(records: list[LogRecord]) -> Group:
    seen = dict.fromkeys((r.prompt_id, c) for r in records for c in r.candidates)
    rows = [(0, ResponseRow(prompt_id=p, candidate=c, human={"none": 0.0})) for p, c in seen]
    return build_groups([(0, r) for r in records], rows, "none", "global", judge=None, source="qwen", responses_source="qwen")[0]


def reference_scores(records: list[LogRecord]) -> np.ndarray:
    """The log-probability judge's full-data fit (global scope, permutation-debiased), in the order
    of ``one_group(records).names``: the ranking the verdicts' intervals are scored against."""
    group = one_group(records)
    run_group = build_groups_for(group_dataset(group), "global")[0]
    full = fit_group(run_group, group.rows, CONFIG, debias="permutation", with_absolute=False).mean.numpy()
    return np.asarray([full[run_group.names.index(n)] for n in group.names])


def measure(records: list[LogRecord], reference: np.ndarray, k: int, budget: int, seeds: int, before: bool) -> dict[str, float]:
    def derived(seed: int) -> list[LogRecord]:
        group = as_verdicts(records, k, 1000 + seed)
        # before: verdicts read as stated probabilities, the fit never learns they are counts
        return [r.model_copy(update={"method": None, "samples": None}) for r in group] if before else group

    return coverage_over_seeds(derived, reference, budget, seeds)


def coverage_over_seeds(derived, reference: np.ndarray, budget: int, seeds: int) -> dict[str, float]:
    """Replay ``derived(seed)`` (a log) for each seed and read the final posterior's 95% rank
    intervals: coverage of the reference ranks, mean width, Spearman with the reference."""
    ref_rank = (-reference).argsort().argsort() + 1
    covered, widths, rhos = [], [], []
    for seed in range(seeds):
        group = one_group(derived(seed))
        result = replay_group(
            group, "lookahead", CONFIG, scope="global", debias="permutation", batch=10, budget=budget, seed=seed, reference=reference
        )
        intervals = rank_intervals(result.final, generator=torch.Generator().manual_seed(seed))
        order = [result.names.index(n) for n in group.names]
        low, high = intervals.lower.numpy()[order], intervals.upper.numpy()[order]
        covered.extend(((low <= ref_rank) & (ref_rank <= high)).tolist())
        widths.extend((high - low + 1).tolist())
        rhos.append(spearman(result.final.mean.numpy()[order], reference))
    return {"coverage": float(np.mean(covered)), "width": float(np.mean(widths)), "spearman": float(np.mean(rhos)), "n": len(covered)}


def main() -> None:
    p = harness.parser(__doc__, quick="2 draw seeds, budgets 100 and 400, k = 0 and 1")
    p.add_argument("--seeds", type=harness.count, default=8)
    p.add_argument("--budgets", default="100,400")
    p.add_argument("--ks", default="0,1,3")
    p.add_argument("--no-before", action="store_true", help="skip the re-run with verdicts read as probabilities")
    args = p.parse_args()
    seeds, ks = (2, [0, 1]) if args.quick else (args.seeds, [int(k) for k in args.ks.split(",")])
    budgets = [int(b) for b in args.budgets.split(",")]
    records = pairwise_records()
    reference = reference_scores(records)
    print(f"{len(records)} pairwise judgments, {len(reference)} systems; reference: the log-probability judge's full-data fit\n")
    print(
        "| judge | calls | coverage of the judge's own ranks | mean width (ranks of 16) | Spearman with it | before #62: coverage, width |"
    )
    print("|---|---|---|---|---|---|")
    figures = []
    for k in ks:
        for budget in budgets:
            t0 = time.time()
            now = measure(records, reference, k, budget, seeds, before=False)
            old = measure(records, reference, k, budget, seeds, before=True) if k and not args.no_before else None
            name = "log-probabilities" if k == 0 else ("one verdict" if k == 1 else f"{k} sampled verdicts")
            was = f"{old['coverage']:.3f}, {old['width']:.1f}" if old else "—"
            print(f"| {name} | {budget} | {now['coverage']:.3f} | {now['width']:.1f} | {now['spearman']:.3f} | {was} |", flush=True)
            figures.append({"k": k, "budget": budget, **now, "before": old, "seconds": round(time.time() - t0, 1)})
    worst = min((f["coverage"] for f in figures if f["k"]), default=float("nan"))
    print(f"\nlowest coverage from verdicts: {worst:.3f} ({seeds} draw seeds × 16 systems per cell)")


if __name__ == "__main__":
    harness.run(main, __file__)
