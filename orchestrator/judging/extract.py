"""Read option probabilities from a judge's log-probabilities (pure functions, no I/O).

Input is the OpenAI-format ``logprobs.content`` list that litellm returns: one entry per generated
token with its ``top_logprobs``. At each read position (the first generated token, or the token
after a marker such as ``"score": "``):

- token variants are summed: ``"A"``, ``" A"`` and ``"a"`` all count for option ``A``;
- an option missing from the top-k gets at most the smallest returned log-probability (it was
  below the cut-off) and is recorded as *capped*;
- multi-token options (``"10"`` as ``"1"`` + ``"0"``, ``"-1"`` as ``"-"`` + ``"1"``) are read
  through the continuation: when the judge generated the prefix, the next position's top-k splits
  its mass between the short option and the long one; when it did not, the split is unknown and
  the option is recorded as *unresolved* (the mass stays with the complete shorter option);
- the probabilities are normalised over the options.

Without log-probabilities the verdict is parsed from the text (one-hot, method ``verdict``); a
template with ``read = "verdict"`` is always read that way, from the last marker of the answer.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "OptionReading",
    "join_notes",
    "ADVICE",
    "Extraction",
    "after_thinking",
    "extract_options",
    "read_positions",
    "parse_verdicts",
    "split_prefix",
    "stated_confidence",
    "continuation_mass",
]

THINK_OPEN = re.compile(r"<think(?:ing)?>", re.IGNORECASE)
THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)


def after_thinking(text: str) -> tuple[str, int, str | None]:
    """``(answer, thinking characters, error)``: the part of a thinking judge's answer after its
    last ``</think>`` (or ``</thinking>``). An answer with no thinking block is the answer (the
    provider returned the thinking in a reasoning field); one whose block opens and never closes
    has no answer: ``error`` says so (the completion ran out of tokens while thinking)."""
    closes = list(THINK_CLOSE.finditer(text))
    if closes:
        end = closes[-1]
        return text[end.end() :], end.start(), None
    opened = THINK_OPEN.search(text)
    if opened:
        return (
            "",
            len(text) - opened.end(),
            f"the thinking block never closed ({len(text) - opened.end()} characters of thinking, no </think>): no verdict",
        )
    return text, 0, None


def closing_verdict(thinking: str, markers: list[str], options: list[str]) -> str | None:
    """The thinking's last non-empty line when it is exactly a verdict line (a template marker and
    one option: ``Verdict: A``), else None. A judge whose thinking never closed, or whose server
    returned all of its text as reasoning, but whose last words are the template's verdict line
    has answered; a verdict line anywhere else in the thinking is thinking, not an answer."""
    lines = [line.strip() for line in thinking.splitlines() if line.strip()]
    if not lines:
        return None
    last = lines[-1]
    for marker in markers:
        if last.startswith(marker) and last[len(marker) :].strip().strip(".*").strip() in options:
            return last
    return None


ADVICE: dict[str, str] = {
    "thinking_unclosed": (
        "the thinking ran out of tokens: raise thinking_budget in judges/{judge}.toml "
        "(it is added to the template's max_tokens) or ask for shorter thinking"
    ),
    "no_verdict_after_thinking": (
        "the judge wrote no verdict line after its thinking: read a failed answer (the report's judgments) against "
        "the template's markers; a small model may not follow the template at all"
    ),
    "no_option": (
        "its first words are not one of the template's options: give it a template that asks for the bare letter "
        "({template}-noprefill where one exists, e.g. generic-pairwise-noprefill, in judging.pairwise_template "
        "or reference.template; docs/own-data.md, 'A judge without a prefill')"
    ),
}
"""What to change when a judge's answers fail with a code (:data:`~orchestrator.records.judgments.FAILURE_CODES`);
``{judge}`` and ``{template}`` are filled in."""


def failure_advice(code: str | None, judge: str, template: str) -> str:
    """What to change when a judge's answers fail with ``code`` (``""``: nothing to say): the words
    a dry run's smoke call and a run's closing paragraph add after the failure."""
    advice = ADVICE.get(code or "")
    return advice.format(judge=judge, template=template) if advice else ""


@dataclass(frozen=True)
class OptionReading:
    """Option probabilities at one read position."""

    probs: dict[str, float]
    """Normalised over the options."""
    method: Literal["logprobs", "verdict"]
    position: int | None = None
    """Index of the generated token read (None for a parsed verdict)."""
    capped: tuple[str, ...] = ()
    """Options absent from the top-k, given the smallest returned log-probability."""
    unresolved: tuple[str, ...] = ()
    """Multi-token options whose share of a shared prefix could not be read."""
    option_mass: float | None = None
    """Probability mass the judge put on the options at this position before normalisation
    (log-probability reads); well below 1 means it mostly wanted to say something else."""


@dataclass(frozen=True)
class Extraction:
    """Everything read from one answer."""

    readings: list[OptionReading]
    """One per read position (several for multi-candidate templates)."""
    top_logprobs: list[list[tuple[str, float]]] = field(default_factory=list)
    """The top-k list at every generated position, kept for the log."""
    error: str | None = None
    """Why nothing could be read (``readings`` is then empty)."""
    error_code: str | None = None
    """The failure's code (``no_option``, ``no_verdict``: :data:`~orchestrator.records.judgments.FAILURE_CODES`)."""
    note: str | None = None
    """How a fallback was used (e.g. verdict parsed because no log-probabilities came back)."""


def _norm(token: str) -> str:
    return token.strip().casefold()


def read_positions(tokens: list[str], read: str, markers: list[str]) -> list[int]:
    """Token indices at which options are read: ``[0]`` for first-token reads; for marker reads,
    every index whose preceding text ends with a marker (a marker must end on a token boundary)."""
    if read == "first_token":
        return [0] if tokens else []
    positions, text = [], ""
    for t, token in enumerate(tokens):
        text += token
        if t + 1 < len(tokens) and any(text.endswith(m) for m in markers):
            positions.append(t + 1)
    return positions


LOW_OPTION_MASS = 0.5
"""Below this option mass a reading is flagged in the judgment's note (``low option mass``)."""


def _valid_logprob(value) -> float | None:
    """A log-probability as a float, or None when it is not one: not a number, NaN, +inf, or
    clearly positive (a provider bug). −inf is probability 0; a tiny positive value (rounding) is 0."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(value) or value > 1e-3:
        return None
    return min(value, 0.0)


def sanitise_content(content: list) -> tuple[list[dict], int]:
    """The ``logprobs.content`` list with every alternative that is not a valid log-probability
    removed (and malformed entries skipped); returns it and how many were removed."""
    clean, dropped = [], 0
    for entry in content:
        if not isinstance(entry, dict):
            dropped += 1
            continue
        alts = []
        for alt in entry.get("top_logprobs") or []:
            value = _valid_logprob(alt.get("logprob")) if isinstance(alt, dict) else None
            if value is None or not isinstance(alt.get("token"), str):
                dropped += 1
                continue
            alts.append({"token": alt["token"], "logprob": value})
        token = entry.get("token")
        clean.append({**entry, "token": token if isinstance(token, str) else "", "top_logprobs": alts})
    return clean, dropped


def _masses(entry: dict) -> dict[str, float]:
    """Normalised token → probability mass summed over variants, from one position's top-k."""
    out: dict[str, float] = {}
    for alt in entry.get("top_logprobs") or []:
        key = _norm(alt["token"])
        out[key] = out.get(key, 0.0) + math.exp(alt["logprob"])
    return out


def _read_at(content: list[dict], pos: int, options: list[str]) -> OptionReading:
    entry = content[pos]
    masses = _masses(entry)
    floor = max(min((alt["logprob"] for alt in entry.get("top_logprobs") or []), default=-30.0), -745.0)
    keyed = {_norm(o): o for o in options}
    probs = {o: 0.0 for o in options}
    unresolved: list[str] = []
    generated = _norm(entry.get("token", ""))
    for token, mass in masses.items():
        equal = keyed.get(token)
        longer = [o for k, o in keyed.items() if k != token and token and k.startswith(token)]
        if not longer:
            if equal is not None:
                probs[equal] += mass
            continue
        if generated == token and pos + 1 < len(content):
            # The judge took this prefix: the next position says how it continues.
            nxt = _masses(content[pos + 1])
            extended = 0.0
            for opt in longer:
                share = nxt.get(_norm(opt)[len(token) :], 0.0)
                probs[opt] += mass * share
                extended += share
            if equal is not None:
                probs[equal] += mass * max(0.0, 1.0 - extended)
            elif extended > 0:
                for opt in longer:  # no complete short option: the continuation mass is all ours
                    probs[opt] += mass * (1.0 - extended) * (nxt.get(_norm(opt)[len(token) :], 0.0) / extended)
        elif equal is not None:
            probs[equal] += mass
            unresolved += longer
        else:
            for opt in longer:
                probs[opt] += mass / len(longer)
            if len(longer) > 1:
                unresolved += longer
    capped = tuple(o for o in options if probs[o] == 0.0 and o not in unresolved)
    mass = sum(probs.values())
    for o in capped:
        probs[o] = math.exp(floor) or 5e-324  # (at least the smallest float: the total stays > 0)
    total = sum(probs.values())
    return OptionReading(
        {o: p / total for o, p in probs.items()}, "logprobs", pos, capped, tuple(dict.fromkeys(unresolved)), option_mass=min(1.0, mass)
    )


def parse_verdicts(
    text: str, read: str, markers: list[str], option_sets: list[list[str]], prefill: str | None = None
) -> list[OptionReading]:
    """Parse one-hot verdicts from the answer text (for judges without log-probabilities)."""
    if prefill and text.startswith(prefill):
        text = text[len(prefill) :]
    if read == "first_token":
        starts = [0]
    else:
        pattern = "|".join(re.escape(m) for m in sorted(markers, key=len, reverse=True))
        starts = [m.end() for m in re.finditer(pattern, text)]
    out = []
    for k, start in enumerate(starts):
        options = option_sets[k % len(option_sets)]
        rest = text[start:].lstrip().casefold()
        for opt in sorted(options, key=len, reverse=True):  # "10" before "1"
            if rest.startswith(opt.casefold()):
                tail = rest[len(opt) : len(opt) + 1]
                if opt.lstrip("-").isdigit() and tail.isdigit():
                    continue  # "12" is not option "1"
                out.append(OptionReading({o: float(o == opt) for o in options}, "verdict"))
                break
    return out


def extract_options(
    response: dict, *, read: str, markers: list[str], option_sets: list[list[str]], prefill: str | None = None
) -> Extraction:
    """Option probabilities from an OpenAI-format chat completion (a dict).

    ``option_sets`` are the options at successive read positions (cycled: multi-candidate
    templates repeat their criteria once per candidate).
    """
    try:
        choice = response["choices"][0]
    except (KeyError, IndexError, TypeError):
        return Extraction([], error="response has no choices")
    if not isinstance(choice, dict):
        return Extraction([], error="response has no choices")
    text = (choice.get("message") or {}).get("content") or ""
    if not isinstance(text, str):
        text = str(text)
    content, dropped = sanitise_content(((choice.get("logprobs") or {}).get("content")) or [])
    top = [[(alt["token"], alt["logprob"]) for alt in e["top_logprobs"]] for e in content]
    invalid = f"{dropped} invalid log-probabilities dropped (NaN, +inf or positive)" if dropped else None
    if read == "verdict":  # the verdict is the text's last: log-probabilities of multi-token options say nothing
        verdicts = parse_verdicts(text, read, markers, option_sets, prefill)[-1:]
        if verdicts:
            return Extraction(verdicts, top, note=invalid)
        return Extraction(
            [],
            top,
            error=join_notes(f"no verdict after {' or '.join(map(repr, markers))} in {text[-120:]!r}", invalid),
            error_code="no_verdict",
        )
    if content and any(e.get("top_logprobs") for e in content):
        tokens = [e.get("token", "") for e in content]
        positions = read_positions(tokens, read, markers)
        readings = []
        for k, pos in enumerate(positions):
            reading = _read_at(content, pos, option_sets[k % len(option_sets)])
            if len(reading.capped) == len(reading.probs):
                continue  # no option in the top-k here: not an answer position (e.g. '"score": "' in prose)
            readings.append(reading)
        if readings:
            low = [r.option_mass for r in readings if r.option_mass is not None and r.option_mass < LOW_OPTION_MASS]
            notes = [invalid] if invalid else []
            if low:
                notes.append(
                    f"low option mass {min(low):.3f}: the judge put most of its probability on tokens that "
                    "are not options; the options were renormalised"
                )
            return Extraction(readings, top, note="; ".join(notes) or None)
        verdicts = parse_verdicts(text, read, markers, option_sets, prefill)
        if verdicts:
            return Extraction(
                verdicts,
                top,
                note=join_notes(invalid, "no option among the top log-probabilities at the read position; verdict parsed from text"),
            )
        return Extraction([], top, error=join_notes(f"no answer option found in {text[:120]!r}", invalid), error_code="no_option")
    verdicts = parse_verdicts(text, read, markers, option_sets, prefill)
    if verdicts:
        return Extraction(verdicts, top, note=join_notes(invalid, "judge returned no log-probabilities; verdict parsed from text"))
    return Extraction(
        [], top, error=join_notes(f"no log-probabilities and no parsable verdict in {text[:120]!r}", invalid), error_code="no_option"
    )


_NUMBER = re.compile(r"\s*[:=]?\s*\**\s*(\d+(?:[.,]\d+)?)(?![\d.,eE])\s*(%|/\s*100|/\s*10\b)?")
"""A plain number, its decimal mark a point or a comma (``0,8``), never the start of ``1e5``,
``85.5.5`` or ``0,8,1``, with an optional ``%``, ``/100`` or ``/10``."""


def stated_confidence(text: str, marker: str) -> tuple[float | None, str | None]:
    """``(confidence in [0, 1], note)``: the number after the last ``marker`` in ``text`` — ``80``,
    ``80%``, ``80/100``, ``0.8`` and ``0,8`` are all 0.8, ``8/10`` too; ``None`` with a note when
    there is no marker, no number after it (a number it cannot read is no number, never 0), or a
    number outside 0–100."""
    at = text.casefold().rfind(marker.casefold())
    if at < 0:
        return None, f"no stated confidence (no {marker!r} in the answer)"
    found = _NUMBER.match(text, at + len(marker))
    if not found:
        return None, f"no number after {marker!r}: stated confidence not read"
    value, unit = float(found.group(1).replace(",", ".")), (found.group(2) or "").replace(" ", "")
    if unit == "/10":
        value /= 10
    elif unit or value > 1:
        value /= 100
    if not 0.0 <= value <= 1.0:
        return None, f"stated confidence {found.group(0).strip()} is outside 0–100: not read"
    return value, None


def join_notes(*notes: str | None) -> str | None:
    """The notes that say something, joined by ``; `` (None when none does)."""
    return "; ".join(n for n in notes if n) or None


def continuation_mass(response: dict, remainder: str) -> float | None:
    """Probability that the first generated token is ``remainder`` (variants summed), from a
    follow-up call that continued the answer with a shared prefix; None without logprobs."""
    try:
        content = response["choices"][0]["logprobs"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(content, list) or not content:
        return None
    content, _ = sanitise_content(content)
    if not content:
        return None
    return _masses(content[0]).get(_norm(remainder), 0.0)


def split_prefix(reading: OptionReading, short: str, long: str, continuation: float) -> OptionReading:
    """Split the mass of option ``short`` between ``short`` and ``long`` (= short + remainder)
    given P(remainder | short) from a follow-up call; the pair's total is unchanged."""
    probs = dict(reading.probs)
    mass = probs[short] + probs[long]
    probs[long] = mass * continuation
    probs[short] = mass * (1.0 - continuation)
    unresolved = tuple(o for o in reading.unresolved if o != long)
    return OptionReading(probs, reading.method, reading.position, reading.capped, unresolved)
