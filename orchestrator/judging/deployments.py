"""Many endpoints for one judge: a profile's ``deployments`` (several vLLM, SGLang or
TGI servers of the same model, or several API keys) are driven through litellm's ``Router``.

The Router picks a deployment per call (``least-busy`` by default: the one with the fewest calls in
flight, so a slow server, which holds its calls longer, gets fewer new ones), puts a deployment that
keeps failing in cooldown (``allowed_fails`` failures → ``cooldown_s`` without calls) and honours
per-deployment ``rpm``/``tpm`` under the usage-based strategies. The Router does not queue: a call
beyond a deployment's ``max_parallel_requests`` fails at once. So concurrency is bounded here, by a
semaphore of the summed ``max_concurrency`` around every call: with equal limits and least-busy
routing, no deployment ever holds more than its own limit (when one does, all do, and the sum is
reached). Failed calls come back to the run's retry policy, and the retry is routed again — to a
healthy deployment once the failing one is cooling down. Which deployment answered is kept in the
judgment's raw response (``_deployment``): ``orchestrator status`` counts them.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Deployment", "DeploymentRouter", "ROUTING"]

ROUTING = Literal["least-busy", "simple-shuffle", "latency-based-routing", "usage-based-routing-v2"]


class Deployment(BaseModel):
    """One endpoint of a judge (``[[deployments]]`` in a profile)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    api_base: str
    api_key_env: str | None = None
    """Environment variable with this endpoint's key (none: local servers)."""
    max_concurrency: int = Field(default=8, ge=1, le=4096)
    """Calls in flight to this endpoint at most."""
    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)
    name: str | None = None
    """Shown in ``status`` (default: ``api_base``)."""


class DeploymentRouter:
    """A litellm ``Router`` over a profile's deployments, with the concurrency bound above."""

    def __init__(self, group: str, model: str, deployments: list[Deployment], *, routing: str, cooldown_s: float, timeout_s: float):
        from litellm import Router

        self.group = group
        self.names = {f"{group}#{k}": d.name or d.api_base for k, d in enumerate(deployments)}
        model_list = []
        for k, d in enumerate(deployments):
            params: dict[str, Any] = {
                "model": model,
                "api_base": d.api_base,
                "api_key": os.environ.get(d.api_key_env) if d.api_key_env else "not-needed",
            }
            params.update({k2: v for k2, v in (("rpm", d.rpm), ("tpm", d.tpm)) if v is not None})
            model_list.append({"model_name": group, "litellm_params": params, "model_info": {"id": f"{group}#{k}"}})
        self.router = Router(
            model_list=model_list,
            routing_strategy=routing,  # type: ignore[arg-type]
            num_retries=0,  # one retry layer: the run's policy (it counts attempts and honours Retry-After)
            allowed_fails=2,
            cooldown_time=cooldown_s,
            timeout=timeout_s,
        )
        self.capacity = sum(d.max_concurrency for d in deployments)
        self._slots: asyncio.Semaphore | None = None

    @classmethod
    def of_profile(cls, profile: Any) -> "DeploymentRouter":
        """The Router over a profile's ``deployments`` (a judge's, or a candidate model's)."""
        return cls(
            profile.name,
            profile.model,
            profile.deployments,
            routing=profile.routing,
            cooldown_s=profile.cooldown_s,
            timeout_s=profile.timeout_s,
        )

    async def acompletion(self, **kwargs: Any) -> Any:
        """One chat completion on whichever deployment the Router picks; ``_deployment`` is set on
        the response's hidden parameters' ``model_id``."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.capacity)
        kwargs = {k: v for k, v in kwargs.items() if k not in ("model", "api_base", "api_key")}
        async with self._slots:
            return await self.router.acompletion(model=self.group, **kwargs)

    async def atext_completion(self, **kwargs: Any) -> Any:
        """One plain-text completion (a base model's), as :meth:`acompletion`."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.capacity)
        kwargs = {k: v for k, v in kwargs.items() if k not in ("model", "api_base", "api_key")}
        async with self._slots:
            return await self.router.atext_completion(model=self.group, **kwargs)

    def deployment_of(self, response: Any) -> str | None:
        hidden = getattr(response, "_hidden_params", None) or {}
        return self.names.get(str(hidden.get("model_id")))
