"""Covariates of a comparison for the judges' tastes: length and style, computed from
the two answers' texts; each judge's weight on them is fitted with the scores
(:class:`~orchestrator.poe.objective.PoEConfig` ``controls``).

Arena-hard's style control: per answer the length in characters and the counts of markdown
headers, list items and bold spans; per comparison the normalised difference of first minus
second — ``(a − b)/(a + b)`` for length, ``(a − b)/(a + b + 1)`` for counts (0 when neither has
any) — so every covariate lies in (−1, 1) and a positive weight means the judge prefers more of it.

Self-preference (MT-Bench's self-enhancement): ``self`` is +1 when only the first-shown answer's
model is of the judge's family, −1 when only the second's is, 0 otherwise (:func:`self_covariate`).

An absolute judgment scores one answer: its covariates are the same normalised differences of the
answer against its prompt's typical answer (the mean of each feature over the prompt's answers),
and ``self`` is 1 when the answer's model is of the judge's family (:func:`answer_covariates`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "answer_covariates",
    "CONTROLS",
    "COVARIATES",
    "STYLE",
    "TEXT_CONTROLS",
    "comparison_covariates",
    "expand_controls",
    "self_covariate",
    "text_features",
]

STYLE = ("headers", "lists", "bold")
CONTROLS: dict[str, tuple[str, ...]] = {"length": ("length",), "style": STYLE, "self": ("self",)}
"""A config's ``model.control`` entries and the covariates each one stands for."""
TEXT_CONTROLS = ("length", *STYLE)
"""Covariates read from the answers' texts (a candidate's vary only across prompts)."""
COVARIATES = (*TEXT_CONTROLS, "self")
"""Every covariate, in the order reports show them."""

_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+\S", re.M)
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S", re.M)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")


def expand_controls(controls: Sequence[str]) -> tuple[str, ...]:
    """The covariate names of ``controls`` (``["length", "style"]`` → length, headers, lists, bold).

    Raises:
        ValueError: an unknown control.
    """
    out: list[str] = []
    for control in controls:
        if control not in CONTROLS:
            raise ValueError(f"unknown control {control!r} (known: {', '.join(CONTROLS)})")
        out += [name for name in CONTROLS[control] if name not in out]
    return tuple(out)


def text_features(text: str) -> dict[str, float]:
    """An answer's length in characters and its markdown headers, list items and bold spans."""
    return {
        "length": float(len(text)),
        "headers": float(len(_HEADER.findall(text))),
        "lists": float(len(_LIST.findall(text))),
        "bold": float(len(_BOLD.findall(text))),
    }


def comparison_covariates(first: dict[str, float], second: dict[str, float], names: tuple[str, ...]) -> tuple[float, ...]:
    """The normalised differences, first minus second, of the covariates ``names`` (module docstring)."""
    out = []
    for name in names:
        a, b = first.get(name, 0.0), second.get(name, 0.0)
        scale = a + b if name == "length" else a + b + 1.0
        out.append((a - b) / scale if scale > 0 else 0.0)
    return tuple(out)


def answer_covariates(
    judge: str, candidate: str, answer: dict[str, float], typical: dict[str, float], names: tuple[str, ...], families: dict[str, str]
) -> tuple[float, ...]:
    """An absolute judgment's covariates: the answer's normalised differences against its prompt's
    typical answer (``typical``: the mean features of the prompt's answers) and, for ``self``, 1
    when ``candidate`` is of ``judge``'s family (module docstring)."""
    text = comparison_covariates(answer, typical, names)
    family = families.get(judge)
    own = float(family is not None and families.get(candidate) == family)
    return tuple(own if name == "self" else value for name, value in zip(names, text))


def self_covariate(judge: str, first: str, second: str, families: dict[str, str]) -> float:
    """+1 / −1 / 0: whether only the first (second) answer's model shares the judge's family."""
    family = families.get(judge)
    if family is None:
        return 0.0
    return float(families.get(first) == family) - float(families.get(second) == family)
