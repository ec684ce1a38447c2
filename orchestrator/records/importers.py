"""Importers: the formats users already have → ``prompts.jsonl`` + ``responses.jsonl``.

- ``alpacaeval``: one or more AlpacaEval ``model_outputs.json`` files (a JSON list of
  ``{"instruction", "output", "generator", ...}``); prompts are matched by instruction text.
- ``mtbench``: a FastChat MT-Bench folder: ``question.jsonl`` (``{"question_id", "turns": [...],
  "reference": [...]}``) and ``model_answer/<model>.jsonl`` (``{"question_id", "model_id", "choices":
  [{"turns": [...]}]}``). Multi-turn: the response is the whole conversation (every user turn with
  the model's answer to it), so the judge sees what the model saw.
- ``arenahard``: an arena-hard-auto folder (``question.jsonl`` + ``model_answer/*.jsonl``), v0.1
  (``question_id``, ``turns``/``choices`` as MT-Bench, turn contents as ``{"content": ...}``) or v2
  (``uid``, ``prompt``, answers as chat ``messages`` whose assistant content is ``{"answer": ...}``).
- ``csv``: a CSV file with columns ``prompt`` and ``response`` and ``model`` (or ``candidate``),
  optionally ``prompt_id`` and ``reference``; every other column with numbers is a human score.

Prompt categories are kept as the prompts' ``category`` (slices of the leaderboard): MT-Bench's and
arena-hard's ``category``, AlpacaEval's ``dataset`` (the instruction's source set), a CSV's
``category`` column.

Malformed input fails with one line naming the file and line (or field); nothing is written then.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import OrchestratorError
from .log import check_identifier, decode_text, parse_json, read_jsonl

__all__ = ["FORMATS", "Imported", "csv_rows", "import_data", "write_imported"]


@dataclass
class Imported:
    """What an importer read: prompts (id → text, reference) and responses in file order."""

    prompts: dict[str, dict[str, Any]] = field(default_factory=dict)
    responses: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def add_prompt(
        self, prompt_id: str, text: str, reference: str | None, where: str, category: Any = None, field: str = "category"
    ) -> None:
        if not text.strip():
            raise OrchestratorError(f"{where}: the prompt text is empty")
        old = self.prompts.get(prompt_id)
        if old is not None and old["text"] != text:
            raise OrchestratorError(f"{where}: prompt {prompt_id!r} appears twice with different texts")
        row: dict[str, Any] = {"id": _name(prompt_id, where), "text": text}
        if reference:
            row["reference"] = reference
        if category not in (None, ""):
            if not isinstance(category, str):
                raise OrchestratorError(f"{where}: field {field!r} must be a text, got {_type(category)}")
            row["category"] = _name(category, f"{where}: category")
        self.prompts[prompt_id] = row

    def add_response(self, prompt_id: str, candidate: str, text: str, where: str, human: dict[str, float] | None = None) -> None:
        if prompt_id not in self.prompts:
            raise OrchestratorError(f"{where}: answer to unknown prompt {prompt_id!r}")
        if not text.strip():
            raise OrchestratorError(f"{where}: the response of {candidate!r} to prompt {prompt_id!r} is empty")
        if (prompt_id, candidate) in self.responses:
            raise OrchestratorError(f"{where}: a second response of {candidate!r} to prompt {prompt_id!r}")
        row: dict[str, Any] = {"prompt_id": prompt_id, "candidate": _name(candidate, where), "text": text}
        if human:
            row["human"] = human
        self.responses[(prompt_id, candidate)] = row


def _name(value: Any, where: str) -> str:
    try:
        return check_identifier(str(value))
    except ValueError as exc:
        detail = str(exc)  # (some reasons quote the name already)
        raise OrchestratorError(f"{where}: {detail}" if repr(str(value)) in detail else f"{where}: name {value!r} {detail}") from None


def _text(value: Any, where: str) -> str:
    """A turn's text: a string, or ``{"content": ...}`` / ``{"answer": ...}`` (arena-hard)."""
    if isinstance(value, dict):
        value = value.get("answer", value.get("content"))
        if isinstance(value, dict):
            value = value.get("answer")
    if not isinstance(value, str):
        raise OrchestratorError(f"{where}: expected a text, got {_type(value)}")
    return value


def _alpacaeval(paths: list[Path], encoding: str | None = None) -> Imported:
    out = Imported()
    ids: dict[str, str] = {}
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise OrchestratorError(f"{path}: cannot read ({exc.strerror})") from None
        rows = parse_json(
            decode_text(data, path, encoding, encoding_option=True), str(path), whole_file=True, what="not a model_outputs.json file: "
        )
        if not isinstance(rows, list):
            raise OrchestratorError(f"{path}: expected a JSON list of outputs")
        for i, row in enumerate(rows):
            where = f"{path}[{i}]"
            if not isinstance(row, dict) or not isinstance(row.get("instruction"), str) or not isinstance(row.get("output"), str):
                raise OrchestratorError(f"{where}: needs text fields 'instruction' and 'output'")
            instruction = row["instruction"]
            if instruction not in ids:
                ids[instruction] = f"q{len(ids):04d}"
            pid = ids[instruction]
            if pid not in out.prompts:  # AlpacaEval's "dataset": the source set of the instruction (koala, oasst, …)
                out.add_prompt(pid, instruction, None, where, row.get("dataset"), field="dataset")
            generator = row.get("generator") or path.parent.name
            if not isinstance(generator, str):
                raise OrchestratorError(f"{where}: field 'generator' must be a text, got {_type(generator)}")
            out.add_response(pid, generator, row["output"], where)
    return out


def _type(value: Any) -> str:
    return (
        "null"
        if value is None
        else {"str": "a text", "bool": "true/false", "int": "a number", "float": "a number"}.get(
            type(value).__name__, f"a {type(value).__name__}"
        )
    )


def _id(row: dict, where: str, *fields: str) -> str:
    """The first of ``fields`` the row has, as a text (a number is fine; null, lists, objects are not)."""
    for name in fields:
        if name in row:
            value = row[name]
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise OrchestratorError(f"{where}: field {name!r} must be a text or a whole number, got {_type(value)}")
            return str(value)
    raise OrchestratorError(f"{where}: no {' or '.join(repr(f) for f in fields)}")


def _list(row: dict, name: str, where: str) -> list:
    value = row.get(name)
    if not isinstance(value, list) or not value:
        raise OrchestratorError(
            f"{where}: field {name!r} must be a non-empty list, got {_type(value) if not isinstance(value, list) else 'an empty list'}"
        )
    return value


def _fastchat(folder: Path, flavour: str, encoding: str | None = None) -> Imported:
    """MT-Bench and arena-hard share FastChat's layout."""
    questions = folder / "question.jsonl"
    answers = folder / "model_answer"
    if not questions.is_file() or not answers.is_dir():
        raise OrchestratorError(f"{folder}: expected question.jsonl and a model_answer/ folder ({flavour})")
    out = Imported()
    turns_of: dict[str, list[str]] = {}
    for line, row in read_jsonl(questions, encoding=encoding, encoding_option=True):
        where = f"{questions}:{line}"
        qid = _id(row, where, "question_id", "uid")
        raw_turns = _list(row, "turns", where) if "turns" in row else [row.get("prompt")]
        turns = [_text(t, f"{where}: field 'turns'" if "turns" in row else f"{where}: field 'prompt'") for t in raw_turns]
        reference = row.get("reference")
        if reference is not None and not isinstance(reference, list):
            raise OrchestratorError(f"{where}: field 'reference' must be a list of turns, got {_type(reference)}")
        ref_text = "\n\n".join(_text(t, f"{where}: field 'reference'") for t in reference) if reference else None
        text = turns[0] if len(turns) == 1 else "\n\n".join(f"[Turn {k}] {t}" for k, t in enumerate(turns, 1))
        out.add_prompt(str(qid), text, ref_text, where, row.get("category"))
        turns_of[str(qid)] = turns
    files = sorted(answers.glob("*.jsonl"))
    if not files:
        raise OrchestratorError(f"{answers}: no <model>.jsonl answer files")
    for path in files:
        for line, row in read_jsonl(path, encoding=encoding, encoding_option=True):
            where = f"{path}:{line}"
            qid = _id(row, where, "question_id", "uid")
            model = row.get("model_id") or row.get("model") or path.stem
            if not isinstance(model, str):
                raise OrchestratorError(f"{where}: field 'model_id' must be a text, got {_type(model)}")
            if "choices" in row:
                choices = _list(row, "choices", where)
                if not isinstance(choices[0], dict):
                    raise OrchestratorError(f"{where}: field 'choices' must hold objects, got {_type(choices[0])}")
                answer_turns = [_text(t, f"{where}: field 'choices[0].turns'") for t in _list(choices[0], "turns", f"{where}: choices[0]")]
            elif "messages" in row:
                answer_turns = [
                    _text(m.get("content"), f"{where}: field 'messages'")
                    for m in _list(row, "messages", where)
                    if isinstance(m, dict) and m.get("role") == "assistant"
                ]
            else:
                raise OrchestratorError(f"{where}: no 'choices' or 'messages'")
            if qid not in turns_of:
                raise OrchestratorError(f"{where}: answer to unknown question {qid!r}")
            questions_asked = turns_of[qid]
            if len(answer_turns) != len(questions_asked):
                raise OrchestratorError(f"{where}: {len(answer_turns)} answer turn(s) for {len(questions_asked)} question turn(s)")
            if len(questions_asked) == 1:
                text = answer_turns[0]
            else:  # the whole conversation: the judge sees each answer in its context
                text = "\n\n".join(f"### User:\n{q}\n\n### Assistant:\n{a}" for q, a in zip(questions_asked, answer_turns))
            out.add_response(qid, model, text, where)
    return out


def csv_rows(path: Path, encoding: str | None = None) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and ``(line, row)`` of a CSV file (comma, semicolon or tab separated, as
    spreadsheet programs save them), read strictly: a quoting error or a row with another number of
    fields than the header is an error naming its line, never a silently shifted row."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OrchestratorError(f"{path}: cannot read ({exc.strerror})") from None
    text = decode_text(data, path, encoding, encoding_option=True)
    first = text.split("\n", 1)[0]
    delimiter = max(",;\t", key=first.count) if first else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[tuple[int, dict[str, str]]] = []
    header: list[str] = []
    try:
        for fields in reader:
            line = reader.line_num
            if not header:
                header = [f.strip() for f in fields]
                if "" in header or len(set(header)) != len(header):
                    raise OrchestratorError(
                        f"{path}:1: the header needs distinct, non-empty column names (got {', '.join(map(repr, header))})"
                    )
                continue
            if not any(f.strip() for f in fields):
                continue
            if len(fields) != len(header):
                raise OrchestratorError(
                    f"{path}:{line}: {len(fields)} fields where the header has {len(header)} (a quote not closed or a separator inside an unquoted text?)"
                )
            rows.append((line, dict(zip(header, fields))))
    except csv.Error as exc:
        raise OrchestratorError(f"{path}:{reader.line_num}: not valid CSV ({exc})") from None
    return header, rows


def _csv(paths: list[Path], encoding: str | None = None) -> Imported:
    out = Imported()
    for path in paths:
        header, rows = csv_rows(path, encoding)
        if not rows:
            raise OrchestratorError(f"{path}: no rows")
        columns = set(header)
        model_column = "model" if "model" in columns else "candidate"
        missing = {"prompt", "response", model_column} - columns
        if model_column in missing:
            missing = (missing - {model_column}) | {"model (or candidate)"}
        if missing:
            raise OrchestratorError(
                f"{path}:1: missing column(s) {', '.join(sorted(missing))} (need prompt, response, model; the header has {', '.join(header)})"
            )
        scores = sorted(columns - {"prompt", "response", "model", "candidate", "prompt_id", "reference", "category"})
        for line, row in rows:
            where = f"{path}:{line}"
            prompt = row["prompt"]
            pid = row.get("prompt_id") or "q" + hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:10]
            out.add_prompt(pid, prompt, row.get("reference") or None, where, row.get("category"))
            human: dict[str, float] = {}
            for column in scores:
                value = row[column].strip()
                if not value:
                    continue
                try:
                    number = float(value)
                except ValueError:
                    continue  # a text column (a category, a note), not a score
                if not math.isfinite(number):
                    raise OrchestratorError(f"{where}: column {column!r} is {value} (not a finite number)")
                human[column] = number
            out.add_response(pid, row[model_column], row["response"], where, human)
    return out


FORMATS: dict[str, Callable[[list[Path], str | None], Imported]] = {
    "alpacaeval": _alpacaeval,
    "mtbench": lambda paths, encoding: _fastchat(_one_folder(paths, "mtbench"), "MT-Bench", encoding),
    "arenahard": lambda paths, encoding: _fastchat(_one_folder(paths, "arenahard"), "arena-hard", encoding),
    "csv": _csv,
}


def _one_folder(paths: list[Path], fmt: str) -> Path:
    if len(paths) != 1 or not paths[0].is_dir():
        raise OrchestratorError(f"{fmt}: give the one folder that holds question.jsonl and model_answer/")
    return paths[0]


def import_data(fmt: str, paths: list[Path], *, encoding: str | None = None) -> Imported:
    """Read ``paths`` in format ``fmt`` (one of :data:`FORMATS`); text is UTF-8 (with or without
    a byte-order mark), UTF-16 with its mark, or ``encoding``.

    Raises:
        OrchestratorError: unknown format, missing files, malformed input (file and line), fewer
            than two candidates on every prompt.
    """
    if fmt not in FORMATS:
        raise OrchestratorError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    for path in paths:
        if not path.exists():
            raise OrchestratorError(f"{path}: no such file or folder")
    imported = FORMATS[fmt](paths, encoding)
    per_prompt: dict[str, int] = {}
    for pid, _ in imported.responses:
        per_prompt[pid] = per_prompt.get(pid, 0) + 1
    if not any(n >= 2 for n in per_prompt.values()):
        raise OrchestratorError(f"{', '.join(map(str, paths))}: no prompt has two or more responses; nothing to rank")
    return imported


def write_imported(imported: Imported, out: Path, inputs: list[Path]) -> tuple[Path, Path]:
    """``out/prompts.jsonl`` and ``out/responses.jsonl`` (the folder is created), each written
    atomically and never over an input."""
    from ..outputs import check_output, open_output

    if out.exists() and not out.is_dir():
        raise OrchestratorError(f"--out {out}: is a file; give a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OrchestratorError(f"--out {out}: cannot create the folder ({exc.strerror})") from None
    prompts, responses = out / "prompts.jsonl", out / "responses.jsonl"
    for target in (prompts, responses):  # both checked before either is written
        check_output(target, option="--out", inputs=inputs)
    # both written to temporary files, renamed over the targets only once both are complete
    with open_output(prompts, option="--out", inputs=inputs) as fp, open_output(responses, option="--out", inputs=inputs) as fr:
        for fh, rows in ((fp, imported.prompts.values()), (fr, imported.responses.values())):
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return prompts, responses
