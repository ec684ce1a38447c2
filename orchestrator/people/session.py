"""A person labelling a run's items: what the labelling page shows next and what it stores.

The items are those the run's judges judged: first those the run asked people for (``judging.people``,
:mod:`.asking`), in the order it asked, then the rest in the order of :mod:`.choice`; a verdict is
committed to the run file's ``human_labels`` table at once (``store/labels.py``), so a page closed,
a server killed or restarted loses nothing and never asks an item twice. Candidates' names are not
shown (a person who knows which model wrote an answer is a biased judge), and which answer of a pair
is shown first is fixed per item and annotator by a hash (stable across restarts, half each way).
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from ..errors import OrchestratorError
from ..records.labels import AbsoluteLabel, PairwiseLabel
from ..records.log import check_identifier
from ..store import open_run
from ..store.labels import LabelStore
from .choice import LabelItem, item_texts, judged_items, offer_order

__all__ = ["LabelSession"]


class LabelSession:
    """The items of one run for one annotator, and the run file's label table; thread-safe."""

    def __init__(self, path: str | Path, annotator: str = "human", order: str = "random"):
        try:
            self.annotator = check_identifier(annotator)
        except ValueError as exc:
            raise OrchestratorError(f"--annotator: {exc}") from None
        if order not in ("random", "disagreement"):
            raise OrchestratorError(f"--order must be 'random' or 'disagreement' (got {order!r})")
        self.path = Path(path)
        run = open_run(self.path, write=False)
        try:
            dataset, config, judgments, seed = run.dataset(), run.config, list(run.judgments()), int(run.run["seed"])
        finally:
            run.close()
        self.prompts, self.texts, self.criterion = item_texts(dataset, config)
        items, self.levels = judged_items(self.prompts, self.texts, judgments)
        if not items:
            raise OrchestratorError(f"{self.path}: no pairwise, reference or absolute judgments to label yet")
        self.store = LabelStore(self.path)
        # the items the run asked people for (judging.people) first, in the order it asked them
        by_key = {item.key: item for item in items}
        asked = [by_key[key] for key in self.store.requested() if key in by_key]
        self.asked = {item.key for item in asked}
        self.items = asked + [item for item in offer_order(items, order, seed) if item.key not in self.asked]
        # the page names an item by a digest, so that the candidates' names stay off the page
        self.by_id = {hashlib.sha256(item.key.encode()).hexdigest()[:16]: item for item in self.items}
        self.id_of = {item.key: token for token, item in self.by_id.items()}
        self.stored_this_session = 0
        self._lock = threading.RLock()

    def _shown(self, item: LabelItem) -> tuple[str, ...]:
        if item.kind == "absolute":
            return item.candidates
        flip = hashlib.sha256(f"{item.key}\0{self.annotator}".encode()).digest()[0] & 1
        return item.candidates[::-1] if flip else item.candidates

    def progress(self, labelled: set[str] | None = None) -> dict:
        """How far this annotator is; ``labelled``: their labelled items when the caller read them already."""
        with self._lock:
            done = len((self.store.labelled_items(self.annotator) if labelled is None else labelled) & self.id_of.keys())
        return {"labelled": done, "this_session": self.stored_this_session, "items": len(self.items), "left": len(self.items) - done}

    def next(self) -> dict:
        """The page's next item (``{"done": True, …}`` when every item is labelled)."""
        with self._lock:
            labelled = self.store.labelled_items(self.annotator)
            item = next((i for i in self.items if i.key not in labelled), None)
            payload: dict = {
                "done": item is None,
                "annotator": self.annotator,
                "criterion": self.criterion,
                "progress": self.progress(labelled),
            }
            if item is None:
                return payload
            shown = self._shown(item)
            payload["item"] = {
                "id": self.id_of[item.key],
                "kind": item.kind,
                "prompt": self.prompts.get(item.prompt_id, ""),
                "answers": [self.texts.get((item.prompt_id, name), "") for name in shown],
                "options": ["A", "B", "tie"] if item.kind == "pairwise" else [str(s) for s in range(1, self.levels + 1)],
                "judged": item.judged,
                "asked_by_run": item.key in self.asked,
                "disagreement": round(item.disagreement, 3),
            }
            return payload

    def submit(self, item_id: object, verdict: object) -> dict:
        """Store a verdict on an item; ``{"stored": False}`` when this annotator labelled it already.

        Raises:
            OrchestratorError: an item the session does not offer, or a verdict outside its options.
        """
        item = self.by_id.get(item_id) if isinstance(item_id, str) else None
        if item is None:
            raise OrchestratorError("unknown item")
        if not isinstance(verdict, str):  # a list or an object is no verdict (and is not hashable)
            kinds = {list: "an array", dict: "an object", bool: "true or false", int: "a number", float: "a number"}
            raise OrchestratorError(f"a verdict is a string, got {kinds.get(type(verdict), 'null')}")
        label: AbsoluteLabel | PairwiseLabel
        if item.kind == "pairwise":
            shown = self._shown(item)
            winners = {"A": shown[0], "B": shown[1], "tie": "tie"}
            if verdict not in winners:
                raise OrchestratorError("a pairwise verdict is 'A', 'B' or 'tie'")
            label = PairwiseLabel(
                prompt_id=item.prompt_id, first=shown[0], second=shown[1], winner=winners[str(verdict)], annotator=self.annotator
            )
        else:
            if verdict not in [str(s) for s in range(1, self.levels + 1)]:
                raise OrchestratorError(f"a score is one of 1..{self.levels}")
            label = AbsoluteLabel(
                prompt_id=item.prompt_id, candidate=item.candidates[0], score=float(str(verdict)), annotator=self.annotator
            )
        with self._lock:
            stored = self.store.add(label)
            self.stored_this_session += stored
            return {"stored": stored, "progress": self.progress()}

    def close(self) -> None:
        with self._lock:
            self.store.close()
