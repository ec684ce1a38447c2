"""How each goal reads its figure and verdict from a script's JSON record (issue #53): the functions
``benchmarks/goals.py`` names. Each takes one record (``harness.record``'s dict) and returns text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Record = dict[str, Any]


def j(values: Any, spec: str) -> str:
    """Figures side by side: ``0.91 / 0.90 / 0.92``."""
    return " / ".join(format(v, spec) for v in values)


def select_rows(record: Record, **match: Any) -> list[dict]:
    return [r for r in record["figures"]["rows"] if all(r.get(k) == v for k, v in match.items())]


def board_figure(r: Record) -> str:
    within = {x["n"]: x for x in select_rows(r, split="lomo", subset="within range", method="board")}
    plain = {x["n"]: x for x in select_rows(r, split="lomo", subset="within range", method="plain")}
    strong = {x["n"]: x for x in select_rows(r, split="stronger", subset="all", method="board")}
    strong_plain = {x["n"]: x for x in select_rows(r, split="stronger", subset="all", method="plain")}
    sizes = " / ".join(str(n) for n in within)
    paired = ""
    if strong and "vs_plain" in next(iter(strong.values())):
        differences, errors = j((x["vs_plain"] for x in strong.values()), "+.2f"), j((x["vs_plain_se"] for x in strong.values()), ".2f")
        paired = f"; paired difference to the plain mean {differences} (se {errors}, {r['figures']['stronger_seeds']} seeds)"
    summeval = select_rows(r, split="summeval", subset="all", method="board")
    summeval_plain = select_rows(r, split="summeval", subset="all", method="plain")
    second = (
        f"; on SummEval's expert board (not designed on; {summeval[0]['models']} systems) at {j((x['n'] for x in summeval), 'd')} prompts "
        f"MAE {j((x['mae'] for x in summeval), '.2f')} (plain {j((x['mae'] for x in summeval_plain), '.2f')}), "
        f"coverage {j((x['coverage'] for x in summeval), '.2f')}"
        if summeval
        else ""
    )
    return (
        f"{r['figures']['seeds']} seeds, at {sizes} prompts: within the board's range MAE "
        f"{j((x['mae'] for x in within.values()), '.2f')} (random + plain mean {j((x['mae'] for x in plain.values()), '.2f')}), "
        f"coverage {j((x['coverage'] for x in within.values()), '.2f')}; stronger than the board "
        f"{j((x['mae'] for x in strong.values()), '.2f')} (plain {j((x['mae'] for x in strong_plain.values()), '.2f')}){paired}{second}"
    )


def board_verdict(r: Record) -> str:
    within = {x["n"]: x for x in select_rows(r, split="lomo", subset="within range", method="board")}
    strong = {x["n"]: x["mae"] for x in select_rows(r, split="stronger", subset="all", method="board")}
    strong_plain = {x["n"]: x["mae"] for x in select_rows(r, split="stronger", subset="all", method="plain")}
    # every regime on its own: within the board's range, beyond it (leave-one-out), stronger than the board
    regimes = {
        ("lomo", "within range"),
        ("lomo", "outside range"),
        ("stronger", "all"),
        ("summeval", "within range"),
        ("summeval", "outside range"),
    }
    cells = [x for x in select_rows(r, method="board") if (x["split"], x["subset"]) in regimes]
    short = [
        f"{x['split']} {x['subset']} at {x['n']}: {x['coverage']:.3f} of {x.get('draws', '?')} draws" for x in cells if x["coverage"] < 0.93
    ]
    paired = select_rows(r, split="stronger", subset="all", method="board")
    if paired and "vs_plain" in paired[0]:  # worse only beyond twice the paired differences' standard error
        worse = [x["n"] for x in paired if x["vs_plain"] > 2 * x["vs_plain_se"]]
        never_worse = "met (no n where the paired difference exceeds 2 se)" if not worse else f"not met at n = {worse}"
    else:
        never_worse = "met" if all(strong[n] <= strong_plain[n] for n in strong) else "not met"
    parts = [
        f"MAE at 100 ≤ 1.0: {'met' if 100 in within and within[100]['mae'] <= 1.0 else 'not met'}",
        f"stronger never worse than random: {never_worse}",
        f"coverage ≥ 0.93: {'met' if cells and not short else 'not met (' + '; '.join(short) + ')'}",
    ]
    return "; ".join(parts)


def claims_figure(r: Record) -> str:
    rows = r["figures"]["rows"]
    if not any(x["rule"] == "product" for x in rows):  # records before the lockstep rule: every row
        return "; ".join(
            f"R = {x['resolution']:g}, {x['models']} models, {x['rule']}: {x['runs_with_a_wrong_claim']:.0%} of {x['runs']} runs with a wrong claim, "
            f"calls at the stop {x['calls_at_stop']:.0%}, coverage {x['coverage']:.3f}"
            for x in rows
        )
    parts = []
    for x in (x for x in rows if x["rule"] == "product"):
        other = {y["rule"]: y for y in rows if (y["resolution"], y["models"]) == (x["resolution"], x["models"])}
        parts.append(
            f"R = {x['resolution']:g}, {x['models']} models: {x['runs_with_a_wrong_claim']:.0%} of {x['runs']} runs with a wrong claim "
            f"at {x['calls_at_stop']:.0%} of the calls (gains rule {other['gains']['calls_at_stop']:.0%}"
            + (f", the fixed subset {other['fixed subset']['calls_at_stop']:.0%}" if "fixed subset" in other else "")
            + "; per-pair claims "
            f"{other['per-pair']['runs_with_a_wrong_claim']:.0%} of runs wrong), coverage of the partly judged {x['coverage_partly']:.3f}, "
            f"runs with a simultaneous interval missing {x['runs_with_a_simultaneous_interval_missing']:.0%}"
        )
    return "; ".join(parts)


def claims_untuned_figure(r: Record) -> str:
    rows = r["figures"]["rows"]
    parts = []
    for x in (x for x in rows if x["rule"] == "product"):
        fixed = next((y for y in rows if y["rule"] == "fixed subset" and y["resolution"] == x["resolution"]), None)
        parts.append(
            f"R = {x['resolution']:g}: {x['runs_with_a_wrong_claim']:.1%} of {x['runs']} runs with a wrong claim at {x['calls_at_stop']:.0%} "
            f"of the calls" + (f" (the fixed subset {fixed['calls_at_stop']:.0%})" if fixed else "") + f", coverage of the partly judged "
            f"{x['coverage_partly']:.3f}, runs with a simultaneous interval missing {x['runs_with_a_simultaneous_interval_missing']:.1%}"
        )
    return "; ".join(parts)


def claims_met(chosen: list[dict]) -> str:
    """The stopping-claims goals' two thresholds on the product's rows."""
    wrong = all(x["runs_with_a_wrong_claim"] <= 0.10 for x in chosen)
    coverage = all(x.get("coverage_partly", x["coverage"]) >= 0.93 for x in chosen)
    return f"wrong claims ≤ 10%: {'met' if wrong else 'not met'}; coverage ≥ 0.93: {'met' if coverage else 'not met'}"


def claims_untuned_verdict(r: Record) -> str:
    return claims_met(select_rows(r, rule="product"))


def claims_verdict(r: Record) -> str:
    chosen = select_rows(r, rule="product") or select_rows(r, rule="simultaneous")  # "simultaneous": records before the lockstep rule
    full = any(x["models"] > 20 for x in chosen)
    seeds = r["figures"]["seeds"] >= 10
    return claims_met(chosen) + ("" if full and seeds else "; the full board or ≥ 10 seeds not measured")


def budget_main(argv: list[str]) -> bool:
    return not {"--oracle", "--stratify", "--slices", "--through-product"} & set(argv)


def by_budget(r: Record, method: str, key: str) -> dict[float, float]:
    return {x["budget"]: x[key] for x in select_rows(r, method=method)}


def cut_figure(r: Record) -> str:
    tau_a, tau_f = by_budget(r, "adaptive", "tau"), by_budget(r, "fixed", "tau")
    err_a, err_f = by_budget(r, "adaptive", "max_error"), by_budget(r, "fixed", "max_error")
    budgets = j(tau_a, ".0%")
    return (
        f"{r['figures']['seeds']} seeds at {budgets}: Kendall τ `adaptive` {j(tau_a.values(), '.3f')} vs fixed subset "
        f"{j(tau_f.values(), '.3f')}; largest error {j(err_a.values(), '.2f')} vs "
        f"{j(err_f.values(), '.2f')}{paired_note(r)}"
    )


def paired_note(r: Record) -> str:
    rows = select_rows(r, method="adaptive")
    if not rows or "tau_vs_fixed" not in rows[0]:
        return ""
    tau = j((f"{x['tau_vs_fixed']:+.3f}±{x['tau_vs_fixed_se']:.3f}" for x in rows), "")
    err = j((f"{x['max_error_vs_fixed']:+.2f}±{x['max_error_vs_fixed_se']:.2f}" for x in rows), "")
    return f" (paired differences τ {tau}, largest error {err})"


def cut_verdict(r: Record) -> str:
    rows = select_rows(r, method="adaptive")
    if rows and "tau_vs_fixed" in rows[0]:  # paired with the fixed subset on the same seeds: worse only beyond 2 se
        behind = [
            f"{x['budget']:.0%}"
            for x in rows
            if x["tau_vs_fixed"] < -2 * x["tau_vs_fixed_se"] or x["max_error_vs_fixed"] > 2 * x["max_error_vs_fixed_se"]
        ]
        return (
            "met (no budget where τ or the largest error is worse beyond 2 se of the paired difference)"
            if not behind
            else f"not met at {', '.join(behind)}"
        )
    tau_a, tau_f = by_budget(r, "adaptive", "tau"), by_budget(r, "fixed", "tau")
    err_a, err_f = by_budget(r, "adaptive", "max_error"), by_budget(r, "fixed", "max_error")
    behind = [f"{b:.0%}" for b in tau_a if tau_a[b] < tau_f[b] or err_a[b] > err_f[b]]
    return "met" if not behind else f"not met at {', '.join(behind)}"


def twenty_figure(r: Record) -> str:
    tau_a, tau_f = by_budget(r, "adaptive", "tau"), by_budget(r, "fixed", "tau")
    return f"Kendall τ `adaptive` {tau_a.get(0.2, float('nan')):.3f} at 20% vs fixed {tau_f.get(0.4, float('nan')):.3f} at 40% ({r['figures']['seeds']} seeds)"


def twenty_verdict(r: Record) -> str:
    tau_a, tau_f = by_budget(r, "adaptive", "tau"), by_budget(r, "fixed", "tau")
    return "met" if tau_a.get(0.2, 0) >= tau_f.get(0.4, 1) else "not met (an oracle allocation reaches 0.873: out of reach on this data)"


def coverage_figure(r: Record) -> str:
    cover = by_budget(r, "adaptive", "coverage")
    return f"`adaptive` coverage {j(cover.values(), '.2f')} at {j(cover, '.0%')} ({r['figures']['seeds']} seeds)"


def coverage_verdict(r: Record) -> str:
    return "met" if min(by_budget(r, "adaptive", "coverage").values()) >= 0.9 else "not met"


def loop_figure(r: Record) -> str:
    f = r["figures"]
    return f"{f['ms_per_judgment']:.2f} ms per judgment with the {f['strategy']} selection (selection {f['selection_ms']:.2f} ms, refits {f['refit_ms']:.2f} ms)"


def loop_verdict(r: Record) -> str:
    return "met" if r["figures"]["ms_per_judgment"] <= 2.0 else "not met with the default `lookahead` (met with `reorder`, see history)"


def rebuild_verdict(r: Record) -> str:
    return "met" if r["figures"]["seconds"] <= 5.0 else "not met"


def tests(*files: str) -> Callable[[list[str]], bool]:
    wanted = sorted(files)
    return lambda argv: sorted(a for a in argv if a.startswith("tests/")) == wanted


def tests_figure(r: Record) -> str:
    f = r["figures"]
    said = f"{f.get('passed', 0)} passed, {f.get('failed', 0) + f.get('error', 0)} failed, {f.get('skipped', 0)} skipped in {f['seconds'] / 60:.1f} min"
    if "embedded_judge_installed" in f:
        said += (
            " (with the embedded judge installed: its live runs included)"
            if f["embedded_judge_installed"]
            else " (without the embedded judge)"
        )
    return said


def tests_verdict(r: Record) -> str:
    f = r["figures"]
    return "met" if f["exit_code"] == 0 and f.get("passed", 0) > 0 else "not met"


def suite_verdict(r: Record) -> str:
    f = r["figures"]
    return "met" if f["exit_code"] == 0 and f["seconds"] <= 15 * 60 else "not met"


def taste_figure(r: Record) -> str:
    f = r["figures"]
    lb = "; ".join(f"{x['candidates']} × {x['prompts']}: {x['recovered']:.2f}" for x in f["simulated_leaderboards"])
    return (
        f"of the truth, {f['seeds']} seeds: length in RAEE {lb}; PoE pairwise length {f['simulated_pairwise']['length_recovered']:.2f}, "
        f"bold {f['simulated_pairwise']['bold_recovered']:.2f}, self {f['simulated_self_preference']['self_recovered']:.2f}; "
        f"`fit raee --control self` {f['simulated_raee_self_preference']['self_recovered']:.2f}; absolute experts' length "
        f"{f['simulated_absolute']['length_recovered']:.2f}"
    )


def taste_verdict(r: Record) -> str:
    f = r["figures"]
    values = [x["recovered"] for x in f["simulated_leaderboards"] if x["prompts"] >= 400]
    values += [f["simulated_pairwise"]["length_recovered"], f["simulated_pairwise"]["bold_recovered"]]
    values += [f["simulated_self_preference"]["self_recovered"], f["simulated_raee_self_preference"]["self_recovered"]]
    values += [f["simulated_absolute"]["length_recovered"]]
    return "met from 400 prompts" if all(0.85 <= v <= 1.15 for v in values) else "not met"


def summeval_figure(r: Record) -> str:
    f = r["figures"]["summeval"]
    return (
        f"Spearman with the experts {f['spearman'][0]:.3f} → {f['spearman'][1]:.3f} with `--control length`; the ranking prefers the longer "
        f"summary {f['ranking_prefers_longer'][0]:.1%} → {f['ranking_prefers_longer'][1]:.1%} (experts {f['experts_prefer_longer']:.1%}, "
        f"the judge {f['judge_prefers_longer']:.1%})"
    )


def summeval_verdict(r: Record) -> str:
    f = r["figures"]["summeval"]
    higher = f["spearman"][1] >= f["spearman"][0]
    closer = abs(f["ranking_prefers_longer"][1] - f["experts_prefer_longer"]) < abs(
        f["ranking_prefers_longer"][0] - f["experts_prefer_longer"]
    )
    return f"{sum([higher, closer])} of 2"


def carried(r: Record) -> str:
    """Goals whose script does not write this goal's figures yet: only records carried over from the
    hand-written table answer them (their text is shown as it was)."""
    raise ValueError("no figures of this goal in a script's record yet")


def rank_speed_figure(r: Record) -> str:
    rows = r["figures"]["rows"]
    slowest = max(rows, key=lambda x: x["rank_s"])
    return (
        f"`rank --json` of a {slowest['models']} × {slowest['prompts']} run: {j((x['rank_s'] for x in rows), '.2f')} s "
        f"(runs at {j((x['budget'] for x in rows), '.0%')} of the calls, {j((x['allocation'] for x in rows), '')})"
    )


def rank_speed_verdict(r: Record) -> str:
    return "met" if max(x["rank_s"] for x in r["figures"]["rows"]) <= 2.0 else "not met"


def oracle_figure(r: Record) -> str:
    rows = r["figures"]["rows"]
    names = list(dict.fromkeys(x["oracle"] for x in rows))
    sizes = sorted({x["n"] for x in rows})
    parts = [f"{name} {j((x['mae'] for n in sizes for x in rows if (x['oracle'], x['n']) == (name, n)), '.2f')}" for name in names]
    other = r["figures"].get("alternatives", [])
    predictors = list(dict.fromkeys(x["predictor"] for x in other))
    without = [
        f"{name} {j((x['mae'] for n in sizes for x in other if (x['predictor'], x['n']) == (name, n)), '.2f')}" for name in predictors
    ]
    return (
        f"MAE at {j(sizes, 'd')} prompts: "
        + "; ".join(parts)
        + ("; predictors without a 2PL (same draws): " + "; ".join(without) if without else "")
    )


def oracle_verdict(r: Record) -> str:
    at = [x["mae"] for x in r["figures"]["rows"] if x["n"] == 100]
    if not at:
        return "–"
    best = min(at)
    other = [x["mae"] for x in r["figures"].get("alternatives", []) if x["n"] == 100 and "2PL" not in x["predictor"]]
    beyond = f"1.0 at 100 prompts {'beyond' if best > 1.0 else 'within'} even an oracle 2PL board on this data (its best: {best:.2f})"
    return beyond + (f"; the predictors without a 2PL {min(other):.2f} at best" if other else "")


def gate_errors_figure(r: Record) -> str:
    rows = r["figures"]["tables"][0]
    return "; ".join(
        f"{row['outcomes']}: {row['false decisions']} false decisions of {row['comparisons (A/A; true d within ±1 point)']} comparisons "
        f"(A/A {row['of A/A']}, within 1 point {row['of d within ±1']}), {row['decided']} decided"
        for row in rows
    )


def gate_errors_verdict(r: Record) -> str:
    rows = r["figures"]["tables"][0]
    enough = all(int(row["comparisons (A/A; true d within ±1 point)"].split()[0]) >= 1000 for row in rows)
    ok = all(float(row["false decisions"]) <= 0.05 for row in rows)
    return "met" if ok and enough else ("not met" if enough else "not met (fewer than 1,000 comparisons)")


def gate_power_figure(r: Record) -> str:
    rows = r["figures"]["tables"][1]
    return "; ".join(
        f"{row['true difference (points)']} points: power {row['sequence: power']} at {row['mean prompts (× fixed)']} on average "
        f"(fixed test {row['fixed paired z-test: prompts for 80% power (its power)']} prompts), oracle SPRT {row['oracle SPRT told the truth: power, mean prompts (× fixed)']}"
        for row in rows
    )


def gate_power_verdict(r: Record) -> str:
    row = next(row for row in r["figures"]["tables"][1] if row["true difference (points)"] == "3")
    power = float(row["sequence: power"])
    oracle = row["oracle SPRT told the truth: power, mean prompts (× fixed)"]
    return (
        f"not met (power {power:.2f}); beyond any method: the oracle SPRT reaches only {oracle} within the same 1.3× cap"
        if power < 0.8
        else "met"
    )
