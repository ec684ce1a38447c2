"""The generation cache: answers of candidate models kept in the judgment cache's file (its
``generations`` table), keyed by what determines an answer — the model, its address (or its
deployments), system message, temperature, ``max_tokens``, seed and other parameters, the
conversation — and the candidate it was written for, never the run. Only answers that were generated are kept (a failure is asked again); a hit costs nothing."""

from __future__ import annotations

import hashlib
import json
from typing import Callable

from ..errors import OrchestratorError
from ..records.answers import AnswerRequest, GeneratedAnswer
from ..store.cache import JudgmentCache

__all__ = ["GenerationCache", "generation_key"]


def generation_key(request: AnswerRequest) -> str:
    """The cache's identity of an answer: its settings (model, address or deployments, system
    message, sampling), the conversation, and the candidate it was written for — two candidates
    with the same settings in one run each get answers of their own (an A/A comparison of a sampled
    model compares two draws, never a text with itself)."""
    return hashlib.sha256(
        "\x1f".join(["generation", request.settings.identity(), json.dumps(request.messages, sort_keys=True), request.candidate]).encode()
    ).hexdigest()


class GenerationCache:
    """Answers from the cache file; a cache that breaks mid-run is bypassed after one line (``warn``)."""

    def __init__(self, cache: JudgmentCache, warn: Callable[[str], None]):
        self.cache, self.warn, self.broken = cache, warn, False

    def lookup(self, request: AnswerRequest) -> GeneratedAnswer | None:
        if self.broken:
            return None
        try:
            found = self.cache.get_generation(generation_key(request))
        except Exception as exc:  # a damaged cache: the run goes on paying as without one
            self._break(exc)
            return None
        if found is None:
            return None
        return GeneratedAnswer.model_validate({**found, "cached": True, "cost_usd": 0.0, "prompt_tokens": 0, "completion_tokens": 0})

    def remember(self, request: AnswerRequest, answer: GeneratedAnswer) -> None:
        if self.broken or answer.status != "ok":
            return
        try:
            self.cache.put_generation(generation_key(request), model=request.settings.model, answer=answer.model_dump(mode="json"))
        except (OrchestratorError, Exception) as exc:
            self._break(exc)

    def _break(self, exc: BaseException) -> None:
        self.broken = True
        self.warn(f"{self.cache.path}: the generation cache cannot be used ({exc}); going on without it")
