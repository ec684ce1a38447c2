"""``orchestrator compare``: is the candidate better than the baseline? A ``[compare]`` campaign run
to its decision, and the decision with its exit code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import OrchestratorError

if TYPE_CHECKING:
    from ..records.reports import Comparison

__all__ = ["REQUIRE", "compare", "compare_plan", "junit_xml"]

REQUIRE = ("better", "not-worse")
DESIGNS = ("anytime", "planned")


def compare(
    config: str | Path | Any,
    *,
    runs_dir: str | Path | None = None,
    margin: float | None = None,
    alpha: float | None = None,
    max_calls: int | None = None,
    require: str | None = None,
    design: str | None = None,
    progress: Callable | None = None,
    judges: dict | None = None,
    from_log: str | Path | None = None,
    cache: str | Path | bool | None = None,
    baseline_run: str | Path | None = None,
    answers_from: str | Path | None = None,
) -> tuple[Path, Comparison]:
    """Run the config's ``[compare]`` campaign until its decision (or the budget) and return ``(run
    file, decision)``: the record ``compare --json`` prints (``.model_dump()`` for a dict). ``margin``, ``alpha``,
    ``require``, ``design`` and ``max_calls`` replace the config's; ``baseline_run`` (``--baseline RUN``): the baseline's judgments
    against the anchor come from that earlier run (the anchor, unless the config names one, is the run's);
    ``answers_from``: the candidate models' answers from a file of texts (:func:`start`).

    Raises:
        OrchestratorError: no ``[compare]`` section, a bad option, or any problem ``start`` refuses."""
    from ..offline.runs.comparison import comparison
    from ..records.reports import Comparison
    from .lifecycle import start

    cfg = _with_options(config, runs_dir, margin, alpha, max_calls, require, design, baseline_run)
    path, _ = start(cfg, progress=progress, judges=judges, from_log=from_log, cache=cache, answers_from=answers_from)
    return path, Comparison.model_validate({"run": str(path), **comparison(path)})


def compare_plan(
    config: str | Path | Any,
    *,
    runs_dir: str | Path | None = None,
    margin: float | None = None,
    alpha: float | None = None,
    max_calls: int | None = None,
    require: str | None = None,
    design: str | None = None,
    baseline_run: str | Path | None = None,
    effect: float = 3.0,
    spread: float | None = None,
    spread_from: str | Path | None = None,
) -> dict[str, Any]:
    """What a comparison needs before anything is paid (``compare --plan``): the prompts a fixed-size
    paired test needs for a power of 0.8 at a true difference of ``effect`` points beyond the margin,
    what each design needs at most for the same power, the most prompts this config's budget and
    data allow, and the decisions within reach of it. The outcomes' spread is ``spread``, measured
    on an earlier comparison's run file (``spread_from``: a pilot), or assumed (and said so).

    Raises:
        OrchestratorError: as :func:`compare`, a spread that is not a number in (0, 0.5], or an
            effect that is not above 0."""
    import math

    from ..offline.runs.comparison import outcome_spread
    from ..run.planners.compare_plan import gate_plan_report
    from ..run.preparation import prepare

    if not (math.isfinite(effect) and effect > 0):
        raise OrchestratorError(f"--effect must be a number of points above 0 (got {effect})")
    if spread is not None and not (math.isfinite(spread) and 0 < spread <= 0.5):
        raise OrchestratorError(f"--spread must be in (0, 0.5]: outcomes lie in [0, 1] (got {spread})")
    if spread is not None and spread_from is not None:
        raise OrchestratorError("--spread and --spread-from exclude each other")
    cfg = _with_options(config, runs_dir, margin, alpha, max_calls, require, design, baseline_run)
    source, measured_on = ("assumed", 0)
    if spread_from is not None:
        spread, measured_on = outcome_spread(spread_from)
        source = f"measured on {measured_on} prompts of {spread_from}"
    elif spread is not None:
        source = "given"
    prepared = prepare(cfg, need_keys=False, plan_only=True)
    return gate_plan_report(prepared.config, effect=effect, spread=spread, spread_from=source, costs=prepared.prompt_costs)


def _with_options(config, runs_dir, margin, alpha, max_calls, require, design, baseline_run) -> Any:
    """The config with the command's options in its ``[compare]`` section and budget, checked.

    Raises:
        OrchestratorError: no ``[compare]`` section, or an option out of range (one line naming it)."""
    from .lifecycle import load_config

    if require is not None and require not in REQUIRE:
        raise OrchestratorError(f"--require must be one of {', '.join(REQUIRE)} (got {require!r})")
    if design is not None and design not in DESIGNS:
        raise OrchestratorError(f"--design must be one of {', '.join(DESIGNS)} (got {design!r})")
    cfg = load_config(config, runs_dir)
    if cfg.compare is None:
        raise OrchestratorError("this config has no [compare] section: give compare.candidate and compare.baseline (docs/compare.md)")
    section: dict[str, Any] = {
        k: v for k, v in (("margin", margin), ("alpha", alpha), ("require", require), ("design", design)) if v is not None
    }
    if baseline_run is not None:
        section["baseline_run"] = Path(baseline_run)
        section["anchor"] = cfg.compare.anchor or _anchor_of(Path(baseline_run))
    try:
        checked = type(cfg.compare).model_validate({**cfg.compare.model_dump(), **section})
        budget = type(cfg.budget).model_validate({**cfg.budget.model_dump(), **({"max_calls": max_calls} if max_calls is not None else {})})
    except ValueError as exc:  # pydantic's ValidationError: one line naming the option
        first = exc.errors()[0] if hasattr(exc, "errors") else {"loc": ("?",), "msg": str(exc)}  # type: ignore[union-attr]
        option = {"margin": "--margin", "alpha": "--alpha", "max_calls": "--max-calls", "baseline_run": "--baseline"}.get(
            str(first["loc"][0]), str(first["loc"][0])
        )
        raise OrchestratorError(f"{option}: {first['msg']}") from None
    return cfg.model_copy(update={"compare": checked, "budget": budget})


def _anchor_of(run: Path) -> str:
    """The anchor an earlier run judged its candidates against (its ``[reference]`` or ``[compare]`` anchor).

    Raises:
        OrchestratorError: not a run file, or a run with no anchor."""
    from ..records.config import RunConfig
    from ..store import open_run

    if not run.is_file():
        raise OrchestratorError(f"--baseline: {run}: no such run file")
    with open_run(run, write=False) as store:
        config = RunConfig.from_stored(store.config)
    if config.reference is not None:
        return config.reference.anchor
    if config.compare is not None and config.compare.anchor is not None:
        return config.compare.anchor
    raise OrchestratorError(f"--baseline: {run} judged nothing against an anchor (a reference campaign's run file is needed)")


def junit_xml(result: Comparison) -> str:
    """The decision as JUnit XML (one test case; a failure unless its exit code is 0), for CI
    systems that read test reports."""
    from xml.sax.saxutils import escape, quoteattr

    name = f"{result.candidate} vs {result.baseline}"
    failed = result.exit_code != 0
    body = escape(result.sentence)
    case = f"    <testcase classname={quoteattr('orchestrator.compare')} name={quoteattr(name)}>\n"
    if failed:
        case += f"      <failure message={quoteattr(result.decision)} type={quoteattr('decision')}>{body}</failure>\n"
    case += f"      <system-out>{body}</system-out>\n    </testcase>\n"
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites>\n  <testsuite name={quoteattr("orchestrator compare")} tests="1" failures="{int(failed)}" errors="0">\n'
        f"{case}  </testsuite>\n</testsuites>\n"
    )
