"""Speed of the simplex model (issue #6 goal): K = 12, J = 5, M = 5, 100 questions,
4 × (1000 + 1000) NUTS iterations ≤ 60 s on 2 cores with max R-hat ≤ 1.01.

Times :func:`orchestrator.simplex.fit_simplex` as a user's `fit simplex` call runs it (JIT compile
included; a fresh process each time would add ~2 s of imports) on two data sets of that size —
the bundled SummEval log (real judges, coherence), data drawn from the model and the foreign-shape
test bed's ``mixed`` panel (issue #35) — for the default fit (ω = 1, β_max = 5), the default before
issue #35 (β_max integrated), the paper's base (ω = 0, β_max = 5) and the fully integrated fit (ω
and β_max over their hyperpriors). Reports R-hat of the ranked quantity (standardised expected
scores), of the expected scores, and the maximum over every parameter.

    python -m benchmarks.speed.simplex_speed [--seeds 2]
"""

from benchmarks import harness
from benchmarks.harness import ROOT
from orchestrator.offline.simplex.fit import load_absolute_judgments
from orchestrator.simplex import SimplexSettings, build_score_data, fit_simplex
from orchestrator.simplex.simulate import from_model, panel


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--log", default=str(ROOT / "examples/summeval-likert/coherence.log.jsonl"))
    ap.add_argument("--seeds", type=harness.count, default=2)
    args = ap.parse_args()
    records, _ = load_absolute_judgments(args.log, log=True)
    datasets = {
        "SummEval coherence (5 real judges)": build_score_data(records, levels=5),
        "drawn from the model": from_model(5, 12, 5, 100, seed=1)[0],
        "test bed, mixed panel (seed 107)": panel("mixed", seed=107, questions=100)[0],
    }
    variants = {
        "default: ω = 1, β_max = 5": dict(),
        "before #35: ω = 1, β_max ~ U(0, 20)": dict(beta_max=None),
        "base: ω = 0, β_max = 5": dict(omega=0.0, beta_max=5.0),
        "integrated: ω ~ U(0.1, 8), β_max ~ U(0, 20)": dict(omega=None, beta_max=None),
    }
    print(f"{'data':<36} {'fit':<44} {'seed':>4} {'seconds':>8} {'R-hat ranking':>13} {'expected':>9} {'max all':>8} {'div':>4}")
    for name, data in datasets.items():
        assert data.shape == (5, 12, 100, 5), data.shape
        for label, kw in variants.items():
            for seed in range(args.seeds):
                fit = fit_simplex(data, SimplexSettings(seed=seed, **kw))
                print(
                    f"{name:<36} {label:<44} {seed:>4} {fit.seconds:>8.1f} {fit.rhat['ranking']:>13.3f} "
                    f"{fit.rhat['expected']:>9.3f} {fit.max_rhat:>8.3f} {fit.divergences:>4}",
                    flush=True,
                )


if __name__ == "__main__":
    harness.run(main, __file__)
