"""Which items a person should label first (issue #34, humans in the loop): pure functions.

An item is an answer (absolute campaigns) or a pair of answers to one prompt (pairwise campaigns)
the judges have judged. A person's label is worth most where the judges leave the question open —
where they are unsure or contradict each other — and costs what it takes to read the texts.
Per item, from its judgments:

- pairwise: ``u_j`` = judgment j's P(a better than b) (``p_first`` turned to the item's order);
  ``unsure = 4·ū(1 − ū)`` (1 when the judges, on average, say 50/50) and ``split = 2·sd_j(u_j)``
  (1 when half say a surely and half b surely);
- absolute: ``e_j`` = judgment j's expected level, scaled to [0, 1]; ``unsure`` = the mean
  normalised entropy of the judgments' level distributions, ``split = 2·sd_j(e_j)``;

    disagreement = (unsure + split) / 2 ∈ [0, 1],
    minutes      = characters to read / READING_CHARS_PER_MINUTE + DECISION_MINUTES,
    priority     = disagreement / minutes.

Items are offered in decreasing priority (ties: by item key, so the order is reproducible).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ...records.labels import item_key

__all__ = ["DECISION_MINUTES", "READING_CHARS_PER_MINUTE", "LabelItem", "absolute_items", "pairwise_items"]

READING_CHARS_PER_MINUTE = 1000.0
"""About 200 words a minute, careful reading."""

DECISION_MINUTES = 0.25
"""What a verdict costs beyond reading (looking back, deciding, the key press)."""


@dataclass(frozen=True)
class LabelItem:
    key: str
    """:func:`orchestrator.records.labels.item_key` of the item."""
    kind: str
    prompt_id: str
    candidates: tuple[str, ...]
    """The answer (absolute) or the two answers, names sorted (pairwise)."""
    judged: int
    disagreement: float
    minutes: float

    @property
    def priority(self) -> float:
        return self.disagreement / self.minutes


def _minutes(chars: int) -> float:
    return chars / READING_CHARS_PER_MINUTE + DECISION_MINUTES


def _sd(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def _ordered(items: list[LabelItem]) -> list[LabelItem]:
    return sorted(items, key=lambda item: (-item.priority, item.key))


def pairwise_items(judgments: Iterable[tuple[str, str, str, float]], chars: Callable[[str, tuple[str, ...]], int]) -> list[LabelItem]:
    """``judgments``: ``(prompt, first shown, second shown, P(first better))``; ``chars(prompt,
    answers)``: the characters a person reads for the item (prompt and answers)."""
    votes: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for prompt, first, second, p_first in judgments:
        a, b = sorted((first, second))
        votes[(prompt, a, b)].append(p_first if first == a else 1.0 - p_first)
    items = []
    for (prompt, a, b), us in votes.items():
        mean = sum(us) / len(us)
        disagreement = (4 * mean * (1 - mean) + 2 * _sd(us)) / 2
        items.append(LabelItem(item_key(prompt, a, b), "pairwise", prompt, (a, b), len(us), disagreement, _minutes(chars(prompt, (a, b)))))
    return _ordered(items)


def absolute_items(
    judgments: Iterable[tuple[str, str, dict[str, float]]], levels: int, chars: Callable[[str, tuple[str, ...]], int]
) -> list[LabelItem]:
    """``judgments``: ``(prompt, candidate, {level "1".."M": probability})``; ``levels`` = M."""
    seen: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for prompt, candidate, probs in judgments:
        total = sum(probs.values()) or 1.0
        p = {int(k): v / total for k, v in probs.items()}
        expected = (sum(k * v for k, v in p.items()) - 1) / max(levels - 1, 1)
        entropy = -sum(v * math.log(v) for v in p.values() if v > 0) / math.log(levels) if levels > 1 else 0.0
        seen[(prompt, candidate)].append((expected, entropy))
    items = []
    for (prompt, candidate), rows in seen.items():
        unsure = sum(e for _, e in rows) / len(rows)
        disagreement = (unsure + 2 * _sd([x for x, _ in rows])) / 2
        key = item_key(prompt, candidate)
        items.append(LabelItem(key, "absolute", prompt, (candidate,), len(rows), disagreement, _minutes(chars(prompt, (candidate,)))))
    return _ordered(items)
