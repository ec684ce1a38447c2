"""Which items a person labels, in which order (humans in the loop): pure functions.

An item is an answer (absolute campaigns) or a pair of answers to one prompt (pairwise campaigns)
the judges have judged. Its priority says where the judges leave the question open — where they are
unsure or contradict each other — per minute a person spends reading (where to look for the judges'
failures). Per item, from its judgments:

- pairwise: ``u_j`` = judgment j's P(a better than b) (``p_first`` turned to the item's order);
  ``unsure = 4·ū(1 − ū)`` (1 when the judges, on average, say 50/50) and ``split = 2·sd_j(u_j)``
  (1 when half say a surely and half b surely);
- absolute: ``e_j`` = judgment j's expected level, scaled to [0, 1]; ``unsure`` = the mean
  normalised entropy of the judgments' level distributions, ``split = 2·sd_j(e_j)``;

    disagreement = (unsure + split) / 2 ∈ [0, 1],
    minutes      = characters to read / READING_CHARS_PER_MINUTE + DECISION_MINUTES,
    priority     = disagreement / minutes.

:func:`offer_order` offers items in rounds, so that the labels spread over what is being ranked:
round r holds each candidate's (absolute) or each pair's (pairwise) r-th item, and within a round the
items go by decreasing priority (``order="disagreement"``) or in a seeded random order
(``order="random"``, the default). Measured on SummEval (``benchmarks/people/simplex_labels.py``, the
simplex fit, 5% of the answers labelled): labels where the judges disagree most ranked *worse*
than no labels (Spearman with the experts 0.872 against 0.902; coverage of their ranks 0.938),
labels at random better (0.928; 0.958) — disputed answers are where people, too, are least sure,
and a random sample is what ``fit raee --human`` (PPI) and the ``judges`` table need to be unbiased.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..records.dataset import DATASET_ANCHOR
from ..records.labels import item_key

__all__ = [
    "DECISION_MINUTES",
    "READING_CHARS_PER_MINUTE",
    "LabelItem",
    "absolute_items",
    "item_texts",
    "judged_items",
    "offer_order",
    "pairwise_items",
]

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


def _by_priority(items: list[LabelItem]) -> list[LabelItem]:
    return sorted(items, key=lambda item: (-item.priority, item.key))


def offer_order(items: list[LabelItem], order: str = "random", seed: int = 0) -> list[LabelItem]:
    """The order a person is offered ``items`` in: rounds over the candidates (absolute) or pairs
    (pairwise), and within a round ``"disagreement"`` (decreasing priority) or ``"random"`` (a seeded
    shuffle, the same after a restart). Module docstring."""
    if order not in ("random", "disagreement"):
        raise ValueError(f"order must be 'random' or 'disagreement' (got {order!r})")

    def shuffled(item: LabelItem) -> str:
        return hashlib.sha256(f"{seed}\0{item.key}".encode()).hexdigest()

    ranked = _by_priority(items) if order == "disagreement" else sorted(items, key=shuffled)
    seen: dict[tuple[str, ...], int] = defaultdict(int)
    rounds = []
    for item in ranked:
        rounds.append(seen[item.candidates])
        seen[item.candidates] += 1
    return [item for _, _, item in sorted(zip(rounds, range(len(ranked)), ranked))]


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
    return _by_priority(items)


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
    return _by_priority(items)


def item_texts(dataset, config: dict) -> tuple[dict[str, str], dict[tuple[str, str], str], str]:
    """What a person reads: ``(prompt texts, (prompt, candidate) → answer text, the criterion)`` of a
    run's snapshot and stored config; a reference campaign's anchor ``dataset`` is each prompt's
    reference text (named :data:`DATASET_ANCHOR` in its judgments)."""
    prompts = {pid: row.text for pid, row in dataset.prompts.items()}
    texts = {(pid, c): r.text for pid, answers in dataset.responses.items() for c, r in answers.items()}
    for pid, row in dataset.prompts.items():
        if row.reference is not None:
            texts.setdefault((pid, DATASET_ANCHOR), row.reference)
    judging = config.get("judging", {})
    return prompts, texts, judging.get("criterion") or judging.get("attribute") or "overall quality"


def judged_items(prompts: dict[str, str], texts: dict[tuple[str, str], str], judgments: Iterable) -> tuple[list[LabelItem], int]:
    """Every item a run's ``judgments`` (:class:`orchestrator.store.JudgmentRecord`) judged, by
    priority, and the levels of its absolute scores (0 without)."""

    def chars(prompt: str, names: tuple[str, ...]) -> int:
        return len(prompts.get(prompt, "")) + sum(len(texts.get((prompt, n), "")) for n in names)

    judgments = list(judgments)
    pairwise = [
        (j.prompt_id, j.candidates[0], j.candidates[1], j.p_first)
        for j in judgments
        if j.kind in ("pairwise", "reference") and j.p_first is not None and len(j.candidates) == 2
    ]
    # absolute templates read levels "1".."M"; a judgment on other options is not a score to label
    absolute = [
        (j.prompt_id, j.candidates[0], j.probs[0])
        for j in judgments
        if j.kind == "absolute" and j.probs and all(k.isdigit() for k in j.probs[0])
    ]
    levels = max((int(k) for *_, probs in absolute for k in probs), default=0)
    return pairwise_items(pairwise, chars) + absolute_items(absolute, levels, chars), levels
