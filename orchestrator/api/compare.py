"""``orchestrator compare``: is the candidate better than the baseline? A ``[compare]`` campaign run
to its decision, and the decision with its exit code."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..errors import OrchestratorError

__all__ = ["REQUIRE", "compare", "junit_xml"]

REQUIRE = ("better", "not-worse")


def compare(
    config: str | Path | Any,
    *,
    runs_dir: str | Path | None = None,
    margin: float | None = None,
    alpha: float | None = None,
    max_calls: int | None = None,
    require: str | None = None,
    progress: Callable | None = None,
    judges: dict | None = None,
    from_log: str | Path | None = None,
    cache: str | Path | bool | None = None,
    baseline_run: str | Path | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Run the config's ``[compare]`` campaign until its decision (or the budget) and return ``(run
    file, decision)`` (:func:`orchestrator.offline.runs.comparison.comparison`). ``margin``, ``alpha``,
    ``require`` and ``max_calls`` replace the config's; ``baseline_run`` (``--baseline RUN``): the baseline's judgments
    against the anchor come from that earlier run (the anchor, unless the config names one, is the run's).

    Raises:
        OrchestratorError: no ``[compare]`` section, a bad option, or any problem ``start`` refuses."""
    from ..offline.runs.comparison import comparison
    from .lifecycle import load_config, start

    if require is not None and require not in REQUIRE:
        raise OrchestratorError(f"--require must be one of {', '.join(REQUIRE)} (got {require!r})")
    cfg = load_config(config, runs_dir)
    if cfg.compare is None:
        raise OrchestratorError("this config has no [compare] section: give compare.candidate and compare.baseline (docs/compare.md)")
    section: dict[str, Any] = {}
    if margin is not None:
        section["margin"] = margin
    if alpha is not None:
        section["alpha"] = alpha
    if require is not None:
        section["require"] = require
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
    cfg = cfg.model_copy(update={"compare": checked, "budget": budget})
    path, _ = start(cfg, progress=progress, judges=judges, from_log=from_log, cache=cache)
    return path, comparison(path)


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


def junit_xml(result: dict[str, Any]) -> str:
    """The decision as JUnit XML (one test case; a failure unless its exit code is 0), for CI
    systems that read test reports."""
    from xml.sax.saxutils import escape, quoteattr

    name = f"{result['candidate']} vs {result['baseline']}"
    failed = result["exit_code"] != 0
    body = escape(result["sentence"])
    case = f"    <testcase classname={quoteattr('orchestrator.compare')} name={quoteattr(name)}>\n"
    if failed:
        case += f"      <failure message={quoteattr(result['decision'])} type={quoteattr('decision')}>{body}</failure>\n"
    case += f"      <system-out>{body}</system-out>\n    </testcase>\n"
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites>\n  <testsuite name={quoteattr("orchestrator compare")} tests="1" failures="{int(failed)}" errors="0">\n'
        f"{case}  </testsuite>\n</testsuites>\n"
    )
