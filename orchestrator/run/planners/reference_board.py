"""The board a reference campaign's stopping claims are about: with ``[reference] board`` and
``allocation = "adaptive"``, each candidate stops getting prompts once its place among the board's
models is settled (:mod:`orchestrator.raee.board_claims`), and the run stops when every candidate's
is — one candidate included, which without a board has no neighbour to be separated from."""

from __future__ import annotations

import numpy as np

from ...raee.board import fit_board, kept_outcomes, place
from ...raee.board_claims import BoardClaim, board_claim, look_depths, look_level

__all__ = ["BoardWatch"]


class BoardWatch:
    """The board as the run kept it (its attachment's payload), fitted once, and each candidate's
    looks and claim so far."""

    def __init__(self, payload: dict, prompts: dict[str, list[str]], first: int, resolution: float | None):
        models = list(payload["models"])
        y = kept_outcomes(payload["y"])
        self.board = fit_board(models, y)
        self.models = models
        self.rates = {m: float(r) for m, r in zip(models, self.board.win_rate)}
        self.column = {p: k for k, p in enumerate(payload["prompts"])}
        self.resolution = resolution
        on_board = {c: sum(p in self.column for p in ps) for c, ps in prompts.items()}
        self.depths = {c: look_depths(n, first) for c, n in on_board.items() if n}
        self.level = {c: look_level(on_board[c], first, len(self.depths)) for c in self.depths}
        self.looked = dict.fromkeys(self.depths, 0)
        self.claims: dict[str, BoardClaim] = {}

    def settled(self, candidate: str) -> bool:
        """Whether the candidate's place is claimed (it gets no more prompts); a candidate with no
        prompt on the board has nothing to claim and is never settled by the board."""
        return candidate in self.claims

    def look(self, outcomes: dict[str, list[tuple[str, float]]]) -> None:
        """Read the claims due: ``outcomes`` maps each candidate to its committed ``(prompt, outcome)``
        (judges and repeats averaged); a candidate's claim is read once per look depth it reached."""
        for candidate, depths in self.depths.items():
            if candidate in self.claims:
                continue
            judged = [(self.column[p], v) for p, v in outcomes.get(candidate, []) if p in self.column]
            due = sum(d <= len(judged) for d in depths)
            if due <= self.looked[candidate]:
                continue
            self.looked[candidate] = due
            where = np.array([k for k, _ in judged], dtype=int)
            values = np.array([v for _, v in judged], dtype=float)
            placement = place(self.board, where, values, level=self.level[candidate])
            claim = board_claim(
                self.models,
                self.board.win_rate,
                placement.low,
                placement.high,
                self.resolution / 100 if self.resolution is not None else None,
            )
            if claim is not None:
                self.claims[candidate] = claim

    def claim_words(self) -> str:
        """Every claim made so far, as a user reads it."""
        return "; ".join(self.claims[c].words(c, self.rates, self.resolution) for c in sorted(self.claims))

    def reason(self) -> str | None:
        """The stop reason once every candidate with prompts on the board is settled, else None."""
        if not self.depths or set(self.depths) - set(self.claims):
            return None
        words = self.claim_words()
        looks = max(len(d) for d in self.depths.values())
        return (
            f"every candidate's place on the board is settled: {words} "
            f"(the claims hold together with 95% confidence: each read at up to {looks} looks of a doubling schedule "
            f"at 5% / (looks × candidates); the intervals `rank` prints are 95% each)"
        )
