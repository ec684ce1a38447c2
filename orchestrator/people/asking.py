"""Asking people during a run (``judging.people``): after each round it plans, and
once more when it finishes (from every judgment), the run chooses the people profile's ``per_round``
items to label next and records them in the run file (``label_requests``,
:mod:`orchestrator.store.labels`); the labelling page offers them first.

The choice is :func:`orchestrator.people.choice.offer_order` over every item the judges
have judged in the rounds the round was planned from — in rounds over the candidates (or pairs), at
random or by the judges' disagreement per minute of reading (the profile's ``order``) — less what
was asked or labelled already. The run never waits: people label at their pace, and everything
that reads labels (``rank``, ``judges``, ``fit raee``/``fit simplex --human``) reads those given.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..judging.profiles import JudgeProfile
from ..store.labels import LabelStore
from .choice import LabelItem, item_texts, judged_items, offer_order

__all__ = ["PeopleAsker", "choose_for_people"]


def choose_for_people(items: list[LabelItem], *, asked: set[str], labelled: set[str], order: str, seed: int, count: int) -> list[LabelItem]:
    """The next ``count`` items to ask people for: :func:`offer_order`, less ``asked`` and ``labelled`` keys."""
    return [item for item in offer_order(items, order, seed) if item.key not in asked and item.key not in labelled][:count]


class PeopleAsker:
    """A run's requests to people (``judging.people``): :meth:`after_round` once a round is planned."""

    def __init__(self, path: Path, profile: JudgeProfile, dataset, config: dict, seed: int):
        self.path, self.profile, self.seed = path, profile, seed
        self.prompts, self.texts, _ = item_texts(dataset, config)

    def after_round(self, round_no: int, judgments: Iterable) -> list[LabelItem]:
        """Ask people for the next items among those ``judgments`` judged; returns the items asked."""
        items, _ = judged_items(self.prompts, self.texts, judgments)
        if not items:
            return []
        store = LabelStore(self.path)
        try:
            chosen = choose_for_people(
                items,
                asked=set(store.requested()),
                labelled=store.labelled_by_anyone(),
                order=self.profile.order,
                seed=self.seed,
                count=self.profile.per_round,
            )
            store.request([item.key for item in chosen], round_no)
        finally:
            store.close()
        return chosen
