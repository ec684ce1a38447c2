"""Which comparisons a PoE campaign can still ask (one concern of the planner): the ordered pairs
still open, the judges that can still be asked on a prompt, the prompt a pair is asked on, and how
often one shown order may be asked again — a judge without log-probabilities that samples
adaptively may get up to ``samples`` verdicts of one shown order on one prompt."""

from __future__ import annotations

from collections import Counter

import torch

from ..groups import Group
from ..requests import PlanContext, seeded_hash

__all__ = ["PairSlots"]


class PairSlots:
    """Open pairs and askable judges of a run (``ordered``: each shown order on its own; else both
    orders of a pair are asked together, as permutation debiasing needs)."""

    def __init__(self, ctx: PlanContext, ordered: bool):
        self.ctx = ctx
        self.ordered = ordered

    def available(self, group: Group) -> torch.Tensor:
        """``(N, N)`` bool: ordered pairs that can still be asked (on some prompt, for ``global``)."""
        n = len(group.names)
        avail = torch.zeros(n, n, dtype=torch.bool)
        for i in range(n):
            for j in range(n):
                if i != j:
                    avail[i, j] = self.pair_open(group, i, j)
        return avail

    def pair_open(self, group: Group, i: int, j: int) -> bool:
        a, b = group.names[i], group.names[j]
        ca, cb = group.candidate(a), group.candidate(b)
        focus = self.ctx.config.selection.only_with
        if focus and ca not in focus and cb not in focus:
            return False  # an extended run pays only to place its new candidates
        return any(self.askable(p, ca, cb) for p in group.pair_prompts(a, b))

    def ceiling(self, judge: str) -> int:
        """Verdicts one shown order of a pair may get on one prompt: ``samples`` for a judge without
        log-probabilities that samples adaptively (the selection decides between a new pair and
        one more verdict of an asked one, by the same value), else 1."""
        profile = self.ctx.profiles[judge]
        return profile.samples if not profile.logprobs and profile.sampling == "adaptive" else 1

    def askable(self, prompt: str, a: str, b: str) -> list[str]:
        """The judges that can still be asked to compare ``a`` and ``b`` on ``prompt`` (in this
        order; in both orders with permutation debiasing): fewer times than their ceiling, and, in a
        replay, only what the log can answer (its repeat index)."""
        ctx = self.ctx
        asked = ctx.asked
        out = []
        for judge in ctx.judges_for(prompt, (a, b), "pairwise"):
            top = self.ceiling(judge)
            times = asked.get((judge, prompt, (a, b)), 0)
            if times >= top or (times and not self.answers(judge, prompt, (a, b), times)):
                continue
            if not self.ordered:
                back = asked.get((judge, prompt, (b, a)), 0)
                if back >= top or not self.answers(judge, prompt, (b, a), back):
                    continue
            out.append(judge)
        return out

    def answers(self, judge: str, prompt: str, shown: tuple[str, str], repeat: int) -> bool:
        """Whether the judge can answer this request's ``repeat``-th asking (a log: only what it holds)."""
        ctx = self.ctx
        if ctx.answerable is None:
            return True
        return ctx.answerable(judge, prompt, shown, "pairwise") if repeat == 0 else ctx.answerable(judge, prompt, shown, "pairwise", repeat)

    def prompt_for(self, group: Group, a: str, b: str, use: Counter[str]) -> str | None:
        """The prompt to compare ``a`` and ``b`` on: the least used where a judge can still be asked
        (seeded tie-break), or None when none is left (a pair open only for a stopped judge). With
        adaptive sampling, first where this pair was asked least: a new prompt before one more
        verdict on an asked one (a prompt's own taste is not averaged away by asking it again)."""
        ca, cb = group.candidate(a), group.candidate(b)
        options = [p for p in group.pair_prompts(a, b) if self.askable(p, ca, cb)]
        if not options:
            return None
        asked = self.ctx.asked
        if all(self.ceiling(judge) == 1 for judge in self.ctx.profiles):  # nothing is asked twice: the least used prompt
            return min(options, key=lambda p: (use[p], seeded_hash(self.ctx.seed, p, a, b)))

        def times(p: str) -> int:
            return sum(asked.get((judge, p, shown), 0) for judge in self.ctx.profiles for shown in ((ca, cb), (cb, ca)))

        return min(options, key=lambda p: (times(p), use[p], seeded_hash(self.ctx.seed, p, a, b)))
