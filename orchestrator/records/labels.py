"""People's labels as records: one absolute score of an answer or one pairwise verdict,
validated like every input. The JSONL file format (``offline/judges/human_labels.py``), the run file's
``human_labels`` table (``store/labels.py``) and the labelling page all carry these two shapes."""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from .log import check_identifier

__all__ = ["AbsoluteLabel", "PairwiseLabel", "item_key", "label_candidates", "label_item"]


class AbsoluteLabel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    prompt_id: str
    candidate: str
    score: float
    annotator: str = "human"

    @field_validator("prompt_id", "candidate", "annotator")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_identifier(value)


class PairwiseLabel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_id: str
    first: str
    second: str
    winner: str
    annotator: str = "human"

    @field_validator("prompt_id", "first", "second", "annotator")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_identifier(value)

    @model_validator(mode="after")
    def _winner_is_shown(self) -> "PairwiseLabel":
        if self.first == self.second:
            raise ValueError(f"first and second are the same answer ({self.first!r})")
        if self.winner not in (self.first, self.second, "tie"):
            raise ValueError(f"winner must be {self.first!r}, {self.second!r} or 'tie' (got {self.winner!r})")
        return self


def item_key(prompt_id: str, *candidates: str) -> str:
    """The item a label speaks about, whoever labelled it and in whichever order a pair was shown:
    one answer ``["absolute", prompt, candidate]`` or a pair ``["pairwise", prompt, a, b]`` (a < b),
    as JSON (names may hold any character)."""
    if len(candidates) == 1:
        return json.dumps(["absolute", prompt_id, candidates[0]])
    return json.dumps(["pairwise", prompt_id, *sorted(candidates)])


def label_item(label: AbsoluteLabel | PairwiseLabel) -> str:
    """:func:`item_key` of a label."""
    if isinstance(label, PairwiseLabel):
        return item_key(label.prompt_id, label.first, label.second)
    return item_key(label.prompt_id, label.candidate)


def label_candidates(label: AbsoluteLabel | PairwiseLabel) -> list[str]:
    """The candidates whose answers a label speaks of (one scored, or the two compared)."""
    return [label.candidate] if isinstance(label, AbsoluteLabel) else [label.first, label.second]
