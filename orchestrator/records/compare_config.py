"""The ``[compare]`` section of a run config: a candidate system against a baseline on
the same prompts, judged head to head in both shown orders, with a decision valid at every look
(:mod:`orchestrator.gate.sequence`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["CompareConfig"]


class CompareConfig(BaseModel):
    """ "Is mine better than what I ship?": ``candidate`` against ``baseline`` (both candidates of the
    responses), prompt by prompt in a seeded random order, both shown orders per prompt (a judge's
    position bias cancels), until the decision is reached or the budget ends."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    candidate: str = Field(min_length=1)
    """The system asked about (its responses' ``candidate`` name)."""
    baseline: str = Field(min_length=1)
    """The system it is compared with (e.g. what is shipped)."""
    margin: float = Field(default=0.0, ge=0.0, lt=50.0)
    """Win-rate points: ``better`` means the candidate's win rate over the baseline is above
    50 + margin at the confidence sequence's level, ``worse`` below 50 − margin, ``equivalent``
    within both (only with a margin above 0)."""
    alpha: float = Field(default=0.05, gt=0.0, lt=0.5)
    """The chance of any wrong decision, whenever it is looked at."""
    require: Literal["better", "not-worse"] = "better"
    """What passes the gate (exit 0): ``better`` only, or ``not-worse`` (better or equivalent).
    Stored with the run, so every command that reports the comparison later (``resume``,
    ``status``, ``rank``) exits with the same code."""
    design: Literal["anytime", "planned"] = "planned"
    """``planned`` (the default: a gate's budget fixes its maximum, and this design needs the fewest
    prompts for it): a group-sequential design over the rounds (O'Brien–Fleming alpha spending),
    valid at the ends of rounds, with ``max_prompts`` fixed at the start; ``anytime``: a confidence
    sequence looked at after every prompt, valid at every look and past its planned maximum (a person
    may stop it whenever they like), for more prompts (docs/compare.md)."""
    max_prompts: int | None = Field(default=None, ge=1)
    """The most prompts the run can read — set when the run starts from the budget, the judges, the
    shown orders and the prompts available (or given here, at most that) — and stored with the run:
    the anytime sequence's stakes are sized for it, the planned design spends its error over it."""
    template: str | None = None
    """A pairwise template (default: ``judging.pairwise_template``); through an ``anchor``, a
    reference template (default: the baseline run's, else ``raee-pairwise-summary``)."""
    anchor: str | None = None
    """Compare through an anchor instead of head to head: both systems are judged against it
    (``dataset``: the prompts' reference texts, or a system's name), and the decision is about the
    difference of their win rates against it, in points."""
    baseline_run: Path | None = None
    """Through an ``anchor``: the baseline's judgments against it come from this earlier run (a
    reference campaign's run file); only the candidate is judged, on the prompts the baseline was,
    by the same judges with the same template, in the same shown orders. Kept whole in the run file."""

    @model_validator(mode="after")
    def _two(self) -> "CompareConfig":
        if self.candidate == self.baseline:
            raise ValueError(f"compare.candidate and compare.baseline are both {self.candidate!r}: compare two systems")
        if self.anchor in (self.candidate, self.baseline):
            raise ValueError(f'compare.anchor {self.anchor!r} is one of the two systems: name a third (or "dataset")')
        if self.baseline_run is not None and self.anchor is None:
            raise ValueError("compare.baseline_run needs compare.anchor: the earlier run judged the baseline against an anchor")
        return self
