"""The judges a run asks: litellm judges (starting and stopping embedded servers), each behind the
judgment cache, the identities they answer with, and judges that replay a log."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import OrchestratorError
from ..judging.client import Judge, JudgeProfile, LiteLLMJudge
from ..judging.providers import provider_judge
from ..records.config import RunConfig
from ..store import RunStore, Spend
from ..store.cache import JudgmentCache
from .events import RunEvent

__all__ = ["cached_judges", "is_local", "judges_for", "log_judges", "notify", "open_cache_or_bypass", "record_identities"]


def is_local(profile: JudgeProfile, api_base: str | None) -> bool:
    """A judge on this machine (embedded, or an address on the loopback): free, and not rate limited."""
    base = api_base or profile.api_base or ""
    return bool(profile.embedded) or base.startswith(("http://127.", "http://localhost", "http://[::1]"))


@contextlib.contextmanager
def judges_for(
    profiles: dict[str, JudgeProfile],
    *,
    api_base: str | None,
    notify: Callable[[str], None] | None = None,
    servers: dict[str, Any] | None = None,
) -> Iterator[tuple[dict[str, Judge], set[str]]]:
    """LiteLLM judges for the profiles, starting (and finally stopping) embedded servers as needed —
    one llama.cpp slot each: two slots batch requests in arrival order, which is not bit-deterministic
    (two runs of one config differed by up to 0.027 in P(A) within 14 calls); ``notify``
    hears when an embedded model starts loading and when it is ready (it takes a while);
    ``servers``: embedded servers by model, shared with the candidate models (started ones are
    added, and stopped on the way out)."""
    with contextlib.ExitStack() as stack:
        servers = {} if servers is None else servers
        judges: dict[str, Judge] = {}
        for name, profile in profiles.items():
            base = api_base
            if profile.embedded and not api_base:
                base = embedded_server(profile.embedded, servers, stack, notify, "judge").api_base
            judges[name] = provider_judge(profile) if profile.provider else LiteLLMJudge(profile, api_base=base)
        yield judges, {n for n, p in profiles.items() if is_local(p, api_base)}


def embedded_server(key: str, servers: dict[str, Any], stack: contextlib.ExitStack, notify: Callable[[str], None] | None, role: str) -> Any:
    """The running llama.cpp server of embedded model ``key``, started (and registered with
    ``stack`` to stop) the first time a judge or a candidate needs it."""
    from ..judging.embedded import EmbeddedServer

    if key not in servers:
        server = EmbeddedServer(key)  # an unknown model fails here, first
        started = time.monotonic()
        if notify is not None:
            notify(f"loading the embedded {role} {key!r} (llama.cpp; usually 10–60 s on a laptop)…")
        servers[key] = stack.enter_context(server)
        if notify is not None:
            notify(f"embedded {role} {key!r} ready after {time.monotonic() - started:.0f} s")
    return servers[key]


def cached_judges(
    judges: dict[str, Judge],
    profiles: dict[str, JudgeProfile],
    config: RunConfig,
    cache: JudgmentCache | None,
    progress: Callable[[RunEvent], None] | None = None,
) -> dict[str, Judge]:
    """Each judge behind the judgment cache (none: as they are); a cache that breaks mid-run is
    bypassed with one line."""
    from ..judging.cache import CachingJudge, judge_identity

    if cache is None:
        return judges
    said: list[str] = []

    def warn(message: str) -> None:
        if not said:  # one line, however many judges share the broken file
            said.append(message)
            notify(progress, message)

    wrapped: dict[str, Judge] = {}
    for name, judge in judges.items():
        wrapped[name] = CachingJudge(judge, judge_identity(profiles[name], config.dispatch.api_base), cache, warn)
    return wrapped


def notify(progress: Callable[[RunEvent], None] | None, message: str) -> None:
    """A line for the user outside the rounds' progress (model loading, a bypassed cache)."""
    if progress is not None:
        progress(RunEvent("loading", 0, 0, 0, Spend(), reason=message))
    else:
        import logging

        logging.getLogger("orchestrator").warning(message)


def open_cache_or_bypass(cache: str | Path | bool | None, progress: Callable[[RunEvent], None] | None) -> JudgmentCache | None:
    """The run's cache. A cache the user named (a path) that cannot be opened refuses the run up
    front; the default one is bypassed with one line (the run pays as without a cache)."""
    from ..judging.cache import open_cache

    try:
        return open_cache(cache)
    except OrchestratorError as exc:
        if cache not in (None, True):
            raise
        notify(progress, f"{exc}; going on without the judgment cache")
        return None


def record_identities(store: RunStore, config: RunConfig, profiles: dict[str, JudgeProfile], judges: dict[str, Judge] | None) -> None:
    """Who answers from now on (:mod:`orchestrator.store.identities`): each profile's identity as it
    is at this start or resume; none for judges that replay a log."""
    from ..judging.cache import judge_identity
    from ..judging.log_judge import LogJudge
    from ..store.identities import record_identities

    record_identities(
        store,
        {
            name: None
            if judges is not None and isinstance(judges.get(name), LogJudge)
            else judge_identity(profile, config.dispatch.api_base)
            for name, profile in profiles.items()
        },
    )


def log_judges(log: str | Path, names: list[str]) -> dict[str, Judge]:
    """A :class:`LogJudge` per judge name, answering from ``log``.

    Raises:
        OrchestratorError: the log is unreadable, or holds no judgment by one of the judges.
    """
    from ..judging.log_judge import LogJudge
    from ..records.log import load_log

    records = [record for _, record in load_log(log)]
    judges = {name: LogJudge(name, records) for name in names}
    empty = [name for name, judge in judges.items() if not len(judge)]
    if empty:
        found = sorted({r.judge for r in records})
        raise OrchestratorError(f"--from-log {log}: no judgment by judge {empty[0]!r} (the log has {', '.join(found)})")
    return judges  # type: ignore[return-value]
