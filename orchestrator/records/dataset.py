"""Datasets: ``prompts.jsonl`` + ``responses.jsonl`` (the ``shared/data/summeval`` format), validated.

::

    prompts.jsonl    {"id": P, "text": T, "reference": R?, "category": K?}
    responses.jsonl  {"prompt_id": P, "candidate": C, "text": T, "human": {...}?}

A run stores a snapshot of its dataset with a :func:`fingerprint`, so a resumed run uses exactly
the data it started with.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, model_validator

from ..errors import OrchestratorError
from .log import check_identifier, validate_jsonl

__all__ = ["DATASET_ANCHOR", "Dataset", "PromptRow", "ResponseText", "load_dataset", "load_prompts", "fingerprint", "MAX_TEXT_BYTES"]

DATASET_ANCHOR = "reference"
"""The anchor's name in the log when it is the dataset's reference text (a reference campaign with
``anchor = "dataset"``; people label it under the same name)."""

MAX_TEXT_BYTES = 1_000_000
"""Largest prompt, reference or response text (UTF-8 bytes): about 250k tokens, more than any
judge's context window holds; a larger text is a data error (a whole file pasted into a field)."""


def _nonblank(value: str) -> str:
    if not value.strip():
        raise ValueError("is empty")
    _bounded(value)
    return value


def _bounded(value: str | None) -> str | None:
    if value is not None and len(value) > MAX_TEXT_BYTES // 4 and len(value.encode("utf-8")) > MAX_TEXT_BYTES:
        raise ValueError(
            f"is {len(value.encode('utf-8')) / 1e6:.1f} MB; the limit is {MAX_TEXT_BYTES / 1e6:g} MB per text "
            "(no judge's context window holds more)"
        )
    return value


Identifier = Annotated[str, AfterValidator(check_identifier)]
"""A prompt's, candidate's or category's name (:func:`check_identifier`)."""
Text = Annotated[str, AfterValidator(_nonblank)]
"""A text that must say something, within :data:`MAX_TEXT_BYTES`."""
BoundedText = Annotated[str, AfterValidator(_bounded)]
"""A text within :data:`MAX_TEXT_BYTES`."""


MAX_SHOWN_HISTORY_CHARS = 8_000
"""How much of a conversation's earlier turns a judge is shown: the last turns that fit whole (the
final user turn always, however long); earlier ones are replaced by one line that says how many
were left out."""


class Turn(BaseModel):
    """One message of a conversation prompt."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    role: Literal["system", "user", "assistant"]
    content: Text


def shown_conversation(turns: list[Turn], limit: int = MAX_SHOWN_HISTORY_CHARS) -> str:
    """What a judge is shown of a conversation (its ``${question}``): each turn as ``Role: text``,
    the system message (what the candidate was told) and the final user turn always whole, the
    turns between them newest first while they fit in ``limit`` characters, and a line saying how
    many earlier turns were left out."""
    lines = [f"{t.role.capitalize()}: {t.content}" for t in turns]
    system = lines[0] if len(turns) > 1 and turns[0].role == "system" else None
    body = lines[1:] if system is not None else lines
    kept = [body[-1]]
    room = limit - len(body[-1]) - (len(system) + 2 if system is not None else 0)
    for line in reversed(body[:-1]):
        if len(line) + 2 > room:
            break
        kept.insert(0, line)
        room -= len(line) + 2
    left_out = len(body) - len(kept)
    note = [f"[{left_out} earlier turn{'s' if left_out != 1 else ''} not shown]"] if left_out else []
    return "\n\n".join(([system] if system is not None else []) + note + kept)


class PromptRow(BaseModel):
    """One prompt (question, article, instruction), or a conversation (``messages``: a system
    message, earlier user and assistant turns, ending with the user turn a candidate answers;
    ``text`` is then what a judge is shown of it, :func:`shown_conversation`)."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, allow_inf_nan=False)

    id: Identifier
    text: Text = ""
    messages: list[Turn] | None = None
    reference: BoundedText | None = None
    """Optional reference answer (for reference-anchored templates)."""
    category: Identifier | None = None
    """Optional slice (arena-hard's and MT-Bench's categories, AlpacaEval's source data set): a
    leaderboard is also reported per category."""

    @model_validator(mode="before")
    @classmethod
    def _conversation(cls, data: Any) -> Any:
        """A conversation's ``text`` is what a judge is shown of it; a prompt needs one or the other."""
        if not isinstance(data, dict):
            return data
        turns = data.get("messages")
        if turns is None:
            if not data.get("text"):
                raise ValueError("a prompt needs a text or messages (a conversation ending with a user turn)")
            return data
        if not isinstance(turns, list) or not turns:
            raise ValueError("messages: a conversation is a non-empty list of {role, content}")
        parsed = [Turn.model_validate(t) for t in turns]
        if parsed[-1].role != "user":
            raise ValueError(
                f"messages: the conversation ends with the {parsed[-1].role}'s turn; it must end with the user turn a candidate answers"
            )
        if any(t.role == "system" for t in parsed[1:]):
            raise ValueError("messages: a system message may only come first")
        if data.get("text"):
            raise ValueError("give text or messages, not both (a conversation's text is what judges are shown of it)")
        return {**data, "messages": parsed, "text": shown_conversation(parsed)}


class ResponseText(BaseModel):
    """One candidate's response to one prompt; ``human`` scores are only for evaluation."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, allow_inf_nan=False)

    prompt_id: Identifier
    candidate: Identifier
    text: Text
    human: dict[str, float | int | None] = {}


@dataclass(frozen=True)
class Dataset:
    """Prompts and responses, in file order."""

    prompts: dict[str, PromptRow]
    responses: dict[str, dict[str, ResponseText]]
    """``prompt_id → candidate → response``; a candidate that is a model has an entry for every
    prompt, its text empty until its answer is generated (:meth:`pending`)."""
    models: frozenset[str] = frozenset()
    """The candidates that are models (``[candidates.NAME]``): their answers are not part of the
    snapshot (nor of its fingerprint) but of the run's generated answers."""

    def pending(self, prompt_id: str, candidate: str) -> bool:
        """Whether this answer is a model's that has not been generated (or could not be)."""
        return candidate in self.models and not self.responses[prompt_id][candidate].text

    def answer(self, prompt_id: str, candidate: str, text: str) -> None:
        """Put a generated answer in place (the run's planners read it from here)."""
        self.responses[prompt_id][candidate] = ResponseText.model_construct(prompt_id=prompt_id, candidate=candidate, text=text, human={})

    def with_models(self, models: list[str], answers: dict[tuple[str, str], str] | None = None) -> "Dataset":
        """This dataset with the candidates that are models answering every prompt: ``answers``
        (``(prompt, candidate) → text``) those already generated, the others pending."""
        if not models:
            return self
        answers = answers or {}
        responses = {
            p: {**by, **{m: ResponseText.model_construct(prompt_id=p, candidate=m, text=answers.get((p, m), ""), human={}) for m in models}}
            for p, by in self.responses.items()
        }
        return Dataset(self.prompts, responses, frozenset(models))

    def snapshot_responses(self) -> list[ResponseText]:
        """The responses the run file's snapshot keeps: every one from the responses file."""
        return [r for by in self.responses.values() for c, r in by.items() if c not in self.models]

    @property
    def n_responses(self) -> int:
        return sum(len(r) for r in self.responses.values())

    def fingerprint(self) -> str:
        return fingerprint(self)

    def subset(self, prompt_ids: list[str]) -> "Dataset":
        return Dataset({p: self.prompts[p] for p in prompt_ids}, {p: self.responses[p] for p in prompt_ids}, self.models)


def fingerprint(dataset: Dataset) -> str:
    """sha256 of the canonical JSON of every prompt and response (order-independent)."""
    h = hashlib.sha256()
    for pid in sorted(dataset.prompts):
        # a prompt without a category or messages hashes as before they existed (stored runs still match)
        prompt = dataset.prompts[pid]
        row = prompt.model_dump(exclude={k for k in ("category", "messages") if getattr(prompt, k) is None})
        h.update(json.dumps(row, sort_keys=True).encode())
        for cand in sorted(c for c in dataset.responses.get(pid, {}) if c not in dataset.models):
            h.update(json.dumps(dataset.responses[pid][cand].model_dump(), sort_keys=True).encode())
    return h.hexdigest()


def turns_json(prompt: PromptRow) -> str | None:
    """A conversation prompt's turns as the run file keeps them (None: a plain prompt)."""
    return None if prompt.messages is None else json.dumps([t.model_dump() for t in prompt.messages])


def turns_from_json(value: str | None) -> list[Turn] | None:
    return None if value is None else [Turn.model_construct(**t) for t in json.loads(value)]


def load_prompts(path: str | Path) -> dict[str, PromptRow]:
    """Prompts by id, in file order.

    Raises:
        OrchestratorError: a bad row or a duplicate id, naming file and line.
    """
    path = Path(path)
    prompts: dict[str, PromptRow] = {}
    first_line: dict[str, int] = {}
    for number, row in validate_jsonl(path, PromptRow, "the file has no rows"):
        if row.id in prompts:
            raise OrchestratorError(f"{path}:{number}: duplicate prompt id {row.id!r} (first at line {first_line[row.id]})")
        prompts[row.id] = row
        first_line[row.id] = number
    return prompts


def load_dataset(
    prompts_path: str | Path, responses_path: str | Path | None, *, min_candidates: int = 2, models: list[str] | tuple[str, ...] = ()
) -> Dataset:
    """Load and cross-check prompts and responses; ``models``: the candidates that are models,
    which answer every prompt when asked (none of their texts may be in the responses file).

    Raises:
        OrchestratorError: naming file and line: bad JSON or UTF-8, wrong types, empty texts,
            duplicate ids or responses, responses to unknown prompts, texts of a candidate that
            is a model; or no prompt with at least ``min_candidates`` responses.
    """
    prompts = load_prompts(prompts_path)
    responses: dict[str, dict[str, ResponseText]] = {}
    lines: dict[tuple[str, str], int] = {}
    rows = [] if responses_path is None else validate_jsonl(Path(responses_path), ResponseText, "the file has no rows")
    for number, row in rows:
        if row.candidate in models:
            raise OrchestratorError(
                f"{responses_path}:{number}: {row.candidate!r} is a candidate that is a model ([candidates.{row.candidate}]) "
                "and has texts in the responses file; rename one of the two"
            )
        if row.prompt_id not in prompts:
            raise OrchestratorError(f"{responses_path}:{number}: prompt {row.prompt_id!r} is not in {prompts_path}")
        key = (row.prompt_id, row.candidate)
        if key in lines:
            raise OrchestratorError(
                f"{responses_path}:{number}: duplicate response of {row.candidate!r} to prompt {row.prompt_id!r} "
                f"(first at line {lines[key]})"
            )
        lines[key] = number
        responses.setdefault(row.prompt_id, {})[row.candidate] = row
    usable = {p: r for p in prompts if len(r := responses.get(p, {})) + len(models) >= min_candidates}
    if not usable:
        raise OrchestratorError(f"{responses_path or prompts_path}: no prompt has {min_candidates} or more responses to compare")
    ordered = {p: usable[p] for p in prompts if p in usable}
    return Dataset({p: prompts[p] for p in ordered}, ordered).with_models(list(models))
