"""Planned requests: what every planner shares — the run's data, judges and templates, the set of
requests already planned, and how a request row is rendered, keyed and reserved."""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..judging.client import JudgeProfile
from ..records.config import RunConfig
from ..records.dataset import DATASET_ANCHOR, Dataset, PromptRow, Turn, shown_conversation
from ..records.judgments import request_key
from ..records.templates import Template
from ..store import PlannedRequest
from .budget import worst_case

if TYPE_CHECKING:
    from ..generation.planning import AnswerPlanning

__all__ = ["DATASET_ANCHOR", "PlanContext", "render_messages", "seeded_hash"]


def render_messages(
    template: Template,
    prompt: PromptRow,
    texts: list[str],
    *,
    attribute: str | None,
    prefill: bool,
    parameters: dict[str, str] | None = None,
) -> list[dict[str, str]]:
    """The chat messages of one request: ``texts`` are the shown texts in order (absolute: the
    response; pairwise: A, B; reference: the anchor, then the candidate); ``parameters``: the run's
    ``${task}`` and ``${criterion}`` (:meth:`JudgingConfig.parameters`). Every request a run
    sends, estimates or smoke-tests is rendered here."""
    values = {**(parameters or {}), "context": prompt.text, "question": prompt.text, "reference": prompt.reference or ""}
    if template.kind == "absolute":
        values["response"] = texts[0]
    elif template.kind == "reference":  # A = the anchor, B = the candidate
        values.update(A=texts[0], B=texts[1], reference=texts[0], response=texts[1])
    else:
        values.update(A=texts[0], B=texts[1])
    return template.render(values, attribute=attribute, prefill=prefill)


def seeded_hash(*parts: Any) -> str:
    """Seeded, order-free tie-break between prompts (stable across processes, unlike hash())."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


@dataclass
class PlanContext:
    """What a planner may read: the run's config and data snapshot, its judges (profile name →
    profile, in config order), templates by role, prices, and every request planned so far."""

    run_name: str
    config: RunConfig
    dataset: Dataset
    profiles: dict[str, JudgeProfile]
    templates: dict[str, Template]
    prices: dict[str, tuple[float, float]]
    asked: Counter[tuple[str, str, tuple[str, ...]]] = field(default_factory=Counter)
    """``(judge, prompt, shown candidates)`` of every planned request (asked or pending), with how
    many times it was planned (repeats: one more verdict of a pair already asked)."""
    answerable: Callable[..., bool] | None = None
    """``(judge, prompt, shown candidates, kind[, repeat]) → bool``: whether a judge can answer a
    request at all (a judge replaying a log answers only what the log holds, repeat by repeat);
    None: every judge, anything."""

    known_pairs: Callable[[], Iterable[tuple[str, tuple[str, ...]]]] | None = None
    """``() → (prompt, shown candidates)`` of every pairwise request some judge can answer, where
    that set is known and small (a replayed log): planners of large rankings score these pairs
    besides their own candidates, so a sparse log is not searched for at random."""

    attachment: Callable[[str], dict | None] | None = None
    """``name → {"source", "digest", "payload"}``: an input the run file keeps whole (a compare's
    baseline run), or None."""

    disabled: set[str] = field(default_factory=set)
    """Judges stopped by the per-judge fail-fast (:mod:`orchestrator.run.health`): asked no more."""

    answers: "AnswerPlanning | None" = None
    """The candidate models' answers (:mod:`orchestrator.generation.planning`): a request showing
    one not yet written is reserved for its longest, and none is planned about one that could not
    be generated; None: no candidate is a model."""

    @property
    def seed(self) -> int:
        return self.config.seed

    @property
    def first_judge(self) -> str:
        """Requests are planned for every judge at once; availability is tracked on the first."""
        return next(iter(self.profiles))

    def judges_for(self, prompt_id: str, candidates: tuple[str, ...], kind: str) -> list[str]:
        """The judges (in config order) that can answer this request."""
        judges = [j for j in self.profiles if j not in self.disabled]
        if self.answers is not None and self.answers.unanswerable(prompt_id, candidates):
            return []
        if self.answerable is None:
            return judges
        return [j for j in judges if self.answerable(j, prompt_id, candidates, kind)]

    def prompt_use(self) -> Counter[str]:
        """Requests per prompt so far, repeats included (derived from the log, so a resumed run sees
        the same): a pair is asked again on a prompt only once its other prompts are as used."""
        use: Counter[str] = Counter()
        for (_, prompt, _), times in self.asked.items():
            use[prompt] += times
        return use

    def request(
        self, judge: str, role: str, prompt_id: str, candidates: list[str], repeat: int = 0, *, completions: int | None = None
    ) -> PlannedRequest:
        """A request row for the store: rendered messages, idempotency key, worst-case reservation."""
        template = self.templates[role]
        profile = self.profiles[judge]
        prompt = self.dataset.prompts[prompt_id]
        texts = [self._shown_text(template, prompt, c) for c in candidates]
        prompt = self._as_told(prompt, candidates)
        attribute = self.config.judging.attribute
        parameters = self.config.judging.parameters()
        messages = render_messages(template, prompt, texts, attribute=attribute, prefill=profile.prefill, parameters=parameters)
        tokens, usd = worst_case(messages, template, profile, self.prices[judge], completions)
        # the task and criterion change what is asked: part of the key when set (older keys unchanged)
        wording = "\x1f".join([attribute or "", *(f"{k}={v}" for k, v in sorted(parameters.items()))])
        key = request_key(self.run_name, judge, template.digest, wording, prompt_id, *candidates, str(repeat))
        return PlannedRequest(
            key=key,
            judge=judge,
            template=template.name,
            kind=template.kind,
            prompt_id=prompt_id,
            candidates=list(candidates),
            messages=messages,
            reserved_tokens=tokens,
            reserved_usd=usd,
            repeat=repeat,
            reserved_calls=1 if profile.logprobs else (completions or profile.samples),
        )

    def _as_told(self, prompt: PromptRow, candidates: list[str]) -> PromptRow:
        """The prompt as the judge is shown it: with the system message the candidate models among
        ``candidates`` were given (their ``system``, where the prompt has none of its own), by the
        same rule as a conversation's (:func:`~orchestrator.records.dataset.shown_conversation`);
        when the shown answers were written under different ones, each is said with its position."""
        settings = self.answers.settings if self.answers is not None else {}
        systems = [settings[c].system if c in settings else None for c in candidates]
        if not any(systems) or (prompt.messages and prompt.messages[0].role == "system"):
            return prompt
        if len(set(systems)) == 1:
            told = systems[0] or ""
        else:
            told = "\n".join(f"(to the writer of the {k} answer) {s or '(none)'}" for k, s in zip(("first", "second"), systems))
        turns = prompt.messages or [Turn(role="user", content=prompt.text)]
        return prompt.model_copy(update={"text": shown_conversation([Turn(role="system", content=told), *turns])})

    def _shown_text(self, template: Template, prompt: PromptRow, candidate: str) -> str:
        if candidate == DATASET_ANCHOR and template.kind == "reference":
            return prompt.reference or ""
        if self.answers is not None and self.dataset.pending(prompt.id, candidate):
            return self.answers.placeholder(candidate)
        return self.dataset.responses[prompt.id][candidate].text

    def rendered(self, row: PlannedRequest) -> PlannedRequest:
        """``row`` rendered again with the answers it shows as they are now (a candidate model's
        written since it was planned); its reservation stays what was planned, and
        :meth:`fits` says whether the new messages still fit in it."""
        role = next(r for r, t in self.templates.items() if t.name == row.template)
        again = self.request(row.judge, role, row.prompt_id, row.candidates, row.repeat, completions=row.reserved_calls)
        return dataclasses.replace(row, messages=again.messages)

    def fits(self, row: PlannedRequest) -> bool:
        """Whether a request's messages, as rendered, cost at most what it reserved."""
        template = next(t for t in self.templates.values() if t.name == row.template)
        tokens, usd = worst_case(row.messages, template, self.profiles[row.judge], self.prices[row.judge], row.reserved_calls)
        return tokens <= row.reserved_tokens and usd <= row.reserved_usd + 1e-12

    def mark_asked(self, requests: list[PlannedRequest]) -> None:
        for r in requests:
            self.asked[(r.judge, r.prompt_id, tuple(r.candidates))] += 1
