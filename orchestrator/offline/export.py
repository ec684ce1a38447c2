"""Exports of a run's judgments: the judgment-log JSONL every offline command reads (a run's
export replays to the run's ranking), or flat CSV / Parquet rows for a spreadsheet or a notebook."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ..errors import OrchestratorError
from ..outputs import open_output
from ..records.config import RunConfig
from ..records.log import LogRecord
from ..run.planners import reference_items
from ..store import JudgmentRecord, RunStore, open_run

__all__ = ["EXPORT_FORMATS", "export", "log_records"]

EXPORT_FORMATS = ("jsonl", "csv", "parquet")


def _log_line(row: JudgmentRecord, anchor: str | None = None) -> dict:
    """One line of the judgment log (what ``orchestrator replay`` and the fits read)."""
    one = lambda values: values[0] if len(values) == 1 else values  # noqa: E731
    return {
        "kind": row.kind,
        "judge": row.judge,
        "prompt_id": row.prompt_id,
        "candidates": row.candidates,
        "probs": one(row.probs),
        **({"reference": anchor if anchor in row.candidates else row.candidates[0]} if row.kind == "reference" else {}),
        "repeat": row.repeat,
        "key": row.key,
        "template": row.template,
        "method": row.method,
        "capped": one(row.capped),
        "unresolved": one(row.unresolved),
        "text": row.text,
        "top_logprobs": row.top_logprobs,
        "round": row.round,
        "prompt_tokens": row.prompt_tokens,
        "completion_tokens": row.completion_tokens,
        "cost_usd": row.cost_usd,
        "latency_s": row.latency_s,
        "attempts": row.attempts,
        "note": row.note,
        "cached": row.cached,
    }


CSV_COLUMNS = [
    "key",
    "round",
    "kind",
    "judge",
    "template",
    "prompt_id",
    "candidate_a",
    "candidate_b",
    "repeat",
    "status",
    "p_first",
    "probs",
    "method",
    "capped",
    "unresolved",
    "text",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "latency_s",
    "attempts",
    "error_type",
    "error",
    "cached",
]


def _flat(row: JudgmentRecord) -> dict:
    """One CSV/Parquet row: scalar columns, the JSON ones (probs, capped, unresolved) as JSON text."""
    as_json = {"probs", "capped", "unresolved"}
    flat = {c: (json.dumps(getattr(row, c)) if c in as_json else getattr(row, c)) for c in CSV_COLUMNS if hasattr(row, c)}
    return {**flat, "candidate_a": row.candidates[0], "candidate_b": row.candidates[1] if len(row.candidates) > 1 else None}


def log_records(store: RunStore) -> list[LogRecord]:
    """The run's judgments as the judgment log's records (what its JSONL export reads back as), from
    the open run file's snapshot."""
    config = RunConfig.from_stored(store.config)
    anchor = reference_items(store.dataset(), config.reference.anchor, config.seed)[0] if config.reference is not None else None
    return [LogRecord.model_validate(_log_line(row, anchor)) for row in store.judgments(full=True)]


def export(path: str | Path, fmt: str, out: str | Path, *, include_failed: bool = False) -> int:
    """Write the run's judgments: ``jsonl`` (the judgment log ``orchestrator replay`` reads), ``csv`` or
    ``parquet`` (one row per judgment, option probabilities as JSON). Returns the number of rows."""
    if fmt not in EXPORT_FORMATS:
        raise OrchestratorError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    with open_run(path, write=False) as store:
        rows = list(store.judgments(ok_only=not include_failed, full=True))
        config = RunConfig.from_stored(store.config)
        anchor = reference_items(store.dataset(), config.reference.anchor, config.seed)[0] if config.reference is not None else None
    binary = fmt == "parquet"
    if binary:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise OrchestratorError("--format parquet needs pyarrow: pip install pyarrow") from None
    with open_output(out, option="--out", inputs=[path], binary=binary) as fh:
        if fmt == "jsonl":
            for row in rows:
                if row.status == "ok":
                    fh.write(json.dumps(_log_line(row, anchor)) + "\n")
        elif fmt == "csv":
            writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
            writer.writeheader()
            for row in rows:
                writer.writerow(_flat(row))
        else:
            table = pa.Table.from_pylist([_flat(r) for r in rows]) if rows else pa.table({c: [] for c in CSV_COLUMNS})
            pq.write_table(table, fh)
    return len(rows)
