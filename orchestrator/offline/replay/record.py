"""Exhaustive recording: ask one judge every ordered pair and every absolute score of chosen prompts,
writing the judgment-log JSONL that ``orchestrator replay`` reads.

Resumable: judgments already in the output file (by idempotency key) are not asked again, and
each line is flushed as it arrives, so an interrupted recording continues where it stopped.
Failed judgments are not written (they are retried on the next run) but are counted.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...errors import OrchestratorError
from ...judging.answers import check_answer
from ...judging.client import Judge, JudgeRequest, Judgment
from ...judging.dispatch import RetryPolicy, call_with_retries
from ...outputs import check_output, open_output
from ...records.dataset import PromptRow, load_prompts
from ...records.judgments import request_key
from ...records.log import load_responses, read_jsonl
from ...records.templates import Template
from ...secrets import redact, redact_json

__all__ = ["RecordPlan", "plan_recording", "record", "request_key", "load_prompts"]  # load_prompts: from .dataset


@dataclass(frozen=True)
class RecordPlan:
    requests: list[tuple[JudgeRequest, str]]
    """Each request with the judgment-log kind it produces."""


def plan_recording(
    prompts: dict[str, PromptRow],
    responses_path: str | Path,
    prompt_ids: list[str],
    judge_name: str,
    *,
    pairwise: Template | None,
    absolute: Template | None,
    attribute: str | None = None,
    prefill: bool = True,
) -> RecordPlan:
    """Every ordered pair (``pairwise``) and every response (``absolute``) of each prompt."""
    by_prompt: dict[str, list[tuple[str, str]]] = {}
    for _, row in load_responses(responses_path):
        by_prompt.setdefault(row.prompt_id, []).append((row.candidate, row.text))
    requests: list[tuple[JudgeRequest, str]] = []
    for pid in prompt_ids:
        if pid not in prompts:
            raise OrchestratorError(f"prompt {pid!r} is not in the prompts file")
        if pid not in by_prompt:
            raise OrchestratorError(f"prompt {pid!r} has no responses")
        context = prompts[pid].text
        cands = sorted(by_prompt[pid])
        for c, text in cands:
            if not text.strip():
                raise OrchestratorError(f"response of {c!r} to prompt {pid!r} is empty")
        if absolute is not None:
            for c, text in cands:
                key = request_key(judge_name, absolute.digest, attribute or "", pid, c, "0")
                messages = absolute.render({"context": context, "response": text}, attribute=attribute, prefill=prefill)
                requests.append((JudgeRequest(key=key, template=absolute, messages=messages, prompt_id=pid, candidates=[c]), "absolute"))
        if pairwise is not None:
            for a, text_a in cands:
                for b, text_b in cands:
                    if a == b:
                        continue
                    key = request_key(judge_name, pairwise.digest, attribute or "", pid, a, b, "0")
                    messages = pairwise.render({"context": context, "A": text_a, "B": text_b}, attribute=attribute, prefill=prefill)
                    requests.append(
                        (JudgeRequest(key=key, template=pairwise, messages=messages, prompt_id=pid, candidates=[a, b]), "pairwise")
                    )
    return RecordPlan(requests)


def _log_line(judgment: Judgment, kind: str, attribute: str | None) -> dict:
    return {
        "kind": kind,
        "judge": judgment.judge,
        "prompt_id": judgment.prompt_id,
        "candidates": judgment.candidates,
        "probs": judgment.probs[0],
        "key": judgment.key,
        "template": judgment.template,
        "attribute": attribute,
        "method": judgment.method,
        **({"stated": judgment.stated} if judgment.stated is not None else {}),
        "capped": judgment.capped[0] if judgment.capped else [],
        "unresolved": judgment.unresolved[0] if judgment.unresolved else [],
        "text": redact(judgment.text),
        "top_logprobs": redact_json(judgment.top_logprobs),
        "latency_s": round(judgment.latency_s, 4),
        "prompt_tokens": judgment.prompt_tokens,
        "completion_tokens": judgment.completion_tokens,
        "note": redact(judgment.note),
    }


async def record(
    plan: RecordPlan,
    judge: Judge,
    out: str | Path,
    *,
    attribute: str | None = None,
    concurrency: int = 1,
    progress: Callable[[int, int], None] | None = None,
    inputs: tuple[str | Path, ...] = (),
    retry: RetryPolicy | None = None,
) -> dict[str, int]:
    """Run the plan, appending each successful judgment to ``out`` as it arrives (never to one of
    ``inputs``, the files the recording reads).

    Each call is retried like a run's (:mod:`orchestrator.judging.dispatch`, ``retry``; default
    6 attempts); what still fails is counted, not written, and asked again by the next recording.

    Returns counts: ``planned``, ``skipped`` (already recorded), ``written``, ``failed``.

    Raises:
        OrchestratorError: ``concurrency`` below 1, or ``out`` is an input or not writable.
    """
    if concurrency < 1:
        raise OrchestratorError(f"--concurrency must be at least 1 (got {concurrency})")
    if str(out) != "-":
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    check_output(out, option="--out", inputs=inputs)
    out = Path(out)
    done: set[str] = set()
    if out.exists():
        for _, row in read_jsonl(out):
            done.add(row.get("key", ""))
    todo = [(r, k) for r, k in plan.requests if r.key not in done]
    counts = {"planned": len(plan.requests), "skipped": len(plan.requests) - len(todo), "written": 0, "failed": 0}
    semaphore = asyncio.Semaphore(concurrency)
    policy = retry or RetryPolicy()
    finished = 0
    with open_output(out, option="--out", inputs=inputs, append=True) as fh:

        async def one(request: JudgeRequest, kind: str) -> None:
            nonlocal finished
            async with semaphore:
                judgment, _ = await call_with_retries(judge, request, policy)
            judgment = check_answer(request, judgment, judge=judge.name)
            if judgment.status == "ok":
                fh.write(json.dumps(_log_line(judgment, kind, attribute)) + "\n")
                fh.flush()
                counts["written"] += 1
            else:
                counts["failed"] += 1
            finished += 1
            if progress is not None:
                progress(finished, len(todo))

        await asyncio.gather(*(one(r, k) for r, k in todo))
    return counts
