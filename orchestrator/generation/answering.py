"""What a run needs to generate its candidate models' answers, built once by the run's shell and
handed to the engine: each candidate's settings, its generator, their prices, the cache."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from ..errors import OrchestratorError
from ..judging.dispatch import RetryPolicy
from ..records.candidate_models import GenerationSettings
from ..records.config import DispatchConfig
from ..records.dataset import Dataset
from ..store import RunStore
from ..store.answers import stored_answers
from .generators import Generator
from .pipeline import AnswerPipeline
from .planning import AnswerPlanning

__all__ = ["Answering", "candidate_prices"]


class PlanningContext(Protocol):
    """What :meth:`Answering.pipeline` reads and sets on the run's planning context (the run's
    layer is above this one: :class:`orchestrator.run.requests.PlanContext` is what it is given)."""

    dataset: Dataset
    answers: AnswerPlanning | None


def candidate_prices(settings: dict[str, GenerationSettings], *, max_usd: float | None) -> dict[str, tuple[float, float]]:
    """USD per (prompt, completion) token of every candidate model: its own prices, else litellm's
    for its model; a local one (bundled, or an address on this machine) is free.

    Raises:
        OrchestratorError: ``max_usd`` is set and a candidate has no known price.
    """
    import litellm

    out = {}
    for name, s in settings.items():
        if s.price_input_per_mtok is not None or s.price_output_per_mtok is not None:
            out[name] = ((s.price_input_per_mtok or 0.0) / 1e6, (s.price_output_per_mtok or 0.0) / 1e6)
            continue
        local = bool(s.embedded) or (s.api_base or "").startswith(("http://127.", "http://localhost", "http://[::1]"))
        info = None if local else (litellm.model_cost.get(s.model) or litellm.model_cost.get(s.model.split("/", 1)[-1]))
        if info and info.get("input_cost_per_token") is not None:
            out[name] = (float(info["input_cost_per_token"]), float(info.get("output_cost_per_token") or 0.0))
        elif local or max_usd is None:
            out[name] = (0.0, 0.0)
        else:
            raise OrchestratorError(
                f"candidates.{name}: litellm has no price for model {s.model!r}; set price_input_per_mtok and "
                "price_output_per_mtok in [candidates." + name + "] to use budget.max_usd"
            )
    return out


@dataclass
class Answering:
    """The candidate models of one run, ready to answer."""

    settings: dict[str, GenerationSettings]
    generators: dict[str, Generator]
    prices: dict[str, tuple[float, float]]
    cache: Any = None
    """A :class:`~orchestrator.generation.cache.GenerationCache`, or None."""

    def pipeline(
        self, store: RunStore, ctx: PlanningContext, dispatch: DispatchConfig, draining: Callable[[], bool], sleep: Callable[[float], Any]
    ) -> AnswerPipeline:
        """The run's pipeline of answers, and the planning context told about them (``ctx.answers``)."""
        policy = RetryPolicy(dispatch.max_attempts, dispatch.backoff_initial_s, dispatch.backoff_max_s)
        pipeline = AnswerPipeline(
            store, ctx.dataset, self.settings, self.generators, policy, draining, sleep, concurrency=dispatch.concurrency, cache=self.cache
        )
        planned = set(stored_answers(store))
        ctx.answers = AnswerPlanning(
            ctx.dataset,
            self.settings,
            planned=planned,
            failed=pipeline.failures,
            failure_rounds=pipeline.failure_rounds,
            prices=self.prices,
        )
        return pipeline
