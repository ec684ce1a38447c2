"""The public API's run lifecycle: start, dry run, resume, extend, status, ranking, report, export."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import OrchestratorError

if TYPE_CHECKING:
    from ..records.reports import Ranking, Status


def interrupts_while_starting() -> Any:
    """A context for a command's whole life: a Ctrl-C while it is still starting (imports, checks)
    stops it there and is remembered, so a run that starts after one drains at once
    (:func:`orchestrator.run.signals.early_interrupts`)."""
    from ..run.signals import early_interrupts

    return early_interrupts()


def load_config(config: str | Path | Any, runs_dir: str | Path | None = None):
    """A run config (``RunConfig``) from a TOML file (or one already loaded), checked, with its
    ``runs_dir`` replaced when given (``--runs-dir``)."""
    from ..records.config import RunConfig
    from ..records.config import load_config as load

    cfg = config if isinstance(config, RunConfig) else load(config)
    board_attachments(cfg)  # a board that cannot serve is one line now, not at `rank`
    return cfg.model_copy(update={"runs_dir": Path(runs_dir)}) if runs_dir is not None else cfg


def run_attachments(cfg: Any) -> dict[str, dict] | None:
    """Inputs the run file keeps whole: its ``[reference] board`` and a compare's ``baseline_run``."""
    kept = board_attachments(cfg) or {}
    if cfg.compare is not None and cfg.compare.baseline_run is not None and cfg.compare.anchor is not None:
        from ..run.planners.compare_anchor import anchor_name, baseline_snapshot

        kept["baseline"] = baseline_snapshot(cfg.compare.baseline_run, cfg.compare.baseline, anchor_name(cfg.compare.anchor))
    return kept or None


def board_attachments(cfg: Any) -> dict[str, dict] | None:
    """The run file's copy of its ``[reference] board`` (None without one), checked against the
    run's data: readable, the run's anchor on it, a prompt in common, none of the run's candidates
    on it already (:func:`~orchestrator.offline.raee.board_placement.check_board_against_data`)."""
    if cfg.reference is None or cfg.reference.board is None:
        return None
    from ..offline.raee.board_placement import board_snapshot, check_board_against_data
    from ..records.dataset import DATASET_ANCHOR, load_dataset

    anchor = DATASET_ANCHOR if cfg.reference.anchor == "dataset" else cfg.reference.anchor
    snapshot = board_snapshot(cfg.reference.board, anchor, soft=cfg.reference.soft)
    dataset = load_dataset(cfg.data.prompts, cfg.data.responses, min_candidates=1, models=list(cfg.candidates))
    candidates = {c for by in dataset.responses.values() for c in by}
    check_board_against_data(cfg.reference.board, snapshot, set(dataset.prompts), candidates, anchor)
    return {"board": snapshot}


def start(
    config: str | Path | Any,
    *,
    runs_dir: str | Path | None = None,
    progress: Callable | None = None,
    judges: dict | None = None,
    from_log: str | Path | None = None,
    cache: str | Path | bool | None = None,
    pilot: int | None = None,
    answers_from: str | Path | None = None,
) -> tuple[Path, str]:
    """Create a run from a config (a TOML path or a loaded ``RunConfig``) and run it to its end.

    Returns ``(run file, stop reason)``. ``judges`` injects judges by profile name (tests, custom
    providers); ``from_log`` answers every request from a judgment log instead (the same engine,
    no network: a run's config on its own export reproduces the run); ``progress`` receives :class:`~orchestrator.run.events.RunEvent` objects;
    ``cache``: the judgment cache shared by runs (``None``: the default file, ``$ORCHESTRATOR_JUDGMENT_CACHE``
    or the user cache directory; a path; ``False``: none) — requests it answers cost nothing;
    ``pilot``: stop after this many calls (resumable) with the forecast of the whole run's cost;
    ``answers_from``: the candidate models' answers from this file of texts instead of their models.

    Raises:
        OrchestratorError: a problem with the config, data, judges or budget (nothing is written).
        RunFailed: no judgment succeeded; the run file is kept and marked ``failed``.
    """
    from ..run.service import start as start_run

    cfg = load_config(config, runs_dir)
    attachments = run_attachments(cfg)
    return start_run(
        cfg,
        progress=progress,
        judges=judges,
        from_log=from_log,
        cache=cache,
        pilot=pilot,
        attachments=attachments,
        answers_from=answers_from,
    )


def dry_run(config: str | Path | Any, *, runs_dir: str | Path | None = None, smoke: bool = False) -> dict:
    """What ``start`` would ask at most and its worst-case tokens and cost; writes nothing. Runs
        exactly the checks ``start`` runs before it creates the run file (a run file of that name
    refused too). ``smoke``: also send one real
        request per judge and template (``orchestrator run --dry-run`` does, unless ``--offline``) and
        return what each answered under ``"smoke"``."""
    from ..run import preparation

    cfg = load_config(config, runs_dir)
    preparation.check_new_run(cfg)
    prepared = preparation.prepare(cfg)
    estimate = preparation.dry_run(prepared)
    if smoke and cfg.candidates:  # the candidate models first: a judge's smoke call shows their answers
        estimate["generation"] = preparation.smoke_candidates(prepared)
    if smoke:
        estimate["smoke"] = preparation.smoke(prepared)
    return estimate


def resume(
    run: str | Path,
    *,
    api_base: str | None = None,
    progress: Callable | None = None,
    judges: dict | None = None,
    cache: str | Path | bool | None = None,
    answers_from: str | Path | None = None,
    allow_changed: bool = False,
) -> str | None:
    """Continue an interrupted (or failed) run; the stop reason, or None when it had finished
    (``cache`` and ``answers_from`` as in :func:`start`; ``allow_changed``: go on although a
    candidate model's settings changed since its answers were generated)."""
    from ..run.service import resume as resume_run

    return resume_run(
        run, progress=progress, judges=judges, api_base=api_base, cache=cache, answers_from=answers_from, allow_changed=allow_changed
    )


def status(run: str | Path) -> Status:
    """Budget spent, rounds, requests, failures, why it stopped, the current ranking's uncertainty:
    the record ``orchestrator status --json`` prints (``.model_dump()`` for a dict)."""
    from ..offline.runs import results  # reading a run: not the engine's imports
    from ..records.reports import Status

    return Status.model_validate(results.status(run))


def ranking(run: str | Path, *, level: float = 0.95) -> Ranking:
    """Every group's ranking with ``level`` rank intervals: the record ``orchestrator rank --json``
    prints (``.model_dump()`` for a dict)."""
    from ..offline.runs import results  # reading a run: not the engine's imports
    from ..records.reports import Ranking

    if not 0 < level < 1:
        raise OrchestratorError(f"level must be in (0, 1) (got {level})")
    return Ranking.model_validate(results.ranking(run, level=level))


def report(run: str | Path, *, out: str | Path, data: Any = None) -> Path | None:
    """Write the self-contained HTML report of a run (``orchestrator report``) to ``out``
    (``data``: what :func:`summary` collected, so a run's end reads the run file once)."""
    from ..report import write_report

    return write_report(run, out, data=data)


def summary(run: str | Path) -> tuple[str, Any]:
    """The paragraph a run ends with (what it found, what is uncertain, what it spent) and the
    report's data it was written from (for :func:`report`)."""
    from ..report import collect, summary_text

    data = collect(run)
    return summary_text(data), data


def export(run: str | Path, *, out: str | Path, fmt: str = "jsonl", include_failed: bool = False, with_text: bool = False) -> int:
    """Write the run's judgments (``jsonl``: the judgment log ``replay`` reads; ``csv``/``parquet``:
    tidy, one row per judgment with ``first``, ``second``, ``winner`` or ``score`` and a column per
    option, the judge's words with ``with_text``; ``answers``: the candidate models' generated
    answers with their provenance, readable by ``run --answers-from``) to ``out`` (``-`` = standard
    output); the number of rows written."""
    from ..offline.runs.export import export as export_log

    if fmt == "answers" and (with_text or include_failed):
        raise OrchestratorError("--format answers writes the generated answers whole; --with-text and --include-failed are for judgments")
    if with_text and fmt == "jsonl":
        raise OrchestratorError("--with-text is for --format csv or parquet (the JSONL log always holds the judge's words)")
    return export_log(run, fmt, out, include_failed=include_failed, with_text=with_text)
