"""Starting and resuming runs: the imperative shell the API calls — checks (:mod:`.preparation`),
judges (:mod:`.judges`), the engine (:mod:`.engine`)."""

from __future__ import annotations

import contextlib
import sqlite3
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..errors import OrchestratorError, OrchestratorWarning, RunFailed
from ..judging.client import Judge, JudgeProfile, get_profile
from ..judging.sessions import run_closing_clients
from ..records.config import RunConfig, load_config
from ..records.named_classes import modules_beside
from ..records.templates import Template
from ..secrets import redact_json
from ..store import RunStore, create_run, open_run
from ..store.cache import JudgmentCache
from .events import RunEvent
from .judges import cached_judges, is_local, judges_for, log_judges, notify, open_cache_or_bypass, record_identities
from .preparation import check_judges, people_profile, prepare

if TYPE_CHECKING:
    from ..generation.answering import Answering
    from ..generation.generators import RecordedAnswers

__all__ = ["answering_for", "resume", "start"]


def _execute(
    store: RunStore,
    config: RunConfig,
    templates: dict[str, Template],
    profiles: dict[str, JudgeProfile],
    progress: Callable[[RunEvent], None] | None,
    judges: dict[str, Judge] | None,
    cache: str | Path | bool | None = False,
    pilot: int | None = None,
    recorded: RecordedAnswers | None = None,
) -> str:
    """Run the engine. ``cache``: see :func:`start`; injected ``judges`` use the cache only when
    it is named (a path or True); ``recorded``: the answers of ``--answers-from``, read and checked
    (:func:`recorded_answers`)."""
    if judges is not None and cache is None:
        cache = False
    record_identities(store, config, profiles, judges)

    def say(message: str) -> None:
        if progress is not None:
            notify(progress, message)

    with contextlib.ExitStack() as stack:
        opened = open_cache_or_bypass(cache, progress)
        if opened is not None:
            stack.callback(opened.close)
        embedded: set[str] = set()
        servers: dict = {}  # embedded llama.cpp servers, shared by judges and candidate models
        if judges is None:  # live: litellm judges, embedded servers started (and stopped) here
            judges, local = stack.enter_context(judges_for(profiles, api_base=config.dispatch.api_base, notify=say, servers=servers))
            embedded = {n for n, p in profiles.items() if p.embedded and not config.dispatch.api_base}
        else:
            local = {n for n, p in profiles.items() if is_local(p, config.dispatch.api_base)}
        # the engine (and torch) once the checks have passed: a bad input is refused fast
        from .engine import RunEngine

        engine = RunEngine(
            store,
            config,
            cached_judges(judges, profiles, config, opened, progress),
            profiles,
            templates,
            local=local,
            progress=progress,
            pilot=pilot,
            people=people_profile(config),
            # embedded judges only: one request at a time, in planned order — llama.cpp reuses the previous
            # request's computation, so arrival order changes its answers slightly
            concurrency=1 if embedded and embedded == set(profiles) else None,
            answering=answering_for(config, recorded, opened, servers, stack, say) if config.candidates else None,
        )
        raw = judges

        async def drive() -> str:
            reason = await engine.run()
            if embedded and store.run["status"] == "finished":  # is the judge itself repeatable?
                from .repeatability import REPEATS, repeat_check

                say(f"asking the embedded judge {REPEATS} of its requests again, past the cache, to see how repeatable it is…")
                await repeat_check(store, raw, embedded, templates)
            return reason

        return run_closing_clients(drive())


def recorded_answers(config: RunConfig, answers_from: str | Path | None) -> RecordedAnswers | None:
    """The file of ``--answers-from`` read and checked against the config's candidate models, before
    anything is written or started.

    Raises:
        OrchestratorError: no candidate models, an unreadable file or row, or a model it has no answer of.
    """
    if answers_from is None:
        return None
    if not config.candidates:
        raise OrchestratorError(f"--answers-from {answers_from}: the config names no candidate models ([candidates.NAME]) to answer for")
    from ..generation.generators import RecordedAnswers

    recorded = RecordedAnswers(answers_from)
    absent = [name for name in config.candidates if name not in recorded.candidates()]
    if absent:
        raise OrchestratorError(
            f"--answers-from {answers_from}: no answer of the candidate model {absent[0]!r} in it "
            f"(it has {', '.join(sorted(recorded.candidates())[:8])})"
        )
    return recorded


def _check_unchanged(store: RunStore, config: RunConfig, allow_changed: bool) -> None:
    """Refuse to resume when a candidate model would now be asked with other settings than its
    stored answers were (a profile edited, a model renamed), unless the user allows it."""
    if not config.candidates or allow_changed:
        return
    from ..generation.settings import resolve_candidates
    from ..store.answers import stored_answers

    now = resolve_candidates(config.candidates, config.beside("judges"))
    for (_, candidate), record in stored_answers(store).items():
        if record.status != "pending" and candidate in now and record.settings.identity() != now[candidate].identity():
            before, after = record.settings, now[candidate]
            changed = sorted(
                k for k in type(after).model_fields if getattr(before, k) != getattr(after, k) and k not in ("api_key_env", "timeout_s")
            )
            raise OrchestratorError(
                f"{store.path}: candidate {candidate!r} would now be asked with other settings than its answers were "
                f"({', '.join(changed) or 'its identity'} changed since); resume with --allow-changed-candidates to go on "
                "(each answer keeps the settings it was written with)"
            )


def _reopen_fixable(store: RunStore, progress: Callable[[RunEvent], None] | None) -> None:
    """On resume, the answers that failed for a reason the user can fix are asked again."""
    from ..store.answers import reopen_fixable

    counts = reopen_fixable(store)
    if counts:
        said = ", ".join(f"{n} {code}" for code, n in sorted(counts.items()))
        notify(
            progress, f"asking again {sum(counts.values())} answer(s) that failed at the endpoint ({said}), and the requests that show them"
        )


def _say_unused(recorded: RecordedAnswers | None, dataset, config: RunConfig) -> None:
    """One warning for the rows of ``--answers-from`` that the run will never read."""
    said = recorded.unused(set(dataset.prompts), set(config.candidates)) if recorded is not None else None
    if said:
        warnings.warn(said, OrchestratorWarning, stacklevel=2)


def answering_for(
    config: RunConfig,
    recorded: RecordedAnswers | None,
    cache: JudgmentCache | None,
    servers: dict,
    stack: contextlib.ExitStack,
    say: Callable[[str], None],
) -> Answering:
    """The run's candidate models ready to answer: each through litellm (a bundled model's server
    started here, or shared with a judge), or all from a file of recorded answers; the generation
    cache in the judgment cache's file."""
    from ..generation.answering import Answering, candidate_prices
    from ..generation.cache import GenerationCache
    from ..generation.generators import Generator, LiteLLMGenerator
    from ..generation.settings import candidate_router, resolve_candidates
    from .judges import embedded_server

    settings = resolve_candidates(config.candidates, config.beside("judges"))
    generators: dict[str, Generator] = {}
    if recorded is not None:
        generators = {name: recorded for name in settings}
    else:
        for name, s in settings.items():
            base = embedded_server(s.embedded, servers, stack, say, "candidate").api_base if s.embedded else None
            generators[name] = LiteLLMGenerator(base, candidate_router(config.candidates[name].model, config.beside("judges")))
    prices = candidate_prices(settings, max_usd=config.budget.max_usd)
    return Answering(settings, generators, prices, GenerationCache(cache, say) if cache is not None and recorded is None else None)


def start(
    config: str | Path | RunConfig,
    *,
    progress: Callable[[RunEvent], None] | None = None,
    judges: dict[str, Judge] | None = None,
    runs_dir: Path | None = None,
    from_log: str | Path | None = None,
    cache: str | Path | bool | None = None,
    pilot: int | None = None,
    attachments: dict[str, dict] | None = None,
    answers_from: str | Path | None = None,
) -> tuple[Path, str]:
    """Create the run file from a config (a TOML path or a loaded one) and run it; returns
    (run file, stop reason). ``attachments``: inputs kept whole in the run file
    (:func:`~orchestrator.store.create_run`).

    Everything is checked before the file is created (:func:`prepare`, the same checks as a dry
    run); should the run still fail before its first request is written (an embedded judge that
    does not start), the file is removed again, so the same command can simply be repeated.

    ``from_log``: answer every request from this judgment log (:class:`LogJudge`) instead of the
    judges' providers — the same engine, no network; a run's config on its own export asks the
    same requests in the same rounds and ends with the same ranking.

    ``cache``: the judgment cache (:mod:`orchestrator.judging.cache`): ``None`` the default one
    (``$ORCHESTRATOR_JUDGMENT_CACHE`` or the user cache directory; ``off`` there: none), a path that file,
    ``False`` none. Requests answered from it cost nothing and are marked ``cached``. Injected
    ``judges`` and ``from_log`` runs use it only when it is named. ``pilot``: stop (``interrupted``,
    resumable) once this many calls are planned, with the forecast of the whole run's cost.

    ``answers_from``: the candidate models' answers from this file of texts (JSONL ``prompt_id``,
    ``candidate``, ``text``) instead of their models — asked on demand as the models would be, no
    model called, nothing paid.

    Raises:
        OrchestratorError: a problem with the config, data, judges or budget; nothing is written.
        RunFailed: the run ran but no judgment succeeded (the file is kept, marked ``failed``).
    """
    if not isinstance(config, RunConfig):
        config = load_config(config)
    if runs_dir is not None:
        config = config.model_copy(update={"runs_dir": runs_dir})
    recorded = recorded_answers(config, answers_from)
    if from_log is not None:  # the log first: a line it cannot mean is named before the config's other checks
        judges = log_judges(from_log, config.judging.judges)
    prepared = prepare(config, need_keys=from_log is None)
    config = prepared.config  # with what the campaign fixed at its start (a comparison's horizon)
    _say_unused(recorded, prepared.dataset, config)
    if pilot is not None:
        from .planners import planner_for

        role, calls = planner_for(config).unit_calls(config, len(prepared.profiles))
        if pilot < calls:
            raise OrchestratorError(
                f"--pilot {pilot} cannot pay for one {role} request set: it takes {calls} calls "
                f"({len(prepared.profiles)} judge(s){', both orders' if role == 'pairwise' and calls > len(prepared.profiles) else ''}); "
                f"give --pilot {calls} or more"
            )
    _import_litellm()
    # credentials in URLs (dispatch.api_base) are not stored: resume asks for them again
    store = create_run(
        config.run_path,
        name=config.name,
        config=redact_json(config.to_json()),
        seed=config.seed,
        dataset=prepared.dataset,
        templates=prepared.templates,
        attachments=attachments,
    )
    try:
        with store:
            reason = _execute(store, config, prepared.templates, prepared.profiles, progress, judges, cache, pilot, recorded)
    except RunFailed:
        raise
    except OrchestratorError:
        _remove_if_empty(config.run_path)
        raise
    return config.run_path, reason


def _import_litellm() -> None:
    """litellm's first import takes seconds (more on a loaded machine): made before the run file is
    written, a Ctrl-C during it leaves nothing behind; made inside the event loop by the first call,
    it would hold off the loop's Ctrl-C handling for as long."""
    import litellm  # noqa: F401


def _remove_if_empty(path: Path) -> None:
    """Delete a run file that holds nothing but its snapshot (no request was ever planned)."""
    try:
        conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
        try:
            planned = conn.execute("select count(*) from requests").fetchone()[0]
        finally:
            conn.close()
    except (sqlite3.Error, OSError):
        return
    if planned == 0:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def resume(
    path: str | Path,
    *,
    progress: Callable[[RunEvent], None] | None = None,
    judges: dict[str, Judge] | None = None,
    api_base: str | None = None,
    cache: str | Path | bool | None = None,
    answers_from: str | Path | None = None,
    allow_changed: bool = False,
) -> str | None:
    """Continue a run from its file; None when it had finished already (``cache`` as in :func:`start`).
    ``allow_changed``: go on when a candidate model's settings changed since its answers were
    generated (each answer keeps the settings it was written with).

    ``api_base`` replaces the config's ``dispatch.api_base``; it is needed when that address
    carried credentials (``https://user:pass@host``), which the run file does not store;
    ``answers_from``: as for :func:`start` (answers already stored are never asked again).

    Raises:
        OrchestratorError: not a run file, in use, a failed run, or credentials needed.
    """
    with open_run(path) as store:
        run = store.run
        from ..store.answers import fixable

        if run["status"] == "finished" and not fixable(store):  # (answers that failed at the endpoint are asked again)
            return None
        config = RunConfig.from_stored(store.config)
        if api_base is not None:
            config = config.model_copy(update={"dispatch": config.dispatch.model_copy(update={"api_base": api_base})})
        elif config.dispatch.api_base and "[REDACTED" in config.dispatch.api_base:
            raise OrchestratorError(
                f"{path}: the run's dispatch.api_base carried credentials, which are not stored; give the address again with --api-base URL"
            )
        modules_beside(config.config_dir)  # resuming runs the config again: what it names may be imported
        profiles = {name: get_profile(name, config.beside("judges")) for name in config.judging.judges}
        check_judges(profiles, store.templates(), api_base=config.dispatch.api_base)
        recorded = recorded_answers(config, answers_from)
        _import_litellm()
        _say_unused(recorded, store.dataset(), config)
        if recorded is None:
            _check_unchanged(store, config, allow_changed)
        _reopen_fixable(store, progress)
        return _execute(store, config, store.templates(), profiles, progress, judges, cache, recorded=recorded)
