"""The async judge client on litellm (profiles: :mod:`.profiles`; what providers send back: :mod:`.replies`).

One interface: ``async def judge(request) -> Judgment``. :class:`LiteLLMJudge` implements it for
any litellm model (API judges, the embedded llama.cpp judge, a test server); the loop injects it,
so the same loop runs against a replayed log or a fake. A judge never raises on a bad answer or a
failed call: the :class:`Judgment` records status, error and whether a retry could help.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import Any

from ..records.judgments import JudgeRequest, Judgment
from ..records.templates import Template
from .deployments import DeploymentRouter
from .extract import (
    OptionReading,
    after_thinking,
    closing_verdict,
    continuation_mass,
    extract_options,
    join_notes,
    split_prefix,
    stated_confidence,
)
from .profiles import JudgeProfile, get_profile, profile_dirs, register_profile_secrets
from .protocol import Judge
from .replies import classify_error, error_text, sane_cost, sane_usage

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# JudgeRequest, Judgment (records), JudgeProfile, get_profile, profile_dirs and error_text are
# re-exported: callers take a judge, its requests and answers, its profile and its failures' text
# from one place
__all__ = ["JudgeProfile", "JudgeRequest", "Judgment", "Judge", "LiteLLMJudge", "error_text", "get_profile", "profile_dirs"]


THINKING_PARAMETER_PROVIDERS = ("anthropic", "gemini", "vertex_ai", "bedrock")
"""litellm providers that take ``thinking = {"type": "enabled", "budget_tokens": N}``; for the others
(OpenAI's take ``reasoning_effort``; litellm refuses ``thinking`` there) the budget only sizes
``max_tokens`` and the reservations."""


class LiteLLMJudge:
    """A judge reached through ``litellm.acompletion``."""

    def __init__(self, profile: JudgeProfile, *, api_base: str | None = None):
        register_profile_secrets(profile)
        self.profile = profile
        self.name = profile.name
        self.api_base = api_base or os.environ.get("ORCHESTRATOR_API_BASE") or profile.api_base
        self.router = DeploymentRouter.of_profile(profile) if profile.deployments and not api_base else None
        """Several endpoints (a ``dispatch.api_base`` override sends everything to that one)."""

    async def _complete(self, kwargs: dict[str, Any]) -> Any:
        """One chat completion: through the deployments' Router, or litellm directly."""
        import litellm

        if self.router is None:
            return await litellm.acompletion(**kwargs)
        response = await self.router.acompletion(**kwargs)
        try:
            response._hidden_params["orchestrator_deployment"] = self.router.deployment_of(response)
        except (AttributeError, TypeError):
            pass
        return response

    def _kwargs(self, request: JudgeRequest) -> dict[str, Any]:
        p = self.profile
        kwargs: dict[str, Any] = {
            "model": p.model,
            "messages": request.messages if p.prefill else [m for m in request.messages if m["role"] != "assistant"],
            "max_tokens": p.answer_tokens(request.template.max_new_tokens),
            "timeout": p.timeout_s,
            "max_retries": 0,  # one retry layer: the loop's tenacity policy (counts attempts, honours Retry-After)
            "extra_headers": {"X-Idempotency-Key": request.key},
            **p.params,
        }
        if p.logprobs:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = p.top_logprobs
        if p.reasoning_effort:
            kwargs["reasoning_effort"] = p.reasoning_effort
            # sent as asked: litellm releases differ on which OpenAI-compatible models take it, and
            # a provider that refuses it says so in one failed judgment (the dry run's smoke call)
            kwargs["allowed_openai_params"] = ["reasoning_effort"]
        if p.thinking_budget and p.model.split("/", 1)[0] in THINKING_PARAMETER_PROVIDERS:
            kwargs["thinking"] = {"type": "enabled", "budget_tokens": p.thinking_budget}
        kwargs.update(self._kwargs_connection())
        return kwargs

    def _kwargs_connection(self) -> dict[str, Any]:
        """Where the judge is and its key (live calls and the batch API alike)."""
        kwargs: dict[str, Any] = {}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.profile.api_key_env:
            kwargs["api_key"] = os.environ.get(self.profile.api_key_env)
        elif self.api_base:
            kwargs["api_key"] = "not-needed"  # local OpenAI-compatible servers ignore it
        return kwargs

    def _cost(self, response: Any, prompt_tokens: int, completion_tokens: int) -> float:
        p = self.profile
        if p.price_input_per_mtok is not None or p.price_output_per_mtok is not None:
            return (prompt_tokens * (p.price_input_per_mtok or 0.0) + completion_tokens * (p.price_output_per_mtok or 0.0)) / 1e6
        if p.embedded or (self.api_base or "").startswith(("http://127.", "http://localhost")):
            return 0.0
        try:
            import litellm

            return float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:  # unknown model price: litellm raises; record 0 rather than fail the judgment
            return 0.0

    async def judge(self, request: JudgeRequest) -> Judgment:
        """Call the judge once (``samples`` times without logprobs) and read the options."""
        import litellm

        litellm.suppress_debug_info = True  # else each failed attempt prints a "Give Feedback" banner on stderr
        template = request.template
        base: dict[str, Any] = dict(
            key=request.key,
            judge=self.name,
            template=template.name,
            kind=template.kind,
            prompt_id=request.prompt_id,
            candidates=list(request.candidates),
        )
        started = time.perf_counter()
        n_calls = 1 if self.profile.logprobs else (request.samples or self.profile.samples)
        responses = []
        try:
            for _ in range(n_calls):
                responses.append(await self._complete(self._kwargs(request)))
        except Exception as exc:  # a failed call is data, not a crash
            kind, retryable, retry_after = classify_error(exc)
            return Judgment(
                **base,
                status="failed",
                completions=len(responses) or None,  # the samples answered before the failure were paid
                error=error_text(exc),
                error_type=kind,
                retryable=retryable,
                retry_after_s=retry_after,
                latency_s=time.perf_counter() - started,
            )
        latency = time.perf_counter() - started
        try:
            return await self._read(request, responses, base, latency)
        except Exception as exc:  # an answer we cannot read is a failed judgment, not a crash; its tokens were billed
            usages = [sane_usage(_dump(r).get("usage")) for r in responses]
            return Judgment(
                **base,
                status="failed",
                error=f"unreadable answer: {type(exc).__name__}: {str(exc)[:300]}",
                completions=len(responses) if len(responses) > 1 else None,
                error_type="unparsed",
                latency_s=latency,
                prompt_tokens=sum(u[0] for u in usages),
                completion_tokens=sum(u[1] for u in usages),
            )

    async def _read(self, request: JudgeRequest, responses: list, base: dict, latency: float) -> Judgment:
        template = request.template
        dumps = [_dump(r) for r in responses]
        thinking_notes: list[str] = []
        if self.profile.thinking:
            options = sorted({o for group in template.option_sets() for o in group})
            dumps, thinking_notes = _after_thinking(dumps, template.markers, options)
        usages = [sane_usage(d.get("usage")) for d in dumps]
        prompt_tokens = sum(u[0] for u in usages)
        completion_tokens = sum(u[1] for u in usages)
        costs = [sane_cost(self._cost(r, u[0], u[1])) for r, u in zip(responses, usages)]
        cost = sum(c for c, _ in costs)
        warnings = [u[2] for u in usages if u[2]] + [n for _, n in costs if n] + thinking_notes
        prefill = next((m["content"] for m in request.messages if m["role"] == "assistant"), None) if self.profile.prefill else None
        extractions = [
            extract_options(d, read=template.read, markers=template.markers, option_sets=template.option_sets(), prefill=prefill)
            for d in dumps
        ]
        text = ((dumps[0].get("choices") or [{}])[0].get("message") or {}).get("content") or ""
        common: dict[str, Any] = dict(
            **base,
            completions=len(responses) if len(responses) > 1 else None,
            text=text if isinstance(text, str) else str(text),
            raw=_with_deployment(dumps[0], responses[0]) if len(dumps) == 1 else {"samples": dumps},
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost,
            latency_s=latency,
        )
        first = extractions[0]
        if self.profile.thinking and first.error:  # why a thinking judge gave no verdict, in its terms
            unclosed = next((n for n in thinking_notes if n.startswith("the thinking block never closed")), None)
            first = dataclasses.replace(
                first,
                error=unclosed or f"no verdict after the thinking: {first.error}",
                error_code="thinking_unclosed" if unclosed else "no_verdict_after_thinking",
            )
        if len(extractions) > 1:  # sampled verdicts: the option distribution is their average
            return _sampled(template, extractions, first, common, warnings)
        if not first.readings:
            return Judgment(
                **common,
                status="failed",
                error=first.error,
                error_type=first.error_code or "unparsed",
                top_logprobs=first.top_logprobs,
                note=join_notes(*warnings),
            )
        readings = list(first.readings)
        if readings[0].unresolved and template.read == "first_token" and self.profile.prefill:
            readings[0], extra_cost = await self._resolve_prefixes(request, readings[0])
            common["cost_usd"] += extra_cost
        expected = len(template.option_sets()) * max(1, len(request.candidates)) if template.kind == "multi" else 1
        note = first.note
        stated = None
        if template.confidence_marker and readings[0].method == "verdict":
            stated, unread = stated_confidence(common["text"], template.confidence_marker)
            note = join_notes(note, unread)
        if len(readings) < expected:
            note = ((note + "; ") if note else "") + f"read {len(readings)} of {expected} expected scores"
        return _checked(
            Judgment(
                **common,
                status="ok",
                probs=[_graded(template, r.probs) for r in readings],
                method=readings[0].method,
                samples=1 if readings[0].method == "verdict" else None,
                stated=stated,
                capped=[list(r.capped) for r in readings],
                unresolved=[list(r.unresolved) for r in readings],
                top_logprobs=first.top_logprobs,
                note=join_notes(note, *warnings),
            )
        )

    async def _resolve_prefixes(self, request: JudgeRequest, reading: OptionReading) -> tuple[OptionReading, float]:
        """For two-token options the judge did not take (``10`` when it answered ``8``), continue
        the answer with the shared prefix (``1``) in a follow-up call and read P(``0`` | ``1``)."""
        cost = 0.0
        messages = [m for m in request.messages if m["role"] != "assistant"]
        prefill = next((m["content"] for m in request.messages if m["role"] == "assistant"), "")
        for long in list(reading.unresolved):
            short = max((o for o in reading.probs if o != long and long.startswith(o)), key=len, default=None)
            if short is None:
                continue
            kwargs = self._kwargs(request)
            kwargs.update(
                messages=messages + [{"role": "assistant", "content": prefill + short}],
                max_tokens=1,
                extra_headers={"X-Idempotency-Key": request.key + ":" + short},
            )
            try:
                response = await self._complete(kwargs)
            except Exception:  # keep the unresolved reading; it is flagged already
                continue
            dump = _dump(response)
            prompt_tokens, completion_tokens, _ = sane_usage(dump.get("usage"))
            cost += sane_cost(self._cost(response, prompt_tokens, completion_tokens))[0]
            share = continuation_mass(dump, long[len(short) :])
            if share is not None:
                reading = split_prefix(reading, short, long, share)
        return reading, cost


def _sampled(template: Template, extractions: list, first, common: dict[str, Any], warnings: list[str]) -> Judgment:
    """The judgment of ``k`` sampled verdicts: the shares of those parsed (``method = "samples"``), or
    a failed judgment with the first's reason when none parsed."""
    good = [e for e in extractions if e.readings]
    if not good:
        return Judgment(
            **common,
            status="failed",
            error=first.error,
            error_type=first.error_code or "unparsed",
            top_logprobs=first.top_logprobs,
            note=join_notes(*warnings),
        )
    n_reads = min(len(e.readings) for e in good)
    probs = [
        _graded(template, {o: sum(e.readings[k].probs[o] for e in good) / len(good) for o in good[0].readings[k].probs})
        for k in range(n_reads)
    ]
    return _checked(
        Judgment(
            **common,
            status="ok",
            probs=probs,
            method="samples",
            samples=len(good),
            note=join_notes(f"{len(good)} of {len(extractions)} samples parsed", *warnings),
        )
    )


def _with_deployment(dump: dict, response: Any) -> dict:
    """The raw response, with the deployment that answered (several endpoints) as ``_deployment``."""
    hidden = getattr(response, "_hidden_params", None) or {}
    deployment = hidden.get("orchestrator_deployment") if isinstance(hidden, dict) else None
    return {**dump, "_deployment": deployment} if deployment else dump


def _dump(response: Any) -> dict:
    if hasattr(response, "model_dump"):
        return response.model_dump()
    return dict(response) if response is not None else {}


def _graded(template: Template, probs: dict[str, float]) -> dict[str, float]:
    """A graded template's option probabilities under their five-way verdict names (``A>>B`` …)."""
    return {grade: probs[option] for option, grade in zip(template.options, template.grades)} if template.grades else probs


def _checked(judgment: Judgment) -> Judgment:
    """A judgment whose option probabilities are not finite non-negative numbers with a positive
    sum is a failure (``unparsed``), never an ``ok`` row that breaks every later fit."""
    for probs in judgment.probs:
        values = list(probs.values())
        if not values or not all(math.isfinite(v) and v >= 0 for v in values) or not sum(values) > 0:
            return judgment.model_copy(
                update={
                    "status": "failed",
                    "probs": [],
                    "error_type": "unparsed",
                    "error": f"the option probabilities are not numbers: {probs}"[:500],
                }
            )
    return judgment


CLOSING_VERDICT_NOTE = "the verdict is the last line of a thinking block that never closed"
"""A judgment's note when its verdict was read from the last line of unclosed thinking (one constant for every place that writes it)."""


def _after_thinking(dumps: list[dict], markers: list[str], options: list[str]) -> tuple[list[dict], list[str]]:
    """Each completion with its message content cut to what follows the thinking
    (:func:`~orchestrator.judging.extract.after_thinking`): a block that never closed leaves no
    content, so the extraction fails with that reason — unless the thinking's last line is the
    template's verdict line (:func:`~orchestrator.judging.extract.closing_verdict`; also where the
    content is empty and the provider's reasoning field holds all of the text). Notes: the
    reasoning tokens the provider counted (within ``completion_tokens``), any unclosed block, and
    a verdict read from the thinking's last line."""
    out, notes, reasoning, unclosed = [], [], 0, None
    for dump in dumps:
        usage = dump.get("usage") or {}
        details = usage.get("completion_tokens_details") or {} if isinstance(usage, dict) else {}
        tokens = details.get("reasoning_tokens") if isinstance(details, dict) else None
        if isinstance(tokens, int) and tokens > 0:
            reasoning += tokens
        choices = dump.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            out.append(dump)
            continue
        message = dict(choices[0].get("message") or {})
        text = message.get("content") if isinstance(message.get("content"), str) else ""
        field = message.get("reasoning_content")
        if isinstance(field, str) and field.strip():  # the thinking came in its own field: the content is the whole answer
            answer, error = text or "", None
        else:
            answer, _, error = after_thinking(text or "")
        unread = text if error else field if not answer.strip() and isinstance(field, str) else None
        last_line = closing_verdict(unread, markers, options) if unread else None
        if last_line is not None:
            answer, error = last_line, None
            if CLOSING_VERDICT_NOTE not in notes:
                notes.append(CLOSING_VERDICT_NOTE)
        if error:
            unclosed = error
        message["content"] = answer.strip() if not error else ""
        # a verdict after thinking is read from its text, never from the thinking's log-probabilities
        out.append({**dump, "choices": [{**choices[0], "message": message, "logprobs": None}, *choices[1:]]})
    if reasoning:
        notes.append(f"{reasoning} reasoning tokens (within completion_tokens)")
    if unclosed:
        notes.append(unclosed)
    return out, notes
