"""The simplex model on SummEval next to the paper's Table 1 baselines (simplex paper §6.2, App. D.3.1).

Data: ``../shared/data/summeval/judge_likert.jsonl`` — 1–5 Likert scores of the 12 abstractive
systems on 100 articles by LLM judges ("rts" prompt; unparsed scores read from the response text
where it states one, as ``examples/make_summeval_likert.py`` does) — and the expert ratings in
``responses.jsonl`` (truth: each system's mean expert score; its rank, 1 = best).

Judge sets: the paper's three (GPT-4-0314, GPT-3.5-turbo-0301, Llama-2-70B-chat; App. D.2) and all
five (adding Llama-2-7B/13B-chat). Methods: the Bayesian model as `fit simplex` runs it (default
fit ω = 1, β_max = 5, with its fallback; the fit with β_max integrated, the default before issue
#35; with ``--integrated-omega`` ω integrated too), single judge (mean over the judges of each judge's own
ranking quality), simple average, bootstrap of the average, Bradley–Terry (Rao–Kupper) from
score-derived pairs. Metrics: Spearman with the expert ranking; coverage = share of systems whose
true rank lies in the method's 95% interval (point methods: share ranked exactly right).

    python -m benchmarks.validity.simplex_summeval [--aspects coherence ...] [--sweep] [--integrated-omega]
"""

import importlib.util
import tempfile
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.harness import ROOT, SHARED_DATA
from orchestrator.offline.simplex.fit import load_absolute_judgments, summarise, truth_scores
from orchestrator.simplex import SimplexSettings, build_score_data, fit_or_fallback, sensitivity_sweep
from orchestrator.simplex import baselines as B

SHARED = SHARED_DATA / "summeval"
PAPER_JUDGES = ["gpt-4-0314", "gpt-3.5-turbo-0301", "llama-2-70b-chat-hf"]
PAPER_TABLE1 = {
    "Bayesian": (0.888, 0.917),
    "Bootstrap": (0.885, 0.729),
    "Bradley-Terry": (0.902, 0.771),
    "Simple Average": (0.885, 0.271),
    "Single Judge": (0.787, 0.285),
}


def _converter():
    spec = importlib.util.spec_from_file_location("make_likert", ROOT / "examples" / "make_summeval_likert.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.convert


def bayesian(data, truth, settings):
    fit = fit_or_fallback(data, settings)  # as `fit simplex` runs it
    report = summarise(fit, data, source="summeval", truth=truth)
    return report.spearman_vs_truth, report.coverage_vs_truth, fit


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--aspects", nargs="+", default=["coherence", "consistency", "fluency", "relevance"])
    ap.add_argument("--sweep", action="store_true", help="also the sensitivity sweep on the first aspect")
    ap.add_argument("--integrated-omega", action="store_true", help="also the fit with ω and β_max integrated (Table 1's)")
    args = ap.parse_args()
    convert = _converter()
    table: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for aspect in args.aspects:
            log = Path(tmp) / f"{aspect}.jsonl"
            n, recovered, dropped = convert(SHARED, aspect, log)
            records, _ = load_absolute_judgments(log, log=True)
            truth = truth_scores(SHARED / "responses.jsonl", aspect)
            for judges_name, judges in (("paper's 3 judges", PAPER_JUDGES), ("all 5 judges", None)):
                recs = [r for r in records if judges is None or r[0] in judges]
                data = build_score_data(recs, levels=5)
                t = np.array([truth[c] for c in data.candidates])
                scores = data.item_scores()
                rows = {}
                rho, cov, fit = bayesian(data, truth, SimplexSettings())
                used = "" if fit.fallback_from is None else f", FALLBACK (asked R-hat {fit.fallback_from['rhat_ranking']:.3f})"
                rows["Bayesian, default (ω = 1, β_max = 5)"] = (
                    rho,
                    cov,
                    f"R-hat ranking {fit.rhat['ranking']:.3f}, {fit.seconds:.0f} s{used}",
                )
                rho, cov, fit = bayesian(data, truth, SimplexSettings(beta_max=None))
                used = "" if fit.fallback_from is None else f", FALLBACK (asked R-hat {fit.fallback_from['rhat_ranking']:.3f})"
                rows["Bayesian, β_max ~ U(0, 20) (before)"] = (
                    rho,
                    cov,
                    f"R-hat ranking {fit.rhat['ranking']:.3f}, {fit.seconds:.0f} s{used}",
                )
                if args.integrated_omega:
                    rho, cov, fit = bayesian(data, truth, SimplexSettings(omega=None, beta_max=None))
                    omegas = ",".join(f"{c['omega']:.2f}" for c in (fit.fallback_from or {}).get("chains", fit.chains))
                    rows["Bayesian (ω and β_max integrated)"] = (rho, cov, f"R-hat ranking {fit.rhat['ranking']:.3f}, ω per chain {omegas}")
                singles = [B.evaluate(B.MethodResult(j, B.judge_means(scores)[i]), t) for i, j in enumerate(data.judges)]
                rows["Single judge (mean over judges)"] = (
                    float(np.mean([s["spearman"] for s in singles])),
                    float(np.mean([s["coverage"] for s in singles])),
                    "per judge " + " ".join(f"{s['spearman']:.2f}" for s in singles),
                )
                for method in (
                    B.MethodResult("Simple average", B.simple_average(scores)),
                    B.bootstrap_average(scores),
                    B.bradley_terry(scores),
                ):
                    ev = B.evaluate(method, t)
                    rows[method.name] = (ev["spearman"], ev["coverage"], "")
                print(
                    f"\n{aspect} — {judges_name} ({data.hard_counts.sum():.0f} scores; {recovered} read from the text, {dropped} unscored)"
                )
                print(f"  {'method':<38} {'Spearman':>8} {'coverage':>8}")
                for name, (rho, cov, note) in rows.items():
                    print(f"  {name:<38} {rho:>8.3f} {cov:>8.3f}  {note}")
                    table.setdefault((judges_name, name), []).append((rho, cov))
            if args.sweep and aspect == args.aspects[0]:
                data = build_score_data(records, levels=5)
                base, sweep = sensitivity_sweep(data, SimplexSettings())
                print(
                    f"\n  sensitivity on {aspect} (all 5 judges), Spearman with the base fit ω = 0, β_max = 5 "
                    "(and with the expert ranking):"
                )
                t = np.array([truth[c] for c in data.candidates])
                from scipy.stats import spearmanr

                for s in sweep:
                    name = "ω" if s.parameter == "omega" else "β_max"
                    print(
                        f"    {name:>5} = {s.value:<4g} vs base {s.spearman:.3f}   vs truth "
                        f"{spearmanr(s.expected, t).statistic:.3f}   R-hat ranking {s.rhat_ranking:.3f} "
                        f"(all {s.max_rhat:.3f})   {s.seconds:.0f} s"
                    )
    print(f"\nmean over {len(args.aspects)} aspect(s):")
    for judges_name in ("paper's 3 judges", "all 5 judges"):
        print(f"  {judges_name}")
        for (jn, name), values in table.items():
            if jn == judges_name:
                arr = np.array(values)
                print(f"    {name:<38} Spearman {arr[:, 0].mean():.3f}   coverage {arr[:, 1].mean():.3f}")
    print("  paper's Table 1, SummEval: " + "; ".join(f"{k} {v[0]:.3f}/{v[1]:.3f}" for k, v in PAPER_TABLE1.items()))


if __name__ == "__main__":
    harness.run(main, __file__)
