"""A judge that states its confidence (issue #62 item 4): what the stated confidence is worth taken at
face value, ignored, or read through the product's calibration on the judge's own repeated verdicts.

Data: the embedded Qwen 1.5B judge's exhaustive SummEval logs (as in `verdict_judges.py`). The judge
without log-probabilities is derived from them: every ask of a judgment is one categorical draw ``v``
from its logged option probabilities ``q``, and the judge *states* a confidence that is monotone in its
own probability of ``v`` but overconfident and coarse, as verbalised confidence is:
``c = 0.5 + 0.5 · q_v^0.3`` plus N(0, 0.03) noise, clipped to [0.5, 1] and rounded to 5 %.
Each judgment is asked up to ``--ceiling`` times (repeats, `sampling = "adaptive"`: the selection
decides where the next verdict goes).

Three readings of the same draws, replayed through the product's engine (global scope, `--debias
permutation`, `lookahead`, batch 10; budgets in paid completions):
- **verdicts**: the stated confidence dropped (one-hot verdicts, fitted as counts);
- **face value**: ``{v: c, other: 1 − c}`` read as if the judge had stated a probability (no method);
- **calibrated**: the product's reading (`orchestrator/poe/stated.py`): ``π(c)`` fitted on the judge's
  own repeated verdicts, used once 20 scored verdicts exist.

Figures per budget: coverage of the judge's own full-data ranking (the log-probability fit on all 1,440
judgments) by the 95% rank intervals, their mean width, Spearman with it; and, for the calibrated
reading, the calibration's mean absolute error against the truth E[q_v | c] on the draws.

    python -m benchmarks.selection.stated_confidence [--seeds 5] [--budgets 100,400] [--ceiling 3]
"""

from __future__ import annotations

import os
import time

import numpy as np

os.environ.setdefault("ORCHESTRATOR_JUDGMENT_CACHE", "off")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks import harness  # noqa: E402
from benchmarks.selection.verdict_judges import coverage_over_seeds, pairwise_records, reference_scores  # noqa: E402
from orchestrator.poe.stated import fit_calibration  # noqa: E402
from orchestrator.records.log import LogRecord  # noqa: E402

READINGS = ("verdicts", "face value", "calibrated")


def stated(q_v: float, rng: np.random.Generator) -> float:
    """What the derived judge says of a verdict it gives with probability ``q_v``."""
    c = 0.5 + 0.5 * q_v**0.3 + rng.normal(0.0, 0.03)
    return float(np.round(np.clip(c, 0.5, 1.0) * 20) / 20)


def stating_judge(records: list[LogRecord], ceiling: int, seed: int) -> tuple[list[LogRecord], list[tuple[float, float]]]:
    """Every judgment as ``ceiling`` asks (repeats 0..ceiling−1), each a drawn verdict with its stated
    confidence; also ``(stated, q_v)`` of every ask, the truth a calibration should recover."""
    rng = np.random.default_rng(seed)
    out, truth = [], []
    for record in records:
        options = list(record.probs)
        p = np.asarray([record.probs[o] for o in options], dtype=float)
        p = p / p.sum()
        for r in range(ceiling):
            pick = int(rng.choice(len(options), p=p))
            c = stated(float(p[pick]), rng)
            truth.append((c, float(p[pick])))
            out.append(
                LogRecord.model_validate(
                    {
                        **record.model_dump(),
                        "probs": {o: float(k == pick) for k, o in enumerate(options)},
                        "method": "verdict",
                        "samples": 1,
                        "stated": c,
                        "repeat": r,
                        "key": f"{record.key}-{r}",
                    }
                )
            )
    return out, truth


def reading(records: list[LogRecord], how: str) -> list[LogRecord]:
    if how == "verdicts":
        return [r.model_copy(update={"stated": None}) for r in records]
    if how == "face value":
        out = []
        for r in records:
            pick = max(r.probs, key=lambda o: r.probs[o])
            probs = {o: (r.stated if o == pick else (1 - r.stated) / (len(r.probs) - 1)) for o in r.probs}
            out.append(r.model_copy(update={"probs": probs, "method": None, "samples": None, "stated": None}))
        return out
    return records


def calibration_error(truth: list[tuple[float, float]]) -> float:
    """Mean |π(c) − E[q_v | c]| over the draws, π fitted on the draws' own agreement (the oracle's
    reading of what each stated level is worth: the mean q_v at that level)."""
    c = np.array([t[0] for t in truth])
    q = np.array([t[1] for t in truth])
    # the calibration sees agreement draws, not q: one other verdict per ask agrees with probability q_v
    agree = (np.random.default_rng(0).random(len(q)) < q).astype(float)
    fitted = fit_calibration(c, agree, np.ones_like(c))
    assert fitted is not None
    errors = [abs(fitted.probability(level) - q[c == level].mean()) for level in np.unique(c)]
    weights = [np.sum(c == level) for level in np.unique(c)]
    return float(np.average(errors, weights=weights))


def measure(records, reference, how: str, budget: int, seeds: int, ceiling: int) -> dict[str, float]:
    return coverage_over_seeds(lambda seed: reading(stating_judge(records, ceiling, 2000 + seed)[0], how), reference, budget, seeds)


def main() -> None:
    p = harness.parser(__doc__, quick="2 draw seeds, budget 200")
    p.add_argument("--seeds", type=harness.count, default=5)
    p.add_argument("--budgets", default="100,400")
    p.add_argument("--ceiling", type=harness.count, default=3)
    args = p.parse_args()
    seeds, budgets = (2, [200]) if args.quick else (args.seeds, [int(b) for b in args.budgets.split(",")])
    records = pairwise_records()
    reference = reference_scores(records)
    _, truth = stating_judge(records, args.ceiling, 2000)
    error = calibration_error(truth)
    mean_stated, mean_q = np.mean([t[0] for t in truth]), np.mean([t[1] for t in truth])
    print(
        f"{len(records)} judgments × {args.ceiling} asks; the derived judge states {mean_stated:.2f} on average for verdicts "
        f"it gives with probability {mean_q:.2f}; the calibration's mean error against E[q_v | c]: {error:.3f}\n"
    )
    print("| reading | completions | coverage of the judge's own ranks | mean width (ranks of 16) | Spearman with it |")
    print("|---|---|---|---|---|")
    figures = []
    for how in READINGS:
        for budget in budgets:
            t0 = time.time()
            now = measure(records, reference, how, budget, seeds, args.ceiling)
            print(f"| {how} | {budget} | {now['coverage']:.3f} | {now['width']:.1f} | {now['spearman']:.3f} |", flush=True)
            figures.append({"reading": how, "budget": budget, **now, "seconds": round(time.time() - t0, 1)})
    print(f"\n{seeds} draw seeds × 16 systems per cell; stated {mean_stated:.2f} against {mean_q:.2f} repeated")


if __name__ == "__main__":
    harness.run(main, __file__)
