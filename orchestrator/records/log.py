"""Boundary records: the judgment-log JSONL and the dataset JSONL files, validated with pydantic.

Judgment log (one judgment per line; the format ``orchestrator replay`` reads and the store exports)::

    {"kind": "pairwise",  "judge": J, "prompt_id": P, "candidates": [first, second], "probs": {"A": pA, "B": pB}}
    {"kind": "absolute",  "judge": J, "prompt_id": P, "candidates": [c], "probs": {"1": p1, ..., "10": p10}}
    {"kind": "reference", "judge": J, "prompt_id": P, "candidates": [reference, c], "probs": {"A": .., "B": .., "C": ..},
     "reference": anchor?, "repeat": r?}

``A`` is the first-shown candidate; ``C`` is a tie. A graded pairwise judgment (arena-hard's five-way
verdict) has ``probs`` over :data:`GRADES` instead of ``A``/``B``:
``{"A>>B": .., "A>B": .., "A=B": .., "B>A": .., "B>>A": ..}``. In a ``reference`` judgment the anchor is the
candidate named by ``reference`` (default: the first); ``repeat`` numbers repeated runs of a judge
on the same item (default 0). Other fields are allowed and ignored.
Responses (``shared/data/summeval/responses.jsonl`` format)::

    {"prompt_id": P, "candidate": C, "text": T, "human": {"coherence": 4.33, ...}}
"""

from __future__ import annotations

import codecs
import json
import math
import unicodedata
import warnings
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import OrchestratorError, OrchestratorWarning

M = TypeVar("M", bound=BaseModel)

MAX_ID_CHARS = 512
"""Longest prompt id, candidate or judge name."""

MAX_SAMPLES = 1000
"""Most sampled verdicts one judgment may stand for (a judge profile asks at most 64): a larger
count is a broken log, and it would weigh one judgment as thousands and its cost as many calls."""


BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Unicode's bidirectional formatting characters: in a name they reorder what is displayed around
them, so ``"evil\u202egnp.exe"`` can show as another name."""


def check_identifier(value: str) -> str:
    """A prompt id, candidate, judge or annotator name: not blank, at most ``MAX_ID_CHARS``
    characters, no control characters (they would be invisible in tables and could make two names
    look alike or collide in keys) and no bidirectional formatting characters (a name could display
    as another)."""
    if not value.strip():
        raise ValueError("is empty")
    if len(value) > MAX_ID_CHARS:
        raise ValueError(f"is {len(value)} characters long; names are at most {MAX_ID_CHARS}")
    bad = next((ch for ch in value if unicodedata.category(ch) in ("Cc", "Zl", "Zp")), None)
    if bad is not None:
        raise ValueError(f"{value!r} contains the control character {bad!r}; names must be printable")
    bidi = next((ch for ch in value if ch in BIDI_CONTROLS), None)
    if bidi is not None:
        raise ValueError(
            f"{value!r} contains the bidirectional control U+{ord(bidi):04X}, which can make a name display as another; remove it"
        )
    return value


class LogRecord(BaseModel):
    """One judgment of the judgment log."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    kind: Literal["pairwise", "absolute", "reference"]
    """Which template family produced it."""
    judge: str = "unknown"
    """Judge name (profile or model id)."""
    prompt_id: str
    """The prompt both candidates answered."""
    candidates: list[str] = Field(min_length=1, max_length=2)
    """Shown candidates in order (first = option A)."""
    probs: dict[str, float]
    """Option probabilities (normalised over the options)."""
    reference: str | None = None
    """``reference`` judgments: which candidate is the anchor (default: the first)."""
    repeat: int = Field(default=0, ge=0)
    """Index of a repeated run of the same judge on the same item (for ICC screening)."""
    key: str | None = None
    """The request's idempotency key (exports and ``record`` logs carry it)."""
    round: int = Field(default=0, ge=0)
    """The run's round (exports): with ``key``, the order in which a run fits its judgments."""
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cost_usd: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """What the judgment cost (exports): a re-run from the log spends, and budgets, the same."""
    method: Literal["logprobs", "verdict", "samples", "log"] | None = None
    """How the probabilities were read: ``logprobs`` (the judge's stated option probabilities),
    ``verdict`` (one parsed answer: one option 1, the rest 0), ``samples`` (the shares of
    ``samples`` sampled verdicts), ``log`` (answered from another log); None: not stated (read as
    log-probabilities). Verdicts and samples are fitted as counts (:mod:`orchestrator.poe.verdicts`)."""
    samples: int | None = Field(default=None, ge=1, le=MAX_SAMPLES)
    """How many sampled verdicts a ``samples`` (or ``verdict``: 1) judgment's shares come from."""
    stated: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    """The confidence the judge stated in its ``verdict`` (0–1); calibrated before use (:mod:`orchestrator.poe.stated`)."""

    @field_validator("judge", "prompt_id", "reference")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return value if value is None else check_identifier(value)

    @field_validator("candidates")
    @classmethod
    def _names(cls, values: list[str]) -> list[str]:
        return [check_identifier(v) for v in values]

    @field_validator("probs")
    @classmethod
    def _probabilities(cls, probs: dict[str, float]) -> dict[str, float]:
        if not probs:
            raise ValueError("probs is empty")
        for option, value in probs.items():
            if not math.isfinite(value):
                raise ValueError(f"probs[{option!r}] is {value} (not a finite number)")
            if value < 0.0 or value > 1.0:
                raise ValueError(f"probs[{option!r}] = {value} is outside [0, 1]")
        total = sum(probs.values())
        if total <= 0.0:
            raise ValueError("probs sum to 0")
        return probs

    @model_validator(mode="after")
    def _shape(self) -> "LogRecord":
        want = 1 if self.kind == "absolute" else 2
        if len(self.candidates) != want:
            raise ValueError(f"a {self.kind} judgment needs {want} candidate(s), got {len(self.candidates)}")
        if want == 2 and self.candidates[0] == self.candidates[1]:
            raise ValueError(f"candidates are the same ({self.candidates[0]!r})")
        if self.reference is not None and (self.kind != "reference" or self.reference not in self.candidates):
            raise ValueError(f"reference {self.reference!r} must be one of the candidates of a reference judgment")
        graded = self.kind == "pairwise" and set(self.probs) <= set(GRADES) and len(self.probs) >= 2
        if self.kind in ("pairwise", "reference") and not ({"A", "B"} <= set(self.probs) or graded):
            raise ValueError(
                f"a {self.kind} judgment needs probs for 'A' and 'B'"
                + (f" (or graded verdicts {', '.join(GRADES)})" if self.kind == "pairwise" else "")
                + f", got {sorted(self.probs)}"
            )
        if self.kind == "absolute":
            try:
                [float(k) for k in self.probs]
            except ValueError:
                raise ValueError(f"absolute probs keys must be numeric levels, got {sorted(self.probs)}") from None
        problem = method_problem(self.method, self.samples, self.probs)
        if self.stated is not None and self.method != "verdict":
            problem = f"stated = {self.stated} is a confidence in one verdict: it needs method 'verdict', got {self.method!r}"
        if problem:
            raise ValueError(problem)
        return self

    def prob_first(self) -> float:
        """P(first-shown is better), a tie ``C`` counted as half a win."""
        return prob_first(self.probs)

    def level_distribution(self) -> tuple[list[float], list[float]]:
        """Absolute judgments: ``(levels, probabilities)`` sorted by level, normalised."""
        return level_distribution(self.probs)


GRADES = ("A>>B", "A>B", "A=B", "B>A", "B>>A")
"""A graded pairwise verdict (arena-hard's judge prompt): A much better, A better, a tie, B better,
B much better; ``A`` is the first-shown candidate. Graded judgments store their probabilities
under these keys, whatever words the template's options use."""


def grade_vector(probs: dict[str, float]) -> list[float] | None:
    """The five probabilities of a graded judgment in :data:`GRADES` order (normalised), or None
    for an A/B(/C) judgment."""
    if not probs or not set(probs) <= set(GRADES):
        return None
    total = sum(probs.values())
    return [probs.get(g, 0.0) / total for g in GRADES] if total > 0 else None


def prob_first(probs: dict[str, float]) -> float:
    """P(first-shown ``A`` is better) from A/B(/C) option probabilities, a tie ``C`` counted as half
    (graded verdicts: ``A>>B`` and ``A>B`` are wins, ``A=B`` half of one)."""
    graded = grade_vector(probs)
    if graded is not None:
        return graded[0] + graded[1] + 0.5 * graded[2]
    a, b, c = probs.get("A", 0.0), probs.get("B", 0.0), probs.get("C", 0.0)
    return (a + 0.5 * c) / (a + b + c)


def level_distribution(probs: dict[str, float]) -> tuple[list[float], list[float]]:
    """``(levels, probabilities)`` of an absolute judgment, sorted by level and normalised."""
    items = sorted((float(k), v) for k, v in probs.items())
    total = sum(v for _, v in items)
    return [k for k, _ in items], [v / total for _, v in items]


class ResponseRow(BaseModel):
    """One candidate response to one prompt."""

    # NaN/Infinity (which Python's JSON reader accepts) are refused: they break every statistic
    # and make --json output invalid JSON
    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    prompt_id: str
    candidate: str
    text: str = ""
    human: dict[str, float | None] = Field(default_factory=dict)
    """Human scores, carried only for evaluation, never shown to judges."""

    @field_validator("prompt_id", "candidate")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_identifier(value)


def decode_text(data: bytes, path: str | Path, encoding: str | None = None, *, encoding_option: bool = False) -> str:
    """A data file's bytes as text: UTF-8 (a byte-order mark, as spreadsheet programs write,
    dropped), UTF-16 with its mark, or ``encoding`` when given.

    Raises:
        OrchestratorError: not decodable (file, line and byte; what to do about it).
    """
    try:
        if encoding is not None:
            return data.decode(encoding)
        if data.startswith(codecs.BOM_UTF8):
            return data[len(codecs.BOM_UTF8) :].decode("utf-8")
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return data.decode("utf-16")
        return data.decode("utf-8")
    except LookupError:
        raise OrchestratorError(f"--encoding {encoding}: not an encoding Python knows") from None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        hint = (
            ""
            if encoding
            else "; save it as UTF-8 (a spreadsheet's 'CSV UTF-8')"
            + (", or name its encoding (e.g. --encoding cp1252)" if encoding_option else "")
        )
        raise OrchestratorError(f"{path}:{line}: not valid {encoding or 'UTF-8'} (byte 0x{data[exc.start]:02x}){hint}") from None


def parse_json(text: str, where: str, *, whole_file: bool = False, what: str = "") -> Any:
    """``json.loads`` with one line for what it refuses (file and line in ``where``; a
    ``whole_file`` adds the line the error is on), nesting deeper than Python's stack included."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = f"{where}:{exc.lineno}" if whole_file else where
        raise OrchestratorError(f"{at}: {what}not valid JSON ({exc.msg}, column {exc.colno})") from None
    except RecursionError:
        raise OrchestratorError(f"{where}: {what}JSON nested too deeply to read") from None


def read_jsonl(path: str | Path, *, encoding: str | None = None, encoding_option: bool = False) -> list[tuple[int, dict]]:
    """``(line_number, object)`` for every non-blank line (UTF-8, a byte-order mark allowed:
    :func:`decode_text`).

    Raises:
        OrchestratorError: the file is missing or a line is not a JSON object.
    """
    path = Path(path)
    if not path.is_file():
        raise OrchestratorError(f"{path}: no such file")
    rows = []
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OrchestratorError(f"{path}: cannot read ({exc.strerror})") from None
    for number, line in enumerate(decode_text(data, path, encoding, encoding_option=encoding_option).split("\n"), start=1):
        if not line.strip():
            continue
        obj = parse_json(line, f"{path}:{number}")
        if not isinstance(obj, dict):
            raise OrchestratorError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
        rows.append((number, obj))
    return rows


def validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {msg}" if where else msg)
    return "; ".join(parts)


def validate_jsonl(path: str | Path, model: type[M], empty: str) -> list[tuple[int, M]]:
    """Every line of a JSONL file validated as ``model``; ``(line_number, row)`` pairs.

    Raises:
        OrchestratorError: naming the file and line of the first bad row, or ``f"{path}: {empty}"``
            when the file has no rows.
    """
    return _validate_rows(path, read_jsonl(path), model, empty)


def _validate_rows(path: str | Path, rows: list[tuple[int, dict]], model: type[M], empty: str) -> list[tuple[int, M]]:
    out = []
    for number, obj in rows:
        try:
            out.append((number, model.model_validate(obj)))
        except ValidationError as exc:
            raise OrchestratorError(f"{path}:{number}: {validation_message(exc)}") from None
    if not out:
        raise OrchestratorError(f"{path}: {empty}")
    return out


def load_log(path: str | Path) -> list[tuple[int, LogRecord]]:
    """Load and validate a judgment log; returns ``(line_number, record)`` pairs.

    Raises:
        OrchestratorError: naming the file and line of the first bad record, or an empty log.
    """
    raw = read_jsonl(path)
    return drop_duplicates(_validate_rows(path, raw, LogRecord, "the judgment log is empty"), raw, source=str(path))


def drop_duplicates(records: list[tuple[int, LogRecord]], raw: list[tuple[int, dict]], *, source: str) -> list[tuple[int, LogRecord]]:
    """The records without repeated lines: the same ``key`` (exports and ``record`` logs carry one),
    or, without keys, the same JSON object. A repeated line would count one judgment twice (a log
    concatenated with itself, a copy appended twice); repeated runs of a judge differ in ``repeat``
    or ``key`` and are kept. Says how many were dropped (:class:`OrchestratorWarning`)."""
    seen: dict[str, int] = {}
    out, dropped = [], []
    for (number, record), (_, obj) in zip(records, raw):
        identity = f"key:{obj['key']}" if isinstance(obj.get("key"), str) and obj["key"] else "obj:" + json.dumps(obj, sort_keys=True)
        if identity in seen:
            dropped.append((number, seen[identity]))
            continue
        seen[identity] = number
        out.append((number, record))
    if dropped:
        number, first = dropped[0]
        warnings.warn(
            OrchestratorWarning(
                f"{source}: {len(dropped)} duplicate line(s) ignored (line {number} repeats line {first}); each judgment is counted once"
            ),
            stacklevel=2,
        )
    return out


def load_responses(path: str | Path) -> list[tuple[int, ResponseRow]]:
    """Load responses; duplicate ``(prompt_id, candidate)`` pairs are an error.

    Raises:
        OrchestratorError: naming the file and line of the first bad row.
    """
    out = []
    seen: dict[tuple[str, str], int] = {}
    for number, obj in read_jsonl(path):
        try:
            row = ResponseRow.model_validate(obj)
        except ValidationError as exc:
            raise OrchestratorError(f"{path}:{number}: {validation_message(exc)}") from None
        key = (row.prompt_id, row.candidate)
        if key in seen:
            raise OrchestratorError(
                f"{path}:{number}: duplicate response for prompt {row.prompt_id!r}, candidate {row.candidate!r} (first at line {seen[key]})"
            )
        seen[key] = number
        out.append((number, row))
    if not out:
        raise OrchestratorError(f"{path}: no responses")
    return out


def method_problem(method: str | None, samples: int | None, probs: dict[str, float]) -> str | None:
    """Why ``probs`` cannot come from the stated ``method`` (None: they can). A verdict is one answer
    (one option 1, the others 0); ``k`` sampled verdicts give shares that are multiples of ``1/k``
    (the shares over the options the record lists). Log-probabilities may be anything, one-hot
    included (a confident judge)."""
    total = sum(probs.values())
    if method == "verdict":
        if samples not in (None, 1):
            return f"method 'verdict' is one answer, but samples = {samples} (use method 'samples')"
        if sorted(round(v / total, 9) for v in probs.values() if v > 0) != [1.0]:
            return (
                f"method 'verdict' needs one option at 1 and the others at 0, got {dict(probs)} "
                "(fractional probabilities come from log-probabilities or from several samples)"
            )
    elif method == "samples" and samples is not None:
        off = [o for o, v in probs.items() if abs(v / total * samples - round(v / total * samples)) > 1e-6]
        if off:
            return f"method 'samples' with samples = {samples} needs shares in steps of 1/{samples}, got {dict(probs)}"
    elif samples is not None and method not in ("samples", "verdict"):
        return f"samples = {samples} is given for method {method!r}: only 'samples' (or 'verdict') judgments have sampled verdicts"
    return None
