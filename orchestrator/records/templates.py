"""Judge prompt templates, stored as TOML data files in ``prompts/`` (one file per template).

A template names its kind, its answer options, where the answer token is read (the first generated
token, or the token after a marker such as ``"score": "`` inside a longer answer), an optional
assistant prefix (``prefill``), and chat messages with ``${placeholder}`` fields (``string.Template``
syntax, so JSON braces in prompt texts need no escaping). Drop a new ``.toml`` file into ``prompts/``
(or a directory named by ``ORCHESTRATOR_PROMPTS``) to add one; a malformed file fails on load with
its path and the offending field.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import OrchestratorError
from .datafiles import data_dirs, find_data_file, load_toml_model
from .log import GRADES

__all__ = ["MESSAGE_OVERHEAD_TOKENS", "Template", "Criterion", "load_template", "load_templates", "get_template", "template_dirs"]

MESSAGE_OVERHEAD_TOKENS = 16
"""Chat-template tokens per message added on top of the content when a request's worst case is
reserved (generous for known templates)."""

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

CANDIDATE_FIELDS = frozenset({"A", "B", "response", "reference"})
"""Placeholders that carry a candidate's text (untrusted: it may try to steer the judge)."""
_FENCE = re.compile(r"</?[A-Za-z][\w #${}-]*>|\[The (?:Start|End) of [^\]\n]{1,80}\]|\"\"\"")
_CHAT_CONTROL = re.compile(r"<\|[^|<>\n]{1,40}\|>|</?s>|<(?:start|end)_of_turn>|\[/?INST\]|<</?SYS>>")
"""Chat-template control tokens of common model families (ChatML, Llama 2/3, Gemma, Mistral)."""


def _lookalike(token: str) -> str:
    return {"<": "\u2039", "[": "\u27e6"}.get(token[0], "") + token[1:] if token[:1] in "<[" else token


class Criterion(BaseModel):
    """One scored criterion of a multi-candidate template."""

    model_config = ConfigDict(extra="forbid")
    name: str
    options: list[str] = Field(min_length=2)


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["system", "user", "assistant"]
    content: str = Field(min_length=1)


class Template(BaseModel):
    """A judge prompt template (see module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Unique name; the file is ``<name>.toml``."""
    kind: Literal["absolute", "pairwise", "reference", "direct", "multi"]
    """absolute 1..M of one response; pairwise A/B; reference A(=reference)/B/C(tie); direct
    rating against a reference; multi-candidate JSON scores."""
    source: str
    """Where the prompt comes from (paper, figure)."""
    description: str = ""
    options: list[str] = Field(default_factory=list)
    """Answer options in order (for multi templates: per criterion, in ``criteria``)."""
    criteria: list[Criterion] = Field(default_factory=list)
    read: Literal["first_token", "marker", "verdict"]
    """Where option log-probabilities are read; ``verdict``: not at all — the last option after a
    marker in the answer's text is the verdict (judges that reason first and whose options are
    several tokens, e.g. arena-hard's ``[[A>>B]]``)."""
    markers: list[str] = Field(default_factory=list)
    """For ``read = "marker"`` or ``"verdict"``: the option follows any of these strings."""
    confidence_marker: str | None = None
    """For ``read = "verdict"``: the judge's stated confidence in its verdict follows this string
    (``Confidence: 80``, ``80%`` or ``0.8``); stored with the judgment and used only through a
    calibration on the judge's own sampled verdicts (:mod:`orchestrator.poe.stated`)."""
    grades: list[str] = Field(default_factory=list)
    """Graded pairwise templates: the five-way verdict (:data:`~orchestrator.records.log.GRADES`)
    each option stands for, in the order of ``options``; the judgment's probabilities are stored
    under these keys and the PoE fit reads them with the graded expert (ties modelled)."""
    prefill: str | None = None
    """Assistant prefix continued by the judge (chat form); None for no prefix."""
    attribute: str | None = None
    """Default attribute when the text has ``${attribute}``."""
    attributes: dict[str, str] = Field(default_factory=dict)
    """Attribute name → the phrase substituted for ``${attribute}``."""
    max_tokens: int | None = None
    """Tokens to generate; default 2 for first-token reads (room for a two-token option), 256 otherwise."""
    candidate_format: str | None = None
    """Multi templates: how one candidate is rendered into ``${candidates_section}`` (``${i}`` = 1-based)."""
    messages: list[Message] = Field(min_length=1)
    digest: str = ""
    """sha256 of the template file (part of every request's idempotency key)."""

    @model_validator(mode="after")
    def _consistent(self) -> "Template":
        if self.kind == "multi":
            if not self.criteria:
                raise ValueError("a multi template needs [[criteria]] with options")
            if not self.candidate_format:
                raise ValueError("a multi template needs candidate_format")
        elif len(self.options) < 2:
            raise ValueError("options needs at least two answer options")
        if len(set(self.options)) != len(self.options):
            raise ValueError("options has duplicates")
        if self.read in ("marker", "verdict") and not self.markers:
            raise ValueError(f'read = "{self.read}" needs markers')
        if self.confidence_marker is not None and (self.read != "verdict" or not self.confidence_marker.strip()):
            raise ValueError(
                'confidence_marker needs read = "verdict" (a stated confidence goes with a parsed verdict) and a non-empty marker'
            )
        if self.grades:
            if self.kind != "pairwise":
                raise ValueError("grades are for pairwise templates")
            if sorted(self.grades) != sorted(GRADES) or len(self.options) != len(GRADES):
                raise ValueError(f"grades must name each of {', '.join(GRADES)} once, one per option")
        if "attribute" in self.placeholders and not (self.attribute and self.attribute in self.attributes):
            raise ValueError("${attribute} is used: set attribute to one of [attributes]")
        return self

    @property
    def placeholders(self) -> set[str]:
        """Placeholder names used by the messages (and the candidate format)."""
        names = {m for msg in self.messages for m in _PLACEHOLDER.findall(msg.content)}
        return names

    @property
    def max_new_tokens(self) -> int:
        if self.max_tokens is not None:
            return self.max_tokens
        return 2 if self.read == "first_token" else 256

    def option_sets(self) -> list[list[str]]:
        """Options at each read position of one answer (one set for single-verdict templates)."""
        return [c.options for c in self.criteria] if self.kind == "multi" else [self.options]

    @property
    def fences(self) -> set[str]:
        """The delimiters this template wraps candidate texts in: tags (``<summary_a>``), bracket
        markers (``[The End of Assistant A's Answer]``) and triple quotes found in its messages."""
        text = "\n".join([m.content for m in self.messages] + [self.candidate_format or ""])
        return set(_FENCE.findall(text))

    def neutralise(self, text: str) -> str:
        """A candidate's text made unable to close its fence or the chat turn: occurrences of this
        template's delimiters and of chat-template control tokens get a look-alike first character
        (``<`` → ``‹``, ``[`` → ``⟦``; under a triple-quote fence runs of two or more ``"`` and a
        ``"`` at either end, which would merge with the fence, become ``”``), so the text reads the
        same but matches nothing."""
        for fence in sorted(self.fences, key=len, reverse=True):
            if fence == '"""':
                text = re.sub(r'"{2,}|^"|"$', lambda m: "\u201d" * len(m.group(0)), text)
                continue
            # a fence with a placeholder (<CANDIDATE #${i} ANSWER>) matches any filled-in value
            pattern = _PLACEHOLDER.sub(lambda _: "[^<>\\n]{1,20}", re.escape(fence).replace(r"\$\{", "${").replace(r"\}", "}"))
            text = re.sub(pattern, lambda m: _lookalike(m.group(0)), text)
        return _CHAT_CONTROL.sub(lambda m: _lookalike(m.group(0)), text)

    def render(self, values: dict[str, str], *, attribute: str | None = None, prefill: bool = True) -> list[dict]:
        """Chat messages with placeholders filled; the prefill becomes a final assistant message.
        Candidate texts (``A``, ``B``, ``response``, ``reference``) are :meth:`neutralise`-d.

        Raises:
            OrchestratorError: a placeholder has no value, or the attribute is unknown.
        """
        values = {k: self.neutralise(v) if k in CANDIDATE_FIELDS and isinstance(v, str) else v for k, v in values.items()}
        if "attribute" in self.placeholders:
            key = attribute or self.attribute
            if key not in self.attributes:
                raise OrchestratorError(f"template {self.name!r}: unknown attribute {key!r}; choose one of {', '.join(self.attributes)}")
            values["attribute"] = self.attributes[key]
        missing = sorted(self.placeholders - set(values))
        if missing:
            raise OrchestratorError(f"template {self.name!r}: no value for placeholder(s) {', '.join(missing)}")
        messages = [{"role": m.role, "content": string.Template(m.content).safe_substitute(values)} for m in self.messages]
        if prefill and self.prefill:
            messages.append({"role": "assistant", "content": self.prefill})
        return messages

    def candidates_section(self, candidates: list[dict[str, str]]) -> str:
        """Render ``${candidates_section}`` of a multi template (``${i}`` numbers from 1)."""
        if not self.candidate_format:
            raise OrchestratorError(f"template {self.name!r} has no candidate_format")
        fmt = string.Template(self.candidate_format)
        return "\n\n".join(
            fmt.safe_substitute({**{n: self.neutralise(v) if n in CANDIDATE_FIELDS else v for n, v in c.items()}, "i": str(k)})
            for k, c in enumerate(candidates, start=1)
        )


def template_dirs(extra: list[Path] | None = None) -> list[Path]:
    """Template lookup order: ``extra``, ``$ORCHESTRATOR_PROMPTS``, ``./prompts``, this checkout's ``prompts/``."""
    return data_dirs("ORCHESTRATOR_PROMPTS", "prompts", extra)


def load_template(path: str | Path) -> Template:
    """Load and validate one template file.

    Raises:
        OrchestratorError: unreadable TOML or an invalid field, naming the file.
    """
    return load_toml_model(path, Template, "template")


def load_templates(directory: str | Path) -> dict[str, Template]:
    """Every ``*.toml`` template in a directory, by name."""
    return {p.stem: load_template(p) for p in sorted(Path(directory).glob("*.toml"))}


def get_template(name: str, dirs: list[Path] | None = None) -> Template:
    """The template called ``name`` from the first directory that has it.

    Raises:
        OrchestratorError: no such template (listing the available ones).
    """
    return load_template(find_data_file(name, template_dirs(dirs), "template"))
