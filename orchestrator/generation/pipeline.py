"""Answers generated on demand, inside the run's dispatch: a judge request that shows a candidate
model's answer waits for that answer only (each answer one task, however many requests need it),
the answer is committed to the run file before any judge sees it, and then the request is
rendered with it. An answer stored ``ok`` or ``failed`` is never asked for again — not on
``resume``, not after a kill; a lost one (the process died during the call) was never committed
and is asked again. A request whose answer could not be generated is a failed judgment that says
why, and no judge is asked about it."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from ..failpoints import failpoint
from ..judging.dispatch import RetryPolicy, retrier
from ..records.answers import AnswerRequest, GeneratedAnswer
from ..records.candidate_models import GenerationSettings
from ..records.dataset import Dataset
from ..records.judgments import JudgeRequest, Judgment
from ..store import PlannedRequest, RunStore
from ..store.answers import answer_round, commit_answer, stored_answers
from .generators import TIMEOUT_S, Generator
from .planning import BYTES_PER_TOKEN_BOUND
from .settings import answer_messages

__all__ = ["AnswerPipeline", "INTERRUPTED", "template_only", "too_long"]

INTERRUPTED = "interrupted"
"""What :meth:`AnswerPipeline.ensure` says of an answer a drain left for the resume."""


def too_long(answer: GeneratedAnswer, max_tokens: int) -> GeneratedAnswer:
    """``answer``, or its failure ``answer_too_long`` when its text is longer than any judge
    request reserved for it (:data:`~.planning.BYTES_PER_TOKEN_BOUND` bytes per token of
    ``max_tokens``): such an answer is judged by no request, whatever the budget (what it cost
    stays counted)."""
    size = len(answer.text.encode())
    if answer.status != "ok" or size <= BYTES_PER_TOKEN_BOUND * max_tokens:
        return answer
    error = (
        f"the answer is {size:,} bytes, more than the {BYTES_PER_TOKEN_BOUND} bytes per token of its max_tokens ({max_tokens}) "
        "that judge requests reserve for it; no judge is shown it"
    )
    return answer.model_copy(update={"status": "failed", "text": "", "error": error, "error_type": "answer_too_long"})


_TEMPLATE_TOKEN = re.compile(r"<\|[A-Za-z_]+\|>|<(?:start|end)_of_turn>|</?s>|<(?:eos|bos|pad)>|\[/?INST\]")
_ROLE_LINE = re.compile(r"^\s*(?:system|user|assistant|model)?\s*$", re.IGNORECASE)


def template_only(answer: GeneratedAnswer, messages: list[dict[str, str]]) -> GeneratedAnswer:
    """``answer``, or its failure ``template_only`` when its text is chat-template markup and
    nothing else: control tokens, role names and the prompt's own turns echoed back, whole or cut (what a model
    writes when shown a template it was not trained on). Such a text is no answer a judge should
    compare; an answer that says something beside the markup is kept as it is."""
    if answer.status != "ok" or not _TEMPLATE_TOKEN.search(answer.text):
        return answer
    echoes = {m["content"].strip() for m in messages if m.get("content")}
    # (an echo cut off by max_tokens is a prefix of a turn)
    rest = [
        line
        for line in _TEMPLATE_TOKEN.sub("\n", answer.text).splitlines()
        if not _ROLE_LINE.match(line) and not any(echo.startswith(line.strip()) for echo in echoes)
    ]
    if rest:
        return answer
    error = "the answer is only chat-template markup (control tokens, role names, the prompt echoed): the model was not prompted in a format it was trained on"
    return answer.model_copy(update={"status": "failed", "text": "", "error": error, "error_type": "template_only"})


class RequestShaping(Protocol):
    """What the pipeline asks of the run's planning context (the run's layer is above this one:
    :class:`orchestrator.run.requests.PlanContext` is what it is given)."""

    def rendered(self, row: PlannedRequest) -> PlannedRequest: ...

    def fits(self, row: PlannedRequest) -> bool: ...


@dataclass(eq=False)
class AnswerPipeline:
    """The run's candidate models, their answers so far and the calls in flight."""

    store: RunStore
    dataset: Dataset
    """The planners' dataset: a generated answer is put in place here."""
    settings: dict[str, GenerationSettings]
    """Candidate → how it is asked."""
    generators: dict[str, Generator]
    """Candidate → who writes its answers."""
    policy: RetryPolicy
    draining: Callable[[], bool]
    sleep: Callable[[float], Any] = asyncio.sleep
    concurrency: int = 4
    cache: Any = None
    """The generation cache (:class:`~orchestrator.generation.cache.GenerationCache`) or None."""
    failures: dict[tuple[str, str], str] = field(default_factory=dict)
    """Answers that could not be generated, with why (stored ones included)."""
    failure_codes: dict[tuple[str, str], str] = field(default_factory=dict)
    """The same answers' failure codes (``error_type``)."""
    failure_rounds: dict[tuple[str, str], int] = field(default_factory=dict)
    """The same answers, each with the round that first needed it."""
    in_flight: int = 0
    """Generation calls sent and not yet answered."""
    _tasks: dict[tuple[str, str], asyncio.Task] = field(default_factory=dict)

    def __post_init__(self) -> None:
        shared = asyncio.Semaphore(self.concurrency)
        # a bundled model's llama.cpp server answers one request at a time (one slot, what makes
        # the embedded judge repeatable): its generations go one at a time too, never queued
        # behind each other on the server where their time limits would run out
        bundled = {s.embedded: asyncio.Semaphore(1) for s in self.settings.values() if s.embedded}
        self._semaphores = {c: bundled[s.embedded] if s.embedded else shared for c, s in self.settings.items()}
        for key, record in stored_answers(self.store).items():
            if record.status == "failed":
                self.failures[key] = record.error or record.error_type or "failed"
                self.failure_codes[key] = record.error_type or "failed"
                self.failure_rounds[key] = record.round

    async def ensure(self, prompt_id: str, candidate: str) -> str | None:
        """Wait for this answer: None once it is in the dataset, else why it is not (a stored
        failure, or :data:`INTERRUPTED`)."""
        key = (prompt_id, candidate)
        if not self.dataset.pending(prompt_id, candidate):
            return None
        if key in self.failures:
            return self.failures[key]
        task = self._tasks.get(key)
        if task is None or (task.done() and task.result() == INTERRUPTED and not self.draining()):
            task = self._tasks[key] = asyncio.ensure_future(self._generate(prompt_id, candidate))
        return await asyncio.shield(task)

    def time_limit_s(self) -> float:
        """The longest one generation call may take (the slowest candidate's limit)."""
        return max((s.timeout_s or TIMEOUT_S for s in self.settings.values()), default=TIMEOUT_S)

    def request(self, prompt_id: str, candidate: str) -> AnswerRequest:
        settings = self.settings[candidate]
        return AnswerRequest(
            prompt_id=prompt_id, candidate=candidate, messages=answer_messages(self.dataset.prompts[prompt_id], settings), settings=settings
        )

    async def _generate(self, prompt_id: str, candidate: str) -> str | None:
        request = self.request(prompt_id, candidate)
        answer = self.cache.lookup(request) if self.cache is not None else None
        if answer is None:
            answer = await self._call(request)
            if answer is None:
                return INTERRUPTED
        answer = too_long(template_only(answer, request.messages), request.settings.max_tokens)
        commit_answer(self.store, prompt_id, candidate, answer)
        failpoint("answer_committed")
        if answer.status != "ok":
            reason = f"no answer of {candidate!r} to prompt {prompt_id!r}: {answer.error_type}: {answer.error}"
            self.failures[(prompt_id, candidate)] = reason
            self.failure_codes[(prompt_id, candidate)] = answer.error_type or "failed"
            self.failure_rounds[(prompt_id, candidate)] = answer_round(self.store, prompt_id, candidate)
            return reason
        if self.cache is not None and not answer.cached:
            self.cache.remember(request, answer)
        self.dataset.answer(prompt_id, candidate, answer.text)
        return None

    async def _call(self, request: AnswerRequest) -> GeneratedAnswer | None:
        """The answer, tried again while its failure is retryable (:func:`~orchestrator.judging.dispatch.retrier`:
        at most ``max_attempts`` calls, ``Retry-After`` honoured); None when a drain stopped it
        before an answer came (left pending for the resume)."""
        generator = self.generators[request.candidate]

        async def once() -> GeneratedAnswer | None:
            if self.draining():
                return None
            async with self._semaphores[request.candidate]:
                if self.draining():
                    return None
                self.in_flight += 1
                try:
                    return await generator.generate(request)
                finally:
                    self.in_flight -= 1

        retrying = retrier(
            self.policy,
            sleep=self.sleep,
            retry=lambda a: a is not None and a.status == "failed" and a.retryable and not self.draining(),
            retry_after=lambda a: a.retry_after_s,
        )
        return await retrying(once)

    async def ready(
        self, row: PlannedRequest, *, ctx: RequestShaping, request_of: Callable[[PlannedRequest], JudgeRequest]
    ) -> PlannedRequest | Judgment | None:
        """A request with the answers it shows in place: generated now where they are not yet,
        its messages rendered with them and stored; a failed judgment that asks no judge where an
        answer could not be generated or is longer than the request reserved; None when a drain
        left it pending."""
        shown = [c for c in row.candidates if c in self.dataset.models]
        if not shown:
            return row
        reasons = await asyncio.gather(*(self.ensure(row.prompt_id, c) for c in shown))
        if INTERRUPTED in reasons:
            return None
        failed = [(r, c) for r, c in zip(reasons, shown) if r]
        if failed:
            reason, candidate = failed[0]
            code = "answer_too_long" if self.failure_codes.get((row.prompt_id, candidate)) == "answer_too_long" else "no_answer"
            return request_of(row).failure(reason, error_type=code, completions=0)
        row = ctx.rendered(row)
        if not ctx.fits(row):  # (an answer within its bound always fits; kept as the last guard)
            return request_of(row).failure(
                f"the answer shown is longer than the request reserved for it (more than {BYTES_PER_TOKEN_BOUND} bytes per token); "
                "not judged",
                error_type="answer_too_long",
                completions=0,
            )
        self.store.set_request_messages(row.key, row.messages)
        return row
