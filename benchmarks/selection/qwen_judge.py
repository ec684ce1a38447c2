"""The embedded Qwen judge on its recorded exhaustive SummEval log (benchmarks/data): replay of every
selection strategy (k90, all-pairs Spearman vs the expert coherence scores), position bias and
calibration.

    python -m benchmarks.selection.qwen_judge [--log benchmarks/data/summeval-qwen1.5b-coherence.jsonl]
        [--responses examples/summeval-sample/responses.jsonl or ../shared/data/summeval/responses.jsonl]

Position bias: mean P(first-shown better) over all ordered pairs (0.5 = none). Calibration: ECE of
P(first better) against the experts' order (pairs with equal expert scores left out), raw and after
permutation debiasing, and after a fitted temperature (PoE Appendix B).
"""

import json

import numpy as np

from benchmarks import harness
from benchmarks.harness import ROOT, SHARED_DATA
from orchestrator.offline.replay.replay import build_groups, replay
from orchestrator.poe import expected_calibration_error, fit_temperature, permutation_debias, temperature_scale
from orchestrator.records.log import load_log, load_responses

STRATEGIES = ["reorder", "variance", "min_uncertainty", "eps:0.5", "diverse", "random"]


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--log", default=str(ROOT / "benchmarks/data/summeval-qwen1.5b-coherence.jsonl"))
    ap.add_argument("--responses", default=str(SHARED_DATA / "summeval/responses.jsonl"))
    ap.add_argument("--seeds", type=harness.count, default=5)
    args = ap.parse_args()
    records = load_log(args.log)
    rows = load_responses(args.responses)
    truth = {(r.prompt_id, r.candidate): r.human["coherence"] for _, r in rows}
    pairwise = [r for _, r in records if r.kind == "pairwise"]
    n_abs = sum(r.kind == "absolute" for _, r in records)
    prompts = sorted({r.prompt_id for r in pairwise})
    print(f"log: {len(pairwise)} pairwise + {n_abs} absolute judgments, {len(prompts)} prompts, judge {pairwise[0].judge}")

    p_first = np.array([r.prob_first() for r in pairwise])
    print(
        f"position bias: mean P(first better) = {p_first.mean():.3f} over {len(p_first)} ordered pairs; "
        f"first preferred (p>0.5) in {np.mean(p_first > 0.5):.1%}"
    )
    by_pair = {(r.prompt_id, *r.candidates): r.prob_first() for r in pairwise}
    raw_p, raw_y, deb_p, deb_y = [], [], [], []
    for (pid, a, b), p in by_pair.items():
        ta, tb = truth[(pid, a)], truth[(pid, b)]
        if ta == tb:
            continue
        raw_p.append(p)
        raw_y.append(float(ta > tb))
        if a < b and (pid, b, a) in by_pair:
            deb_p.append(float(permutation_debias(p, by_pair[(pid, b, a)])))
            deb_y.append(float(ta > tb))
    raw_p, raw_y, deb_p, deb_y = map(np.asarray, (raw_p, raw_y, deb_p, deb_y))
    t_raw = fit_temperature(raw_p, raw_y)
    t_deb = fit_temperature(deb_p, deb_y)
    print(f"calibration vs expert order ({len(raw_p)} ordered pairs, {len(deb_p)} debiased pairs):")
    print(f"  accuracy raw {np.mean((raw_p > 0.5) == raw_y):.3f}, debiased {np.mean((deb_p > 0.5) == deb_y):.3f}")
    print(
        f"  ECE raw {expected_calibration_error(raw_p, raw_y):.3f} → T={t_raw:.2f}: "
        f"{expected_calibration_error(temperature_scale(raw_p, t_raw), raw_y):.3f}"
    )
    print(
        f"  ECE debiased {expected_calibration_error(deb_p, deb_y):.3f} → T={t_deb:.2f}: "
        f"{expected_calibration_error(temperature_scale(deb_p, t_deb), deb_y):.3f}"
    )

    groups = build_groups(records, rows, "coherence", "per_prompt")
    results = {}
    print(f"\nreplay per strategy ({len(groups)} prompts × 16 candidates, {args.seeds} seeds; k90 = calls to 90% of all-pairs Spearman)")
    print(f"{'strategy':<16} {'debias':<12} {'all-pairs ρ':>11} {'k90':>14} {'k_self90':>14} {'ρ@30':>6} {'ρ@60':>6}")
    for debias in ("none", "permutation"):
        for strategy in STRATEGIES:
            rep = replay(groups, strategy, debias=debias, seeds=args.seeds)
            curve = rep.curve

            def at(k):  # Spearman after the last update with at most k calls
                return [sp for kk, sp, _ in curve if kk <= k][-1]

            k90 = f"{rep.k90:.1f} ± {rep.k90_sd:.1f}" if rep.k90 is not None else "n/a"
            kself = f"{rep.k_self90:.1f} ± {rep.k_self90_sd:.1f}" if rep.k_self90 is not None else "n/a"
            print(
                f"{strategy:<16} {debias:<12} {rep.full_spearman:>11.3f} {k90:>14} {kself:>14} {at(30):>6.3f} {at(60):>6.3f}"
                + (f"  ({rep.k90_undefined} prompts without k90)" if rep.k90_undefined else "")
            )
            results[f"{strategy}/{debias}"] = rep.to_json()
            if strategy == "reorder" and debias == "none":
                per_prompt = ", ".join(f"{g.key[9:17]} {g.full_spearman:+.3f}" for g in rep.groups)
    print(f"all-pairs Spearman per prompt: {per_prompt}  (diverse = reorder at batch 1)")
    with_abs = replay(groups, "reorder", with_absolute=True, seeds=args.seeds)
    print(
        f"{'reorder+absolute':<16} {'none':<12} {with_abs.full_spearman:>11.3f} "
        f"{(f'{with_abs.k90:.1f} ± {with_abs.k90_sd:.1f}' if with_abs.k90 is not None else 'n/a'):>14}"
    )
    out = ROOT / "benchmarks" / "out"
    out.mkdir(exist_ok=True)
    (out / "qwen_judge.json").write_text(json.dumps(results))


if __name__ == "__main__":
    harness.run(main, __file__)
