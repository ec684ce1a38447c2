"""What a replay returns (:mod:`orchestrator.offline.replay.replay`): one group's curve and final
posterior (:class:`GroupReplay`), the averages over groups and seeds with the ``--json`` form
(:class:`ReplayReport`), and the curve helpers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import rankdata

from ...poe import Posterior, ranking_order
from ...poe.covariates import COVARIATES

__all__ = ["GroupReplay", "ReplayReport", "average_curves", "mean_sd", "spearman"]


@dataclass(frozen=True)
class GroupReplay:
    """Result of replaying one group."""

    key: str
    names: list[str]
    """Candidate names, in posterior index order."""
    truth: np.ndarray
    """Ground truth per candidate."""
    curve: list[tuple[int, float, float]]
    """``(calls, spearman_vs_truth, spearman_vs_all_pairs)`` after every batch, from k = 0."""
    full_spearman: float
    """Spearman vs truth of the posterior on every logged judgment."""
    k90: int | None
    """First k with Spearman ≥ 0.9 · full (None if full ≤ 0 or never reached)."""
    k_self90: int | None
    """First k with Spearman vs the all-pairs ranking ≥ 0.9 (None if never reached)."""
    final: Posterior
    """The posterior after the last batch."""
    judges: list[str] = field(default_factory=list)
    """The judges in the order of the posterior's per-judge parameters (sorted names)."""


@dataclass(frozen=True)
class ReplayReport:
    """Averages over groups and seeds; :meth:`to_json` is the ``--json`` output."""

    strategy: str
    scope: str
    expert: str
    debias: str
    batch: int
    budget: int | None
    seeds: int
    seed: int
    """The first seed."""
    n_groups: int
    full_spearman: float
    k90: float | None
    k90_sd: float | None
    k90_undefined: int
    k_self90: float | None
    k_self90_sd: float | None
    curve: list[tuple[int, float, float]]
    groups: list[GroupReplay] = field(repr=False, default_factory=list)
    """Per-group results of the first seed."""
    people: dict[str, dict] = field(default_factory=dict)
    """With ``--human``: per group, people's ranking (:func:`orchestrator.offline.replay.people.people_rankings`)."""

    def to_json(self) -> dict:
        plain = ("strategy", "scope", "expert", "debias", "batch", "budget", "seeds", "seed", "n_groups")
        rounded = ("full_spearman", "k90", "k90_sd")
        return {
            **{name: getattr(self, name) for name in plain},
            **{name: _round(getattr(self, name)) for name in rounded},
            "k90_undefined": self.k90_undefined,
            "k_self90": _round(self.k_self90),
            "k_self90_sd": _round(self.k_self90_sd),
            "curve": [[k, _round(a), _round(b)] for k, a, b in self.curve],
            "rankings": {g.key: [g.names[c] for c in ranking_order(g.final.mean, g.names)] for g in self.groups},
            **self._control_effects(),
            **({"people": self.people} if self.people else {}),
        }

    def _control_effects(self) -> dict:
        """With controls: each judge's effects β (logit per unit of the normalised difference of
        length, headers, lists, bold; self: for an answer of its own family) and their sds, per
        group, from the final posterior (``*_absolute``: its absolute judgments' weights)."""
        covariates = [c + kind for c in COVARIATES for kind in ("", "_absolute")]
        names = [n for n in covariates if any(n in g.final.judges for g in self.groups)]
        effects = {
            g.key: {
                judge: {key: _round(float(g.final.judges[key][k])) for n in names for key in (n, f"{n}_sd") if key in g.final.judges}
                for k, judge in enumerate(g.judges)
            }
            for g in self.groups
            if any(n in g.final.judges for n in names)
        }
        return {"control_effects": effects} if effects else {}


def _round(x: float | None, digits: int = 6) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), digits)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation; 0 when either side is constant (no ranking yet)."""
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    # Pearson correlation of average ranks: scipy's spearmanr, without its per-call overhead
    # (two per replayed round)
    value = np.corrcoef(rankdata(a), rankdata(b))[0, 1]
    return 0.0 if math.isnan(value) else float(value)


def average_curves(curves: list[list[tuple[int, float, float]]]) -> list[tuple[int, float, float]]:
    """Average step-function curves over their union of k values (a finished curve holds its last value)."""
    ks = sorted({k for curve in curves for k, _, _ in curve})
    out = []
    for k in ks:
        sp, self_sp = [], []
        for curve in curves:
            last = curve[0]
            for point in curve:
                if point[0] > k:
                    break
                last = point
            sp.append(last[1])
            self_sp.append(last[2])
        out.append((k, float(np.mean(sp)), float(np.mean(self_sp))))
    return out


def mean_sd(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
