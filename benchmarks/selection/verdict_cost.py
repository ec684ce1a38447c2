"""What a verdict costs (issue #62): paid completions to reach the log-probability judge's Spearman
with its own full-data ranking at 100 and 200 calls, for a judge without log-probabilities that
returns k sampled verdicts per call (fixed k) or one per call with the selection deciding where the
next verdict goes — a new pair or one more verdict of a pair already asked (adaptive, up to a
ceiling of R verdicts per shown order and prompt).

Data and derivation as in `verdict_judges.py`: the embedded Qwen 1.5B judge's exhaustive SummEval
logs (6 articles × 16 systems, 1,440 ordered pairs, global scope, `--debias permutation`,
`lookahead`, batch 10); each judgment becomes k categorical draws from its logged option
probabilities (fixed k: one record of their shares, `method = "samples"`, k completions paid), or R
single draws stored as repeats 0..R−1 (`method = "verdict"`: the replay's judge samples adaptively
up to R, each request one completion). Budgets and the figures count paid completions. Curves are
the mean Spearman over draw seeds; a target is reached where that mean first reaches it.

The log-probability row is the judge itself: every call returns the probability that the verdicts
are drawn from. The **oracle allocations** know that probability ``p`` of every judgment before
asking and give each judgment its own number of verdicts, ``k = clip(round(c·√v), 1, ceiling)`` with
``v = 1 − Σ p_o²`` (the chance that two verdicts disagree), for several ``c``: where the judge is
sure one verdict tells as much as its probability, where it is unsure several are needed to read
it (the precision model ``k/(kτ² + v)`` of a judgment of ``k`` verdicts, ``τ²`` the judgment's own
scatter about the scores, gives ``k ∝ √v`` at the optimum). The selection still chooses the
pairs; each judgment pays its ``k``. Measured (2026-11-27), they do no better than fixed k: knowing
each judgment's probability does not tell which judgments the ranking needs, so they are a bound on
nothing. The bound is `verdict_oracle.py`: an oracle that also knows the scores and chooses both the
judgments and their verdicts gains nothing over its own best fixed k on this judge (1.00×, 0.99×).

    python -m benchmarks.selection.verdict_cost [--seeds 10] [--ks 1,2,3,4,5] [--ceiling 8] [--oracle-c 2,4,6,8]
"""

from __future__ import annotations

import os
import time

import numpy as np

os.environ.setdefault("ORCHESTRATOR_JUDGMENT_CACHE", "off")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks import harness  # noqa: E402
from benchmarks.selection.verdict_judges import CONFIG, as_verdicts, one_group, pairwise_records, reference_scores  # noqa: E402
from orchestrator.offline.replay.replay import replay_group  # noqa: E402
from orchestrator.records.log import LogRecord  # noqa: E402

STEP = 20


def as_repeats(records: list[LogRecord], ceiling: int, seed: int) -> list[LogRecord]:
    """Each judgment as ``ceiling`` single verdicts (repeats 0..ceiling−1) drawn from its
    probabilities; repeat 0 is the one-verdict log of the same seed (paired with fixed k = 1)."""
    rng = np.random.default_rng(seed + 7919)
    out = []
    for record, first in zip(records, as_verdicts(records, 1, seed)):
        options = list(record.probs)
        p = np.asarray([record.probs[o] for o in options], dtype=float)
        picks = rng.choice(len(options), size=ceiling - 1, p=p / p.sum())
        out.append(first.model_copy(update={"key": f"{record.key}-0"}))
        for r, pick in enumerate(picks, 1):
            probs = {o: float(k == pick) for k, o in enumerate(options)}
            out.append(first.model_copy(update={"probs": probs, "repeat": r, "key": f"{record.key}-{r}"}))
    return out


def as_oracle(records: list[LogRecord], c: float, ceiling: int, seed: int) -> list[LogRecord]:
    """Each judgment as ``k = clip(round(c·√v), 1, ceiling)`` verdicts drawn from its probabilities,
    ``v = 1 − Σ p²`` known to the oracle (module docstring): one record of their shares paying ``k``."""
    rng = np.random.default_rng(seed)
    out = []
    for record in records:
        options = list(record.probs)
        p = np.asarray([record.probs[o] for o in options], dtype=float)
        p = p / p.sum()
        k = int(np.clip(round(c * np.sqrt(max(1.0 - float(p @ p), 0.0))), 1, ceiling))
        counts = rng.multinomial(k, p)
        probs = {o: n / k for o, n in zip(options, counts)}
        out.append(LogRecord.model_validate({**record.model_dump(), "probs": probs, "method": "samples", "samples": k}))
    return out


def spearman_curve(records: list[LogRecord], reference: np.ndarray, budget: int, seed: int) -> np.ndarray:
    """Spearman with the reference after every ``STEP`` paid completions, up to ``budget``."""
    group = one_group(records)
    result = replay_group(
        group, "lookahead", CONFIG, scope="global", debias="permutation", batch=10, budget=budget, seed=seed, reference=reference
    )
    calls = np.array([c[0] for c in result.curve])
    rho = np.array([c[2] for c in result.curve])
    grid = np.arange(STEP, budget + 1, STEP)
    return np.array([rho[calls <= g][-1] if np.any(calls <= g) else 0.0 for g in grid])


def first(curve: np.ndarray, target: float) -> int | None:
    hit = np.nonzero(curve >= target)[0]
    return int((hit[0] + 1) * STEP) if hit.size else None


def main() -> None:
    p = harness.parser(__doc__, quick="2 draw seeds, k = 1 and 3, ceiling 4, budgets to 1,200 completions")
    p.add_argument("--seeds", type=harness.count, default=10)
    p.add_argument("--ks", default="1,2,3,4,5")
    p.add_argument("--oracle-c", default="2,4,6,8", help="the oracle allocations' c (module docstring); empty: none")
    p.add_argument("--ceiling", type=harness.count, default=8)
    p.add_argument("--budget", type=harness.count, default=4400, help="paid completions per replay")
    args = p.parse_args()
    seeds, ks, ceiling, budget = (
        (2, [1, 3], 4, 1200) if args.quick else (args.seeds, [int(k) for k in args.ks.split(",")], args.ceiling, args.budget)
    )
    oracle_cs = [] if args.quick else [float(c) for c in args.oracle_c.split(",") if c.strip()]
    records = pairwise_records()
    reference = reference_scores(records)
    logprob = np.mean([spearman_curve(records, reference, 400, s) for s in range(3)], axis=0)
    targets = {100: float(logprob[100 // STEP - 1]), 200: float(logprob[200 // STEP - 1])}
    print(f"log-probability judge: Spearman with its own full-data ranking {targets[100]:.3f} at 100 calls, {targets[200]:.3f} at 200\n")
    rows: dict[str, np.ndarray] = {}
    for k in ks:
        t0 = time.time()
        k_budget = min(budget, 1440 * k)  # (the log holds 1,440 calls: k completions each)
        rows[f"fixed k = {k}"] = np.mean(
            [spearman_curve(as_verdicts(records, k, 1000 + s), reference, k_budget, s) for s in range(seeds)], axis=0
        )
        print(f"  fixed k = {k} done ({time.time() - t0:.0f} s)", flush=True)
    t0 = time.time()
    adaptive_budget = min(budget, 1440 * ceiling)
    rows[f"adaptive, ceiling {ceiling}"] = np.mean(
        [spearman_curve(as_repeats(records, ceiling, 1000 + s), reference, adaptive_budget, s) for s in range(seeds)], axis=0
    )
    print(f"  adaptive done ({time.time() - t0:.0f} s)", flush=True)
    for c in oracle_cs:
        t0 = time.time()
        rows[f"oracle, k = c·√v with c = {c:g}"] = np.mean(
            [spearman_curve(as_oracle(records, c, ceiling, 1000 + s), reference, budget, s) for s in range(seeds)], axis=0
        )
        print(f"  oracle c = {c:g} done ({time.time() - t0:.0f} s)", flush=True)
    print()
    print("| judge | completions to the 100-call target | to the 200-call target | Spearman at 1,000 completions | best reached |")
    print("|---|---|---|---|---|")
    for name, curve in rows.items():
        at = curve[min(1000 // STEP, len(curve)) - 1]
        reached = [first(curve, targets[c]) for c in (100, 200)]
        cells = [str(x) if x is not None else f"> {len(curve) * STEP}" for x in reached]
        print(f"| {name} | {cells[0]} | {cells[1]} | {at:.3f} | {curve.max():.3f} |")
    print(
        f"| log-probabilities (the oracle: the probability each verdict is drawn from) | 100 calls | 200 calls | — | {logprob.max():.3f} |"
    )
    fixed = {c: [first(rows[n], targets[c]) for n in rows if n.startswith("fixed")] for c in (100, 200)}
    adaptive = {c: first(rows[f"adaptive, ceiling {ceiling}"], targets[c]) for c in (100, 200)}
    oracle = {c: [first(rows[n], targets[c]) for n in rows if n.startswith("oracle")] for c in (100, 200)}
    for c in (100, 200):
        best = min((x for x in fixed[c] if x is not None), default=None)
        if best is None or adaptive[c] is None:
            print(f"target at {c} calls: adaptive {adaptive[c]}, best fixed k {best}: no ratio (a target not reached within the budget)")
        else:
            print(f"target at {c} calls: adaptive / best fixed k = {adaptive[c]} / {best} = {adaptive[c] / best:.2f}")
        best_oracle = min((x for x in oracle[c] if x is not None), default=None)
        if oracle_cs and best is not None and best_oracle is not None:
            print(f"target at {c} calls: best oracle allocation / best fixed k = {best_oracle} / {best} = {best_oracle / best:.2f}")


if __name__ == "__main__":
    harness.run(main, __file__)
