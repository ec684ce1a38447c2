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

Malformed input fails with one line naming the file and line (or field); nothing is written then.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .errors import OrchestratorError
from .records import check_identifier, read_jsonl

__all__ = ["FORMATS", "Imported", "import_data", "write_imported"]


@dataclass
class Imported:
    """What an importer read: prompts (id → text, reference) and responses in file order."""

    prompts: dict[str, dict[str, Any]] = field(default_factory=dict)
    responses: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def add_prompt(self, prompt_id: str, text: str, reference: str | None, where: str) -> None:
        if not text.strip():
            raise OrchestratorError(f"{where}: the prompt text is empty")
        old = self.prompts.get(prompt_id)
        if old is not None and old["text"] != text:
            raise OrchestratorError(f"{where}: prompt {prompt_id!r} appears twice with different texts")
        row: dict[str, Any] = {"id": _name(prompt_id, where), "text": text}
        if reference:
            row["reference"] = reference
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
        raise OrchestratorError(f"{where}: name {value!r} {exc}") from None


def _text(value: Any, where: str) -> str:
    """A turn's text: a string, or ``{"content": ...}`` / ``{"answer": ...}`` (arena-hard)."""
    if isinstance(value, dict):
        value = value.get("answer", value.get("content"))
        if isinstance(value, dict):
            value = value.get("answer")
    if not isinstance(value, str):
        raise OrchestratorError(f"{where}: expected a text, got {type(value).__name__}")
    return value


def _alpacaeval(paths: list[Path]) -> Imported:
    out = Imported()
    ids: dict[str, str] = {}
    for path in paths:
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise OrchestratorError(f"{path}: not a model_outputs.json file ({exc})") from None
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
            if pid not in out.prompts:
                out.add_prompt(pid, instruction, None, where)
            generator = row.get("generator") or path.parent.name
            out.add_response(pid, str(generator), row["output"], where)
    return out


def _fastchat(folder: Path, flavour: str) -> Imported:
    """MT-Bench and arena-hard share FastChat's layout."""
    questions = folder / "question.jsonl"
    answers = folder / "model_answer"
    if not questions.is_file() or not answers.is_dir():
        raise OrchestratorError(f"{folder}: expected question.jsonl and a model_answer/ folder ({flavour})")
    out = Imported()
    turns_of: dict[str, list[str]] = {}
    for line, row in read_jsonl(questions):
        where = f"{questions}:{line}"
        qid = row.get("question_id", row.get("uid"))
        if qid is None:
            raise OrchestratorError(f"{where}: no question_id (or uid)")
        raw_turns = row.get("turns") if "turns" in row else [row.get("prompt")]
        if not isinstance(raw_turns, list) or not raw_turns:
            raise OrchestratorError(f"{where}: 'turns' must be a non-empty list")
        turns = [_text(t, where) for t in raw_turns]
        reference = row.get("reference")
        ref_text = "\n\n".join(_text(t, where) for t in reference) if isinstance(reference, list) and reference else None
        text = turns[0] if len(turns) == 1 else "\n\n".join(f"[Turn {k}] {t}" for k, t in enumerate(turns, 1))
        out.add_prompt(str(qid), text, ref_text, where)
        turns_of[str(qid)] = turns
    files = sorted(answers.glob("*.jsonl"))
    if not files:
        raise OrchestratorError(f"{answers}: no <model>.jsonl answer files")
    for path in files:
        for line, row in read_jsonl(path):
            where = f"{path}:{line}"
            qid = str(row.get("question_id", row.get("uid")))
            model = row.get("model_id") or row.get("model") or path.stem
            if "choices" in row:
                choices = row["choices"]
                if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
                    raise OrchestratorError(f"{where}: 'choices' must be a non-empty list of objects")
                answer_turns = [_text(t, where) for t in choices[0].get("turns") or []]
            elif "messages" in row:
                answer_turns = [
                    _text(m.get("content"), where) for m in row["messages"] if isinstance(m, dict) and m.get("role") == "assistant"
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
            out.add_response(qid, str(model), text, where)
    return out


def _csv(paths: list[Path]) -> Imported:
    out = Imported()
    for path in paths:
        try:
            with path.open(newline="", encoding="utf-8") as fh:
                rows = list(csv.DictReader(fh))
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise OrchestratorError(f"{path}: cannot read the CSV ({exc})") from None
        if not rows:
            raise OrchestratorError(f"{path}: no rows")
        columns = set(rows[0])
        model_column = "model" if "model" in columns else "candidate"
        missing = {"prompt", "response", model_column} - columns
        if missing:
            raise OrchestratorError(f"{path}: missing column(s) {', '.join(sorted(missing))} (need prompt, response, model)")
        scores = sorted(columns - {"prompt", "response", "model", "candidate", "prompt_id", "reference"})
        for line, row in enumerate(rows, start=2):
            where = f"{path}:{line}"
            prompt = row["prompt"] or ""
            pid = row.get("prompt_id") or "q" + hashlib.sha256(prompt.encode()).hexdigest()[:10]
            out.add_prompt(pid, prompt, row.get("reference") or None, where)
            human: dict[str, float] = {}
            for column in scores:
                value = (row.get(column) or "").strip()
                if not value:
                    continue
                try:
                    number = float(value)
                except ValueError:
                    continue  # a text column (a category, a note), not a score
                if not math.isfinite(number):
                    raise OrchestratorError(f"{where}: column {column!r} is {value} (not a finite number)")
                human[column] = number
            out.add_response(pid, row[model_column] or "", row["response"] or "", where, human)
    return out


FORMATS: dict[str, Callable[[list[Path]], Imported]] = {
    "alpacaeval": _alpacaeval,
    "mtbench": lambda paths: _fastchat(_one_folder(paths, "mtbench"), "MT-Bench"),
    "arenahard": lambda paths: _fastchat(_one_folder(paths, "arenahard"), "arena-hard"),
    "csv": _csv,
}


def _one_folder(paths: list[Path], fmt: str) -> Path:
    if len(paths) != 1 or not paths[0].is_dir():
        raise OrchestratorError(f"{fmt}: give the one folder that holds question.jsonl and model_answer/")
    return paths[0]


def import_data(fmt: str, paths: list[Path]) -> Imported:
    """Read ``paths`` in format ``fmt`` (one of :data:`FORMATS`).

    Raises:
        OrchestratorError: unknown format, missing files, malformed input (file and line), fewer
            than two candidates on every prompt.
    """
    if fmt not in FORMATS:
        raise OrchestratorError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    for path in paths:
        if not path.exists():
            raise OrchestratorError(f"{path}: no such file or folder")
    imported = FORMATS[fmt](paths)
    per_prompt: dict[str, int] = {}
    for pid, _ in imported.responses:
        per_prompt[pid] = per_prompt.get(pid, 0) + 1
    if not any(n >= 2 for n in per_prompt.values()):
        raise OrchestratorError(f"{', '.join(map(str, paths))}: no prompt has two or more responses; nothing to rank")
    return imported


def write_imported(imported: Imported, out: Path, inputs: list[Path]) -> tuple[Path, Path]:
    """``out/prompts.jsonl`` and ``out/responses.jsonl`` (the folder is created), each written
    atomically and never over an input."""
    from .outputs import open_output

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OrchestratorError(f"--out {out}: cannot create the folder ({exc.strerror})") from None
    written = []
    for name, rows in (("prompts.jsonl", imported.prompts.values()), ("responses.jsonl", imported.responses.values())):
        target = out / name
        with open_output(target, option="--out", inputs=inputs) as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        written.append(target)
    return written[0], written[1]
