"""How the goals of judges without log-probabilities (verdicts, sampled verdicts, stated confidence)
read their figure and verdict from a script's JSON record; ``benchmarks/goals.py`` names them."""

from __future__ import annotations

from typing import Any

Record = dict[str, Any]


def _verdict_rows(r: Record) -> list[dict]:
    return [row for row in r["figures"]["tables"][0] if row["judge"] != "log-probabilities"]


def verdict_coverage_figure(r: Record) -> str:
    rows = _verdict_rows(r)
    cells = "; ".join(
        f"{row['judge']} @{row['calls']}: {row['coverage of the judge' + chr(39) + 's own ranks']} "
        f"(width {row['mean width (ranks of 16)']} of 16; before {row['before #62: coverage, width']})"
        for row in rows
    )
    logprob = [row for row in r["figures"]["tables"][0] if row["judge"] == "log-probabilities"]
    base = "; ".join(
        f"@{row['calls']}: {row['coverage of the judge' + chr(39) + 's own ranks']} (width {row['mean width (ranks of 16)']})"
        for row in logprob
    )
    return f"coverage of the judge's own full-data ranks (before: coverage, width): {cells}; log-probabilities {base}"


def verdict_coverage_verdict(r: Record) -> str:
    return "met" if min(float(row["coverage of the judge's own ranks"]) for row in _verdict_rows(r)) >= 0.93 else "not met"


WIDTH_BEFORE = {"one verdict": 15.1, "3 sampled verdicts": 15.3}
"""Mean widths at 400 calls when the goal was set (``selection.verdict_judges --seeds 8``, 2026-11-28)."""


def _oracle_rows(r: Record) -> dict[tuple[str, str, str], dict]:
    return {(row["judge"], row["calls"], row["posterior"]): row for table in r["figures"]["tables"] for row in table if "posterior" in row}


WIDTH_CELLS = {
    "product": "product",
    "before": "the product before (log-uniform prior, moment-matched)",
    "oracle scale": "told the truth's scale",
    "τ = 0.25": "a prior twice the truth's scale",
    "simulated from the fit": "simulated from the fitted model",
}
"""The cells of ``selection.verdict_scale_oracle`` the goal's figure shows, with their words."""


def verdict_width_figure(r: Record) -> str:
    rows = _oracle_rows(r)
    cov, width = "coverage of the judge's own ranks", "mean width (ranks of 16)"
    cells = []
    for judge in ("one verdict", "3 sampled verdicts"):
        found = [(words, rows[(judge, "400", name)]) for name, words in WIDTH_CELLS.items() if (judge, "400", name) in rows]
        if found:
            cells.append(f"{judge} @400: " + ", ".join(f"{words} {row[cov]} / {row[width]}" for words, row in found))
    low = [f"{row[cov]}" for (judge, calls, name), row in rows.items() if calls == "100" and name == "product"]
    if low:
        cells.append("product @100: coverage " + ", ".join(low))
    ranking = next((line for line in r["figures"]["lines"] if line.startswith("paired difference")), None)
    if ranking:
        cells.append("Spearman of the final ranking, " + ranking)
    return "coverage / mean width (ranks of 16): " + "; ".join(cells)


def verdict_width_verdict(r: Record) -> str:
    rows = _oracle_rows(r)
    cov, width = "coverage of the judge's own ranks", "mean width (ranks of 16)"
    product = [float(row[cov]) for key, row in rows.items() if key[2] == "product"]
    nominal = all(0.93 <= c <= 0.98 for c in product)
    gained = {judge: before - float(rows[(judge, "400", "product")][width]) for judge, before in WIDTH_BEFORE.items()}
    narrower = all(g >= 1 for g in gained.values())
    if nominal and narrower:
        return "met"
    said = [f"coverage {'met' if nominal else 'not met'} ({min(product):.3f}–{max(product):.3f})"]
    said.append("width " + " / ".join(f"{g:.2f}" for g in gained.values()) + " ranks narrower at 400 calls (goal 1)")
    oracle_short = all(float(rows[(judge, "400", "oracle scale")][width]) > before - 1 for judge, before in WIDTH_BEFORE.items())
    if not narrower and oracle_short:
        said.append("beyond a calibrated posterior: one told the truth's scale is not 1 rank narrower either")
    return "not met: " + "; ".join(said)


def _stated(r: Record) -> dict[tuple[str, str], dict]:
    return {(row["reading"], row["completions"]): row for row in r["figures"]["tables"][0]}


def stated_figure(r: Record) -> str:
    rows = _stated(r)
    cov = "coverage of the judge's own ranks"
    cells = "; ".join(
        f"{how} @{n}: coverage {row[cov]}, width {row['mean width (ranks of 16)']}, Spearman {row['Spearman with it']}"
        for (how, n), row in rows.items()
    )
    head = next((line for line in r["figures"]["lines"] if line.startswith("1440 judgments")), "")
    return f"{head.split('; the calibration')[0]}: {cells}" if head else cells


def stated_verdict(r: Record) -> str:
    rows = _stated(r)
    cov = "coverage of the judge's own ranks"
    calibrated = [float(row[cov]) for (how, _), row in rows.items() if how == "calibrated"]
    face = [float(row[cov]) for (how, _), row in rows.items() if how == "face value"]
    ok = min(calibrated) >= 0.93
    return f"{'met' if ok else 'not met'}: calibrated coverage ≥ {min(calibrated):.3f}; at face value down to {min(face):.3f}"


def alpaca_figure(r: Record) -> str:
    rows = r["figures"]["tables"][1]
    cells = "; ".join(
        f"at {row['target: the probabilities' + chr(39) + ' Spearman at']} (Spearman {row['target']}) one verdict per call needs "
        f"{row['one verdict per call needs']} = {row['ratio']}×"
        for row in rows
    )
    bound = rows[0]["oracle bound (plain; difficulty-corrected)"] if rows else "?"
    return f"{cells}; variance-ratio oracle (plain; difficulty-corrected): {bound}"


def alpaca_verdict(r: Record) -> str:
    rows = r["figures"]["tables"][1]
    worst = max(float(row["ratio"]) for row in rows)
    bound = rows[0]["oracle bound (plain; difficulty-corrected)"]
    if worst <= 1.5:
        return f"met (worst {worst:.2f}×)"
    return (
        f"not met: worst {worst:.2f}× (goal ≤ 1.5×); the goal sits at the oracle's edge: one verdict's coin-flip variance "
        f"alone needs {bound.split('; ')[1]}× the calls with the product's difficulty-corrected estimator ({bound.split('; ')[0]}× with plain means)"
    )


def _ratio_lines(r: Record, who: str) -> list[str]:
    return [line for line in r["figures"]["lines"] if line.startswith(f"target at 100 calls: {who}") and "=" in line]


def verdict_cost_figure(r: Record) -> str:
    rows = r["figures"]["tables"][0]
    cells = "; ".join(
        f"{row['judge']}: {row['completions to the 100-call target']} / {row['to the 200-call target']}"
        for row in rows
        if not row["judge"].startswith("log-probabilities")
    )
    ratios = _ratio_lines(r, "adaptive") + _ratio_lines(r, "best oracle")
    return f"paid completions to the log-probability judge's Spearman at 100 / 200 calls: {cells}" + "".join(
        f"; {line.removeprefix('target at 100 calls: ')} at the 100-call target" for line in ratios
    )


def verdict_cost_verdict(r: Record) -> str:
    ratio = _ratio_lines(r, "adaptive")
    if not ratio:
        return "not met (no ratio)"
    value = float(ratio[0].rsplit("=", 1)[1])
    verdict = f"{'met' if value <= 0.6 else 'not met'}: adaptive {value:.2f}× the best fixed k at the 100-call target (goal ≤ 0.6×)"
    bound = _oracle_ratios()
    if value > 0.6 and bound:
        verdict += f"; beyond any allocation: an oracle that knows every probability and the scores gains {bound} over its best fixed k"
    return verdict


def _oracle_ratios() -> str:
    """The oracle allocation's ratios to its best fixed k, from the newest full run of ``verdict_oracle``."""
    from benchmarks.harness import records

    full = [r for r in records("selection.verdict_oracle") if not r.get("quick")]
    if not full:
        return ""
    lines = [line for line in full[-1]["figures"]["lines"] if line.startswith("target at") and "=" in line]
    return " and ".join(f"{line.rsplit('=', 1)[1].strip()}×" for line in lines) + " (100- and 200-call targets)"


def oracle_figure(r: Record) -> str:
    lines = r["figures"]["lines"]
    rows = r["figures"]["tables"][0]
    heads = [h for h in rows[0] if h != "allocation"]
    cells = "; ".join(f"{row['allocation']}: " + " / ".join(row[h] for h in heads) for row in rows)
    return f"{lines[0]}; {lines[1]}; completions to those targets: {cells}"


def oracle_verdict(r: Record) -> str:
    lines = [line for line in r["figures"]["lines"] if line.startswith("target at") and "=" in line]
    if not lines:
        return "no ratio (a target not reached)"
    worst = min(float(line.rsplit("=", 1)[1]) for line in lines)
    return (
        f"adaptive allocation gains at most {worst:.2f}× over the best fixed k even for the oracle: "
        f"the 0.6× goal is {'beyond any allocation on this judge' if worst > 0.6 else 'within reach'}"
    )
