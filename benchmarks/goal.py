"""One goal of the benchmarks (:mod:`benchmarks.goals` lists them): the issue it comes from, the script and
arguments that measure it, its quick form, and how its figure and verdict are read from a record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Record = dict[str, Any]


@dataclass(frozen=True)
class Goal:
    key: str
    issue: str
    statement: str
    script: str  # GROUP.NAME under benchmarks/
    args: str  # the arguments of the full measurement
    quick: str  # the arguments of the reviewers' run (``--quick`` added)
    figure: Callable[[Record], str]
    verdict: Callable[[Record], str]
    accepts: Callable[[list[str]], bool] = field(default=lambda argv: True)  # which runs of the script measure this goal

    def command(self, quick: bool = False) -> str:
        args = (self.quick + " --quick").strip() if quick else self.args
        return f"python -m benchmarks.{self.script} {args}".strip()
