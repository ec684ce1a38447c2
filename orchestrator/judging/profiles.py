"""Judge profiles: which model a judge is, where it is served and how its calls are priced and
routed (``judges/*.toml``, validated at load)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..records.datafiles import data_dirs, find_data_file, load_toml_model
from .deployments import ROUTING, Deployment

__all__ = ["DEFAULT_THINKING_TOKENS", "JudgeProfile", "get_profile", "profile_dirs", "register_profile_secrets"]

DEFAULT_THINKING_TOKENS = 2048
"""Tokens reserved for a thinking judge's thinking when its profile names no ``thinking_budget``."""


class JudgeProfile(BaseModel):
    """A judge as data (``judges/<name>.toml``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str
    kind: Literal["model", "human"] = "model"
    """``model``: a model asked through litellm; ``human``: people, who label the items a run
    chooses for them between rounds on ``orchestrator label RUN`` (named in a run's
    ``judging.people``; docs/human-labels.md)."""
    model: str = ""
    """litellm model string, e.g. ``openai/gpt-4o-mini`` or ``openai/qwen1.5b`` for the embedded
    judge (required for a model; none for people)."""
    per_round: int = Field(default=2, ge=1, le=10_000)
    """People: items the run asks them to label after each round it plans (and once more at its end)."""
    order: Literal["random", "disagreement"] = "random"
    """People: which items first, in rounds over the candidates or pairs — at random (unbiased for
    ``fit raee --human`` and the ``judges`` table; on SummEval it ranked better) or where the judges
    disagree most per minute of reading (:mod:`orchestrator.people.choice`)."""
    api_base: str | None = None
    api_key_env: str | None = None
    """Environment variable holding the API key (keys never live in profiles)."""
    logprobs: bool = True
    top_logprobs: int = Field(default=20, ge=1, le=100)
    """Provider cap on returned alternatives per position."""
    prefill: bool = False
    """Whether an assistant prefix is continued (llama.cpp yes, OpenAI no)."""
    answers_prefill: bool = True
    """Whether the model answers a template's prefix (``Response ``) with an option: an
    instruction-tuned model does; a base model (``gemma270m``) continues it with other text
    ("Response 1:"), so ``orchestrator init`` gives it the ``generic-*-noprefill`` templates."""
    samples: int = Field(default=1, ge=1, le=64)
    """Without logprobs: verdicts sampled this many times per request (each a paid completion,
    counted in ``max_calls``); the shares are fitted as counts (:mod:`orchestrator.poe.verdicts`)."""
    sampling: Literal["adaptive", "fixed"] = "adaptive"
    """With ``samples > 1`` and no log-probabilities: ``adaptive`` — ``samples`` is a ceiling, not a
    fixed cost: a pairwise (PoE) campaign asks one verdict per request and its selection decides,
    each round, between a new pair and one more verdict of a pair already asked (up to ``samples``
    per shown order and prompt), by the same value it ranks pairs with; other campaigns ask
    ``samples`` at once. ``fixed``: always ``samples`` verdicts per request."""
    thinking: bool = False
    """The judge thinks before it answers (o-series, GPT-5, Claude or Gemini with thinking, a
    think-then-answer template): its verdict is read after the thinking — after the last
    ``</think>`` of the answer, or the whole answer where the provider returns the thinking in a
    reasoning field — never from log-probabilities (``logprobs`` must be false). A thinking block
    that never closes, or no verdict after it, is a failed judgment whose tokens were paid."""
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    """Passed to the provider through litellm (``reasoning_effort``): how long a reasoning model thinks."""
    thinking_budget: int | None = Field(default=None, ge=64, le=200_000)
    """Tokens the thinking may take (Anthropic/Gemini ``thinking.budget_tokens`` through litellm),
    added to the template's answer allowance in ``max_tokens`` and in the budget's reservations;
    a thinking judge without one reserves :data:`DEFAULT_THINKING_TOKENS`."""
    embedded: str | None = None
    """Key of a local llama.cpp model started by ``orchestrator judge serve``."""
    provider: str | None = None
    """``package.module:Class``: a judge from outside the package implementing the ``Judge``
    protocol, built as ``Class(profile)`` (:mod:`orchestrator.judging.providers`; docs/extending.md)."""
    price_input_per_mtok: float | None = Field(default=None, ge=0, le=1e6)
    price_output_per_mtok: float | None = Field(default=None, ge=0, le=1e6)
    params: dict[str, Any] = Field(default_factory=dict)
    """Extra completion parameters (temperature, seed, ...)."""
    timeout_s: float = Field(default=120.0, gt=0, le=86400)
    """Seconds one call may take."""
    batch: bool = False
    """Ask through the provider's batch API (litellm files + batches; OpenAI-compatible providers):
    each round's requests to this judge go out as one batch, at ``batch_price_factor`` of the price,
    answered within the provider's completion window (:mod:`orchestrator.run.batching`)."""
    batch_price_factor: float = Field(default=0.5, ge=0, le=1)
    """What a batched call costs relative to the list price (OpenAI and Anthropic: half)."""
    batch_poll_s: float = Field(default=10.0, gt=0, le=3600)
    """First wait between polls of a running batch (doubling up to ``batch_poll_max_s``)."""
    batch_poll_max_s: float = Field(default=300.0, gt=0, le=86400)
    deployments: list[Deployment] = Field(default_factory=list)
    """Several endpoints of this judge, driven through litellm's Router (:mod:`.deployments`);
    empty: the one ``api_base``."""
    routing: ROUTING = "least-busy"
    """The Router's strategy over ``deployments``."""
    cooldown_s: float = Field(default=30.0, gt=0, le=86400)
    """How long a deployment that keeps failing gets no calls."""

    @model_validator(mode="after")
    def _thinking(self) -> "JudgeProfile":
        if (self.thinking or self.reasoning_effort or self.thinking_budget) and self.logprobs:
            raise ValueError(
                "logprobs: a thinking judge (thinking, reasoning_effort or thinking_budget) answers after its "
                "thinking, where no log-probability of an option is read: set logprobs = false (its verdicts "
                "are fitted as counts; samples = k asks k of them)"
            )
        if (self.reasoning_effort or self.thinking_budget) and not self.thinking:
            raise ValueError("thinking: reasoning_effort and thinking_budget are for a judge that thinks: set thinking = true")
        return self

    def answer_tokens(self, template_tokens: int) -> int:
        """``max_tokens`` of one completion: the template's answer allowance, plus the thinking's."""
        if not self.thinking:
            return template_tokens
        return template_tokens + (self.thinking_budget or DEFAULT_THINKING_TOKENS)

    @model_validator(mode="after")
    def _kind(self) -> "JudgeProfile":
        if self.kind == "model" and not self.model and not self.provider:
            raise ValueError('model: a judge profile needs a litellm model string, a provider (or kind = "human" for people)')
        if self.kind == "human" and (self.model or self.embedded or self.api_base or self.deployments or self.batch):
            raise ValueError('kind = "human" is people, asked on the labelling page: no model, embedded, api_base, deployments or batch')
        return self


def profile_dirs(extra: list[Path] | None = None) -> list[Path]:
    """Profile lookup order: ``extra``, ``$ORCHESTRATOR_JUDGES``, ``./judges``, this checkout's ``judges/``."""
    return data_dirs("ORCHESTRATOR_JUDGES", "judges", extra)


def get_profile(name: str, dirs: list[Path] | None = None) -> JudgeProfile:
    """Load the profile called ``name``.

    Raises:
        OrchestratorError: unknown profile or invalid file.
    """
    profile = load_toml_model(find_data_file(name, profile_dirs(dirs), "judge profile"), JudgeProfile, "judge profile")
    register_profile_secrets(profile)
    return profile


def register_profile_secrets(profile: "JudgeProfile") -> None:
    """Every variable a profile names for a key — its own ``api_key_env`` and each deployment's —
    is redacted by value from everything stored or printed (:mod:`orchestrator.secrets`)."""
    from ..secrets import register_secret_env

    register_secret_env(profile.api_key_env)
    for deployment in profile.deployments or []:
        register_secret_env(deployment.api_key_env)
