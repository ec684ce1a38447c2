"""The ``[compare]`` section of a run config: a candidate system against a baseline on
the same prompts, judged head to head in both shown orders, with a decision valid at every look
(:mod:`orchestrator.raee.sequence`)."""

from __future__ import annotations

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
    template: str | None = None
    """A pairwise template (default: ``judging.pairwise_template``)."""

    @model_validator(mode="after")
    def _two(self) -> "CompareConfig":
        if self.candidate == self.baseline:
            raise ValueError(f"compare.candidate and compare.baseline are both {self.candidate!r}: compare two systems")
        return self
