"""``orchestrator report RUN --out report.html``: one self-contained HTML file a person reads — the
ranking with rank intervals, the efficiency curve, spend per round, per-judge diagnostics and every
judgment with its texts and probabilities."""

from __future__ import annotations

from pathlib import Path

from ..outputs import check_output, open_output
from .data import ReportData, collect
from .html import render, summary_text

__all__ = ["ReportData", "collect", "render", "summary_text", "write_report"]


def write_report(run: str | Path, out: str | Path, *, data: ReportData | None = None) -> Path | None:
    """Write the report of the run file ``run`` to ``out`` (``-``: standard output) under the output
    rules of :mod:`orchestrator.outputs`: never over the run file or another database, written whole
    or not at all. Checked before the report is built."""
    check_output(out, option="--out", inputs=[run])
    html = render(data if data is not None else collect(run))
    with open_output(out, option="--out", inputs=[run]) as handle:
        handle.write(html)
    return None if str(out) == "-" else Path(out)
