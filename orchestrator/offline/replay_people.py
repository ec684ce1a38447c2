"""People's ranking beside a replay (issue #34 item 3, PoE part; ``replay --human``): each replayed
group's judges' posterior turned into people's scores by the absolute labels of its candidates
(:mod:`orchestrator.poe.human`), with rank intervals."""

from __future__ import annotations

import numpy as np

from ..poe.human import people_scores
from ..poe.uncertainty import rank_intervals_from_draws
from .human_labels import HumanLabels
from .replay_report import GroupReplay

__all__ = ["people_rankings"]


def people_rankings(groups: list[GroupReplay], labels: HumanLabels, scope: str, *, level: float = 0.95) -> dict[str, dict]:
    """Group key → ``{"labels", "tau", "ranking": [{candidate, rank, score, sd, rank_low, rank_high}]}``
    for every group with enough labels of its candidates (a ``per_prompt`` group: labels of its prompt)."""
    out: dict[str, dict] = {}
    for group in groups:
        index = {name: k for k, name in enumerate(group.names)}
        chosen = [
            (index[x.candidate], x.score)
            for x in labels.absolute
            if x.candidate in index and (scope != "per_prompt" or x.prompt_id == group.key)
        ]
        if group.final.cov is None or not chosen:
            continue
        people = people_scores(
            group.final.mean.numpy(), group.final.cov.numpy(), np.array([c for c, _ in chosen]), np.array([s for _, s in chosen])
        )
        if people is None:
            continue
        intervals = rank_intervals_from_draws(people.draws, level=level)
        order = np.argsort(intervals.mean_rank.numpy(), kind="stable")
        out[group.key] = {
            "labels": people.labels,
            "tau": round(people.tau, 4),
            "ranking": [
                {
                    "candidate": group.names[k],
                    "rank": position + 1,
                    "score": round(float(people.mean[k]), 6),
                    "sd": round(float(people.sd[k]), 6),
                    "rank_low": int(intervals.lower[k]),
                    "rank_high": int(intervals.upper[k]),
                }
                for position, k in enumerate(order)
            ],
        }
    return out
