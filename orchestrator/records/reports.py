"""What ``rank --json``, ``status --json`` and ``compare --json`` print, as typed records.

Each record documents its fields; the JSON Schema published in ``docs/schema/`` is generated from
them (:func:`json_schemas`, ``python -m orchestrator.records.reports docs/schema``), versioned by
:data:`SCHEMA_VERSION` in each file's name. Scripts that read the product's output (a CI gate, a
dashboard) can validate against it. Records are closed (``extra = "forbid"``) where the product's own
fields live; the few open ones say so (their content is data the user named: judges, groups,
prompt categories). A board placement is its own sub-record (:class:`Placement`), never an overwrite
of the row's figures on the run's pool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["SCHEMA_VERSION", "Comparison", "Ranking", "Status", "StopKind", "json_schemas", "write_schemas"]

SCHEMA_VERSION = 3
"""Bumped when a field is removed or changes meaning, or a closed list gains a value (adding an
optional field is not a new version)."""

StopKind = Literal["campaign", "budget", "pilot", "fail_fast", "judges_stopped", "no_success", "done", "interrupted", "extended"]
"""Why a run stopped, as code reads it (the words are ``stop_reason``): ``campaign``, the campaign's
own rule (a stopping rule, a decision, nothing left to ask); ``budget``, a budget ran out; ``pilot``,
the ``--pilot`` calls are spent (resume goes on); ``fail_fast``, the first judge calls all failed;
``judges_stopped``, every judge was stopped by its own fail-fast; ``no_success``, the run ended
without one successful judgment; ``done``, no reason given; ``interrupted``, a signal or an error
stopped it (resume goes on); ``extended``, ``extend`` added prompts or candidates (resume goes on)."""


class _Printed(BaseModel):
    """A record a command prints with ``--json``."""

    def as_dict(self) -> dict[str, Any]:
        """The record as ``--json`` prints it: the fields that were set, in JSON types (what
        ``model_dump(mode="json", exclude_unset=True)`` gives)."""
        return self.model_dump(mode="json", exclude_unset=True)


class _Closed(_Printed):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class _Open(_Printed):
    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)


class Placement(_Closed):
    """A candidate placed on a board (``[reference] board`` or an extended run): its figures over the
    board's prompts, from the prompts it was judged on."""

    win_rate: float
    """Win rate against the anchor over the board's prompts, percent."""
    win_rate_low: float
    """Lower end of its interval at the report's level, percent."""
    win_rate_high: float
    """Upper end, percent."""
    prompts: int
    """Board prompts it was judged on."""
    board_rank_low: int
    """Best rank among the board's models (and itself) its interval allows."""
    board_rank_high: int
    """Worst rank its interval allows."""
    in_range: bool
    """Within the board's range of abilities (beyond it, the board's prompts predict it poorly)."""
    slope: float
    """The 2PL prompt model's slope fitted for it."""
    win_rate_low_together: float | None = None
    """Lower end of the interval that holds for every placed candidate at once (Bonferroni), percent."""
    win_rate_high_together: float | None = None
    """Upper end of that interval, percent."""


class RankingRow(_Closed):
    """One candidate in a group's ranking, in rank order."""

    rank: int
    """Position (1 = best) by the group's point estimate (``score``)."""
    candidate: str
    score: float
    """PoE: log-strength (a difference d gives P(win) = σ(d)); reference campaigns: RAEE Elo gap to the anchor."""
    sd: float
    """Its uncertainty (PoE: against the field's mean; reference: Elo standard error)."""
    sd_marginal: float | None = None
    """PoE: the marginal posterior sd (with the common location's uncertainty)."""
    rank_low: int
    """Best rank it holds with the report's level of probability."""
    rank_high: int
    """Worst rank it holds with that probability."""
    truth: float | None = None
    """Mean of the dataset's truth column (``[data] truth``) over its responses."""
    win_rate: float | None = None
    """Reference campaigns: win rate against the anchor on the prompts judged in this pool, percent (ties ½)."""
    win_rate_low: float | None = None
    """Lower end of its interval (prompts like these, finite-pool corrected), percent."""
    win_rate_high: float | None = None
    """Upper end, percent."""
    win_rate_low_together: float | None = None
    """Lower end of the interval that holds for every candidate at once, percent."""
    win_rate_high_together: float | None = None
    """Upper end of that interval, percent."""
    prompts: int | None = None
    """Reference campaigns: prompts it was judged on."""
    placement: Placement | None = None
    """Its placement on a board, when the campaign places candidates on one."""


class StatedReading(_Closed):
    """What a judge's stated confidence was worth (``judges.md``, "Stated confidence")."""

    judgments: int
    """Its judgments with a stated confidence."""
    mean: float
    """Mean stated confidence, 0–1."""
    calibrated_on: str | None
    """What the calibration was fitted on; None: too few repeated verdicts, the confidence was not used."""
    scored: int | None = None
    """Verdicts scored against the judge's other verdicts of the same request."""
    agreement: float | None = None
    """How often those other verdicts agree, 0–1."""
    a: float | None = None
    """Calibration intercept: π(c) = σ(a + b·logit c)."""
    b: float | None = None
    """Calibration slope (≥ 0)."""
    at_mean: float | None = None
    """π at the mean stated confidence."""


class ReadAs(_Closed):
    """How a judge's probabilities were read and what that cost."""

    method: str
    """``logprobs``, ``verdict``, ``samples``, ``log`` or ``unknown`` (the most common of its judgments)."""
    samples: int | None
    """Verdicts per call (the most common k), None for log-probabilities."""
    completions: int
    """Paid completions behind its judgments."""
    stated: StatedReading | None = None
    """For a judge that stated its confidence."""


class JudgeEntry(_Open):
    """One judge of a group. Open: the model's fitted judge parameters (``precision``, ``temperature``,
    position bias …) appear under their names when the fit has them."""

    judge: str
    judgments: int
    agreement: float | None
    """Share of its decisive pairwise verdicts that side with the group's ranking."""
    agreement_probability: float | None
    """Mean probability it puts on the ranking's side (½: a coin; not raised by noise)."""
    read_as: ReadAs


class BoardSummary(_Open):
    """The board candidates were placed on."""

    path: str
    """The board's run file as the config names it (or "this run")."""
    models: int
    prompts: int
    leaderboard: dict[str, float]
    """Each board model's full-data win rate against the anchor, percent."""
    file: str | None = None
    """Whether the board file is unchanged since the run started, changed or gone."""


class Group(_Closed):
    """One group's ranking (a prompt, the whole dataset, or a reference campaign's anchor)."""

    group: str
    comparisons: int
    """Judgments fitted."""
    entropy: float | None = None
    """Posterior entropy, nats (PoE)."""
    max_adjacent_reorder: float | None = None
    """Largest probability that two neighbours are in the wrong order (PoE)."""
    ranking: list[RankingRow]
    not_judged: list[str] = []
    """Candidates that are models none of whose answers could be generated: nothing of theirs was
    judged, so they are not ranked (``ranking`` ranks the others among themselves)."""
    judged: bool | None = None
    """False: nothing judged yet (no statistics from no data)."""
    judges: list[JudgeEntry] = []
    ties: list[list[str]] = []
    """Neighbour pairs too close to call (order unknown and the gap small either way)."""
    close: list[list[str]] = []
    """Neighbour pairs in order, but only just."""
    spearman_vs_truth: float | None = None
    board: BoardSummary | None = None
    slices: list[dict[str, Any]] = []
    """Per prompt category: the same board on its prompts (open records)."""
    people: dict[str, Any] | None = None
    """People's labels of this group, fitted (``orchestrator label``; open)."""


class Comparison(_Closed):
    """The decision of a ``[compare]`` campaign (``orchestrator compare``)."""

    run: str | None = None
    """The run file (``compare --json``)."""
    candidate: str
    baseline: str
    anchor: str | None = None
    """Through an anchor: both systems' win rates against it, the decision on their difference."""
    baseline_run: str | None = None
    """The earlier run the baseline's judgments against the anchor were taken from (kept in the run file)."""
    margin: float
    """Points of win rate that count as a difference worth deciding on."""
    alpha: float
    """The confidence sequence's error level (valid at every look)."""
    win_rate: float | None
    """Head to head: candidate over baseline on the prompts judged, percent (ties ½); None before any
    (and through an anchor)."""
    win_rate_low: float | None
    win_rate_high: float | None
    candidate_win_rate: float | None = None
    """Through an anchor: the candidate's win rate against it on the prompts judged, percent."""
    baseline_win_rate: float | None = None
    """Through an anchor: the baseline's, on the same prompts."""
    design: Literal["anytime", "planned"] = "planned"
    """``anytime``: valid at every look; ``planned``: valid at the planned looks (the ends of rounds)."""
    max_prompts: int | None = None
    """The most prompts the run could read, fixed at its start (None: a run made before it was stored)."""
    guarantee: str = ""
    """Which guarantee the interval holds, in one sentence."""
    prompts_judged: int
    prompts_available: int
    difference: float | None
    """Head to head: ``win_rate`` − 50; through an anchor: the candidate's win rate minus the baseline's, points."""
    difference_low: float
    difference_high: float
    decision: Literal["better", "worse", "equivalent", "not better", "not worse", "not yet known"]
    """``not better``: the data exclude a difference of the margin or more (a gate requiring
    ``better``); ``not worse``: they exclude the candidate being worse by the margin (a gate
    requiring ``not-worse``)."""
    decided_after: int | None
    """Prompts after which the decision was reached; None while not yet known."""
    require: Literal["better", "not-worse"]
    exit_code: int
    """0 better (with ``--require not-worse``: also equivalent and not worse), 10 worse, 11
    equivalent, 12 not yet known, 13 not better."""
    lost: dict[str, Any] | None = None
    """With candidate models: the prompts each system lost because its answer could not be generated
    (``rule``: how such a prompt is read — head to head a loss, through an anchor a share of 0
    against it; system → count; open). Absent: none."""
    to_decide: dict[str, Any] | None = None
    """When not yet known: what would decide it if the true difference is the one seen —
    ``effect`` (points from the edge the decision turns on), ``prompts`` a plan needs for a power of
    0.8, the ``max_calls`` to set, ``prompts_available`` in the data, and the ``sentence``; only
    ``effect`` and ``sentence`` when the difference is too near that edge for any practical budget."""
    sentence: str
    """The decision in one sentence."""
    construction: str
    """The interval's construction and its reference."""


class Ranking(_Closed):
    """``orchestrator rank RUN --json``."""

    run: str
    scope: str
    """``per_prompt``, ``global``, ``reference``, ``absolute`` or ``compare``."""
    level: float
    """Level of every interval in it."""
    groups: list[Group]
    warnings: list[str] = []
    """What a reader must know first (e.g. a judge that carries no information)."""
    leader: bool | None = None
    """False: no leader may be named (the judges carry no detectable information)."""
    information: dict[str, dict[str, Any]] = {}
    """Per judge: its test of carrying information (``judgments``, ``p_value``, ``first_share``, ``first_probability``)."""
    comparison: Comparison | None = None
    flags: dict[str, list[str]] = {}
    """Per candidate: what looks wrong in its responses (empty answers, duplicates …)."""
    answers: dict[str, dict[str, Any]] | None = None
    """Per candidate that is a model: its ``model``, answers ``generated``, ``failed``, ``truncated``,
    ``cached``, ``pending`` of ``prompts``, their ``prompt_tokens``, ``completion_tokens``, ``usd``
    and ``mean_latency_s`` (open)."""


class Status(_Closed):
    """``orchestrator status RUN --json``."""

    run: str
    name: str
    state: str
    """``running``, ``finished``, ``stopped``, ``failed`` …"""
    stop_reason: str
    stop_kind: StopKind | None = None
    """Why it stopped, as a code (:data:`StopKind`); None while it runs, and for a run file written
    before the kind was stored."""
    rounds: int
    requests: dict[str, int]
    """Requests by status (``done``, ``failed``, ``pending``)."""
    failures: dict[str, int] = {}
    """Failed requests by error type."""
    spent: dict[str, float]
    """``calls`` (paid completions, cache hits included), ``tokens``, ``usd``, ``cached``."""
    budget: dict[str, float | None]
    """``calls``, ``tokens``, ``usd``: the limits as configured (``[budget] max_calls`` …; None: no limit)."""
    groups: int
    mean_entropy: float | None = None
    max_adjacent_reorder: float | None = None
    top: dict[str, list[str]] = {}
    """Per group (the first five): its top three candidates; empty when no leader may be named."""
    warnings: list[str] = []
    forecast: dict[str, Any] | None = None
    """Calls to the next stop, forecast from the posterior (open)."""
    deployments: list[dict[str, Any]] | dict[str, Any] | None = None
    """Per endpoint of a judge with several deployments: calls and failures (open)."""
    people: dict[str, Any] | None = None
    """People's labelling progress (open)."""
    answers: dict[str, dict[str, int]] | None = None
    """Per candidate that is a model: its answers ``ok`` (generated), ``failed``, ``pending``
    (reserved, not yet written), ``truncated``, ``cached``, and the run's ``prompts``."""
    comparison: Comparison | None = None
    mean_spearman_vs_truth: float | None = None


def json_schemas() -> dict[str, dict]:
    """File name → JSON Schema of each printed record."""
    return {
        f"{name}-v{SCHEMA_VERSION}.schema.json": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"llm-judge-orchestrator/{name}-v{SCHEMA_VERSION}",
            **model.model_json_schema(mode="serialization"),
        }
        for name, model in (("rank", Ranking), ("status", Status), ("compare", Comparison))
    }


def write_schemas(folder: str | Path) -> list[Path]:
    """Write :func:`json_schemas` into ``folder`` (``docs/schema``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in json_schemas().items():
        path = folder / name
        path.write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n")
        written.append(path)
    return written


if __name__ == "__main__":  # python -m orchestrator.records.reports docs/schema
    import sys

    for path in write_schemas(sys.argv[1] if len(sys.argv) > 1 else "docs/schema"):
        print(path)
