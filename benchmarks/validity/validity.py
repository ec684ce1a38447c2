"""Validity suite (issue #20 item 4): every interval the product prints, with its measured coverage, on
the data in ../shared/data and on simulations with known truth — one table.

Rows (all nominal 95%):

- **PoE rank intervals** (`rank`, `status`, the report) after a budgeted adaptive run (reorder
  selection through the run engine, every request answered from a recorded log):
  - on real judge logs, against the judge's own all-pairs ranking (the posterior on every logged
    judgment: what more calls of the same judge would converge to) and, for information, against
    the expert ranking;
  - on simulated judges with known truth (`orchestrator.offline.replay.simulate`, preset `llm`).
- **RAEE credible intervals** of the win rate against the reference (`fit raee`, the Elo interval is
  its monotone image): AlpacaEval 2.0 annotations, n prompts drawn from the 805, against the
  805-prompt win rate, with and without the finite-population correction.
- **Simplex rank credible intervals** (`fit simplex`, default fit) and the **bootstrap rank
  intervals** of absolute campaigns (`rank` on an absolute campaign: prompts resampled): SummEval's
  12 abstractive systems, the paper's three judges, four aspects, against the expert ranking; and the
  misspecified simulation with known truth.

    python -m benchmarks.validity.validity [--seeds 5] [--no-simplex]
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from benchmarks import harness
from benchmarks.harness import ROOT, SHARED_DATA
from orchestrator.offline.replay.log_groups import build_groups
from orchestrator.offline.replay.replay import replay_group
from orchestrator.offline.replay.simulate import JUDGE_PRESETS, simulate_dataset
from orchestrator.poe import PoEConfig, rank_intervals
from orchestrator.raee import outcomes, raee_estimate
from orchestrator.records.log import load_log, load_responses

SHARED = SHARED_DATA
GPT35 = ROOT / "examples" / "summeval-gpt35"
QWEN_LOG = ROOT / "benchmarks" / "data" / "summeval-qwen1.5b-coherence.jsonl"


def ranks_of(scores: np.ndarray) -> np.ndarray:
    """1 = best; ties share the better rank."""
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=int)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


def poe_coverage(log: Path, responses: Path, truth: str, scope: str, budget: int, seeds: int, debias: str) -> dict:
    """Coverage of PoE 95% rank intervals after ``budget`` calls per group, vs the all-pairs ranking and the truth."""
    records = [(line, r) for line, r in load_log(log) if r.kind == "pairwise"]
    groups = build_groups(records, load_responses(responses), truth, scope)
    config = PoEConfig()
    hits_self, hits_truth, widths, n = 0, 0, [], 0
    for group in groups:
        full = replay_group(group, "reorder", config, scope=scope, debias=debias, batch=10, budget=None, seed=0)
        self_rank = ranks_of(full.final.mean.numpy())
        true_rank = ranks_of(np.asarray(group.truth, dtype=float))
        for seed in range(seeds):
            done = replay_group(group, "reorder", config, scope=scope, debias=debias, batch=5, budget=budget, seed=seed)
            intervals = rank_intervals(done.final, level=0.95)
            lo, hi = intervals.lower.numpy(), intervals.upper.numpy()
            hits_self += int(np.sum((lo <= self_rank) & (self_rank <= hi)))
            hits_truth += int(np.sum((lo <= true_rank) & (true_rank <= hi)))
            widths.extend((hi - lo + 1).tolist())
            n += len(lo)
    return {"n": n, "coverage": hits_self / n, "coverage_truth": hits_truth / n, "width": float(np.mean(widths)), "groups": len(groups)}


def poe_simulated(folder: Path, seeds: int, budget: int) -> dict:
    records, responses = simulate_dataset(6, 10, JUDGE_PRESETS["llm"], seed=11, absolute=False)
    log, resp = folder / "sim.jsonl", folder / "sim-responses.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    resp.write_text("".join(json.dumps(r) + "\n" for r in responses))
    return poe_coverage(log, resp, "quality", "per_prompt", budget, seeds, "none")


def raee_coverage(n: int, draws: int, population: bool) -> dict:
    by_model: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with open(SHARED / "alpacaeval" / "annotations.jsonl") as fh:
        for line in fh:
            row = json.loads(line)
            by_model[row["model"]][row["instruction_id"]].append(row["preference"])
    rng = np.random.default_rng(0)
    hits = total = 0
    widths = []
    for prefs in by_model.values():
        pref = np.array([np.mean(v) for v in prefs.values()])
        s = outcomes(pref - 1, np.zeros_like(pref), 2 - pref, soft=True)
        target = float(s.mean())
        for _ in range(draws):
            sample = s[rng.choice(len(s), size=n, replace=False)]
            est = raee_estimate(sample, population=len(s) if population else None)
            hits += int(est.p_low <= target <= est.p_high)
            widths.append(est.p_high - est.p_low)
            total += 1
    return {"n": total, "coverage": hits / total, "width": float(np.mean(widths)), "models": len(by_model)}


SIMPLEX_CONFIGS = {
    "default fit: ω = 1, counts / design effect": {},
    "ω = 0, counts / design effect (the default before)": {"omega": 0.0},
    "the paper's likelihood: ω = 0, every score independent": {"omega": 0.0, "count_weight": 1.0},
    "one true score per answer (--likelihood answers, ω = 0)": {"omega": 0.0, "likelihood": "answers"},
}


def simplex_datasets(kind: str, aspects: list[str], replicates: int, folder: Path) -> list[tuple]:
    """``(data, truth, seed)`` per SummEval aspect or per simulation replicate."""
    from benchmarks.validity.summeval_scores import paper_judges_scores
    from orchestrator.simplex.simulate import from_model, misspecified

    if kind != "SummEval":
        make = misspecified if kind == "misspecified" else from_model
        return [(*make(5, 12, 5, 100, seed=1000 + rep), rep) for rep in range(replicates)]
    return [(*paper_judges_scores(aspect, folder), 0) for aspect in aspects]


def simplex_part(kind: str, config: str | None, aspects: list[str], replicates: int) -> dict:
    """One data kind under one fit configuration (``None``: the bootstrap), in a worker process:
    every fit compiles a sampler, and dozens of compiles in one process exhaust its memory maps."""
    from orchestrator.simplex import SimplexSettings, fit_simplex
    from orchestrator.simplex import baselines as B

    into: dict = {"hits": [], "width": [], "rho": [], "rhat": []}
    with tempfile.TemporaryDirectory() as tmp:
        for data, truth, seed in simplex_datasets(kind, aspects, replicates, Path(tmp)):
            if config is None:
                into["hits"].append(B.evaluate(B.bootstrap_average(data.item_scores(), seed=seed), truth)["coverage"])
                continue
            fit = fit_simplex(data, SimplexSettings(seed=seed, **SIMPLEX_CONFIGS[config]))
            ranks = fit.ranks()
            lo, hi, true_rank = ranks.lower.numpy(), ranks.upper.numpy(), B.ranks(truth)
            into["hits"].extend(((lo <= true_rank) & (true_rank <= hi)).tolist())
            into["width"].append(float(np.mean(hi - lo + 1)))
            into["rho"].append(float(spearmanr(fit.expected_mean, truth).statistic))
            into["rhat"].append(fit.rhat["ranking"])
    return into


def simplex_rows(aspects: list[str], replicates: int) -> list[tuple[str, str, dict]]:
    """Simplex rank intervals under each configuration and the bootstrap's, vs experts on SummEval
    (the paper's judges) and vs the truth of the two simulations."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    labels = {
        "SummEval": f"SummEval, 12 systems × {len(aspects)} aspects, paper's 3 judges, vs experts",
        "misspecified": f"misspecified simulation, {replicates} × 12 candidates, known truth",
        "drawn from the model": f"drawn from the model, {replicates} × 12 candidates, known truth",
    }
    rows = []
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context, max_tasks_per_child=1) as pool:
        for kind, label in labels.items():
            for config in [*SIMPLEX_CONFIGS, None]:
                into = pool.submit(simplex_part, kind, config, aspects, replicates).result()
                if config is None:
                    rows.append(
                        (
                            "bootstrap rank intervals (absolute campaigns)",
                            label,
                            {"n": 12 * len(into["hits"]), "coverage": float(np.mean(into["hits"]))},
                        )
                    )
                    continue
                rhat = f"{min(into['rhat']):.3f}–{max(into['rhat']):.3f}"
                rows.append(
                    (
                        f"simplex rank intervals ({config})",
                        f"{label} (Spearman {np.mean(into['rho']):.3f}; R-hat of the ranking {rhat})",
                        {"n": len(into["hits"]), "coverage": float(np.mean(into["hits"])), "width": float(np.mean(into["width"]))},
                    )
                )
                print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--seeds", type=harness.count, default=5)
    ap.add_argument("--no-simplex", action="store_true")
    ap.add_argument("--only-simplex", action="store_true", help="only the simplex and bootstrap rows")
    ap.add_argument("--replicates", type=int, default=5, help="simplex simulation replicates per generator")
    ap.add_argument("--aspects", nargs="+", default=["coherence", "consistency", "fluency", "relevance"])
    args = ap.parse_args()
    started = time.perf_counter()
    table: list[tuple[str, str, dict]] = []
    if not args.only_simplex:
        table.extend(poe_and_raee_rows(args.seeds))
    if not args.no_simplex:
        table.extend(simplex_rows(args.aspects, args.replicates))
    print("\n| interval | data | intervals | coverage (95% nominal) | mean width |\n|---|---|---|---|---|")
    for name, data, r in table:
        width = f"{r['width']:.2f}" if "width" in r else "—"
        print(f"| {name} | {data} | {r['n']} | **{r['coverage']:.3f}** | {width} |")
    print(f"\n{time.perf_counter() - started:.0f} s")


def poe_and_raee_rows(seeds: int) -> list[tuple[str, str, dict]]:
    table: list[tuple[str, str, dict]] = []
    r = poe_coverage(GPT35 / "coherence.log.jsonl", GPT35 / "responses.jsonl", "coherence", "global", 150, seeds, "permutation")
    table.append(
        (
            "PoE rank intervals",
            f"GPT-3.5 SummEval verdicts, global, 150 calls, vs the judge's all-pairs ranking (vs experts {r['coverage_truth']:.2f})",
            r,
        )
    )
    r = poe_coverage(QWEN_LOG, SHARED / "summeval" / "responses.jsonl", "coherence", "per_prompt", 60, seeds, "permutation")
    table.append(
        (
            "PoE rank intervals",
            f"embedded Qwen log, 3 articles × 16, 60 calls each, vs its all-pairs ranking (vs experts {r['coverage_truth']:.2f})",
            r,
        )
    )
    with tempfile.TemporaryDirectory() as tmp:
        r = poe_simulated(Path(tmp), seeds, 40)
    table.append(
        (
            "PoE rank intervals",
            "simulated LLM judge, 6 prompts × 10, 40 calls each, vs the true ranking",
            {**r, "coverage": r["coverage_truth"]},
        )
    )
    for n in (50, 200):
        for fpc in (False, True):
            r = raee_coverage(n, 200, fpc)
            table.append(
                (
                    "RAEE win-rate (Elo) intervals",
                    f"AlpacaEval 2.0, {r['models']} models, n = {n} of 805 prompts{', FPC' if fpc else ''}",
                    r,
                )
            )
    return table


if __name__ == "__main__":
    harness.run(main, __file__)
