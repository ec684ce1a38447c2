"""AlpacaEval's length-controlled win rate through the product (issue #33, "must show").

Writes ``../shared/data/alpacaeval/annotations.jsonl`` as a soft reference-anchored judgment log
(as ``benchmarks/leaderboards/alpacaeval_leaderboard.py`` does) and a responses file of placeholder texts of
the recorded lengths (the data set keeps lengths, not texts; a placeholder is ``x`` repeated, so two
answers of one model are the same text only when they have the same length), runs

    orchestrator fit raee --log LOG --responses RESPONSES --control length --soft --json

as a user would, and compares ``win_rate_controlled`` with the official
``length_controlled_winrate`` of ``leaderboard.csv``: Spearman, largest and mean absolute
difference, how often the official figure lies in the product's 95% interval, the raw win rate's
Spearman with the official LC column (what a user gets without control), and the flags.

Then the bundled GPT-3.5 pairwise log (``examples/summeval-gpt35``, coherence) with SummEval's texts
from ``../shared/data/summeval``: ``replay --scope global`` with and without ``--control length``
(every logged judgment), Spearman of the system ranking with the experts' mean coherence, the
judge's length effect, and how often each ranking — and the judge, and the experts — prefers the
longer summary of a logged pair.

Then simulated judges with a known length taste (:func:`orchestrator.offline.replay.simulate.simulate_length_leaderboard`,
φ = 1.5, 10 seeds per size): the length effect recovered (ratio to the truth), Spearman of the raw and
the controlled ranking with the truth at equal length, coverage of the 95% intervals.

    python -m benchmarks.bias.length_control [--data ../shared/data/alpacaeval] [--seeds 10]
"""

import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from benchmarks import harness
from benchmarks.harness import ROOT, SHARED_DATA
from benchmarks.leaderboards.common import reference_records
from orchestrator.offline.replay.simulate import simulate_length_comparisons, simulate_length_leaderboard
from orchestrator.poe import Observations, PoEConfig, fit_with_reliability
from orchestrator.poe.covariates import expand_controls
from orchestrator.raee.control import length_controlled

GOALS = {"spearman": 0.98, "max_abs": 2.0}


def write_inputs(annotations: list[dict], log: Path, responses: Path) -> None:
    texts: dict[tuple[str, str], int] = {}
    for a in annotations:
        texts[(a["instruction_id"], a["reference_model"])] = a["len_reference"]
        if a["model"] != a["reference_model"]:
            texts[(a["instruction_id"], a["model"])] = a["len_model"]
    with log.open("w") as fh:
        fh.writelines(json.dumps(record) + "\n" for record in reference_records(annotations))
    with responses.open("w") as fh:
        for (prompt, candidate), length in texts.items():
            fh.write(json.dumps({"prompt_id": prompt, "candidate": candidate, "text": "x" * length}) + "\n")


def main() -> None:
    parser = harness.parser(__doc__, quick="2 seeds of each simulation (AlpacaEval and SummEval as in full)")
    parser.add_argument("--data", type=Path, default=SHARED_DATA / "alpacaeval")
    parser.add_argument("--seeds", type=harness.count, default=10)
    args = parser.parse_args()
    if args.quick:
        args.seeds = 2
    figures = alpacaeval(args.data)
    figures["summeval"] = summeval(args.data.parent / "summeval")
    figures["simulated_leaderboards"] = simulated(args.seeds)
    figures["simulated_pairwise"] = simulated_pairwise(args.seeds)
    figures["simulated_self_preference"] = simulated_self_preference(args.seeds)
    figures["simulated_raee_self_preference"] = simulated_raee_self_preference(args.seeds)
    figures["simulated_absolute"] = simulated_absolute(args.seeds)
    figures["seeds"] = args.seeds
    summary = (
        f"AlpacaEval LC: Spearman {figures['lc_spearman']:.3f}, largest difference {figures['lc_max_difference']:.2f} points, "
        f"NullModel flagged {figures['null_flagged']}; SummEval Spearman {' → '.join(f'{v:.3f}' for v in figures['summeval']['spearman'])}"
    )
    harness.record(__file__, args, summary, figures)


def alpacaeval(data: Path) -> dict:
    annotations = [json.loads(line) for line in (data / "annotations.jsonl").open()]
    with tempfile.TemporaryDirectory() as tmp:
        log, responses = Path(tmp) / "alpacaeval.jsonl", Path(tmp) / "responses.jsonl"
        write_inputs(annotations, log, responses)
        start = time.perf_counter()
        command = ["fit", "raee", "--log", str(log), "--responses", str(responses), "--control", "length", "--soft", "--json"]
        fit = subprocess.run([sys.executable, "-m", "orchestrator", *command], capture_output=True, text=True)
        seconds = time.perf_counter() - start
    if fit.returncode != 0:
        sys.exit(f"fit raee failed ({fit.returncode}): {fit.stderr.strip()}")
    report = json.loads(fit.stdout)
    rows = {r["candidate"]: r for r in report["rows"] if r["judge"] == "gpt4_turbo" and r["win_rate_controlled"] is not None}
    board = {r[""]: r for r in csv.DictReader((data / "leaderboard.csv").open())}
    compared = sorted(m for m in board if m in rows)
    ours = [rows[m]["win_rate_controlled"] for m in compared]
    official = [float(board[m]["length_controlled_winrate"]) for m in compared]
    raw = [float(board[m]["win_rate"]) for m in compared]
    errors = [abs(a - b) for a, b in zip(ours, official)]
    covered = sum(rows[m]["win_rate_controlled_low"] <= o <= rows[m]["win_rate_controlled_high"] for m, o in zip(compared, official))
    rho = float(spearmanr(ours, official).statistic)
    bias = report["judge_biases"][0]
    print(f"fit raee --control length: {len(rows)} candidates in {seconds:.1f} s; compared with the official LC column: {len(compared)}")
    print(
        f"Spearman with official LC: {rho:.4f} (goal ≥ {GOALS['spearman']}); raw win rate's Spearman with it: {spearmanr(raw, official).statistic:.4f}"
    )
    print(
        f"|ours − official|: max {max(errors):.2f} (goal ≤ {GOALS['max_abs']}), mean {sum(errors) / len(errors):.2f}; official inside our 95% interval: {covered}/{len(compared)}"
    )
    print(
        f"judge's length effect: {bias['effect']:+.2f} [{bias['low']:+.2f}, {bias['high']:+.2f}] log-odds; "
        f"an answer one sd longer gains {bias['points_per_sd']:+.1f} points at an even match"
    )
    print("largest differences:")
    for m in sorted(compared, key=lambda m: -abs(rows[m]["win_rate_controlled"] - float(board[m]["length_controlled_winrate"])))[:5]:
        r = rows[m]
        print(
            f"  {m:<32} ours {r['win_rate_controlled']:6.2f} [{r['win_rate_controlled_low']:.2f}, {r['win_rate_controlled_high']:.2f}]"
            f"  official {float(board[m]['length_controlled_winrate']):6.2f}  raw {r['win_rate']:6.2f}"
        )
    print("flagged:")
    for candidate, reasons in sorted(report["flags"].items()):
        print(f"  {candidate}: {'; '.join(reasons)}")
    if "NullModel" in rows and "NullModel" not in report["flags"]:
        print("NullModel is NOT flagged")
    return {
        "lc_spearman": rho,
        "lc_max_difference": max(errors),
        "lc_mean_difference": sum(errors) / len(errors),
        "lc_covered": f"{covered}/{len(compared)}",
        "null_flagged": "NullModel" in report["flags"],
        "length_effect": bias["effect"],
    }


def summeval(data: Path) -> dict:
    from orchestrator import api
    from orchestrator.api.settings import ReplaySettings
    from orchestrator.records.log import load_log, load_responses

    log = ROOT / "examples/summeval-gpt35/coherence.log.jsonl"
    responses = data / "responses.jsonl"
    rows = {(r.prompt_id, r.candidate): r for _, r in load_responses(responses)}
    pairs = [(rec.prompt_id, rec.candidates, rec.probs) for _, rec in load_log(log) if rec.kind == "pairwise"]
    longer = [len(rows[(p, a)].text) > len(rows[(p, b)].text) for p, (a, b), _ in pairs]

    def share_longer(prefers_first: list[bool | None]) -> tuple[float, int]:
        decided = [(f, lg) for f, lg in zip(prefers_first, longer) if f is not None]
        return sum(f == lg for f, lg in decided) / len(decided), len(decided)

    judge = share_longer(
        [None if abs(probs.get("A", 0) - probs.get("B", 0)) < 1e-9 else probs.get("A", 0) > probs.get("B", 0) for _, _, probs in pairs]
    )
    experts = share_longer(
        [
            None
            if rows[(p, a)].human["coherence"] == rows[(p, b)].human["coherence"]
            else rows[(p, a)].human["coherence"] > rows[(p, b)].human["coherence"]
            for p, (a, b), _ in pairs
        ]
    )
    out: dict = {"judge_prefers_longer": judge[0], "experts_prefer_longer": experts[0], "spearman": [], "ranking_prefers_longer": []}
    print(f"\nSummEval, GPT-3.5 pairwise log ({len(pairs)} comparisons), global scope, every judgment:")
    print(f"  prefers the longer summary: judge {judge[0]:.1%} of {judge[1]}, experts {experts[0]:.1%} of {experts[1]} decisive pairs")
    for control in (None, ["length"]):
        start = time.perf_counter()
        settings = ReplaySettings(strategy="random", scope="global", batch=200, control=tuple(control or ()))
        report = api.replay(log, responses=responses, truth="coherence", settings=settings)
        ranking = report.to_json()["rankings"]["global"]
        position = {c: k for k, c in enumerate(ranking)}
        ranked = share_longer([position[a] < position[b] for _, (a, b), _ in pairs])
        effect = report.to_json().get("control_effects", {}).get("global", {})
        said = "; ".join(f"{j}: length effect {e['length']:+.2f} ± {e['length_sd']:.2f}" for j, e in effect.items())
        out["spearman"].append(report.full_spearman)
        out["ranking_prefers_longer"].append(ranked[0])
        print(
            f"  {'--control length' if control else 'no control':<17} Spearman with experts {report.full_spearman:.3f}; the ranking prefers "
            f"the longer summary in {ranked[0]:.1%} of the pairs; {time.perf_counter() - start:.1f} s{'; ' + said if said else ''}"
        )
    return out


def simulated(seeds: int, effect: float = 1.5) -> list[dict]:
    print(f"\nsimulated judges, length effect {effect} ({seeds} seeds each):")
    print("| candidates × prompts | effect recovered (mean, min–max ratio) | Spearman raw | Spearman controlled | max error | coverage |")
    print("|---|---|---|---|---|---|")
    rows = []
    for m, p in ((8, 150), (8, 400), (12, 400), (20, 805)):
        ratios, raw, controlled, errors, inside = [], [], [], [], []
        for seed in range(seeds):
            sim = simulate_length_leaderboard(candidates=m, prompts=p, length_effect=effect, seed=seed)
            fit = length_controlled(sim.y, sim.candidate_length, sim.anchor_length)
            ratios.append(fit.length_effect / effect)
            raw.append(spearmanr(fit.win_rate, sim.controlled_truth).statistic)
            controlled.append(spearmanr(fit.controlled, sim.controlled_truth).statistic)
            errors.append(np.abs(fit.controlled - sim.controlled_truth).max())
            inside.append(np.mean((fit.controlled_low <= sim.controlled_truth) & (sim.controlled_truth <= fit.controlled_high)))
        print(
            f"| {m} × {p} | {np.mean(ratios):.3f} ({min(ratios):.2f}–{max(ratios):.2f}) | {np.mean(raw):.3f} | "
            f"{np.mean(controlled):.3f} | {np.mean(errors):.2f} | {np.mean(inside):.3f} |"
        )
        rows.append({"candidates": m, "prompts": p, "recovered": float(np.mean(ratios)), "coverage": float(np.mean(inside))})
    return rows


def simulated_pairwise(seeds: int, effect: float = 3.0) -> dict:
    """The PoE posterior with length control on comparisons across prompts (global scope)."""
    print(f"\nsimulated pairwise judge, length effect β = {effect} (12 candidates, 800 comparisons, {seeds} seeds):")
    ratios, raw, controlled, inside = [], [], [], []
    for seed in range(seeds):
        scores, comparisons = simulate_length_comparisons(12, 800, length_effect=effect, seed=seed)
        observations = Observations.from_lists(12, comparisons)
        plain = fit_with_reliability(observations, PoEConfig())
        fitted = fit_with_reliability(observations, PoEConfig(controls=("length",)))
        beta, sd = float(fitted.judges["length"][0]), float(fitted.judges["length_sd"][0])
        ratios.append(beta / effect)
        inside.append(abs(beta - effect) <= 1.96 * sd)
        raw.append(spearmanr(plain.mean.numpy(), scores).statistic)
        controlled.append(spearmanr(fitted.mean.numpy(), scores).statistic)
    print(
        f"  β recovered {np.mean(ratios):.3f} of the truth ({min(ratios):.2f}–{max(ratios):.2f}); truth inside β ± 1.96 sd: "
        f"{sum(inside)}/{seeds}; Spearman with the true scores: raw {np.mean(raw):.3f}, controlled {np.mean(controlled):.3f}"
    )
    names = expand_controls(["length", "style"])
    print(f"simulated pairwise judge with a taste for bold only (β_bold = 2, β_length = 0), controls {', '.join(names)}:")
    bold, length, raw, controlled = [], [], [], []
    for seed in range(seeds):
        scores, comparisons = simulate_length_comparisons(10, 900, length_effect=0.0, bold_effect=2.0, controls=names, seed=seed)
        observations = Observations.from_lists(10, comparisons)
        fitted = fit_with_reliability(observations, PoEConfig(controls=names))
        plain = fit_with_reliability(observations, PoEConfig())
        bold.append(float(fitted.judges["bold"][0]) / 2.0)
        length.append(float(fitted.judges["length"][0]))
        raw.append(spearmanr(plain.mean.numpy(), scores).statistic)
        controlled.append(spearmanr(fitted.mean.numpy(), scores).statistic)
    print(
        f"  β_bold recovered {np.mean(bold):.3f} of the truth ({min(bold):.2f}–{max(bold):.2f}); β_length {np.mean(length):+.3f} "
        f"(truth 0); Spearman with the true scores: raw {np.mean(raw):.3f}, controlled {np.mean(controlled):.3f}"
    )
    return {"length_recovered": float(np.mean(ratios)), "bold_recovered": float(np.mean(bold))}


def simulated_self_preference(seeds: int, taste: float = 1.5) -> dict:
    """Three judges (families x, y and a neutral z) on 8 candidates of families x and y; the x judge
    adds ``taste`` for its family's answers."""
    from orchestrator.poe.covariates import self_covariate

    print(f"simulated panel, judge-x prefers its family by {taste} (judge-y and neutral judge-n impartial), 1,200 pairs × 3 judges:")
    own, other, raw, controlled = [], [], [], []
    judges = ("judge-x", "judge-y", "judge-n")
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        scores = rng.normal(0, 1, 8)
        families = {f"c{i}": "x" if i % 2 == 0 else "y" for i in range(8)} | {"judge-x": "x", "judge-y": "y", "judge-n": "z"}
        comparisons = []
        for _ in range(1200):
            i, j = (int(v) for v in rng.choice(8, 2, replace=False))
            for k, judge in enumerate(judges):
                z = self_covariate(judge, f"c{i}", f"c{j}", families)
                p = 1 / (1 + np.exp(-(scores[i] - scores[j] + (taste if k == 0 else 0.0) * z + rng.normal(0, 0.3))))
                comparisons.append((i, j, float(p), k, z))
        observations = Observations.from_lists(8, comparisons, n_judges=3)
        fitted = fit_with_reliability(observations, PoEConfig(controls=("self",), families=families))
        plain = fit_with_reliability(observations, PoEConfig())
        own.append(float(fitted.judges["self"][0]) / taste)
        other.append(float(fitted.judges["self"][1]))
        raw.append(spearmanr(plain.mean.numpy(), scores).statistic)
        controlled.append(spearmanr(fitted.mean.numpy(), scores).statistic)
    print(
        f"  β_self of judge-x recovered {np.mean(own):.3f} of the truth ({min(own):.2f}–{max(own):.2f}); judge-y {np.mean(other):+.3f} "
        f"(truth 0); Spearman with the true scores: raw {np.mean(raw):.3f}, controlled {np.mean(controlled):.3f}"
    )
    return {"self_recovered": float(np.mean(own))}


def simulated_raee_self_preference(seeds: int, taste: float = 1.0) -> dict:
    """``fit raee --control self`` on a reference log of three judges (families x, y, neutral z),
    10 candidates of families x and y, 400 prompts; judge-x adds ``taste`` (per-prompt log-odds)
    for its family's answers."""
    from orchestrator import api
    from orchestrator.offline.replay.simulate import simulate_family_leaderboard

    print(
        f"simulated reference panel (fit raee --control self), judge-x prefers its family by {taste} per prompt, 10 candidates × 400 prompts × 3 judges:"
    )
    ratio, other, covered, raw, controlled = [], [], 0, [], []
    for seed in range(seeds):
        outcomes, quality, families, truth = simulate_family_leaderboard(10, 400, taste=taste, seed=seed)
        with tempfile.TemporaryDirectory() as folder:
            log = Path(folder) / "log.jsonl"
            with log.open("w") as out:
                for judge, y in outcomes.items():
                    for m, i in np.ndindex(*y.shape):
                        row = {"kind": "reference", "judge": judge, "prompt_id": f"p{i}", "candidates": ["base", f"c{m}"]}
                        out.write(json.dumps(row | {"probs": {"A": 1 - float(y[m, i]), "B": float(y[m, i])}}) + "\n")
            report = api.fit_raee(log=log, soft=True, control=["self"], families=families)
        biases = {b.judge: b for b in report.judge_biases}
        ratio.append(biases["judge-x"].effect / truth)
        covered += biases["judge-x"].low <= truth <= biases["judge-x"].high
        other.append(biases["judge-y"].effect)
        rows = {r.candidate: r for r in report.rows if r.judge == "judge-x"}
        raw.append(spearmanr([rows[f"c{m}"].win_rate for m in range(10)], quality).statistic)
        controlled.append(spearmanr([rows[f"c{m}"].win_rate_controlled for m in range(10)], quality).statistic)
    print(
        f"  γ of judge-x recovered {np.mean(ratio):.3f} of the truth on the win-rate scale ({min(ratio):.2f}–{max(ratio):.2f}; "
        f"inside the 95% interval {covered}/{seeds}); judge-y {np.mean(other):+.3f} (truth 0); "
        f"judge-x's Spearman with the true quality: raw {np.mean(raw):.3f}, controlled {np.mean(controlled):.3f}"
    )
    return {"self_recovered": float(np.mean(ratio)), "covered": covered, "seeds": seeds}


def simulated_absolute(seeds: int, effect: float = 3.0) -> dict:
    """An absolute 1–10 judge with a taste for length (``effect`` score units per unit of the
    normalised difference against the prompt's typical answer), 12 candidates × 200 prompts."""
    from orchestrator.offline.replay.simulate import simulate_length_scores

    print(f"simulated absolute judge, κ_length = {effect} score units, 12 candidates × 200 prompts:")
    ratio, covered, raw, controlled = [], 0, [], []
    for seed in range(seeds):
        scores, absolutes = simulate_length_scores(12, 200, length_effect=effect, seed=seed)
        plain = fit_with_reliability(Observations.from_lists(12, [], [a[:4] for a in absolutes]), PoEConfig())
        fitted = fit_with_reliability(Observations.from_lists(12, [], absolutes), PoEConfig(controls=("length",)))
        kappa, sd = float(fitted.judges["length_absolute"][0]), float(fitted.judges["length_absolute_sd"][0])
        ratio.append(kappa / effect)
        covered += abs(kappa - effect) <= 1.96 * sd
        raw.append(spearmanr(plain.mean.numpy(), scores).statistic)
        controlled.append(spearmanr(fitted.mean.numpy(), scores).statistic)
    print(
        f"  κ recovered {np.mean(ratio):.3f} of the truth ({min(ratio):.2f}–{max(ratio):.2f}; inside κ ± 1.96 sd {covered}/{seeds}); "
        f"Spearman with the true scores: raw {np.mean(raw):.3f}, controlled {np.mean(controlled):.3f}"
    )
    return {"length_recovered": float(np.mean(ratio)), "covered": covered, "seeds": seeds}


if __name__ == "__main__":
    main()
