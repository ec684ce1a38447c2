"""The dry run's smoke call: one real request per judge and template before a run is
started, so a wrong address, a missing key, a model that ignores the template or a template whose
answer cannot be read shows up as one line instead of a budget spent on failures."""

from __future__ import annotations

import asyncio
from typing import Any

from ..judging.client import Judge, JudgeRequest
from ..judging.dispatch import RetryPolicy, call_with_retries
from ..judging.sessions import run_closing_clients
from ..records.dataset import Dataset
from ..records.templates import Template
from .requests import DATASET_ANCHOR, render_messages

__all__ = ["smoke_requests", "smoke_calls"]


def smoke_requests(
    dataset: Dataset, templates: dict[str, Template], attribute: str | None, prefill: bool, parameters: dict[str, str] | None = None
) -> list[JudgeRequest]:
    """One request per template role on the shortest prompt and its two shortest responses (a
    prompt with a reference answer and one response: that answer against it — a one-candidate
    reference campaign; a prompt with one response and no reference is not used for pairs)."""

    def size(pid: str) -> int:
        return len(dataset.prompts[pid].text) + sum(sorted(len(r.text) for r in dataset.responses[pid].values())[:2])

    def shows_two(pid: str) -> bool:
        return len(dataset.responses[pid]) >= 2 or bool(dataset.prompts[pid].reference)

    usable = [pid for pid in dataset.responses if dataset.responses[pid] and shows_two(pid)] or [
        pid for pid in dataset.responses if dataset.responses[pid]
    ]
    pid = min(usable, key=size)
    prompt = dataset.prompts[pid]
    by = dataset.responses[pid]
    ordered = sorted(by, key=lambda c: (len(by[c].text), c))
    first, second = ordered[0], ordered[1 % len(ordered)]
    if len(ordered) == 1 and prompt.reference:
        second = first  # the reference answer is shown against the one response
    out = []
    for role, template in templates.items():
        if template.kind == "absolute":
            shown, texts = [first], [by[first].text]
        elif template.kind == "reference":
            shown, texts = [DATASET_ANCHOR if prompt.reference else first, second], [prompt.reference or by[first].text, by[second].text]
        else:
            shown, texts = [first, second], [by[first].text, by[second].text]
        messages = render_messages(template, prompt, texts, attribute=attribute, prefill=prefill, parameters=parameters)
        out.append(JudgeRequest(key=f"smoke-{role}", template=template, messages=messages, prompt_id=pid, candidates=shown))
    return out


def smoke_calls(judges: dict[str, Judge], requests_by_judge: dict[str, list[JudgeRequest]], *, attempts: int = 2) -> list[dict[str, Any]]:
    """Send every request (concurrently, at most ``attempts`` tries each); one row per judge and
    template: ``judge, template, status, answer`` (the parsed option probabilities) or ``error``."""

    async def one(name: str, request: JudgeRequest) -> dict[str, Any]:
        judgment, tries = await call_with_retries(judges[name], request, RetryPolicy(attempts, 0.5, 2.0))
        row: dict[str, Any] = {"judge": name, "template": request.template.name, "status": judgment.status, "attempts": tries}
        if judgment.status == "ok" and judgment.probs:
            probs = judgment.probs[0]
            row["answer"] = {k: round(v, 3) for k, v in sorted(probs.items(), key=lambda kv: -kv[1])[:4]}
            row["method"] = judgment.method
        else:
            row["error"] = f"{judgment.error_type}: {' '.join((judgment.error or '').split())[:500]}"
            row["error_type"] = judgment.error_type
        return row

    async def every() -> list[dict[str, Any]]:
        return await asyncio.gather(*(one(name, r) for name, requests in requests_by_judge.items() for r in requests))

    return run_closing_clients(every())
