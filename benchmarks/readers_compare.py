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
