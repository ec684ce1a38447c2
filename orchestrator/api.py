"""The public Python API: one function per CLI command, with the CLI's argument names.

``orchestrator run CONFIG --runs-dir D`` is ``start(CONFIG, runs_dir=D)``, ``orchestrator fit raee
--log FILE --judge J`` is ``fit_raee(log=FILE, judge=[J])``, and so on; the CLI (``cli.py``) only
parses, calls one of these and prints. Every function raises :class:`OrchestratorError` (one line
for a person) on bad input, and nothing else on user error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, cast

from .errors import OrchestratorError

__all__ = [
    "start",
    "dry_run",
    "resume",
    "extend",
    "status",
    "ranking",
    "report",
    "calibrate",
    "export",
    "replay",
    "fit_raee",
    "fit_simplex",
    "cache_stats",
    "cache_prune",
    "cache_import",
]


def _config(config: str | Path | Any, runs_dir: str | Path | None):
    from .records.config import RunConfig, load_config

    cfg = config if isinstance(config, RunConfig) else load_config(config)
    return cfg.model_copy(update={"runs_dir": Path(runs_dir)}) if runs_dir is not None else cfg


def start(
    config: str | Path | Any,
    *,
    runs_dir: str | Path | None = None,
    progress: Callable | None = None,
    judges: dict | None = None,
    from_log: str | Path | None = None,
    cache: str | Path | bool | None = None,
    pilot: int | None = None,
) -> tuple[Path, str]:
    """Create a run from a config (a TOML path or a loaded ``RunConfig``) and run it to its end.

    Returns ``(run file, stop reason)``. ``judges`` injects judges by profile name (tests, custom
    providers); ``from_log`` answers every request from a judgment log instead (the same engine,
    no network: a run's config on its own export reproduces the run); ``progress`` receives :class:`~orchestrator.run.engine.RunEvent` objects;
    ``cache``: the judgment cache shared by runs (``None``: the default file, ``$ORCHESTRATOR_JUDGMENT_CACHE``
    or the user cache directory; a path; ``False``: none) — requests it answers cost nothing;
    ``pilot``: stop after this many calls (resumable) with the forecast of the whole run's cost.

    Raises:
        OrchestratorError: a problem with the config, data, judges or budget (nothing is written).
        RunFailed: no judgment succeeded; the run file is kept and marked ``failed``.
    """
    from . import runs

    return runs.start(_config(config, runs_dir), progress=progress, judges=judges, from_log=from_log, cache=cache, pilot=pilot)


def dry_run(config: str | Path | Any, *, runs_dir: str | Path | None = None, smoke: bool = False) -> dict:
    """What ``start`` would ask at most and its worst-case tokens and cost; writes nothing. Runs
        exactly the checks ``start`` runs before it creates the run file (a run file of that name
    refused too). ``smoke``: also send one real
        request per judge and template (``orchestrator run --dry-run`` does, unless ``--offline``) and
        return what each answered under ``"smoke"``."""
    from . import runs

    cfg = _config(config, runs_dir)
    runs.check_new_run(cfg)
    prepared = runs.prepare(cfg)
    estimate = runs.dry_run(prepared)
    if smoke:
        estimate["smoke"] = runs.smoke(prepared)
    return estimate


def resume(
    run: str | Path,
    *,
    api_base: str | None = None,
    progress: Callable | None = None,
    judges: dict | None = None,
    cache: str | Path | bool | None = None,
) -> str | None:
    """Continue an interrupted (or failed) run; the stop reason, or None when it had finished
    (``cache`` as in :func:`start`)."""
    from . import runs

    return runs.resume(run, progress=progress, judges=judges, api_base=api_base, cache=cache)


def extend(
    run: str | Path,
    *,
    responses: str | Path,
    prompts: str | Path | None = None,
    add_calls: int | None = None,
    add_usd: float | None = None,
    add_tokens: int | None = None,
    progress: Callable | None = None,
    judges: dict | None = None,
    cache: str | Path | bool | None = None,
) -> tuple[list[str], str | None]:
    """Add candidates (``responses``) or prompts to a run and go on, paying only for comparisons
    that involve the new candidates; ``(new candidates, stop reason)``. ``add_*`` raise the budget's
    limits; a spent limit that is not raised, or an extension that made no judgment, is an error."""
    from . import runs

    return runs.extend(
        run,
        responses=responses,
        prompts=prompts,
        add_calls=add_calls,
        add_usd=add_usd,
        add_tokens=add_tokens,
        progress=progress,
        judges=judges,
        cache=cache,
    )


def status(run: str | Path) -> dict:
    """Budget spent, rounds, requests, failures, the current ranking's uncertainty (a dict, as
    ``orchestrator status --json`` prints it)."""
    from .offline import results  # reading a run: not the engine's imports

    return results.status(run)


def ranking(run: str | Path, *, level: float = 0.95) -> dict:
    """Every group's ranking with ``level`` rank intervals (as ``orchestrator rank --json``)."""
    from .offline import results  # reading a run: not the engine's imports

    if not 0 < level < 1:
        raise OrchestratorError(f"level must be in (0, 1) (got {level})")
    return results.ranking(run, level=level)


def report(run: str | Path, *, out: str | Path) -> Path | None:
    """Write the self-contained HTML report of a run (``orchestrator report``) to ``out``."""
    from .report import write_report

    return write_report(run, out)


def calibrate(
    run: str | Path | None = None, *, log: str | Path | None = None, responses: str | Path | None = None, truth: str | None = None
):
    """Each judge's temperature, ECE before and after, reliability bins (``orchestrator calibrate``):
    a list of :class:`~orchestrator.run.calibration.Calibration`."""
    from .offline.calibrate import calibrate_source

    source, is_log = _source(run, log)
    return calibrate_source(None if is_log else source, source if is_log else None, responses, truth)


def export(run: str | Path, *, out: str | Path, fmt: str = "jsonl", include_failed: bool = False) -> int:
    """Write the run's judgments (``jsonl``: the judgment log ``replay`` reads; ``csv``; ``parquet``)
    to ``out`` (``-`` = standard output); the number of judgments written."""
    from . import runs

    return runs.export(run, fmt, out, include_failed=include_failed)


def replay(
    log: str | Path,
    *,
    responses: str | Path | None = None,
    truth: str | None = None,
    strategy: str = "lookahead",
    scope: str = "per_prompt",
    expert: str = "soft_bt",
    debias: str = "none",
    batch: int = 1,
    seeds: int = 1,
    seed: int = 0,
    budget: int | None = None,
    judge: str | None = None,
    with_absolute: bool = False,
    judge_reliability: bool = True,
    panel: str = "cost_aware",
    posterior: str = "auto",
    control: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
):
    """Replay a selection strategy on a judgment log; a :class:`~orchestrator.offline.replay.ReplayReport`
    (``.to_json()`` is ``orchestrator replay --json``); ``control=["length"]``: each judge's length
    taste fitted with the scores (``scope="global"``, responses with texts)."""
    from .offline.replay import ReplaySettings, replay_files

    settings = ReplaySettings(
        strategy=strategy,
        scope=scope,
        expert=expert,
        debias=debias,
        batch=batch,
        budget=budget,
        seeds=seeds,
        seed=seed,
        with_absolute=with_absolute,
        judge_reliability=judge_reliability,
        panel=panel,
        posterior=posterior,
        control=tuple(control or ()),
    )
    return replay_files(log, responses, truth, settings, judge=judge, progress=progress)


def judges(
    run: str | Path | None = None,
    *,
    log: str | Path | None = None,
    human: str | Path,
    responses: str | Path | None = None,
    margin: float = 0.02,
    draws: int = 500,
) -> dict:
    """The judges of a run or a log against people's labels (``orchestrator judges --json``):
    :func:`orchestrator.offline.judge_board.judge_board`."""
    import tempfile

    from .offline.human_labels import load_human_labels
    from .offline.judge_board import judge_board
    from .offline.length_control import response_texts, run_texts
    from .records.log import load_log

    if not 0 <= margin < 1:
        raise OrchestratorError(f"--margin must be in [0, 1) (got {margin:g})")
    source, is_log = _source(run, log)
    labels = load_human_labels(human)
    if is_log:
        records = [r for _, r in load_log(source)]
        texts = response_texts(responses) if responses is not None else {}
    else:
        from .offline.export import export

        with tempfile.TemporaryDirectory() as tmp:
            export(source, "jsonl", Path(tmp) / "judgments.jsonl")
            records = [r for _, r in load_log(Path(tmp) / "judgments.jsonl")]
        texts = response_texts(responses) if responses is not None else run_texts(source)
    lengths = {key: len(text) for key, text in texts.items()}
    return judge_board(records, labels, lengths=lengths, margin=margin, draws=draws)


def _source(run: str | Path | None, log: str | Path | None) -> tuple[Path, bool]:
    if (run is None) == (log is None):
        raise OrchestratorError("give a run file or --log FILE.jsonl (exactly one)")
    return Path(run or log), log is not None  # type: ignore[arg-type]


def fit_raee(
    run: str | Path | None = None,
    *,
    log: str | Path | None = None,
    judge: list[str] | None = None,
    soft: bool = False,
    level: float = 0.95,
    population: int | None = None,
    icc_threshold: float = 0.9,
    abstain_sd: float | None = None,
    pool_all: bool = False,
    control: list[str] | None = None,
    responses: str | Path | None = None,
    flag_shift: float | None = None,
):
    """RAEE on a run file or a judgment log (``log=``): a :class:`~orchestrator.raee.RaeeReport`;
    ``control=["length"]`` with ``responses`` adds length-controlled win rates and flags."""
    from .offline.fit_raee import fit_raee as fit

    source, is_log = _source(run, log)
    if population is not None and population < 1:
        raise OrchestratorError(f"--population must be at least 1 (got {population})")
    return fit(
        source,
        log=is_log,
        soft=soft,
        judges=judge or None,
        level=level,
        population=population,
        icc_threshold=icc_threshold,
        abstain_sd=abstain_sd,
        pool_all=pool_all,
        control=control,
        responses=responses,
        flag_shift=flag_shift,
    )


def fit_simplex(
    run: str | Path | None = None,
    *,
    log: str | Path | None = None,
    levels: int,
    omega: float | None = 1.0,
    beta_max: float | None = 5.0,
    delta: tuple[float, ...] | None = None,
    self_judging: str | dict | None = None,
    self_preference: str = "exclude",
    soft: bool = False,
    judge: list[str] | None = None,
    sweep: bool = False,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    seed: int = 0,
    truth: dict[str, float] | None = None,
    truth_field: str | None = None,
    level: float = 0.95,
    progress: bool = False,
    sweep_progress: Callable[[str], None] | None = None,
    count_weight: float | None = None,
    likelihood: str = "counts",
    fallback: bool = True,
    human: str | Path | None = None,
):
    """The Bayesian simplex model on a run file or a log: ``(report, fit, data, extra)``; ``omega``
    or ``beta_max`` None integrates it over its hyperprior (``--omega prior``); ``count_weight``
    None discounts the counts by the judges' design effect, 1 is the paper's likelihood;
    ``likelihood`` ``"answers"`` shares one latent true score among the judges of an answer;
    ``fallback`` refits with constancy (ω = 0) when the chains disagree on the ranking
    (:func:`~orchestrator.simplex.inference.fit_or_fallback`); ``human``: a labels JSONL whose
    absolute scores are the true levels of the answers they label (docs/human-labels.md)."""
    from .offline.fit_simplex import run_simplex
    from .simplex import SimplexSettings

    source, is_log = _source(run, log)
    if self_preference not in ("exclude", "shift"):
        raise OrchestratorError(f"--self-preference must be 'exclude' or 'shift' (got {self_preference!r})")
    if likelihood not in ("counts", "answers"):
        raise OrchestratorError(f"--likelihood must be 'counts' or 'answers' (got {likelihood!r})")
    settings = SimplexSettings(
        omega=omega,
        beta_max=beta_max,
        delta=delta,
        self_preference=cast(Any, self_preference),
        soft=soft,
        chains=chains,
        warmup=warmup,
        draws=draws,
        seed=seed,
        count_weight=count_weight,
        likelihood=cast(Any, likelihood),
    )
    return run_simplex(
        source,
        log=is_log,
        levels=levels,
        settings=settings,
        judges=judge or None,
        self_judging=self_judging,
        sweep=sweep,
        truth=truth,
        truth_field=truth_field,
        level=level,
        progress=progress,
        sweep_progress=sweep_progress,
        fallback=fallback,
        human=human,
    )


def cache_stats(cache: str | Path | None = None) -> dict:
    """``orchestrator cache stats --json``: :func:`orchestrator.offline.cache_admin.cache_stats`."""
    from .offline.cache_admin import cache_stats as stats

    return stats(cache)


def cache_prune(cache: str | Path | None = None, *, older_than: float | None = None, model: str | None = None, everything: bool = False):
    """``orchestrator cache prune``; ``(removed, left)``."""
    from .offline.cache_admin import cache_prune as prune

    return prune(cache, older_than=older_than, model=model, everything=everything)


def cache_import(source: str | Path, cache: str | Path | None = None, **log_options):
    """``orchestrator cache import``: :func:`orchestrator.offline.cache_admin.cache_import`."""
    from .offline.cache_admin import cache_import as fill

    return fill(source, cache, **log_options)
