"""Validity suite (issue #20 item 4): every interval the product prints, with its measured coverage, on
the data in ../shared/data and on simulations with known truth — one table.

Rows (all nominal 95%):

- **PoE rank intervals** (`rank`, `status`, the report) after a budgeted adaptive run (reorder
  selection through the run engine, every request answered from a recorded log):
  - on real judge logs, against the judge's own all-pairs ranking (the posterior on every logged
    judgment: what more calls of the same judge would converge to) and, for information, against
    the expert ranking;
  - on simulated judges with known truth (`orchestrator.simulate`, preset `llm`).
- **RAEE credible intervals** of the win rate against the reference (`fit raee`, the Elo interval is
  its monotone image): AlpacaEval 2.0 annotations, n prompts drawn from the 805, against the
  805-prompt win rate, with and without the finite-population correction.
- **Simplex rank credible intervals** (`fit simplex`, default fit) and the **bootstrap rank
  intervals** of absolute campaigns (`rank` on an absolute campaign: prompts resampled): SummEval's
  12 abstractive systems, the paper's three judges, four aspects, against the expert ranking; and the
  misspecified simulation with known truth.

    python benchmarks/validity.py [--seeds 5] [--no-simplex]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from orchestrator.offline.log_groups import build_groups
from orchestrator.offline.replay import replay_group
from orchestrator.poe import PoEConfig, rank_intervals
from orchestrator.raee import outcomes, raee_estimate
from orchestrator.records import load_log, load_responses
from orchestrator.simulate import JUDGE_PRESETS, simulate_dataset

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
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


def simplex_rows(aspects: list[str], replicates: int) -> list[tuple[str, str, dict]]:
    """Simplex and bootstrap rank intervals vs experts on SummEval (paper's judges) and on the
    misspecified simulation."""
    import importlib.util

    from orchestrator.offline.fit_simplex import load_absolute_judgments, truth_scores
    from orchestrator.simplex import SimplexSettings, build_score_data, fit_simplex
    from orchestrator.simplex import baselines as B
    from orchestrator.simplex.simulate import from_model, misspecified

    spec = importlib.util.spec_from_file_location("make_likert", ROOT / "examples" / "make_summeval_likert.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    judges = ["gpt-4-0314", "gpt-3.5-turbo-0301", "llama-2-70b-chat-hf"]
    bayes_by: dict = {None: [], 1.0: []}
    spearman_by: dict = {None: [], 1.0: []}
    boot: list = []
    rhats: dict = {None: [], 1.0: []}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for aspect in aspects:
            log = Path(tmp) / f"{aspect}.jsonl"
            module.convert(SHARED / "summeval", aspect, log)
            records, _ = load_absolute_judgments(log, log=True)
            data = build_score_data([r for r in records if r[0] in judges], levels=5)
            truth = truth_scores(SHARED / "summeval" / "responses.jsonl", aspect)
            t = np.array([truth[c] for c in data.candidates])
            for weight in (None, 1.0):
                fit = fit_simplex(data, SimplexSettings(count_weight=weight))
                ranks = fit.ranks()
                lo, hi, true_rank = ranks.lower.numpy(), ranks.upper.numpy(), B.ranks(t)
                bayes_by[weight].append(((lo <= true_rank) & (true_rank <= hi)).tolist())
                spearman_by[weight].append(spearmanr(fit.expected_mean, t).statistic)
                rhats[weight].append(fit.rhat["expected_centred"])
            boot.append(B.evaluate(B.bootstrap_average(data.item_scores()), t)["coverage"])
    for weight, label in ((None, "default fit: counts / design effect"), (1.0, "the paper's likelihood, every score independent")):
        flat = [x for row in bayes_by[weight] for x in row]
        rows.append(
            (
                f"simplex rank intervals ({label})",
                f"SummEval, 12 systems × 4 aspects, paper's 3 judges, vs experts (Spearman {np.mean(spearman_by[weight]):.3f}; "
                f"R-hat of the ranking {min(rhats[weight]):.3f}–{max(rhats[weight]):.3f})",
                {"n": len(flat), "coverage": float(np.mean(flat))},
            )
        )
    rows.append(
        ("bootstrap rank intervals (absolute campaigns)", "SummEval, same data", {"n": 12 * len(aspects), "coverage": float(np.mean(boot))})
    )
    for name, make in (("misspecified", misspecified), ("drawn from the model", from_model)):
        cover: dict = {None: [], 1.0: []}
        rho: dict = {None: [], 1.0: []}
        rhat_sim: dict = {None: [], 1.0: []}
        cover_boot = []
        for rep in range(replicates):
            data, truth = make(5, 12, 5, 100, seed=1000 + rep)
            true_rank = B.ranks(truth)
            for weight in (None, 1.0):
                fit = fit_simplex(data, SimplexSettings(seed=rep, count_weight=weight))
                ranks = fit.ranks()
                lo, hi = ranks.lower.numpy(), ranks.upper.numpy()
                cover[weight].extend(((lo <= true_rank) & (true_rank <= hi)).tolist())
                rho[weight].append(spearmanr(fit.expected_mean, truth).statistic)
                rhat_sim[weight].append(fit.rhat["expected_centred"])
            cover_boot.append(B.evaluate(B.bootstrap_average(data.item_scores(), seed=rep), truth)["coverage"])
        for weight, label in ((None, "default fit"), (1.0, "paper's likelihood")):
            rows.append(
                (
                    f"simplex rank intervals ({label})",
                    f"{name} simulation, {replicates} × 12 candidates, known truth (Spearman {np.mean(rho[weight]):.3f}; "
                    f"R-hat of the ranking ≤ {max(rhat_sim[weight]):.3f})",
                    {"n": len(cover[weight]), "coverage": float(np.mean(cover[weight]))},
                )
            )
        rows.append(
            (
                "bootstrap rank intervals (absolute campaigns)",
                f"{name} simulation",
                {"n": 12 * replicates, "coverage": float(np.mean(cover_boot))},
            )
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--no-simplex", action="store_true")
    ap.add_argument("--replicates", type=int, default=5, help="simplex simulation replicates per generator")
    ap.add_argument("--aspects", nargs="+", default=["coherence", "consistency", "fluency", "relevance"])
    args = ap.parse_args()
    started = time.perf_counter()
    table: list[tuple[str, str, dict]] = []
    r = poe_coverage(GPT35 / "coherence.log.jsonl", GPT35 / "responses.jsonl", "coherence", "global", 150, args.seeds, "permutation")
    table.append(
        (
            "PoE rank intervals",
            f"GPT-3.5 SummEval verdicts, global, 150 calls, vs the judge's all-pairs ranking (vs experts {r['coverage_truth']:.2f})",
            r,
        )
    )
    r = poe_coverage(QWEN_LOG, SHARED / "summeval" / "responses.jsonl", "coherence", "per_prompt", 60, args.seeds, "permutation")
    table.append(
        (
            "PoE rank intervals",
            f"embedded Qwen log, 3 articles × 16, 60 calls each, vs its all-pairs ranking (vs experts {r['coverage_truth']:.2f})",
            r,
        )
    )
    with tempfile.TemporaryDirectory() as tmp:
        r = poe_simulated(Path(tmp), args.seeds, 40)
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
    if not args.no_simplex:
        table.extend(simplex_rows(args.aspects, args.replicates))
    print("\n| interval | data | intervals | coverage (95% nominal) | mean width |\n|---|---|---|---|---|")
    for name, data, r in table:
        width = f"{r['width']:.2f}" if "width" in r else "—"
        print(f"| {name} | {data} | {r['n']} | **{r['coverage']:.3f}** | {width} |")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
