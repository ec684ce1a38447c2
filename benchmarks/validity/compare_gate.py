"""Is mine better? The comparison gate's error rates and cost (issue #60), on data it was not tuned on.

1. **False decisions on AlpacaEval 2.0's real judgments** (``../shared/data/alpacaeval``: GPT-4-turbo's
   soft preferences of 37 models against one anchor on 805 instructions). Two models are compared
   through the anchor: on prompt ``j`` the outcome is ``X_j = (1 + y_aj − y_bj)/2`` (their win
   shares against the anchor), the prompts in a random order, a look after every prompt; the truth
   is the difference of their full-data win rates. Pairs: every pair whose true difference is
   below 5 points (the close ones, 0–1 points among them) and A/A comparisons — a model against
   itself, each side's outcome a separate verdict drawn from the same probability (one verdict per
   call: the verdict judges' case). A false decision: ``better`` or ``worse`` with the wrong sign or
   by less than the margin, ``equivalent`` with a true difference beyond the margin. Also with
   verdicts instead of probabilities on every pair (each ``y`` a draw), so the error rate is
   measured for verdict judges too.
2. **Power and cost on a simulated head-to-head judge** with a known truth: each prompt's outcome
   (both orders averaged) is 1, ½ or 0 with probabilities giving a true win rate of 50 + δ points
   (ties 30%). Against the fixed-size paired test a user would run instead — a two-sided z-test of
   the mean outcome at α, with the number of prompts that gives it 80% power at δ (stated) — the
   sequence looks after every prompt and stops at its decision or at 1.3× that number.

    python -m benchmarks.validity.compare_gate [--seeds 5] [--margin 0] [--power-runs 400]
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import norm

from benchmarks import harness
from benchmarks.leaderboards.common import load
from orchestrator.gate.designs import gate_decision
from orchestrator.gate.sequence import confidence_sequence, decide


def wrong(decision: str, truth: float, margin: float) -> bool:
    """Whether a decision contradicts the true difference (points)."""
    if decision == "better":
        return truth <= margin
    if decision == "worse":
        return truth >= -margin
    if decision == "equivalent":
        return abs(truth) >= margin
    return False


def alpaca_errors(y: np.ndarray, seeds: int, margin: float, alpha: float, verdicts: bool, rng0: int) -> dict:
    """False decisions over close pairs and A/A comparisons (module docstring, item 1)."""
    rates = np.nanmean(y, axis=1)
    models = range(len(y))
    pairs = [(a, b) for a in models for b in models if a < b and abs(rates[a] - rates[b]) * 100 < 5]
    counts = {"pairs": 0, "wrong": 0, "decided": 0, "aa": 0, "aa_wrong": 0, "close": 0, "close_wrong": 0}
    for seed in range(seeds):
        rng = np.random.default_rng(rng0 + seed)
        draws = (rng.random(y.shape) < np.nan_to_num(y)).astype(float) if verdicts else np.nan_to_num(y)
        for a, b in pairs + [(m, m) for m in models]:
            both = ~np.isnan(y[a]) & ~np.isnan(y[b])
            order = rng.permutation(np.nonzero(both)[0])
            if a == b:  # A/A: two independent verdicts from the same probabilities
                first = (rng.random(order.size) < y[a, order]).astype(float)
                second = (rng.random(order.size) < y[a, order]).astype(float)
                x, truth = (1 + first - second) / 2, 0.0
            else:
                x = (1 + draws[a, order] - draws[b, order]) / 2
                truth = 100 * float(np.mean(y[a, both] - y[b, both]))
            found = decide(confidence_sequence(x, alpha), margin)
            bad = wrong(found.decision, truth, margin)
            counts["pairs"] += 1
            counts["wrong"] += bad
            counts["decided"] += found.decision != "not yet known"
            if a == b:
                counts["aa"] += 1
                counts["aa_wrong"] += bad
            elif abs(truth) < 1:
                counts["close"] += 1
                counts["close_wrong"] += bad
    return counts


def fixed_size(delta: float, sd: float, alpha: float, power: float = 0.8) -> int:
    """Prompts a two-sided paired z-test at ``alpha`` needs for ``power`` at a true shift ``delta``."""
    return int(math.ceil(((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd / delta) ** 2))


def simulated_power(delta_points: float, runs: int, alpha: float, tie: float = 0.3) -> dict:
    """Module docstring, item 2."""
    mean = 0.5 + delta_points / 100
    win = mean - tie / 2  # P(1) + ½ P(½) = mean
    probs = np.array([1 - win - tie, tie, win])  # outcomes 0, ½, 1
    values = np.array([0.0, 0.5, 1.0])
    sd = math.sqrt(float(probs @ values**2 - (probs @ values) ** 2))
    n_fixed = fixed_size(delta_points / 100, sd, alpha)
    cap = int(1.3 * n_fixed)
    null = np.array([(1 - tie) / 2, tie, (1 - tie) / 2])  # the same ties, no difference
    step = np.log(probs / null)  # the log-likelihood ratio of one outcome, alternative vs null
    upper, lower = math.log((1 - 0.2) / (alpha / 2)), math.log(0.2 / (1 - alpha / 2))  # Wald's bounds: α/2 per side, β = 0.2
    rng = np.random.default_rng(7)
    used, right, fixed_right, sprt_used, sprt_right = [], 0, 0, [], 0
    for _ in range(runs):
        picks = rng.choice(3, size=cap, p=probs)
        x = values[picks]
        found = decide(confidence_sequence(x, alpha, horizon=cap), 0.0)  # its stakes sized for the cap, as a run's are
        used.append(found.at if found.decision != "not yet known" else cap)
        right += found.decision == "better"
        z = (x[:n_fixed].mean() - 0.5) / (x[:n_fixed].std(ddof=1) / math.sqrt(n_fixed))
        fixed_right += z > norm.ppf(1 - alpha / 2)
        llr = np.cumsum(step[picks])  # the oracle: Wald's SPRT, told the true alternative
        crossed = np.nonzero((llr >= upper) | (llr <= lower))[0]
        end = int(crossed[0]) if crossed.size else cap - 1
        sprt_used.append(end + 1)
        sprt_right += llr[end] >= upper
    return {
        "delta": delta_points,
        "n_fixed": n_fixed,
        "cap": cap,
        "power": right / runs,
        "fixed_power": fixed_right / runs,
        "mean_prompts": float(np.mean(used)),
        "ratio": float(np.mean(used)) / n_fixed,
        "max_ratio": max(used) / n_fixed,
        "sprt_power": sprt_right / runs,
        "sprt_ratio": float(np.mean(sprt_used)) / n_fixed,
    }


def through_product(runs: int, prompts: int, delta: float, alpha: float, seed: int = 3) -> dict:
    """The gate as a user runs it: ``orchestrator compare CONFIG --from-log LOG --json`` on a simulated
    head-to-head judge's log (both orders per prompt: the candidate's win probability 0.5 + δ/100 ±
    a per-prompt spread, the same in both orders), against :func:`decide` on the outcomes the run
    read. Counts runs whose decision differs, and false decisions (the truth is ``delta``)."""
    rng = np.random.default_rng(seed)
    out = {"runs": runs, "delta": delta, "same_decision": 0, "wrong": 0, "decided": 0, "prompts_used": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "prompts.jsonl").write_text("".join(json.dumps({"id": f"p{k}", "text": f"question {k}"}) + "\n" for k in range(prompts)))
        (folder / "responses.jsonl").write_text(
            "".join(
                json.dumps({"prompt_id": f"p{k}", "candidate": c, "text": f"{c} answers {k}"}) + "\n"
                for k in range(prompts)
                for c in ("mine", "shipped")
            )
        )
        for r in range(runs):
            win = np.clip(0.5 + delta / 100 + rng.normal(0, 0.25, prompts), 0.01, 0.99)
            with (folder / f"log{r}.jsonl").open("w") as log:
                for k in range(prompts):
                    for shown, p in ((["mine", "shipped"], win[k]), (["shipped", "mine"], 1 - win[k])):
                        log.write(
                            json.dumps(
                                {
                                    "kind": "pairwise",
                                    "judge": "sim",
                                    "prompt_id": f"p{k}",
                                    "candidates": shown,
                                    "probs": {"A": p, "B": 1 - p},
                                }
                            )
                            + "\n"
                        )
            config = folder / f"gate{r}.toml"
            config.write_text(
                f'name = "gate{r}"\nseed = {r}\nruns_dir = "{(folder / "runs").as_posix()}"\n[data]\nprompts = "{(folder / "prompts.jsonl").as_posix()}"\n'
                f'responses = "{(folder / "responses.jsonl").as_posix()}"\nscope = "global"\n[judging]\njudges = ["sim"]\n'
                f'pairwise_template = "poe-pairwise-noprefill"\n[compare]\ncandidate = "mine"\nbaseline = "shipped"\nalpha = {alpha}\n'
                f"[selection]\nbatch = 8\n"
            )
            (folder / "sim.toml").write_text('name = "sim"\nmodel = "openai/sim"\nprice_input_per_mtok = 0\nprice_output_per_mtok = 0\n')
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "orchestrator",
                    "compare",
                    str(config),
                    "--from-log",
                    str(folder / f"log{r}.jsonl"),
                    "--json",
                    "--no-cache",
                ],
                capture_output=True,
                text=True,
                env={**__import__("os").environ, "ORCHESTRATOR_JUDGES": str(folder)},
            )
            result = json.loads(done.stdout)
            order, looks = _order(result["run"])
            x = [0.5 * (win[int(p[1:])] + 1 - (1 - win[int(p[1:])])) for p in order]
            expected = gate_decision(
                np.array(x[: result["prompts_judged"]]),
                margin=0.0,
                alpha=alpha,
                design=result["design"],
                max_prompts=result["max_prompts"],
                looks=looks,
            )
            out["same_decision"] += expected.decision == result["decision"] and done.returncode == result["exit_code"]
            out["wrong"] += wrong(result["decision"], delta, 0.0)
            out["decided"] += result["decision"] != "not yet known"
            out["prompts_used"].append(result["prompts_judged"])
    out["mean_prompts"] = float(np.mean(out.pop("prompts_used")))
    return out


def _order(run: str) -> tuple[list[str], list[int]]:
    """The prompts a compare run judged, in the order it read them, and its looks (the prompts read
    by the end of each round: where a planned design decides)."""
    from orchestrator.records.config import RunConfig
    from orchestrator.run.planners.compare import comparison_order
    from orchestrator.store import open_run

    with open_run(run, write=False) as store:
        config = RunConfig.from_stored(store.config)
        rows = list(store.judgments())
        asked = {row.prompt_id for row in rows}
        order = [p for p in comparison_order(store.dataset(), "mine", "shipped", config.seed) if p in asked]
    last = {}
    for row in rows:
        last[row.prompt_id] = max(last.get(row.prompt_id, -1), row.round)
    rounds = sorted(set(last.values()))
    return order, [sum(1 for p in order if last[p] <= r) for r in rounds]


def main() -> None:
    p = harness.parser(__doc__, quick="1 seed, 100 power runs")
    p.add_argument("--seeds", type=harness.count, default=5)
    p.add_argument("--margin", type=float, default=0.0)
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--power-runs", type=harness.count, default=400)
    p.add_argument("--product-runs", type=harness.count, default=20, help="runs of `orchestrator compare --from-log` per row")
    args = p.parse_args()
    seeds, runs = (1, 100) if args.quick else (args.seeds, args.power_runs)
    _, y = load(harness.shared("alpacaeval"))
    print(
        f"AlpacaEval 2.0 through the anchor: {len(y)} models × {y.shape[1]} prompts, α = {args.alpha}, margin {args.margin} points, a look after every prompt\n"
    )
    print("| outcomes | comparisons (A/A; true d within ±1 point) | decided | false decisions | of A/A | of d within ±1 |")
    print("|---|---|---|---|---|---|")
    for verdicts in (False, True):
        c = alpaca_errors(y, seeds, args.margin, args.alpha, verdicts, 100)
        name = "one verdict per call" if verdicts else "probabilities (soft)"
        print(
            f"| {name} | {c['pairs']} ({c['aa']}; {c['close']}) | {c['decided'] / c['pairs']:.2f} | {c['wrong'] / c['pairs']:.4f} | "
            f"{c['aa_wrong'] / max(c['aa'], 1):.4f} | {c['close_wrong'] / max(c['close'], 1):.4f} |"
        )
    print("\nSimulated head-to-head judge (ties 30%), sequence capped at 1.3× the fixed test's prompts:\n")
    print(
        "| true difference (points) | fixed paired z-test: prompts for 80% power (its power) | sequence: power | mean prompts (× fixed) "
        "| most prompts (× fixed) | oracle SPRT told the truth: power, mean prompts (× fixed) |"
    )
    print("|---|---|---|---|---|---|")
    for delta in (3.0, 5.0, 10.0):
        s = simulated_power(delta, runs, args.alpha)
        print(
            f"| {delta:g} | {s['n_fixed']} ({s['fixed_power']:.2f}) | {s['power']:.2f} | {s['mean_prompts']:.0f} ({s['ratio']:.2f}×) | "
            f"{s['cap']} ({s['max_ratio']:.2f}×) | {s['sprt_power']:.2f}, {s['sprt_ratio']:.2f}× |"
        )
    product = args.product_runs if not args.quick else 4
    print(
        "\nThrough the command a user runs (`orchestrator compare CONFIG --from-log LOG --json`, a simulated judge, 300 prompts, "
        "the default design):\n"
    )
    print("| true difference (points) | runs | same decision and exit code as the function | false decisions | decided | mean prompts |")
    print("|---|---|---|---|---|---|")
    for delta in (0.0, 10.0):
        t = through_product(product, 300, delta, args.alpha)
        print(f"| {delta:g} | {t['runs']} | {t['same_decision']} | {t['wrong']} | {t['decided']} | {t['mean_prompts']:.0f} |")
    print(
        "\nThe oracle is Wald's sequential probability ratio test between no difference and the true one, α/2 per side "
        "and β = 0.2: among all tests with these error rates it needs the fewest prompts on average (Wald & Wolfowitz "
        "1948), so an average below its ratio is beyond any method"
    )


if __name__ == "__main__":
    harness.run(main, __file__)
