"""The planner protocol: one per campaign kind, the only place a campaign's logic lives.

The engine (:mod:`orchestrator.run.engine`) owns rounds, budgets, dispatch, commits, signals,
stopping and resume; each round it asks the campaign's planner what to ask next. A planner sees
the log through :meth:`Planner.add` (every committed successful judgment, in commit order — also
the ones a resumed run reads back) and plans from it alone, so a resumed run plans what an
uninterrupted one would. Adding a campaign kind is one new file here and one entry in
:data:`orchestrator.run.planners.registry.PLANNERS` (``package.module:Class``, loaded as an outside one is).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from ...errors import OrchestratorError
from ...records.config import RunConfig
from ...records.dataset import Dataset
from ...store import JudgmentRecord, PlannedRequest
from ..requests import PlanContext

__all__ = ["Plan", "Planner", "PlannerBase", "no_summary"]


@dataclass(frozen=True)
class Plan:
    """One round's work: units of requests in priority order (each unit planned and budgeted
    whole: a comparison for every judge and order), and what was selected (stored in ``rounds``)."""

    kind: str
    """The round's kind in the run file (``pairwise``, ``absolute``, ``reference``)."""
    units: list[list[PlannedRequest]]
    selected: list[list]


def no_summary(top: list[str]) -> dict:
    """A round summary without a posterior (campaigns): only the top of the current ranking."""
    return {"entropy": None, "max_adjacent_reorder": None, "top": top}


class Planner(Protocol):
    """What the engine asks of a campaign."""

    kind: ClassVar[str]
    """The campaign's name (``poe``, ``reference``, ``absolute``)."""
    role: ClassVar[str]
    """The template role of most of its requests (a dry run's cost estimate)."""
    done: ClassVar[str]
    """The stop reason when a round finds nothing left to ask."""

    def __init__(self, ctx: PlanContext) -> None: ...

    @staticmethod
    def roles(config: RunConfig) -> dict[str, str]:
        """Template role → template name, from the config (checked before the run is created)."""
        ...

    @staticmethod
    def check(config: RunConfig, dataset: Dataset, templates: dict) -> None:
        """Raise ``OrchestratorError`` for a config this campaign cannot run (before anything is created)."""
        ...

    @staticmethod
    def unit_calls(config: RunConfig, n_judges: int) -> tuple[str, int]:
        """(template role, requests) of the first unit a run plans: the least a budget must pay for."""
        ...

    @staticmethod
    def possible_requests(config: RunConfig, dataset: Dataset, n_judges: int) -> int:
        """How many requests the campaign could ask at most (a dry run's upper bound)."""
        ...

    @staticmethod
    def shown_texts(config: RunConfig, dataset: Dataset, prompt_id: str) -> list[tuple[str, str]]:
        """Typical ``(A, B)`` texts its requests show on a prompt (``A`` empty for absolute
        requests): a dry run's mean worst case per request."""
        ...

    def add(self, row: JudgmentRecord) -> None:
        """Fold in one committed successful judgment (store row)."""

    def planned(self, rows: list[PlannedRequest]) -> None:
        """Requests were just written (after ``ctx.asked`` was updated)."""

    def stop_before(self, cutoff: int) -> str:
        """Before planning round ``cutoff + depth``: fit what rounds ``<= cutoff`` gave and say why to
        stop now (a stopping rule), or ``""``."""

    def next_round(self, round_no: int, cutoff: int) -> Plan | str:
        """The next round's plan, or the reason there is none."""

    @property
    def largest_fit(self) -> int:
        """The most candidates one of its posterior fits solves for (the engine sets torch's
        thread count from it; 2 for a campaign that fits no posterior while it runs)."""
        ...

    def posteriors_for_forecast(self, cutoff: int | None) -> list | None:
        """The posteriors a forecast of the cost to the stopping rule reads, fitted on rounds
        ``<= cutoff`` (None: on everything); None when the campaign has nothing to forecast."""
        ...

    def summary(self, cutoff: int | None) -> dict:
        """``entropy``, ``max_adjacent_reorder`` and ``top`` for the round row and the progress
        display (``cutoff`` None: on everything, at the end of the run)."""


def own_section(config: RunConfig, kind: str) -> Any:
    """A campaign kind's own config section: this package's (``config.reference``…) or, for a kind
    from outside the package, its ``[<kind>]`` table (``config.planner_tables``); None without one."""
    if kind in type(config).model_fields:
        return getattr(config, kind)
    return config.planner_tables.get(kind)


class PlannerBase:
    """A planner with the protocol's defaults: a campaign that fits no posterior while it runs, has
    no stopping rule of its own and nothing to forecast, and keeps every committed judgment in
    ``self.rows``. A new campaign kind subclasses it and writes what is its own — ``kind``, ``role``,
    ``done``, :meth:`next_round`, and :meth:`roles` unless a ``[<kind>]`` section names its template
    (``docs/extending.md``, "A new campaign kind", has a whole one in twenty lines, run by
    ``tests/house/test_extending.py``)."""

    kind: ClassVar[str]
    role: ClassVar[str]
    done: ClassVar[str]
    largest_fit: int = 2
    """No posterior is fitted while the campaign runs (the engine's torch threads follow it)."""
    section: Any
    """The campaign's own config section: ``config.<kind>`` for this package's kinds; for a kind
    from outside the package, its ``[<kind>]`` table as a dict (None for a kind without one)."""

    def __init__(self, ctx: PlanContext) -> None:
        self.ctx = ctx
        self.rows: list[JudgmentRecord] = []
        self.section = own_section(ctx.config, self.kind)

    @classmethod
    def roles(cls, config: RunConfig) -> dict[str, str]:
        """The template the campaign's own section names (``template`` in ``[<kind>]``), in its ``role``."""
        section = own_section(config, cls.kind)
        template = section.get("template") if isinstance(section, dict) else getattr(section, "template", None)
        if not isinstance(template, str) or not template:
            raise OrchestratorError(
                f"selection.planner: {cls.__name__} (kind {cls.kind!r}) has no [{cls.kind}] section naming a template: "
                "write its roles(config) (docs/extending.md)"
            )
        return {cls.role: template}

    @staticmethod
    def check(config: RunConfig, dataset: Dataset, templates: dict) -> None:
        """Nothing to refuse beyond what every campaign checks."""

    @staticmethod
    def unit_calls(config: RunConfig, n_judges: int) -> tuple[str, int]:
        return "pairwise", n_judges

    @staticmethod
    def possible_requests(config: RunConfig, dataset: Dataset, n_judges: int) -> int:
        """Every ordered pair of every prompt's candidates, for every judge (an upper bound)."""
        return n_judges * sum(len(by) * (len(by) - 1) for by in dataset.responses.values())

    @staticmethod
    def shown_texts(config: RunConfig, dataset: Dataset, prompt_id: str) -> list[tuple[str, str]]:
        texts = [r.text for r in dataset.responses.get(prompt_id, {}).values()]
        return [(texts[0], texts[1])] if len(texts) >= 2 else []

    def add(self, row: JudgmentRecord) -> None:
        """Keep every committed judgment (``self.rows``)."""
        self.rows.append(row)

    def planned(self, rows: list[PlannedRequest]) -> None:
        """Nothing to note."""

    def stop_before(self, cutoff: int) -> str:
        """No stopping rule of its own: it stops when :meth:`next_round` finds nothing or the budget ends."""
        return ""

    def posteriors_for_forecast(self, cutoff: int | None) -> list | None:
        return None

    def summary(self, cutoff: int | None) -> dict:
        return no_summary([])
