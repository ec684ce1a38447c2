"""The sections of a run config that choose a campaign other than PoE pair selection: a
reference-anchored (RAEE) campaign and an absolute-scoring one (``[compare]`` has a module of its
own, :mod:`.compare_config`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AbsoluteConfig", "ReferenceConfig"]


class _Section(BaseModel):
    # as every section of a run config (:mod:`.config`): unknown keys, NaN and ±inf refused
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ReferenceConfig(_Section):
    """A reference-anchored (RAEE) campaign: every candidate is judged against a fixed anchor."""

    anchor: str = "dataset"
    """``dataset``: each prompt's ``reference`` text (named ``reference`` in the log); otherwise the
    candidate whose responses serve as the anchor (it is then not ranked)."""
    template: str = "raee-pairwise-summary"
    """A ``kind = "reference"`` template (option A = the anchor, B = the candidate, C = tie)."""
    allocation: Literal["all", "adaptive", "gains"] = "all"
    """``all``: every candidate on every prompt, ``selection.batch`` prompts per round in a seeded
    order (a budget cut leaves a random subset of prompts, the same for every candidate);
    ``adaptive``: every candidate walks the same seeded prompt order (so any two are compared on
    common prompts) at the same depth, and a candidate stops once its place is settled — both
    neighbours ordered beyond doubt, or with ``resolution`` ordered or tied at the stopping claims'
    confidence — unless its interval is the widest (with weak evidence it is the fixed
    subset, so never worse than cutting the benchmark); ``gains`` (the earlier rule): after
    ``warmup_prompts`` prompts each, every round gives one more prompt to the ``selection.batch``
    candidates where it lowers most the expected number of misordered pairs plus the interval width.
    Both stop early when every candidate's Elo interval is separated from its neighbours' (or at the
    ``resolution``). With a ``board``, ``adaptive``'s neighbours are the board's models: a candidate
    stops once its place among them is settled (between two of them, above or below all, or with
    ``resolution`` tied with those it cannot be told from), read at a doubling schedule of looks
    (:mod:`orchestrator.raee.board_claims`) — one candidate included."""
    repeats: int = Field(default=1, ge=1, le=20)
    """Runs of each judge on each item; k ≥ 2 enables the ICC(3,k) screen (the judge must sample:
    a temperature-0 judge repeats itself and its ICC is trivially 1)."""
    both_orders: bool = False
    """Also ask every item with the anchor shown second (option B) and average the two orders:
    cancels a constant position bias (the RAEE analogue of permutation debiasing) for twice the
    calls. The two orders count as two runs of the item in the ICC(3,k) screen."""
    warmup_prompts: int = Field(default=4, ge=1)
    resolution: float | None = Field(default=None, gt=0, le=100)
    """Win-rate points (``adaptive``): stop once every pair of neighbours is ordered (the 95%
    interval of their difference excludes 0) or tied within this many points (the whole interval
    within ±resolution); the stop reason names the pairs treated as tied. Unset: stop when every
    Elo interval is separated from its neighbours'."""
    soft: bool = False
    """Adaptive allocation ranks by soft outcomes P(win) + ½P(tie) instead of the argmax."""
    board: Path | None = None
    """An existing board this run's candidates are placed on: a run file or a judgment
    log (``.jsonl``) of reference judgments against the same anchor, its models judged on the same
    prompts. ``rank`` then gives each candidate of this run its win rate over the board's prompts
    from the prompts it was judged on (the board's 2PL model as a control variate,
    :mod:`orchestrator.raee.board`), its interval, and its rank interval among the board's models.
    Relative to the config file."""
    slice_weight: float = Field(default=1.0, ge=0, le=100)
    """``gains`` with prompt categories: weight of the per-category leaderboards beside the
    overall one when choosing who gets the next prompt (each candidate's next prompt belongs to one
    category, where it lowers that board's misordered pairs and widths); 0 aims at the overall
    board alone."""


class AbsoluteConfig(_Section):
    """An absolute-scoring campaign for the Bayesian simplex model: every judge scores every
    candidate's answer to every prompt on a 1..M scale (``orchestrator fit simplex`` on the run)."""

    template: str = "simplex-absolute-5"
    """A ``kind = "absolute"`` template whose options are the levels 1..M."""
    repeats: int = Field(default=1, ge=1, le=20)
    """Runs of each judge on each answer (every run is one more observation in the counts)."""
