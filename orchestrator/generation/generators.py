"""Who writes a candidate's answer: one interface, ``async def generate(request) -> GeneratedAnswer``,
injected into the run as judges are. :class:`LiteLLMGenerator` asks any litellm model (an API, a
vLLM or llama.cpp server, the bundled models); :class:`RecordedAnswers` answers from a file of
texts (``run --answers-from``), the way a judgment log answers judge requests. A generator never
raises on a failed call: the answer records why, and whether a retry could help."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Protocol

from ..errors import OrchestratorError
from ..records.answers import AnswerRequest, GeneratedAnswer

__all__ = ["Generator", "LiteLLMGenerator", "RecordedAnswers"]

TIMEOUT_S = 600.0
"""One generation's limit (a long answer on a slow local model takes minutes)."""


class Generator(Protocol):
    async def generate(self, request: AnswerRequest) -> GeneratedAnswer: ...


class LiteLLMGenerator:
    """A candidate model reached through ``litellm.acompletion``; ``api_base`` replaces the
    settings' address (the bundled model's server, started by the run)."""

    def __init__(self, api_base: str | None = None, router: Any = None):
        self.api_base = api_base
        self.router = router
        """A :class:`~orchestrator.judging.deployments.DeploymentRouter` over several endpoints of
        the model (a profile's ``deployments``), or None."""
        self._text_clients: dict[tuple[str, str | None], Any] = {}

    def _kwargs(self, request: AnswerRequest) -> dict[str, Any]:
        s = request.settings
        kwargs: dict[str, Any] = {
            **s.params,
            "model": s.model,
            "messages": request.messages,
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
            "timeout": s.timeout_s or TIMEOUT_S,
            "max_retries": 0,  # one retry layer: the pipeline's tenacity policy (counts attempts, honours Retry-After)
        }
        if s.seed is not None:
            kwargs["seed"] = s.seed
        if s.prompt_format == "completion":
            from .settings import COMPLETION_STOP, completion_prompt

            del kwargs["messages"]
            kwargs["prompt"] = completion_prompt(request.messages)
            stop = kwargs.get("stop") or []
            kwargs["stop"] = [*([stop] if isinstance(stop, str) else stop), *COMPLETION_STOP]
        base = self.api_base or s.api_base
        if base and self.router is None:
            kwargs["api_base"] = base
        if s.api_key_env and not self.api_base:  # (a bundled model's server takes no key)
            kwargs["api_key"] = os.environ.get(s.api_key_env)
        elif base and self.router is None:
            kwargs["api_key"] = "not-needed"  # local OpenAI-compatible servers ignore it
        return kwargs

    def _text_client(self, base: str, key: str | None, timeout_s: float) -> Any:
        """One OpenAI client per address and key while the run's loop lasts (litellm would make a
        new one for every text completion and never close it)."""
        from openai import AsyncOpenAI

        from ..judging.sessions import owned_client

        client = self._text_clients.get((base, key))
        if client is None or client.is_closed():
            client = owned_client(AsyncOpenAI(base_url=base, api_key=key or "not-needed", max_retries=0, timeout=timeout_s))
            self._text_clients[(base, key)] = client
        return client

    async def generate(self, request: AnswerRequest) -> GeneratedAnswer:
        import litellm

        from ..judging.replies import classify_error, error_text, sane_cost, sane_usage

        started = time.perf_counter()
        try:
            kwargs = self._kwargs(request)
            if "prompt" in kwargs:  # a base model: a plain-text completion
                call = self.router.atext_completion if self.router is not None else litellm.atext_completion
                if self.router is None and kwargs.get("api_base") and kwargs["model"].startswith("openai/"):
                    kwargs["client"] = self._text_client(kwargs["api_base"], kwargs.get("api_key"), kwargs["timeout"])
            else:
                call = self.router.acompletion if self.router is not None else litellm.acompletion
            response = await call(**kwargs)
        except Exception as exc:  # a failed call is an answer that says why
            error_type, retryable, retry_after = classify_error(exc)
            return GeneratedAnswer.failure(
                error_text(exc), error_type, retryable=retryable, retry_after_s=retry_after, latency_s=time.perf_counter() - started
            )
        latency = time.perf_counter() - started
        try:
            choice = response.choices[0]
            text = (choice.text if "prompt" in kwargs else choice.message.content) or ""
            finish = getattr(choice, "finish_reason", None)
        except (AttributeError, IndexError, TypeError):
            return GeneratedAnswer.failure("the response has no answer (no choices)", "invalid", latency_s=latency)
        usage = getattr(response, "usage", None)
        prompt_tokens, completion_tokens, _ = sane_usage(
            usage.model_dump() if usage is not None and hasattr(usage, "model_dump") else usage
        )
        s = request.settings
        if s.price_input_per_mtok is not None or s.price_output_per_mtok is not None:
            cost = (prompt_tokens * (s.price_input_per_mtok or 0.0) + completion_tokens * (s.price_output_per_mtok or 0.0)) / 1e6
        elif s.embedded or self.api_base or s.api_base or self.router is not None:
            cost = 0.0
        else:
            try:
                cost = float(litellm.completion_cost(completion_response=response))
            except Exception:
                cost = 0.0
        cost, _ = sane_cost(cost)
        paid = GeneratedAnswer(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cost_usd=cost, latency_s=latency)
        if not isinstance(text, str) or not text.strip():
            error = f"the model returned an empty answer (finish reason {finish})"
            return paid.model_copy(update={"status": "failed", "error": error, "error_type": "empty", "finish_reason": finish})
        return paid.model_copy(update={"text": text, "finish_reason": finish, "truncated": finish == "length"})


class RecordedAnswers:
    """Answers from a file of texts (JSONL rows ``prompt_id``, ``candidate``, ``text``, as in the
    responses file): nothing is paid, and an answer the file lacks fails with that reason.

    Raises:
        OrchestratorError: an unreadable file or a bad row, naming file and line.
    """

    def __init__(self, path: str | Path):
        from ..records.dataset import ResponseText
        from ..records.log import validate_jsonl

        self.path = Path(path)
        if not self.path.is_file():
            raise OrchestratorError(f"--answers-from {self.path}: no such file")
        with self.path.open("rb") as fh:
            if fh.read(16) == b"SQLite format 3\x00":
                raise OrchestratorError(
                    f"--answers-from {self.path}: this is a run file (SQLite), not a file of answers; write its answers out with "
                    f"`orchestrator export {self.path} --format answers --out answers.jsonl` and give that file"
                )
        _refuse_other_files(self.path)
        self.texts: dict[tuple[str, str], str] = {}
        for number, row in validate_jsonl(self.path, ResponseText, "the file has no rows"):
            key = (row.prompt_id, row.candidate)
            if key in self.texts:
                raise OrchestratorError(f"{self.path}:{number}: a second answer of {row.candidate!r} to prompt {row.prompt_id!r}")
            self.texts[key] = row.text

    def candidates(self) -> set[str]:
        return {c for _, c in self.texts}

    def unused(self, prompts: set[str], candidates: set[str]) -> str | None:
        """What in the file the run will never read (rows for prompts or candidates it does not
        have), in words, or None."""
        other_prompts = sum(1 for p, c in self.texts if p not in prompts and c in candidates)
        other_candidates = sorted({c for _, c in self.texts if c not in candidates})
        said = []
        if other_prompts:
            said.append(f"{other_prompts} row(s) for prompts the run does not have")
        if other_candidates:
            rows = sum(1 for _, c in self.texts if c not in candidates)
            said.append(
                f"{rows} row(s) of {len(other_candidates)} candidate(s) that are not its models ({', '.join(other_candidates[:5])})"
            )
        return f"--answers-from {self.path}: {' and '.join(said)}; they are not used" if said else None

    async def generate(self, request: AnswerRequest) -> GeneratedAnswer:
        text = self.texts.get((request.prompt_id, request.candidate))
        if text is None:
            return GeneratedAnswer.failure(
                f"{self.path} has no answer of {request.candidate!r} to prompt {request.prompt_id!r}", "not_in_file"
            )
        return GeneratedAnswer(text=text, finish_reason="recorded")


def _refuse_other_files(path: Path) -> None:
    """A prompts file (rows of ``id`` and ``text``) or another JSONL given as a file of answers:
    one line that says what it looks like, before its rows are checked one by one."""
    import json

    with path.open("rb") as fh:
        first = next((line for line in fh if line.strip()), b"")
    try:
        row = json.loads(first)
    except ValueError:
        return  # the row-by-row check names the line
    if isinstance(row, dict) and "prompt_id" not in row and "candidate" not in row:
        looks = "a prompts file (rows with id and text)" if "id" in row else f"rows with {', '.join(sorted(row)[:5]) or 'no fields'}"
        raise OrchestratorError(
            f"--answers-from {path}: not a file of answers, it looks like {looks}; each row of an answers file has "
            "prompt_id, candidate and text (`orchestrator export RUN --format answers` writes one)"
        )
