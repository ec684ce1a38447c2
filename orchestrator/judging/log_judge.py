"""A judge that answers from a judgment log: the same engine, no network.

``orchestrator run CONFIG --from-log LOG.jsonl`` runs a live config's real engine — grouping,
debiasing, warm start, selection, budgets, stopping — with every request answered from a log (an
export of an earlier run, a ``record`` log): live runs and offline re-runs are one code path.
Because selection depends only on the log and the seed, re-running a run's config on its own
export asks exactly the requests the run asked, in the same rounds, and ends with its ranking.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Literal

from ..records.log import LogRecord
from .client import JudgeRequest, Judgment

__all__ = ["LogJudge"]

_METHODS: dict[str, Literal["logprobs", "verdict", "samples"]] = {"logprobs": "logprobs", "verdict": "verdict", "samples": "samples"}
"""How a logged record's probabilities were read, kept on replay (anything else is ``log``)."""


class LogJudge:
    """Answers a request with the logged judgment of the same judge, prompt, shown candidates (in
    order), kind and repeat; a request the log does not hold is a permanent ``not_in_log`` failure."""

    answers_from_log = True
    """Its answers are a log's records, checked against the log format (:func:`~.answers.answer_problem`)."""

    def __init__(self, name: str, records: list[LogRecord]):
        self.name = name
        self._answers: dict[tuple[str, tuple[str, ...], str, int], list[LogRecord]] = defaultdict(list)
        for record in records:
            if record.judge == name:
                self._answers[(record.prompt_id, tuple(record.candidates), record.kind, record.repeat)].append(record)

    def __len__(self) -> int:
        return sum(len(v) for v in self._answers.values())

    def pairwise_requests(self) -> list[tuple[str, tuple[str, ...]]]:
        """``(prompt, shown candidates)`` of every pairwise judgment the log holds."""
        return [(prompt, cands) for prompt, cands, kind, _ in self._answers if kind == "pairwise"]

    def holds(self, prompt_id: str, candidates: tuple[str, ...], kind: str, repeat: int = 0) -> bool:
        """Whether the log can answer this request (planners ask only what it can, in replay)."""
        return (prompt_id, tuple(candidates), kind, repeat) in self._answers

    def quote(self, request: JudgeRequest) -> tuple[int, int, float] | None:
        """What answering ``request`` will be counted as — ``(completions, tokens, USD)``, as the
        logged judgment says it cost — known before it is asked, so the run reserves at least that
        much of its budget (None: the log does not hold it; the failure costs nothing)."""
        found = self._answers.get((request.prompt_id, tuple(request.candidates), request.template.kind, request.repeat))
        if not found:
            return None
        record = found[0]
        completions = record.samples if record.method == "samples" and record.samples else 1
        return completions, record.prompt_tokens + record.completion_tokens, record.cost_usd

    async def judge(self, request: JudgeRequest) -> Judgment:
        kind = request.template.kind
        base: dict[str, Any] = dict(
            key=request.key,
            judge=self.name,
            template=request.template.name,
            kind=kind,
            prompt_id=request.prompt_id,
            candidates=list(request.candidates),
        )
        found = self._answers.get((request.prompt_id, tuple(request.candidates), kind, request.repeat))
        if not found:
            return Judgment(
                **base,
                status="failed",
                error_type="not_in_log",
                retryable=False,
                error=f"the log has no {kind} judgment by {self.name!r} of {list(request.candidates)} on "
                f"prompt {request.prompt_id!r} (repeat {request.repeat})",
            )
        record = found[0]
        method: Literal["logprobs", "verdict", "samples", "log"] = _METHODS.get(record.method or "", "log")
        return Judgment(
            **base,
            status="ok",
            probs=[dict(record.probs)],
            # a log of verdicts replays as verdicts (fitted as counts: orchestrator.poe.verdicts)
            method=method,
            samples=record.samples if method in ("verdict", "samples") else None,
            completions=record.samples if method == "samples" else None,  # k paid completions behind k shares
            stated=record.stated if method == "verdict" else None,
            prompt_tokens=record.prompt_tokens,
            completion_tokens=record.completion_tokens,
            cost_usd=record.cost_usd,
            note="answered from a judgment log",
        )
