"""Candidates that are models: ``[candidates.NAME]`` tables of a run config.

A candidate named here has no texts in the responses file: the run asks its model for an answer the
first time a request it planned needs one (:mod:`orchestrator.generation`), stores it with its
provenance, and never asks for it again. ``model`` is a judge profile's name (its model, address,
key and prices, as for judges), one of the bundled llama.cpp models (``qwen1.5b``, ``gemma270m``),
or a litellm model string (``openai/my-model``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["CandidateModel", "GenerationSettings"]


class CandidateModel(BaseModel):
    """One candidate that is a model, and how it is asked."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model: str = Field(min_length=1, max_length=300)
    """A judge profile's name (``judges/<name>.toml``), a bundled llama.cpp model (``qwen1.5b``,
    ``gemma270m``) or a litellm model string (``openai/my-model``)."""
    system: str | None = Field(default=None, max_length=100_000)
    """A system message put before every prompt (a prompt's own system message wins)."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1, le=32_768)
    """The longest answer; an answer that stops there is judged as it is and flagged ``truncated``."""
    seed: int | None = Field(default=None, ge=0, lt=2**32)
    """Sent to providers that take one (the embedded models do): with temperature 0 and a seed, the
    same answer again."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Other completion parameters, passed to litellm as they are (``top_p``, ``stop``…)."""
    api_base: str | None = Field(default=None, max_length=2_000)
    """Where a litellm model string is served (a vLLM or llama.cpp server); a profile's own wins."""
    price_input_per_mtok: float | None = Field(default=None, ge=0, le=1e6)
    price_output_per_mtok: float | None = Field(default=None, ge=0, le=1e6)
    """USD per million tokens, for ``budget.max_usd`` where litellm has no price for the model."""
    prompt_format: Literal["chat", "completion"] | None = None
    """How the prompt is shown: ``chat`` (the model's own chat template, for instruction-tuned
    models) or ``completion`` (plain "Question: … Answer:" text, for a base model that was never
    taught a chat template). Unset: what the bundled model was trained on, else ``chat``."""

    @field_validator("params")
    @classmethod
    def _own_fields(cls, params: dict[str, Any]) -> dict[str, Any]:
        taken = sorted(set(params) & {"model", "messages", "temperature", "max_tokens", "seed", "api_base", "stream"})
        if taken:
            raise ValueError(f"params.{taken[0]} is a field of the candidate (or set by the run); write it there")
        return params


class GenerationSettings(BaseModel):
    """What a generated answer depends on besides its prompt: the model that wrote it and how it
    was asked (stored with every answer; the generation cache's key)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    """The litellm model string actually called."""
    api_base: str | None = None
    system: str | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    embedded: str | None = None
    """The bundled llama.cpp model, when it is one (started by the run)."""
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    api_key_env: str | None = None
    """The variable holding the key sent with every call (a judge profile's ``api_key_env``)."""
    timeout_s: float | None = None
    """One call's limit in seconds (a judge profile's ``timeout_s``; None: the generation default)."""
    deployments: list[str] = Field(default_factory=list)
    """The addresses of a profile's several endpoints, sorted (asked through litellm's Router)."""
    prompt_format: Literal["chat", "completion"] = "chat"
    """``chat``: the messages through the model's chat template; ``completion``: the messages as
    plain text (:func:`orchestrator.generation.settings.completion_prompt`) for a base model."""

    def identity(self) -> str:
        """What makes two answers to one prompt the same answer (prices, the key, the time limit
        and the address of a bundled model's server are not part of it)."""
        fields = self.model_dump(
            exclude={"price_input_per_mtok", "price_output_per_mtok", "api_key_env", "timeout_s", "deployments", "prompt_format"}
        )
        if self.deployments:
            fields["deployments"] = self.deployments
        if self.prompt_format != "chat":  # (so answers stored before the field existed keep their identity)
            fields["prompt_format"] = self.prompt_format
        if self.embedded:
            fields["api_base"] = None
        return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()
