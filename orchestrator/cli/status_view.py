"""``status``'s table in a terminal, read from the typed record of ``status --json``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

from .common import out_console
from .display import forecast_text

if TYPE_CHECKING:
    from ..records.reports import Status


def print_status(status: Status) -> None:
    """``status``'s table, read from the typed record of ``status --json``
    (:class:`~orchestrator.records.reports.Status`): warnings first, then budget spent, rounds,
    requests, failures, the forecast, a comparison's decision, the top of each group."""
    table = Table(title=f"{status.name} ({status.state})")
    table.add_column("item")
    table.add_column("value")
    budget, spent = status.budget, status.spent
    fmt = lambda used, cap: f"{used}" + (f" of {cap}" if cap is not None else "")  # noqa: E731
    rows = [
        ("stop reason", status.stop_reason or "-"),
        (
            "rounds",
            f"{status.rounds} (numbered 0–{status.rounds - 1}, as in the progress bar and the rounds table)" if status.rounds else "0",
        ),
        ("requests", ", ".join(f"{k} {v}" for k, v in sorted(status.requests.items())) or "none"),
        ("failures", ", ".join(f"{k} {v}" for k, v in sorted(status.failures.items())) or "none"),
        (
            "calls",
            fmt(_whole(spent["calls"]), _whole(budget["calls"]))
            + (f" ({_whole(spent['cached'])} answered from the judgment cache, free)" if spent.get("cached") else ""),
        ),
        ("tokens", fmt(_whole(spent["tokens"]), _whole(budget["tokens"]))),
        ("USD", fmt(spent["usd"], budget["usd"])),
        *([("forecast", forecast_text(status.forecast))] if status.forecast else []),
        *[
            (f"deployments of {judge}", ", ".join(f"{d} {n}" for d, n in counts.items()))
            for judge, counts in (status.deployments if isinstance(status.deployments, dict) else {}).items()
        ],
        *([("decision", f"{status.comparison.sentence} (exit {status.comparison.exit_code})")] if status.comparison else []),
        *([] if status.comparison else [("groups", str(status.groups))]),
    ]
    for candidate, n in (status.answers or {}).items():
        more = ", ".join(f"{n[k]} {k}" for k in ("failed", "truncated", "cached", "pending") if n.get(k))
        rows.append((f"answers of {candidate}", f"{n['ok']} generated of {n['prompts']} prompts" + (f" ({more})" if more else "")))
    if status.people:
        people = status.people
        rows.append(("items asked of people", f"{people['asked']} ({people['asked_labelled']} labelled; {people['labels']} labels in all)"))
    if status.mean_entropy is not None:
        rows += [("mean entropy", str(status.mean_entropy)), ("max adjacent reorder probability", str(status.max_adjacent_reorder))]
    if status.mean_spearman_vs_truth is not None:
        rows.append(("mean Spearman vs truth", str(status.mean_spearman_vs_truth)))
    for group, top in status.top.items():
        rows.append((f"top of {group[:40]}", " > ".join(top)))
    for k, v in rows:
        table.add_row(k, v)
    for warning in status.warnings:
        out_console.print(f"warning: {warning}", soft_wrap=True)
    out_console.print(table)


def _whole(value: float | None) -> int | float | None:
    """A count the record keeps as a number (``spent``/``budget`` are typed ``float``): printed as the integer it is."""
    return int(value) if value is not None and float(value).is_integer() else value
