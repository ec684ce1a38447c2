"""Run configuration: a TOML file validated with pydantic (every error names its field).

Relative dataset paths are resolved against the directory of the config file. See
``examples/summeval.toml`` for a commented example.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import OrchestratorError
from .campaign_config import AbsoluteConfig, ReferenceConfig
from .candidate_models import CandidateModel
from .choices import parse_expert_name, parse_strategy
from .compare_config import CompareConfig
from .datafiles import load_toml_model
from .families import family_problem
from .log import check_identifier
from .named_classes import CLASS_SPEC

__all__ = [
    "RunConfig",
    "DataConfig",
    "JudgingConfig",
    "ModelConfig",
    "SelectionConfig",
    "BudgetConfig",
    "StoppingConfig",
    "DispatchConfig",
    "ReferenceConfig",
    "AbsoluteConfig",
    "load_config",
]


class _Section(BaseModel):
    # NaN and ±inf are refused everywhere: a NaN budget or backoff compares False with everything
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class DataConfig(_Section):
    prompts: Path
    """prompts.jsonl (``{id, text, reference?}``)."""
    responses: Path | None = None
    """responses.jsonl (``{prompt_id, candidate, text, human?}``); none when every candidate is a
    model (``[candidates.NAME]``)."""
    scope: Literal["per_prompt", "global", "items"] = "per_prompt"
    """``per_prompt``: rank each prompt's responses; ``global``: rank candidates across prompts;
    ``items``: rank every response as its own item (``prompt::candidate``) in one posterior —
    compared only with responses to the same prompt, linked across prompts by absolute scores
    (``absolute_warm_start``)."""
    prompt_ids: list[str] | None = None
    """Only these prompts (default: all)."""
    first: int | None = Field(default=None, ge=1)
    """Only the first N prompts of the file (ignored when ``prompt_ids`` is given)."""
    truth: str | None = None
    """Human score field in ``responses.human`` to report Spearman against (never shown to judges)."""


class JudgingConfig(_Section):
    judges: list[str] = Field(default_factory=lambda: ["qwen1.5b"], min_length=1)
    """Judge profile names (``judges/<name>.toml``); every selected comparison is asked to each."""
    people: str | None = None
    """A judge profile of kind ``human`` (e.g. ``"human"``, ``judges/human.toml``): after each round
    the run chooses that profile's ``per_round`` items for people to label on ``orchestrator label
    RUN`` (offered first there); it does not wait for them. None: no requests to people."""
    pairwise_template: str = "poe-pairwise"
    absolute_template: str = "poe-absolute"
    attribute: str | None = "coherence"
    """Fills ``${attribute}`` in the templates (coherence, consistency, fluency, relevance, overall)."""
    task: str | None = Field(default=None, min_length=1, max_length=2000)
    """Fills ``${task}`` (the ``generic-*`` templates): what the prompts ask for, in words, e.g.
    ``"answer a customer's question about their bank account"``."""
    criterion: str | None = Field(default=None, min_length=1, max_length=2000)
    """Fills ``${criterion}`` (the ``generic-*`` templates): what makes a response better, e.g.
    ``"correct, complete and polite"``."""

    def parameters(self) -> dict[str, str]:
        """The free-text template parameters that are set (``task``, ``criterion``)."""
        return {k: v for k, v in (("task", self.task), ("criterion", self.criterion)) if v is not None}

    @field_validator("judges")
    @classmethod
    def _unique(cls, judges: list[str]) -> list[str]:
        if len(set(judges)) != len(judges):
            raise ValueError("judges are listed twice")
        return [check_identifier(judge) for judge in judges]


class ModelConfig(_Section):
    expert: str = "soft_bt"
    """soft_bt | beta:<a>,<b> | ngaussian | linear."""
    debias: Literal["none", "permutation", "home"] = "none"
    """``permutation`` asks both orders of every pair; ``home`` fits the position bias Δ."""
    absolute_warm_start: bool = False
    """Score every candidate with the absolute template before any comparison (combined PoE)."""
    judge_reliability: bool = True
    """Learn how far each judge is to be believed: its sharpness ``t_j`` (a calibration fitted with
    the scores: a random judge's weight goes to zero) and its precision ``κ_j`` (how closely its
    probabilities follow the fit: a reproducible judge counts for more). Every judge also gets its
    own position bias (``debias = "home"``) and absolute link whatever this says."""
    posterior: Literal["auto", "dense", "sparse"] = "auto"
    """How the Laplace posterior is held: ``dense`` (the ``N × N`` covariance), ``sparse`` (sparse
    Hessian, conjugate gradients, variances from posterior draws, candidate pairs instead of all
    ``N²``: for large rankings, e.g. ``scope = "items"`` over a benchmark) or ``auto`` (sparse from
    2,000 candidates in a group)."""
    control: list[Literal["length", "style", "self"]] = []
    """Judge tastes fitted with the scores and taken out of the ranking: ``"length"``
    fits each judge's preference for the longer answer, ``"style"`` for more markdown headers, list
    items and bold (arena's normalised differences, :mod:`orchestrator.poe.covariates`) in the
    Laplace step; selection, stopping and ``rank`` then act on the scores at equal length and style,
    and ``rank`` shows each judge's effects. Needs ``data.scope = "global"``: within one prompt a
    candidate has one answer, so its length or style cannot be told from its quality. ``"self"``
    fits each judge's preference for answers of its own model family (``families``); it needs a
    judge of a candidate's family and a neutral judge (of no candidate's family: only a judge
    without the taste tells it from that family's quality), any scope."""
    families: dict[str, str] = {}
    """Model family of judges (profile names) and candidates, e.g. ``{"gpt-4o-mini" = "openai",
    "my-gpt" = "openai", "claude-judge" = "anthropic"}``, for ``control = ["self"]``."""
    temperature: float | dict[str, float] | Literal["fit"] | None = None
    """Temperature scaling of the judges' pairwise probabilities before the fit, ``σ(logit(p)/T)``
    (PoE App. B): one ``T`` for every judge, a table ``{judge = T}`` (what ``orchestrator calibrate``
    prints), or ``"fit"``: each judge's ``T`` fitted on the run's own comparisons against the
    dataset's ``data.truth`` scores (a labelled calibration set; needs ``data.truth``)."""

    @field_validator("temperature")
    @classmethod
    def _positive_temperature(cls, value):
        values = value.values() if isinstance(value, dict) else [value] if isinstance(value, (int, float)) else []
        for t in values:
            if not (isinstance(t, (int, float)) and math.isfinite(t) and t > 0):
                raise ValueError(f"a temperature must be a finite number > 0 (got {t!r})")
        return value

    @field_validator("expert")
    @classmethod
    def _known_expert(cls, expert: str) -> str:
        parse_expert_name(expert)  # ValueError names the choices (no PoE stack, no torch)
        return expert


MAX_BATCH = 100_000
"""The most comparisons one round may select (a replay checks its ``--batch`` against it too)."""


class SelectionConfig(_Section):
    strategy: str = "lookahead"
    """reorder | variance | min_uncertainty | random | eps:<x> | diverse | lookahead."""
    batch: int = Field(default=4, ge=1, le=MAX_BATCH)
    """Comparisons chosen per posterior update (one round)."""
    panel: Literal["cost_aware", "all"] = "cost_aware"
    """With several judges: ``cost_aware`` asks each selected comparison of the judge with the most
    expected uncertainty reduction per unit of cost (``orchestrator.run.planners.cost``); ``all``
    asks every judge every comparison."""
    kinds: Literal["pairwise", "mixed"] = "pairwise"
    """``mixed``: absolute scores (``judging.absolute_template``) compete with comparisons by
    expected uncertainty reduction per unit of cost, for every judge (one judge too), instead of
    being only a warm start; ``pairwise``: comparisons only (after the optional warm start)."""
    only_with: list[str] = Field(default_factory=list)
    """Spend only on comparisons (and absolute scores) that involve one of these candidates:
    ``orchestrator extend`` sets it to the candidates it adds, so a grown leaderboard pays only to
    place the newcomers on the existing scale. Empty: every pair."""
    planner: str | None = Field(default=None, pattern=CLASS_SPEC.pattern)
    """``package.module:Class``: a campaign planner from outside the package (a subclass of
    :class:`orchestrator.run.planners.PlannerBase`) plans every round instead (docs/extending.md)."""

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, strategy: str) -> str:
        parse_strategy(strategy)  # ValueError names the choices (no PoE stack, no torch)
        return strategy


class BudgetConfig(_Section):
    max_calls: int | None = Field(default=None, gt=0)
    """Judge requests (a permutation-debiased pair is two)."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Prompt + completion tokens."""
    max_usd: float | None = Field(default=None, gt=0)
    max_answer_tokens: int | None = Field(default=None, gt=0)
    """Tokens the candidate models' generated answers may take (prompt + completion); they also
    count in ``max_tokens``."""
    max_answer_usd: float | None = Field(default=None, gt=0)
    """USD the candidate models' generated answers may cost; they also count in ``max_usd``."""


class StoppingConfig(_Section):
    """When a run stops before its budget (``orchestrator.poe.stopping``): by default when every
    neighbour pair of every ranking is in the right order up to ``tie_delta`` (indifference-zone
    error below ``max_error``) or a practical tie more calls would not settle."""

    rule: Literal["indifference", "budget"] = "indifference"
    """``indifference``: stop when every neighbour pair is settled (below); ``budget``: spend the
    budget (only the optional rules further down may stop earlier)."""
    max_error: float = Field(default=0.05, gt=0, lt=1)
    """A neighbour pair is resolved when P(misordered by more than ``tie_delta``) is below this."""
    tie_delta: float = Field(default=0.5, ge=0, le=10)
    """The indifference zone δ on the score scale: σ(δ) is the better candidate's win rate, so 0.5
    treats candidates as tied when the better one would win at most 62% of comparisons."""
    min_gain: float = Field(default=0.01, ge=0, lt=1)
    """A near pair (gap < δ) whose next comparison would lower its error by less than this is a
    practical tie: not worth another call."""
    top_k: int | None = Field(default=None, ge=1)
    """Only find the best k: the order within the top k and the boundary with rank k + 1."""
    stable_rounds: int | None = Field(default=None, ge=1)
    """Also stop once the ranking has not changed for this many rounds (rank stability)."""
    max_adjacent_reorder: float | None = Field(default=None, gt=0, lt=1)
    """Also stop when every neighbour pair is reordered with lower probability (PoE §4.3)."""
    entropy_target: float | None = None
    """Also stop when the posterior entropy of every ranking is below this."""


class DispatchConfig(_Section):
    concurrency: int = Field(default=4, ge=1, le=1024)
    """Judge calls in flight."""
    max_attempts: int = Field(default=6, ge=1, le=100)
    """Tries per request on rate limits, 5xx, timeouts and connection errors."""
    backoff_initial_s: float = Field(default=1.0, ge=0, le=3600)
    backoff_max_s: float = Field(default=60.0, ge=0, le=3600)
    pipeline_depth: int = Field(default=2, ge=1, le=8)
    """Rounds in flight: 1 waits for each round before selecting the next (fully adaptive); 2 selects
    the next round from the posterior one round behind while the current one is being judged, so
    the judges never wait for selection."""
    api_base: str | None = None
    """Send every judge to this OpenAI-compatible address (e.g. a running ``judge serve``)."""


class RunConfig(_Section):
    name: str = Field(default="", pattern=r"^[A-Za-z0-9_.-]*$", max_length=120)
    """Run name; the run file is ``<runs_dir>/<name>.sqlite`` (default: the config file's name)."""
    seed: int = Field(default=0, ge=0, lt=2**32)
    """Seeds tie-breaks and random choices (0 ≤ seed < 2³²)."""
    runs_dir: Path = Path("runs")
    """Relative to the current directory."""
    data: DataConfig
    judging: JudgingConfig = Field(default_factory=JudgingConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    selection: SelectionConfig = Field(default_factory=SelectionConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    stopping: StoppingConfig = Field(default_factory=StoppingConfig)
    dispatch: DispatchConfig = Field(default_factory=DispatchConfig)
    reference: ReferenceConfig | None = None
    """Set to run a reference-anchored campaign instead of PoE pairwise selection."""
    absolute: AbsoluteConfig | None = None
    """Set to run an absolute-scoring campaign (for the simplex model) instead of PoE selection."""
    compare: CompareConfig | None = None
    """Set to compare two systems head to head with a decision (:mod:`.compare_config`)."""
    candidates: dict[str, CandidateModel] = Field(default_factory=dict)
    """Candidates that are models (``[candidates.NAME] model = "…"``): their answers are generated
    the first time a planned request needs one (:mod:`orchestrator.generation`), beside the
    candidates whose texts the responses file holds."""
    planner_tables: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """With ``selection.planner``: the config's other tables (``[every-pair]``…), which the campaign
    kind from outside the package reads (its ``[<kind>]`` section); without one, any table the
    config does not know is refused."""
    config_dir: Path | None = None
    """The folder the config file was read from (set when it is read, stored with the run): judge
    profiles (``judges/``), templates (``prompts/``) and the modules the config and its profiles
    name are looked up beside it first, as its data paths are."""

    @model_validator(mode="before")
    @classmethod
    def _outside_tables(cls, data: Any) -> Any:
        """A campaign kind from outside the package reads tables of its own: with
        ``selection.planner`` set, tables the config does not know are kept for it."""
        if not isinstance(data, dict) or not isinstance(data.get("selection"), dict) or not data["selection"].get("planner"):
            return data
        own = set(cls.model_fields)
        tables = {k: v for k, v in data.items() if k not in own and isinstance(v, dict)}
        if not tables:
            return data
        return {**{k: v for k, v in data.items() if k not in tables}, "planner_tables": {**data.get("planner_tables", {}), **tables}}

    def beside(self, folder: str) -> list[Path]:
        """``folder`` beside the config file, where the config's profiles (``judges``) and templates
        (``prompts``) are looked up first (empty for a config that was not read from a file)."""
        return [self.config_dir / folder] if self.config_dir is not None else []

    @field_validator("candidates")
    @classmethod
    def _candidate_names(cls, candidates: dict[str, CandidateModel]) -> dict[str, CandidateModel]:
        for name in candidates:
            check_identifier(name)
        return candidates

    @model_validator(mode="after")
    def _one_campaign(self) -> "RunConfig":
        if self.data.responses is None and not self.candidates:
            raise ValueError("data.responses: give a responses file, or candidates that are models ([candidates.NAME] model = ...)")
        if sum(s is not None for s in (self.reference, self.absolute, self.compare)) > 1:
            raise ValueError("[reference], [absolute] and [compare] are different campaigns; a run has at most one")
        if self.model.temperature == "fit" and not self.data.truth:
            raise ValueError('model.temperature = "fit" fits each judge on the truth scores: set data.truth')
        text = [c for c in self.model.control if c != "self"]
        if self.model.control and self.campaign != "poe":
            raise ValueError(
                f"model.control = {self.model.control} is for PoE campaigns (pairwise and absolute experts); a reference campaign: "
                "`orchestrator fit raee --control length` or `--control self`"
            )
        if text and self.candidates:
            raise ValueError(
                f"model.control = {text} reads every answer's text before the first round; candidates that are models "
                "answer only when asked: drop one of the two"
            )
        if text and self.data.scope != "global":
            raise ValueError(
                f'model.control = {text} needs data.scope = "global" (a candidate\'s length and style vary across prompts there; '
                "within one prompt they cannot be told from quality)"
            )
        if self.model.families and "self" not in self.model.control:
            raise ValueError(
                'model.families is for model.control = ["self"] (a judge\'s preference for its model family); add it or drop the families'
            )
        if "self" in self.model.control:
            problem = family_problem(
                self.model.families,
                self.judging.judges,
                None,
                where="model.families",
                control='model.control = ["self"]',
                every_judge=False,
            )
            if problem:
                raise ValueError(problem)
        return self

    @property
    def campaign(self) -> Literal["poe", "reference", "absolute", "compare"]:
        """The run's campaign kind, the tag of its planner (:mod:`orchestrator.run.planners`): the
        ``[reference]`` or ``[absolute]`` section when one is given, else PoE pair selection."""
        if self.reference is not None:
            return "reference"
        if self.absolute is not None:
            return "absolute"
        return "compare" if self.compare is not None else "poe"

    @property
    def run_path(self) -> Path:
        return self.runs_dir / f"{self.name}.sqlite"

    def to_json(self) -> dict:
        return self.model_dump(mode="json")

    @classmethod
    def from_stored(cls, stored: dict) -> "RunConfig":
        """The config a run file holds. A run made before a model or stopping feature existed keeps
        the behaviour it was made with (no per-judge reliability, spend the budget), so resuming it
        plans what it would have planned.

        Raises:
            OrchestratorError: the stored config is not one this version can read.
        """
        data = {key: dict(value) if isinstance(value, dict) else value for key, value in stored.items()}
        data.setdefault("model", {}).setdefault("judge_reliability", False)
        data.setdefault("stopping", {}).setdefault("rule", "budget")
        if isinstance(data.get("compare"), dict):  # a comparison made before designs: the anytime sequence it ran
            data["compare"] = {"design": "anytime", **data["compare"]}
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise OrchestratorError(f"the run file's config cannot be read by this version ({where}: {first['msg']})") from None


def load_config(path: str | Path) -> RunConfig:
    """Load a run config; dataset paths become relative to the config file.

    Raises:
        OrchestratorError: unreadable or invalid TOML, naming the file and the field.
    """
    path = Path(path)
    if not path.is_file():
        raise OrchestratorError(f"{path}: no such config file")
    config = load_toml_model(path, RunConfig, "run config", name_is_file_name=False)
    base = path.resolve().parent
    data = config.data.model_copy(
        update={
            "prompts": config.data.prompts if config.data.prompts.is_absolute() else base / config.data.prompts,
            "responses": None
            if config.data.responses is None
            else config.data.responses
            if config.data.responses.is_absolute()
            else base / config.data.responses,
        }
    )
    update: dict = {"data": data, "name": config.name or path.stem, "config_dir": base}
    if config.reference is not None and config.reference.board is not None and not config.reference.board.is_absolute():
        update["reference"] = config.reference.model_copy(update={"board": base / config.reference.board})
    if config.compare is not None and config.compare.baseline_run is not None and not config.compare.baseline_run.is_absolute():
        update["compare"] = config.compare.model_copy(update={"baseline_run": base / config.compare.baseline_run})
    return config.model_copy(update=update)
