"""Exports of a run's judgments: the judgment-log JSONL every offline command reads (a run's
export replays to the run's ranking), or flat CSV / Parquet rows for a spreadsheet or a notebook."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from ...errors import OrchestratorError
from ...outputs import open_output
from ...records.config import RunConfig
from ...records.log import LogRecord, grade_vector
from ...run.planners import reference_items
from ...store import JudgmentRecord, RunStore, open_run

__all__ = ["EXPORT_FORMATS", "export", "log_records"]

EXPORT_FORMATS = ("jsonl", "csv", "parquet", "answers")


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
        **({"samples": row.samples} if row.samples is not None else {}),
        **({"stated": row.stated} if row.stated is not None else {}),
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
    "first",
    "second",
    "winner",
    "score",
    "p_first",
    "repeat",
    "status",
    "method",
    "capped",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "latency_s",
    "attempts",
    "error_type",
    "error",
    "cached",
]
"""The tidy export's fixed columns: one row per judgment, the shown answers, the verdict
(``winner``: the judge's most probable answer — the name of the candidate it picks, or ``tie`` (:func:`winner`); ``score``: an absolute judgment's
expected level), then one ``prob_OPTION`` column per option any judgment has (``prob_A``,
``prob_B``, ``prob_C`` for a tie, ``prob_A>>B`` … for graded verdicts, ``prob_1`` … for scores);
the judge's own words in ``text`` only with ``with_text``. No cell holds JSON."""


def answer_shares(probs: dict[str, float]) -> tuple[float, float, float]:
    """``(first, second, tie)``: how probable the judge made each of its three answers (graded
    verdicts: ``A>>B`` and ``A>B`` say first, ``A=B`` tie, ``B>A`` and ``B>>A`` second)."""
    graded = grade_vector(probs)
    if graded is not None:
        return graded[0] + graded[1], graded[3] + graded[4], graded[2]
    a, b, c = probs.get("A", 0.0), probs.get("B", 0.0), probs.get("C", 0.0)
    total = a + b + c
    return (a / total, b / total, c / total) if total > 0 else (0.0, 0.0, 0.0)


def winner(candidates: list[str], probs: dict[str, float]) -> str | None:
    """The export's ``winner``: the judge's most probable answer — the first-shown candidate's
    name, the second's, or ``tie`` (a tie option that is the most probable answer; also when the
    two candidates are exactly as probable, so no single answer is). Not ``p_first``'s side: a tie
    counts half in ``p_first``, so a judge answering tie with probability 0.71 has ``p_first``
    above ½ for whichever side the rest leans to, and its most probable answer is still tie."""
    if len(candidates) != 2 or not probs:
        return None
    first, second, tie = answer_shares(probs)
    if first + second + tie <= 0:
        return None
    if tie >= max(first, second) or first == second:
        return "tie"
    return candidates[0] if first > second else candidates[1]


def _winner(row: JudgmentRecord) -> str | None:
    if row.kind not in ("pairwise", "reference") or not row.probs:
        return None
    return winner(row.candidates, row.probs[0])


SPREADSHEET_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet reads as the start of a formula (OWASP, *CSV Injection*)."""


def spreadsheet_safe(value: object) -> object:
    """A text cell that a spreadsheet would run as a formula, prefixed with ``'`` (OWASP's
    neutralisation: shown as text, the quote hidden by the spreadsheet); numbers, booleans and
    empty cells unchanged (a negative number stays a number)."""
    if isinstance(value, str) and value.startswith(SPREADSHEET_FORMULA_START):
        return "'" + value
    return value


def _score(row: JudgmentRecord) -> float | None:
    if row.kind != "absolute" or not row.probs:
        return None
    levels = {float(k): v for k, v in row.probs[0].items()}
    total = sum(levels.values())
    return round(sum(k * v for k, v in levels.items()) / total, 6) if total > 0 else None


def _flat(row: JudgmentRecord, options: list[str], with_text: bool) -> dict:
    """One CSV/Parquet row: scalar cells only (the option probabilities of the first read position
    as columns, ``capped`` true where any was capped)."""
    flat = {c: getattr(row, c) for c in CSV_COLUMNS if hasattr(row, c)}
    probs = row.probs[0] if row.probs else {}
    flat.update(
        first=row.candidates[0],
        second=row.candidates[1] if len(row.candidates) > 1 else None,
        winner=_winner(row),
        score=_score(row),
        capped=bool(any(row.capped)),
        **{f"prob_{o}": probs.get(o) for o in options},
    )
    if with_text:
        flat["text"] = row.text
    return flat


def _options(rows: list[JudgmentRecord]) -> list[str]:
    """Every option any judgment has, in a reading order: A, B, C, the graded verdicts, then levels."""
    seen = {o for row in rows for o in (row.probs[0] if row.probs else {})}
    fixed = [o for o in ("A", "B", "C", "A>>B", "A>B", "A=B", "B>A", "B>>A") if o in seen]
    rest = sorted(seen - set(fixed), key=lambda o: (float(o), o) if o.lstrip("-").replace(".", "", 1).isdigit() else (math.inf, o))
    return fixed + rest


def log_records(store: RunStore) -> list[LogRecord]:
    """The run's judgments as the judgment log's records (what its JSONL export reads back as), from
    the open run file's snapshot."""
    config = RunConfig.from_stored(store.config)
    anchor = reference_items(store.dataset(), config.reference.anchor, config.seed)[0] if config.reference is not None else None
    return [LogRecord.model_validate(_log_line(row, anchor)) for row in store.judgments(full=True)]


def export(path: str | Path, fmt: str, out: str | Path, *, include_failed: bool = False, with_text: bool = False) -> int:
    """Write the run's judgments: ``jsonl`` (the judgment log ``orchestrator replay`` reads), ``csv`` or
    ``parquet`` (tidy: one row per judgment, :data:`CSV_COLUMNS` then a column per option; the
    judge's words with ``with_text``). Returns the number of rows."""
    if fmt not in EXPORT_FORMATS:
        raise OrchestratorError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    if fmt == "answers":
        return export_answers(path, out)
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
        else:
            options = _options(rows)
            columns = CSV_COLUMNS + [f"prob_{o}" for o in options] + (["text"] if with_text else [])
            flat = [_flat(r, options, with_text) for r in rows]
            if fmt == "csv":
                writer = csv.DictWriter(fh, fieldnames=columns)
                writer.writeheader()
                writer.writerows({k: spreadsheet_safe(v) for k, v in row.items()} for row in flat)
            else:
                table = pa.Table.from_pylist(flat) if rows else pa.table({c: [] for c in columns})
                pq.write_table(table, fh)
    return len(rows)


def export_answers(path: str | Path, out: str | Path) -> int:
    """Write the candidate models' generated answers: JSONL rows in the responses file's format
    (``prompt_id``, ``candidate``, ``text`` — what ``run --answers-from`` reads) with their
    provenance (``model``, ``settings``, tokens, ``cost_usd``, ``latency_s``, ``finish_reason``,
    ``truncated``, ``cached``, ``round``); answers that could not be generated are left out (the run's
    status counts them). Returns the number of rows."""
    from ...store.answers import stored_answers

    with open_run(path, write=False) as store:
        answers = [a for a in stored_answers(store).values() if a.status == "ok"]
    with open_output(out, option="--out", inputs=[path]) as fh:
        for a in answers:
            row = {
                "prompt_id": a.prompt_id,
                "candidate": a.candidate,
                "text": a.text,
                "model": a.settings.model,
                "settings": a.settings.model_dump(mode="json", exclude={"price_input_per_mtok", "price_output_per_mtok"}),
                "prompt_tokens": a.prompt_tokens,
                "completion_tokens": a.completion_tokens,
                "cost_usd": a.cost_usd,
                "latency_s": a.latency_s,
                "finish_reason": a.finish_reason,
                "truncated": a.truncated,
                "cached": a.cached,
                "round": a.round,
            }
            fh.write(json.dumps(row) + "\n")
    return len(answers)
