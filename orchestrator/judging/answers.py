"""One set of checks for every judge's answer before it is stored, whatever answered: litellm, a
provider from outside the package, a judgment log, the judgment cache or a provider batch.

What the request already knows — its key, prompt, shown candidates (in order), template and kind —
is taken from the request; an answer that names something else was given to another question and
is refused. An ``ok`` answer must hold one probability vector per read position of the template,
over the template's options only, each a finite number in [0, 1], summing to 1, and they must be
possible under the stated ``method`` (a ``verdict`` is one option at 1; ``k`` sampled verdicts
give shares in steps of 1/k). Usage and cost are believed only within bounds (clamped with a
note, as for litellm's own answers: :mod:`.replies`).

A refused answer is stored as a failed judgment with ``error_type = "invalid"`` and the reason in
its ``error``: what was paid for it stays counted, nothing wrong reaches a fit or an export, and
it is not asked again.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

from ..records.judgments import JudgeRequest, Judgment
from ..records.log import GRADES, MAX_SAMPLES, method_problem
from ..records.templates import Template
from .replies import sane_cost, sane_usage

__all__ = ["INVALID", "PROBABILITY_TOLERANCE", "answer_problem", "check_answer"]

INVALID = "invalid"
"""``error_type`` of an answer refused by :func:`check_answer`."""

PROBABILITY_TOLERANCE = 1e-6
"""How far a probability may stray outside [0, 1], and a vector's sum from 1, by rounding."""

STORED_METHODS = ("logprobs", "verdict", "samples", "log")
"""How an answer's probabilities may have been read (``stated`` is a fit's reading, never stored;
None is an answer that does not say: read as log-probabilities)."""


def _identity_problem(request: JudgeRequest, judgment: Judgment) -> str | None:
    """Why the answer is about another question than ``request`` (None: it is about this one, or
    leaves the field empty for the request to fill)."""
    asked = list(request.candidates)
    if judgment.key and judgment.key != request.key:
        return f"it answers request {judgment.key!r}, not the request asked ({request.key!r})"
    if judgment.prompt_id and judgment.prompt_id != request.prompt_id:
        return f"it is about prompt {judgment.prompt_id!r}, but prompt {request.prompt_id!r} was asked"
    if judgment.candidates and list(judgment.candidates) != asked:
        order = " (the reverse order)" if list(judgment.candidates) == asked[::-1] else ""
        return f"it is about candidates {list(judgment.candidates)}{order}, but {asked} were shown"
    if judgment.kind and judgment.kind != request.template.kind:
        return f"it is a {judgment.kind!r} judgment, but the template {request.template.name!r} asks a {request.template.kind!r} one"
    if judgment.template and judgment.template != request.template.name:
        return f"it names template {judgment.template!r}, but {request.template.name!r} was asked"
    return None


def _vector_problem(vector: Any, allowed: list[str], where: str, *, normalised: bool = True) -> str | None:
    if not isinstance(vector, dict) or not vector:
        return f"{where} is {vector!r}, not a mapping of options to probabilities"
    unknown = [option for option in vector if option not in allowed]
    if unknown:
        return f"{where} names {unknown!r}, which are not the template's options {allowed}"
    for option, value in vector.items():
        if isinstance(value, bool) or not isinstance(value, Real):
            return f"{where}[{option!r}] is {value!r}, not a number"
        if not math.isfinite(float(value)):
            return f"{where}[{option!r}] is {value} (not a finite number)"
        if not -PROBABILITY_TOLERANCE <= float(value) <= 1 + PROBABILITY_TOLERANCE:
            return f"{where}[{option!r}] = {value} is not a probability (outside [0, 1])"
    total = math.fsum(float(v) for v in vector.values())
    if not normalised:  # a judgment log's probabilities are normalised when read (its format's rule)
        return None if total > 0 else f"{where} sums to 0"
    if abs(total - 1.0) > PROBABILITY_TOLERANCE:
        return f"{where} sums to {total:.6g}, not 1 (probabilities over the options must be normalised)"
    return None


LOGGED_PAIRWISE = ("A", "B", "C", *GRADES)
"""Options a judgment log's pairwise or reference judgment may hold (:class:`~orchestrator.records.log.LogRecord`)."""


def _option_sets(template: Template, from_log: bool) -> list[list[str]] | None:
    """The options each read position may name; None: any numeric level (an absolute judgment from
    a log, whose own template's scale the replay's stand-in template need not share)."""
    if from_log and template.kind in ("pairwise", "reference"):
        return [list(LOGGED_PAIRWISE)]
    if from_log and template.kind == "absolute":
        return None
    return [list(GRADES)] if template.grades else template.option_sets()


def _numeric_levels(vector: Any) -> str | None:
    if isinstance(vector, dict):
        for option in vector:
            try:
                if not math.isfinite(float(option)):
                    raise ValueError
            except (TypeError, ValueError):
                return f"probs[0] names {option!r}, not a numeric level"
    return None


def answer_problem(request: JudgeRequest, judgment: Judgment, *, from_log: bool = False) -> str | None:
    """Why an ``ok`` answer cannot be stored as valid (None: it can; see the module docstring).
    ``from_log``: the answer was read from a judgment log, whose records were written with templates
    of their own — options are checked against the log format instead (A/B/C or graded verdicts;
    numeric levels)."""
    template = request.template
    sets = _option_sets(template, from_log)
    if sets is None:
        problem = _numeric_levels(judgment.probs[0] if isinstance(judgment.probs, list) and judgment.probs else None)
        if problem is not None:
            return problem
        first = judgment.probs[0] if isinstance(judgment.probs, list) and judgment.probs and isinstance(judgment.probs[0], dict) else {}
        sets = [list(first)]
    if not isinstance(judgment.probs, list) or not judgment.probs:
        return "it holds no option probabilities"
    if len(judgment.probs) != len(sets):
        return f"it holds {len(judgment.probs)} probability vector(s), but the template reads {len(sets)}"
    if judgment.method is not None and judgment.method not in STORED_METHODS:
        return f"method {judgment.method!r} is not how a judge's answer is read ({', '.join(STORED_METHODS)})"
    for samples in (judgment.samples, judgment.completions):
        if samples is not None and not 1 <= samples <= MAX_SAMPLES:
            return f"samples/completions = {samples}: at least 1 and at most {MAX_SAMPLES}"
    for position, (vector, allowed) in enumerate(zip(judgment.probs, sets)):
        problem = _vector_problem(vector, allowed, f"probs[{position}]", normalised=not from_log)
        if problem is None:
            problem = method_problem(judgment.method, judgment.samples, {k: float(v) for k, v in vector.items()})
        if problem is not None:
            return problem
    if judgment.stated is not None:
        if judgment.method != "verdict":
            return f"a stated confidence ({judgment.stated}) goes with one verdict, but the method is {judgment.method!r}"
        if not (math.isfinite(judgment.stated) and 0.0 <= judgment.stated <= 1.0):
            return f"the stated confidence {judgment.stated} is not in [0, 1]"
    return None


def check_answer(request: JudgeRequest, judgment: Judgment, *, judge: str | None = None, from_log: bool = False) -> Judgment:
    """``judgment`` as it may be stored for ``request`` (see the module docstring): the request's
    identity filled in (``judge``: the profile's name, when given), usage and cost within bounds, and
    an answer that fails a check turned into a failed judgment (``error_type = "invalid"``) that says
    why. ``from_log``: read from a judgment log (:func:`answer_problem`)."""
    if not isinstance(judgment, Judgment):  # (a judge that broke its protocol: data, never a crash)
        judgment = request.failure(f"the judge returned {type(judgment).__name__}, not a Judgment", error_type=INVALID)
    identity: dict[str, Any] = dict(
        key=request.key,
        template=request.template.name,
        kind=request.template.kind,
        prompt_id=request.prompt_id,
        candidates=list(request.candidates),
    )
    if judge is not None:
        identity["judge"] = judge
    prompt_tokens, completion_tokens, usage_note = sane_usage(
        {"prompt_tokens": judgment.prompt_tokens, "completion_tokens": judgment.completion_tokens}
    )
    cost, cost_note = sane_cost(judgment.cost_usd)
    latency = judgment.latency_s if isinstance(judgment.latency_s, Real) and math.isfinite(judgment.latency_s) else 0.0
    notes = [n for n in (judgment.note, usage_note, cost_note) if n]
    bounded: dict[str, Any] = dict(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=cost,
        latency_s=max(float(latency), 0.0),
        note="; ".join(notes) if notes else None,
    )
    problem = _identity_problem(request, judgment)
    if judgment.status == "ok":
        problem = problem or answer_problem(request, judgment, from_log=from_log)
    elif problem is None:  # a failure is data: it keeps its reason (or says it gave none)
        return judgment.model_copy(
            update={**identity, **bounded, "error": judgment.error or "the judge failed without saying why", "probs": [], "stated": None}
        )
    if problem is None:
        if from_log:  # the log format's probabilities, normalised as every reader of a log reads them
            bounded["probs"] = [{k: float(v) / math.fsum(map(float, p.values())) for k, v in p.items()} for p in judgment.probs]
        return judgment.model_copy(update={**identity, **bounded})
    return judgment.model_copy(
        update={
            **identity,
            **bounded,
            "status": "failed",
            "error": f"the judge's answer was refused: {problem}",
            "error_type": INVALID,
            "retryable": False,
            "retry_after_s": None,
            "probs": [],
            "stated": None,
            "capped": [],
            "unresolved": [],
        }
    )
