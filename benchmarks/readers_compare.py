"""How the goals of one-candidate campaigns and tables that agree with themselves (issue #60) read
their figure and verdict from a script's JSON record; ``benchmarks/goals_judges.py`` names them."""

from __future__ import annotations

from typing import Any

Record = dict[str, Any]


def board_claims_figure(r: Record) -> str:
    rows = r["figures"]["tables"][0]
    return "; ".join(
        f"resolution {row['resolution']}: {row['stopped early']} of {row['runs']} runs stopped early on a claim about the board "
        f"({row['wrong claims']} wrong)"
        + (
            f", {row['calls, mean (stopped runs)']} calls on average when stopped"
            if row["calls, mean (stopped runs)"] not in ("nan", "—")
            else ""
        )
        + ", "
        f"{row['calls, mean (all)']} of {row.get('budget', '805')} over all runs"
        for row in rows
    )


def board_claims_verdict(r: Record) -> str:
    rows = r["figures"]["tables"][0]
    wrong = sum(int(row["wrong claims"]) for row in rows)
    stopped = sum(int(row["stopped early"]) for row in rows)
    return "met" if wrong == 0 else f"not met: {wrong} of {stopped} early stops claimed something untrue"


def rows_monotone_figure(r: Record) -> str:
    rows = r["figures"]["rows"]
    if any("rows_monotone" not in x for x in rows):
        return "not measured by this record (it predates the check)"
    inorder = sum(1 for x in rows if x["rows_monotone"])
    crossed = " / ".join(f"{x['win_rates_crossed']}" for x in rows)
    where = " / ".join(f"{x['budget']:.0%} {x['allocation']}" for x in rows)
    return (
        f"rows in the printed Elo's order at {inorder} of {len(rows)} stops ({where}); neighbouring rows whose pool win rates "
        f"run the other way (the table's footnote says why): {crossed} of {rows[0]['models'] - 1}"
    )


def rows_monotone_verdict(r: Record) -> str:
    rows = r["figures"]["rows"]
    if any("rows_monotone" not in x for x in rows):
        return "not measured"
    return "met" if all(x["rows_monotone"] for x in rows) else "not met"


def _cost_rows(r: Record) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """The four tables of ``validity.compare_cost``: false decisions, 3-point, 10-point, no-op changes."""
    tables = r["figures"]["tables"]
    return tables[0], tables[1], tables[2], tables[3]


def compare_cost_figure(r: Record) -> str:
    errors, three, ten, noop = _cost_rows(r)
    worst = max(float(row["share"]) for row in errors)
    total = sum(int(row["comparisons (A/A)"].split()[0]) for row in errors)
    said = [f"false decisions at most {worst:.3f} over {total} comparisons (both designs, margins 0 and 2, probabilities and verdicts)"]
    for name, rows in (("3 points", three), ("10 points", ten)):
        for row in rows:
            said.append(
                f"{name}, {row['design']}: power {row['power (min–max over pairs)']}, mean {row['mean prompts (× fixed), mean over pairs']}, "
                f"most {row['most prompts (× fixed)']}"
            )
    for row in noop:
        said.append(
            f"no-op, {row['design']}: {row['with not better or equivalent']} stopped early (not better/equivalent), {row['better or worse']} better/worse"
        )
    return "; ".join(said)


def _ratio(text: str) -> float:
    return float(text.split("×")[0])


def compare_cost_verdict(r: Record) -> str:
    """The issue's targets: false decisions ≤ α; 3 points at power ≥ 0.8 — planned ≤ 1.1× at most and
    ≤ 0.85× on average, anytime ≤ 1.5× and ≤ 1.0×; 10 points ≤ 1.2× on average (the default design);
    no-op changes ≥ 80% stopped early with not better or equivalent, none better or worse (default)."""
    errors, three, ten, noop = _cost_rows(r)
    by = {row["design"]: row for row in three}
    ten_by = {row["design"]: row for row in ten}
    noop_by = {row["design"]: row for row in noop}
    power = {d: float(row["power (min–max over pairs)"].split()[0]) for d, row in by.items()}
    met = {
        "errors": max(float(row["share"]) for row in errors) <= 0.05,
        "planned": power["planned"] >= 0.8
        and _ratio(by["planned"]["most prompts (× fixed)"]) <= 1.1
        and _ratio(by["planned"]["mean prompts (× fixed), mean over pairs"]) <= 0.85,
        "anytime": power["anytime"] >= 0.8
        and _ratio(by["anytime"]["most prompts (× fixed)"]) <= 1.5
        and _ratio(by["anytime"]["mean prompts (× fixed), mean over pairs"]) <= 1.0,
        "ten": _ratio(ten_by["planned"]["mean prompts (× fixed), mean over pairs"]) <= 1.2,
        "noop": float(noop_by["planned"]["with not better or equivalent"]) >= 0.8 and int(noop_by["planned"]["better or worse"]) == 0,
    }
    if all(met.values()):
        return "met"
    return "not met: " + ", ".join(k for k, ok in met.items() if not ok)


def generation_figure(r: Record) -> str:
    return str(r["figures"]["lines"][-1])


def generation_verdict(r: Record) -> str:
    """The issue's targets: a newcomer on a board from 100 judged prompts ≤ 110 answers generated; a
    leaderboard of newcomers at 20% of the calls ≤ 25% of their answers; the gate ≤ 1.05× the prompts
    it judged, per system; every campaign's estimates the same as from a full responses file."""
    import re

    line = generation_figure(r)
    board = float(re.search(r"board: at most ([\d.]+) answers", line).group(1))  # type: ignore[union-attr]
    share = float(re.search(r"leaderboard: ([\d.]+)% of the answers", line).group(1))  # type: ignore[union-attr]
    gate = float(re.search(r"gate: ([\d.]+)× the prompts", line).group(1))  # type: ignore[union-attr]
    met = {"board": board <= 110, "leaderboard": share <= 25, "gate": gate <= 1.05, "same estimates": "NOT the same" not in line}
    return "met" if all(met.values()) else "not met: " + ", ".join(k for k, ok in met.items() if not ok)


def lost_figure(r: Record) -> str:
    return str(r["figures"]["lines"][-1])


def lost_verdict(r: Record) -> str:
    """The issue's target: a comparison decided under the documented rule for failed answers, next to
    the truth — every interval covers it and no decision has the wrong sign."""
    line = lost_figure(r)
    import re

    found = re.search(r"covers the truth in (\d+) of (\d+), (\d+) wrong decisions", line)
    if found is None:
        return "not read"
    covered, pairs, wrong = (int(g) for g in found.groups())
    return "met" if covered == pairs and wrong == 0 else f"not met: {pairs - covered} intervals miss the truth, {wrong} wrong decisions"
