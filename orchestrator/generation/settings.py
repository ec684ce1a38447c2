"""From a ``[candidates.NAME]`` table to what a generation call sends: the model's litellm string,
address, prices and parameters, resolved once before anything is written (a name that resolves to
nothing is one line at load or at the dry run)."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from ..errors import OrchestratorError
from ..records.candidate_models import CandidateModel, GenerationSettings
from ..records.dataset import PromptRow

__all__ = ["COMPLETION_STOP", "answer_messages", "candidate_router", "completion_prompt", "generation_settings", "resolve_candidates"]

_PROFILE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def generation_settings(name: str, candidate: CandidateModel, profile_dirs: list[Path] | None = None) -> GenerationSettings:
    """The settings of candidate ``name``: its ``model`` as a judge profile's name (that profile's
    model, address and prices; the candidate's own fields win where set), a bundled llama.cpp
    model, or a litellm model string.

    Raises:
        OrchestratorError: a model string litellm cannot route, naming the candidate.
    """
    from ..judging.embedded import EMBEDDED_MODELS
    from ..judging.profiles import get_profile, register_profile_secrets
    from ..judging.profiles import profile_dirs as dirs_of

    fields = candidate.model_dump(exclude={"model"})
    model, embedded, api_base = candidate.model, None, candidate.api_base
    prices = (candidate.price_input_per_mtok, candidate.price_output_per_mtok)
    connection: dict = {}
    if _PROFILE_NAME.match(model) and any((d / f"{model}.toml").is_file() for d in dirs_of(profile_dirs)):
        profile = get_profile(model, profile_dirs)
        if profile.kind != "model" or profile.provider:
            raise OrchestratorError(f"candidates.{name}.model: profile {model!r} is not a model litellm can ask (kind {profile.kind})")
        model, embedded = profile.model, profile.embedded
        api_base = api_base or profile.api_base
        prices = (
            prices[0] if prices[0] is not None else profile.price_input_per_mtok,
            prices[1] if prices[1] is not None else profile.price_output_per_mtok,
        )
        # the profile's key, time limit and parameters are sent as for the judge (its own fields win)
        register_profile_secrets(profile)
        connection = {
            "api_key_env": profile.api_key_env,
            "timeout_s": profile.timeout_s,
            "deployments": sorted(d.api_base for d in profile.deployments),
        }
        fields["params"] = {**profile.params, **fields["params"]}
    elif model in EMBEDDED_MODELS:
        model, embedded = f"openai/{model}", model
    else:
        _check_routable(name, model)
    prompt_format = candidate.prompt_format or (EMBEDDED_MODELS[embedded].prompt_format if embedded in EMBEDDED_MODELS else "chat")
    return GenerationSettings(
        model=model,
        api_base=api_base,
        system=fields["system"],
        temperature=fields["temperature"],
        max_tokens=fields["max_tokens"],
        seed=fields["seed"],
        params=fields["params"],
        embedded=embedded,
        price_input_per_mtok=prices[0],
        price_output_per_mtok=prices[1],
        prompt_format=prompt_format,
        **connection,
    )


def _check_routable(name: str, model: str) -> None:
    import litellm

    litellm.suppress_debug_info = True
    from ..judging.embedded import EMBEDDED_MODELS

    bundled = difflib.get_close_matches(
        model.split("/")[-1].lower().replace("-", "").replace("_", ""), list(EMBEDDED_MODELS), n=1, cutoff=0.7
    )
    try:
        litellm.get_llm_provider(model)
    except Exception:
        if bundled:  # a bundled model's name mistyped: the one suggestion that works here
            raise OrchestratorError(
                f"candidates.{name}.model: {model!r} is not a model litellm can route; did you mean the bundled model {bundled[0]!r}?"
            ) from None
        raise OrchestratorError(
            f"candidates.{name}.model: litellm cannot route {model!r} (write it as provider/model, e.g. openai/{model}, "
            "name a judge profile, or a bundled model: qwen1.5b, gemma270m)"
        ) from None


def resolve_candidates(candidates: dict[str, CandidateModel], profile_dirs: list[Path] | None = None) -> dict[str, GenerationSettings]:
    """Every candidate model's settings (:func:`generation_settings`), in config order."""
    return {name: generation_settings(name, c, profile_dirs) for name, c in candidates.items()}


def answer_messages(prompt: PromptRow, settings: GenerationSettings) -> list[dict[str, str]]:
    """The conversation a candidate model answers: the prompt's turns (a conversation) or its text as
    one user turn, after the candidate's system message where the prompt has none of its own."""
    turns = (
        [{"role": t.role, "content": t.content} for t in prompt.messages] if prompt.messages else [{"role": "user", "content": prompt.text}]
    )
    own_system = bool(turns) and turns[0]["role"] == "system"
    return ([{"role": "system", "content": settings.system}] if settings.system and not own_system else []) + turns


COMPLETION_STOP = ["\nQuestion:"]
"""Where a base model's completion ends: it goes on to write the next question itself."""


def completion_prompt(messages: list[dict[str, str]]) -> str:
    """The conversation as the plain text a base model continues: a system message as a first
    paragraph, each user turn as ``Question: …``, each assistant turn as ``Answer: …``, ending at
    ``Answer:`` for the model to complete (a base model was never taught a chat template: shown
    one, it writes more template tokens instead of an answer)."""
    lines = []
    for turn in messages:
        role, content = turn["role"], turn["content"].strip()
        if role == "system":
            lines.append(f"{content}\n")
        elif role == "user":
            lines.append(f"Question: {content}")
        else:
            lines.append(f"Answer: {content}\n")
    return "\n".join(lines) + "\nAnswer:"


def candidate_router(model: str, dirs: list[Path]) -> object | None:
    """A litellm Router over the endpoints of a candidate model named by a profile with
    ``deployments`` (as for judges, docs/scaling.md), else None."""
    from ..judging.deployments import DeploymentRouter
    from ..judging.profiles import get_profile, profile_dirs

    if not any((d / f"{model}.toml").is_file() for d in profile_dirs(dirs)):
        return None
    profile = get_profile(model, dirs)
    if not profile.deployments:
        return None
    return DeploymentRouter.of_profile(profile)
