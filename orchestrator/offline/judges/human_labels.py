"""Human labels as data: a JSONL file of people's verdicts, validated like every input.

Two row shapes, mixed freely in one file (``docs/human-labels.md``):

- absolute: ``{"prompt_id", "candidate", "score", "annotator"}`` — a person's score of one answer
  (any numeric scale, higher is better);
- pairwise: ``{"prompt_id", "first", "second", "winner", "annotator"}`` — ``winner`` is ``first``'s
  or ``second``'s name, or ``"tie"``.

``annotator`` is optional (default ``"human"``); one annotator labelling the same item twice is an
error. :class:`HumanLabels` derives from them the people's preference on any pair of answers to one
prompt: the majority of the pairwise verdicts, or else the mean absolute scores.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ...errors import OrchestratorError
from ...records.importers import csv_rows
from ...records.labels import AbsoluteLabel, PairwiseLabel, label_candidates, label_item
from ...records.log import validate_jsonl, validation_message

__all__ = [
    "AbsoluteLabel",
    "HumanLabels",
    "PairwiseLabel",
    "as_labels",
    "load_human_labels",
    "refuse_unmatched",
    "run_labels",
    "write_labels",
]


class _Row(BaseModel):
    """Either shape: which one is decided by the keys present."""

    model_config = ConfigDict(extra="allow")
    kind: Literal["absolute", "pairwise"] | None = None


@dataclass
class HumanLabels:
    absolute: list[AbsoluteLabel] = field(default_factory=list)
    pairwise: list[PairwiseLabel] = field(default_factory=list)

    @property
    def annotators(self) -> list[str]:
        return sorted({r.annotator for r in self.absolute} | {r.annotator for r in self.pairwise})

    def mean_scores(self) -> dict[tuple[str, str], float]:
        """``(prompt, candidate)`` → the mean of its absolute scores."""
        sums: dict[tuple[str, str], list[float]] = defaultdict(list)
        for r in self.absolute:
            sums[(r.prompt_id, r.candidate)].append(r.score)
        return {k: sum(v) / len(v) for k, v in sums.items()}

    def pair_votes(self) -> dict[tuple[str, str, str], list[float]]:
        """``(prompt, a, b)`` with ``a < b`` → each annotator's verdict as 1 (a better), 0 or ½ (tie)."""
        votes: dict[tuple[str, str, str], list[float]] = defaultdict(list)
        for r in self.pairwise:
            a, b = sorted((r.first, r.second))
            votes[(r.prompt_id, a, b)].append(0.5 if r.winner == "tie" else float(r.winner == a))
        return votes

    def preference(self, prompt: str, a: str, b: str, *, scores: dict | None = None, votes: dict | None = None) -> float | None:
        """The people's preference for ``a`` over ``b`` on ``prompt``: 1, 0 or ½ (a tie), None when
        no label speaks to the pair. Pairwise majority first, else the mean absolute scores."""
        votes = self.pair_votes() if votes is None else votes
        scores = self.mean_scores() if scores is None else scores
        x, y = sorted((a, b))
        if (prompt, x, y) in votes:
            mean = sum(votes[(prompt, x, y)]) / len(votes[(prompt, x, y)])
            towards_x = 1.0 if mean > 0.5 else 0.0 if mean < 0.5 else 0.5
            return towards_x if a == x else 1.0 - towards_x
        if (prompt, a) in scores and (prompt, b) in scores:
            sa, sb = scores[(prompt, a)], scores[(prompt, b)]
            return 1.0 if sa > sb else 0.0 if sa < sb else 0.5
        return None


def _rows(path: str | Path) -> list[tuple[int, _Row]]:
    """A JSONL file's rows, or a CSV file's (``.csv``/``.tsv``: a header of the same field names;
    empty cells are left out, so one file may hold both shapes)."""
    if Path(path).suffix.lower() not in (".csv", ".tsv"):
        return validate_jsonl(path, _Row, "the file has no labels")
    out = []
    for number, fields in csv_rows(Path(path))[1]:
        try:
            out.append((number, _Row.model_validate({k: v for k, v in fields.items() if v.strip()})))
        except ValidationError as exc:
            raise OrchestratorError(f"{path}:{number}: {validation_message(exc)}") from None
    if not out:
        raise OrchestratorError(f"{path}: the file has no labels")
    return out


def load_human_labels(path: str | Path) -> HumanLabels:
    """The labels of a JSONL or CSV file.

    Raises:
        OrchestratorError: naming file and line: a row of neither shape, a bad field, or one
            annotator labelling the same item twice.
    """
    labels = HumanLabels()
    seen: dict[tuple[str, str], int] = {}
    for number, row in _rows(path):
        data = row.model_dump(exclude={"kind"})
        try:
            if "winner" in data or "first" in data:
                label: AbsoluteLabel | PairwiseLabel = PairwiseLabel.model_validate(data)
            elif "score" in data or "candidate" in data:
                label = AbsoluteLabel.model_validate(data)
            else:
                raise OrchestratorError(
                    f"{path}:{number}: a label is {{prompt_id, candidate, score}} (absolute) or "
                    "{prompt_id, first, second, winner} (pairwise)"
                )
        except ValidationError as exc:
            raise OrchestratorError(f"{path}:{number}: {validation_message(exc)}") from None
        if isinstance(label, PairwiseLabel):
            labels.pairwise.append(label)
        else:
            labels.absolute.append(label)
        key = (label_item(label), label.annotator)
        if key in seen:
            raise OrchestratorError(f"{path}:{number}: {label.annotator!r} labelled this item already (line {seen[key]})")
        seen[key] = number
    return labels


def _answers(label: AbsoluteLabel | PairwiseLabel) -> list[tuple[str, str]]:
    return [(label.prompt_id, name) for name in label_candidates(label)]


def refuse_unmatched(labels: HumanLabels, answers: set[tuple[str, str]], source: str | Path, where: str = "judged here") -> int:
    """How many labels name an answer outside ``answers`` (``(prompt_id, candidate)`` pairs the
    command has judgments of); none matching is refused in one line (a prompt-id typo
    gave the judges board a table of dashes and exit 0), as every command that reads labels does.

    Raises:
        OrchestratorError: no label is of answers in ``answers``."""
    rows: list[AbsoluteLabel | PairwiseLabel] = [*labels.absolute, *labels.pairwise]
    unmatched = [label for label in rows if not all(a in answers for a in _answers(label))]
    if rows and len(unmatched) == len(rows):
        prompt, candidate = next(a for a in _answers(rows[0]) if a not in answers)
        prompts = {p for p, _ in answers}
        why = (
            f"prompt {prompt!r} is not {where}"
            if prompt not in prompts
            else f"candidate {candidate!r} has no answer to prompt {prompt!r} {where}"
        )
        raise OrchestratorError(
            f"{source}: none of its {len(rows)} labels is of answers {where} (first: {why}); check the prompt ids and candidate names"
        )
    return len(unmatched)


def run_labels(path: str | Path) -> HumanLabels:
    """The labels stored in a run file (``orchestrator label``), read without writing to the file.

    Raises:
        OrchestratorError: not a run file this version reads (one line, as every command on a run)."""
    from ...store import check_run_file
    from ...store.labels import stored_labels
    from ...store.locks import snapshot_reader

    check_run_file(Path(path))
    conn = snapshot_reader(Path(path))
    try:
        return as_labels(stored_labels(conn))
    finally:
        conn.close()


def as_labels(stored: list[AbsoluteLabel | PairwiseLabel]) -> HumanLabels:
    """Label records (a run file's) as :class:`HumanLabels`."""
    return HumanLabels(
        absolute=[x for x in stored if isinstance(x, AbsoluteLabel)], pairwise=[x for x in stored if isinstance(x, PairwiseLabel)]
    )


def write_labels(labels: HumanLabels, out) -> int:
    """Write labels in the JSONL format :func:`load_human_labels` reads (a text stream); the count."""
    rows = [*labels.absolute, *labels.pairwise]
    for row in rows:
        out.write(row.model_dump_json() + "\n")
    return len(rows)
