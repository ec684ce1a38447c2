"""People's ranking beside the judges' (PoE part; ``replay --human``, and ``rank``
of a run file that holds labels): each group's judges' posterior turned into people's scores by the labels of its candidates — scores of
answers and pairwise verdicts (:mod:`orchestrator.poe.human`) — with rank intervals."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ...poe import Posterior
from ...poe.human import TAU_GRID, people_scores
from ...poe.uncertainty import rank_intervals_from_draws
from ..judges.human_labels import HumanLabels

__all__ = ["people_ranking", "people_rankings", "verdict_indices"]


def people_rankings(
    groups: list[tuple[str, list[str], Posterior]], labels: HumanLabels, scope: str, *, level: float = 0.95
) -> dict[str, dict]:
    """Group key → ``{"labels", "tau", "ranking": [{candidate, rank, score, sd, rank_low, rank_high}]}``
    for every ``(key, candidate names, judges' posterior)`` group with labels of its candidates (a ``per_prompt`` group: labels of its prompt; scores
    count from three with two distinct values)."""
    out: dict[str, dict] = {}
    for key, names, posterior in groups:
        index = {name: k for k, name in enumerate(names)}
        here = lambda prompt: scope != "per_prompt" or prompt == key  # noqa: E731
        scored = [(index[x.candidate], x.score) for x in labels.absolute if x.candidate in index and here(x.prompt_id)]
        compared = verdict_indices(labels, index, here)
        if posterior.cov is None or not (scored or compared):
            continue
        people = people_ranking(names, posterior.mean.numpy(), posterior.cov.numpy(), scored, compared, level=level)
        if people is not None:
            out[key] = people
    return out


def verdict_indices(labels: HumanLabels, index: dict[str, int], keep: Callable[[str], bool]) -> list[tuple[int, int, float]]:
    """People's pairwise verdicts between candidates in ``index`` on prompts ``keep`` accepts, as
    ``(first, second, outcome)`` indices (1 first better, 0 second, ½ a tie)."""
    return [
        (index[x.first], index[x.second], 0.5 if x.winner == "tie" else float(x.winner == x.first))
        for x in labels.pairwise
        if x.first in index and x.second in index and keep(x.prompt_id)
    ]


def people_ranking(
    names: list[str],
    mean: np.ndarray,
    cov: np.ndarray,
    scored: list[tuple[int, float]],
    compared: list[tuple[int, int, float]],
    *,
    level: float = 0.95,
    tau_grid: tuple[float, ...] = TAU_GRID,
) -> dict | None:
    """One people's ranking from the judges' posterior ``N(mean, cov)`` over ``names`` and people's
    ``scored`` ``(candidate index, score)`` and ``compared`` ``(first, second, outcome)`` labels:
    ``{"labels", "tau", "ranking": [...]}`` (:func:`people_rankings`), None when no label is usable;
    ``tau_grid``: :func:`orchestrator.poe.human.people_scores`'s."""
    people = people_scores(
        mean,
        cov,
        np.array([c for c, _ in scored], dtype=int),
        np.array([s for _, s in scored], dtype=float),
        pairs=(
            np.array([a for a, _, _ in compared], dtype=int),
            np.array([b for _, b, _ in compared], dtype=int),
            np.array([v for *_, v in compared]),
        ),
        tau_grid=tau_grid,
    )
    if people is None:
        return None
    intervals = rank_intervals_from_draws(people.draws, level=level)
    order = np.argsort(intervals.mean_rank.numpy(), kind="stable")
    return {
        "labels": people.labels,
        "tau": round(people.tau, 4),
        "ranking": [
            {
                "candidate": names[k],
                "rank": position + 1,
                "score": round(float(people.mean[k]), 6),
                "sd": round(float(people.sd[k]), 6),
                "rank_low": int(intervals.lower[k]),
                "rank_high": int(intervals.upper[k]),
            }
            for position, k in enumerate(order)
        ],
    }
