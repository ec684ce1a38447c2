"""A judge's provider batch API, through litellm's files and batches functions (OpenAI's format:
a JSONL file of ``{"custom_id", "method", "url", "body"}`` lines, a batch over it, an output file and
an error file of ``{"custom_id", "response": {"status_code", "body"}, "error"}`` lines).

:class:`BatchClient` only talks to the provider; what is submitted when, and what is committed, is
decided by :mod:`orchestrator.run.batching` (exactly-once submission across crashes). The body of
each line is what :class:`~.client.LiteLLMJudge` would send live, and each answer is read by the
same code as a live answer, at ``batch_price_factor`` of the price.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from ..errors import OrchestratorError
from .client import JudgeProfile, JudgeRequest, Judgment, LiteLLMJudge, error_text

__all__ = ["BATCH_PROVIDERS", "BatchClient", "BatchInfo", "TERMINAL", "check_batch_profile"]

BATCH_PROVIDERS = ("openai", "azure", "hosted_vllm", "vertex_ai", "bedrock", "mistral", "xai")
"""litellm providers with a batches API (the model string's prefix)."""
TERMINAL = ("completed", "failed", "expired", "cancelled")
METADATA_KEY = "orchestrator_batch"
"""The batch's metadata field holding our batch id: how a batch created just before a crash is found again."""


def check_batch_profile(profile: JudgeProfile) -> None:
    """Refuse ``batch = true`` for a provider without a batch API (one line, before a run starts)."""
    provider = profile.model.partition("/")[0]
    if profile.batch and provider not in BATCH_PROVIDERS:
        raise OrchestratorError(
            f"judge {profile.name!r}: batch = true needs a provider with a batch API ({', '.join(BATCH_PROVIDERS)}); "
            f"{profile.model!r} has none through litellm"
        )


@dataclass(frozen=True)
class BatchInfo:
    provider_id: str
    status: str
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: str = ""


class BatchClient:
    def __init__(self, judge: LiteLLMJudge):
        self.judge = judge
        self.profile = judge.profile
        self.provider, _, self.model = self.profile.model.partition("/")

    def _connection(self) -> dict[str, Any]:
        kwargs = self.judge._kwargs_connection()
        # no hidden retries inside the client: a retried create could make a second batch; retries
        # are ours (orchestrator.run.batching), which look for the batch by its tag first
        return {"custom_llm_provider": self.provider, "max_retries": 0, **kwargs}

    def line(self, request: JudgeRequest) -> dict[str, Any]:
        """One input line: the body a live call would send."""
        live = self.judge._kwargs(request)
        body = {k: v for k, v in live.items() if k not in ("timeout", "max_retries", "extra_headers", "api_base", "api_key", "model")}
        return {"custom_id": request.key, "method": "POST", "url": "/v1/chat/completions", "body": {"model": self.model, **body}}

    async def submit(self, batch_id: str, requests: list[JudgeRequest]) -> str:
        """Upload the requests and create the batch (tagged with ``batch_id``); the provider's id."""
        import litellm

        data = "".join(json.dumps(self.line(r)) + "\n" for r in requests).encode()
        uploaded = await litellm.acreate_file(file=(f"{batch_id}.jsonl", data), purpose="batch", **self._connection())
        created = await litellm.acreate_batch(
            completion_window="24h",
            endpoint="/v1/chat/completions",
            input_file_id=uploaded.id,
            metadata={METADATA_KEY: batch_id},
            **self._connection(),
        )
        return str(created.id)

    async def find(self, batch_id: str) -> str | None:
        """The provider's id of a batch tagged ``batch_id`` (created before a crash), or None."""
        import litellm

        after: str | None = None
        seen: set[str] = set()
        while True:  # every page: an account may hold any number of newer batches
            page = await litellm.alist_batches(limit=100, after=after, **self._connection())
            data = list(getattr(page, "data", None) or [])
            for batch in data:
                if (getattr(batch, "metadata", None) or {}).get(METADATA_KEY) == batch_id:
                    return str(batch.id)
            after = str(data[-1].id) if data else None
            if not getattr(page, "has_more", False) or after is None or after in seen:
                return None  # (a provider that pages in a circle ends here too)
            seen.add(after)

    async def status(self, provider_id: str) -> BatchInfo:
        import litellm

        batch = await litellm.aretrieve_batch(batch_id=provider_id, **self._connection())
        errors = getattr(batch, "errors", None)
        text = ""
        if errors is not None:
            data = getattr(errors, "data", None) or (errors.get("data") if isinstance(errors, dict) else None) or []
            text = "; ".join(str(getattr(e, "message", None) or (e.get("message") if isinstance(e, dict) else e)) for e in data)
        return BatchInfo(provider_id, str(batch.status), batch.output_file_id, batch.error_file_id, text)

    async def cancel(self, provider_id: str) -> None:
        import litellm

        await litellm.acancel_batch(batch_id=provider_id, **self._connection())

    async def results(self, info: BatchInfo) -> dict[str, dict[str, Any] | str]:
        """``custom_id`` → the response body (a chat completion), or an error text."""
        import litellm

        out: dict[str, dict[str, Any] | str] = {}
        for file_id in (info.output_file_id, info.error_file_id):
            if not file_id:
                continue
            content = await litellm.afile_content(file_id=file_id, **self._connection())
            raw = getattr(content, "content", content)
            text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)
            for line in text.splitlines():
                parsed = _result_line(line)
                if parsed is not None and parsed[0] not in out:  # an answer is never replaced by a later line
                    out[parsed[0]] = parsed[1]
        await _flush_litellm_logging()
        return out

    async def judgment(self, request: JudgeRequest, outcome: dict[str, Any] | str, latency_s: float) -> Judgment:
        """Read one batch answer as a live answer is read (a failed line is a retryable failure)."""
        base: dict[str, Any] = dict(
            key=request.key,
            judge=self.judge.name,
            template=request.template.name,
            kind=request.template.kind,
            prompt_id=request.prompt_id,
            candidates=list(request.candidates),
        )
        if isinstance(outcome, str):
            return Judgment(
                **base, status="failed", error=f"batch line failed: {outcome}", error_type="server", retryable=True, latency_s=latency_s
            )
        import litellm

        started = time.perf_counter()
        try:
            try:  # a response object, so that litellm can price it where the profile names no price
                response: Any = litellm.ModelResponse(**outcome)
            except Exception:
                response = outcome
            judgment = await self.judge._read(request, [response], base, latency_s)
        except Exception as exc:  # an unreadable answer is a failed judgment, as live
            return Judgment(
                **base, status="failed", error=f"unreadable answer: {error_text(exc)}", error_type="unparsed", latency_s=latency_s
            )
        note = f"batch ({self.profile.batch_price_factor:g}× price)"
        return judgment.model_copy(
            update={
                "cost_usd": judgment.cost_usd * self.profile.batch_price_factor,
                "note": f"{judgment.note}; {note}" if judgment.note else note,
                "latency_s": latency_s + time.perf_counter() - started,
            }
        )


def _result_line(line: str) -> tuple[str, dict[str, Any] | str] | None:
    """``(custom_id, body or error text)`` of one output or error line; None for a line that cannot
    be read (damaged, not an object, no ``custom_id``): its request gets no result and goes into the
    next batch, while every other line of the file is still committed."""
    if not line.strip():
        return None
    try:
        row = json.loads(line)
    except ValueError:
        return None
    if not isinstance(row, dict) or not isinstance(row.get("custom_id"), str):
        return None
    found = row.get("response")
    response: dict[str, Any] = found if isinstance(found, dict) else {}
    body = response.get("body")
    if response.get("status_code") == 200 and isinstance(body, dict):
        return row["custom_id"], body
    error = row.get("error") or (body.get("error") if isinstance(body, dict) else None) or {}
    message = error.get("message") if isinstance(error, dict) else str(error)
    return row["custom_id"], f"{response.get('status_code') or 'error'}: {message or 'no answer'}"


async def _flush_litellm_logging(timeout_s: float = 10.0) -> None:
    """Let litellm's logging worker finish what a batch retrieval queued (its own cost accounting
    reads the output file) inside this event loop: left for later, the task is cut off when the
    run's loop closes and Python warns that a coroutine was never awaited."""
    try:
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

        await asyncio.wait_for(GLOBAL_LOGGING_WORKER.flush(), timeout_s)
    except Exception:  # noqa: BLE001 - litellm's bookkeeping never fails a run
        pass
