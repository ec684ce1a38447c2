"""The public API's offline analyses: calibration, replay, judges against people, RAEE and simplex fits."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import OrchestratorError

if TYPE_CHECKING:
    from ..offline.replay.settings import ReplaySettings
    from ..raee.settings import RaeeSettings
    from ..simplex.settings import SimplexSettings


def calibrate(
    run: str | Path | None = None, *, log: str | Path | None = None, responses: str | Path | None = None, truth: str | None = None
):
    """Each judge's temperature, ECE before and after, reliability bins (``orchestrator calibrate``):
    a list of :class:`~orchestrator.run.calibration.Calibration`."""
    from ..offline.judges.calibrate import calibrate_source

    source, is_log = _source(run, log)
    return calibrate_source(None if is_log else source, source if is_log else None, responses, truth)


def replay(
    log: str | Path,
    *,
    responses: str | Path | None = None,
    truth: str | None = None,
    settings: ReplaySettings | None = None,
    judge: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    human: str | Path | None = None,
):
    """Replay a selection strategy on a judgment log; a :class:`~orchestrator.offline.replay.replay.ReplayReport`
    (``.to_json()`` is ``orchestrator replay --json``). What to replay is one
    :class:`~orchestrator.offline.replay.settings.ReplaySettings` (strategy, scope, expert, debias,
    batch, budget, seeds, controls, families: ``control=("length",)`` fits each judge's length taste
    with the scores, ``control=("self",)`` its preference for its model family given as
    ``families=("NAME=FAMILY", …)``; every choice checked there in one line naming it; default:
    ``lookahead`` per prompt). ``human`` (a labels JSONL): people's ranking per group beside the
    judges' (``report.people``)."""
    import dataclasses

    from ..offline.judges.human_labels import load_human_labels
    from ..offline.replay.people import people_rankings
    from ..offline.replay.replay import ReplaySettings, replay_files

    settings = settings if settings is not None else ReplaySettings()
    scope = settings.scope
    labels = load_human_labels(human) if human is not None else None
    report = replay_files(log, responses, truth, settings, judge=judge, progress=progress)
    if labels is None:
        return report
    people = people_rankings([(g.key, g.names, g.final) for g in report.groups], labels, scope)
    if not people:
        raise OrchestratorError(
            f"{human}: no label speaks to a replayed group's candidates (a pairwise verdict on two of them, or 3 or more scores "
            "with 2 distinct values; per_prompt: labels of the group's prompt)"
        )
    return dataclasses.replace(report, people=people)


def judges(
    run: str | Path | None = None,
    *,
    log: str | Path | None = None,
    human: str | Path | None = None,
    responses: str | Path | None = None,
    margin: float = 0.02,
    draws: int = 500,
) -> dict:
    """The judges of a run or a log against people's labels (``orchestrator judges --json``):
    :func:`orchestrator.offline.judges.board.judge_board`. Without ``human``, a run file's own labels
    (``orchestrator label``). A run file is read in one snapshot (judgments, texts and labels of one
    moment, even beside a live run). Labels of no judged answer are refused in one line.

    Raises:
        OrchestratorError: bad options or files, no labels, or labels of no judged answer."""
    from ..offline.judges.board import judge_board
    from ..offline.judges.human_labels import as_labels, load_human_labels, refuse_unmatched
    from ..offline.raee.length_control import response_texts, run_texts
    from ..records.log import load_log

    if not 0 <= margin < 1:
        raise OrchestratorError(f"--margin must be in [0, 1) (got {margin:g})")
    source, is_log = _source(run, log)
    if human is not None:
        labels = load_human_labels(human)
    elif is_log:
        raise OrchestratorError("--human LABELS.jsonl is needed with --log (a run file may hold labels of its own)")
    if is_log:
        records = [r for _, r in load_log(source)]
        texts = response_texts(responses) if responses is not None else {}
    else:
        from ..offline.runs.export import log_records
        from ..store import open_run
        from ..store.labels import stored_labels

        with open_run(source, write=False) as store:
            records = log_records(store)
            texts = response_texts(responses) if responses is not None else run_texts(source, store)
            if human is None:
                labels = as_labels(stored_labels(store.db.conn))
                if not labels.absolute and not labels.pairwise:
                    raise OrchestratorError(
                        f"{source} holds no human labels: give --human LABELS.jsonl, or collect some with `orchestrator label {source}`"
                    )
    answers = {(r.prompt_id, c) for r in records for c in r.candidates}
    unmatched = refuse_unmatched(labels, answers, human if human is not None else source, f"judged in {source}")
    lengths = {key: len(text) for key, text in texts.items()}
    board = judge_board(records, labels, lengths=lengths, margin=margin, draws=draws)
    board["unmatched_labels"] = unmatched
    return board


def _source(run: str | Path | None, log: str | Path | None) -> tuple[Path, bool]:
    if (run is None) == (log is None):
        raise OrchestratorError("give a run file or --log FILE.jsonl (exactly one)")
    return Path(run or log), log is not None  # type: ignore[arg-type]


def fit_raee(
    run: str | Path | None = None,
    *,
    log: str | Path | None = None,
    settings: RaeeSettings | None = None,
    responses: str | Path | None = None,
    human: str | Path | None = None,
    **options: Any,
):
    """RAEE on a run file or a judgment log (``log=``): a :class:`~orchestrator.raee.RaeeReport`.
    What to fit is one :class:`~orchestrator.raee.settings.RaeeSettings` (``settings``, or its fields
    as keyword ``options``: ``fit_raee(run, soft=True)``; every choice checked there, in one line
    naming the field). ``control=["length"]`` with ``responses`` adds length-controlled win rates
    and flags; ``control=["self"]`` each judge's preference for its model family (``families``:
    ``{name: family}`` of judges and candidates; a run's ``model.families`` without it) and the win
    rates without it; ``human`` (a labels JSONL; a run file's own labels without it) people's win
    rates beside the judges' (PPI++)."""
    from ..offline.judges.human_labels import HumanLabels, load_human_labels, run_labels
    from ..offline.raee.fit import fit_raee as fit
    from ..raee.settings import RaeeSettings

    if settings is not None and options:
        raise OrchestratorError(f"fit_raee: give settings or its fields ({', '.join(sorted(options))}), not both")
    chosen = settings if settings is not None else RaeeSettings.from_options(options)
    source, is_log = _source(run, log)
    labels: HumanLabels | None = None
    if human is not None:
        labels = load_human_labels(human)
    else:  # a run file's own labels (orchestrator label), when it has some
        stored = None if is_log else run_labels(source)
        labels = stored if stored is not None and (stored.absolute or stored.pairwise) else None
    return fit(source, chosen, log=is_log, responses=responses, human=labels, human_source=human if human is not None else source)


def fit_simplex(
    run: str | Path | None = None,
    *,
    log: str | Path | None = None,
    settings: SimplexSettings | None = None,
    judge: list[str] | None = None,
    **options: Any,
):
    """The Bayesian simplex model on a run file or a log: ``(report, fit, data, extra)``. What to fit
    is one :class:`~orchestrator.simplex.SimplexSettings` (ω, β_max, δ, the likelihood, the sampler;
    every choice checked there, in one line naming the field; default: the paper's base model);
    ``judge`` keeps those judges' scores only. ``options`` are those of
    :func:`~orchestrator.offline.simplex.fit.run_simplex`: ``levels`` (required), ``self_judging``,
    ``sweep``, ``truth``, ``truth_field``, ``level``, ``progress``, ``sweep_progress``, ``fallback``
    (refit with constancy, ω = 0, when the chains disagree on the ranking) and ``human`` (a labels
    JSONL whose absolute scores are the true levels of the answers they label, docs/human-labels.md)."""
    import inspect

    from ..offline.simplex.fit import run_simplex
    from ..simplex import SimplexSettings

    allowed = set(inspect.signature(run_simplex).parameters) - {"source", "log", "settings", "judges"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise OrchestratorError(f"fit_simplex: no option named {unknown[0]!r} (options: {', '.join(sorted(allowed))})")
    if "levels" not in options:
        raise OrchestratorError("fit_simplex: levels (the scale's size M: scores are 1..M) is required")
    source, is_log = _source(run, log)
    return run_simplex(
        source, log=is_log, settings=settings if settings is not None else SimplexSettings(), judges=judge or None, **options
    )
