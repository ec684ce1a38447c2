"""The judgment cache as a user sees it (``orchestrator cache``): where it is, its statistics,
pruning, and filling it from an old run file or a judgment log (:mod:`.imports`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...errors import OrchestratorError
from ...judging.cache import default_cache_path
from ...store.cache import JudgmentCache

__all__ = ["CacheImport", "cache_import", "cache_path", "cache_prune", "cache_stats"]


def cache_path(cache: str | Path | None = None) -> Path:
    """``cache``, or the default: ``$ORCHESTRATOR_JUDGMENT_CACHE`` or the user cache directory."""
    return Path(cache) if cache is not None else default_cache_path()


def cache_stats(cache: str | Path | None = None) -> dict:
    """Entries, hits, bytes and what the cached judgments were paid (and saved), per model."""
    path = cache_path(cache)
    if not path.exists():
        raise OrchestratorError(f"{path}: no judgment cache yet (a run creates it on its first call)")
    with JudgmentCache(path, readonly=True) as opened:
        return opened.stats()


def cache_prune(
    cache: str | Path | None = None, *, older_than: float | None = None, model: str | None = None, everything: bool = False
) -> tuple[Path, int, int]:
    """Remove entries not used for ``older_than`` days, of ``model``, or all; ``(cache, removed, left)``."""
    if not (everything or older_than is not None or model is not None):
        raise OrchestratorError("say what to prune: --older-than DAYS, --model MODEL or --all")
    if everything and (older_than is not None or model is not None):
        raise OrchestratorError("--all excludes --older-than and --model")
    if older_than is not None and not older_than >= 0:
        raise OrchestratorError(f"--older-than must be at least 0 (got {older_than})")
    path = cache_path(cache)
    if not path.exists():
        raise OrchestratorError(f"{path}: no judgment cache yet")
    with JudgmentCache(path) as opened:
        removed = opened.prune(older_than_days=older_than, model=model)
        return path, removed, opened.stats()["entries"]


@dataclass(frozen=True)
class CacheImport:
    """What ``cache import`` did."""

    path: Path
    """The cache filled."""
    from_run: bool
    read: int
    added: int
    skipped: int


def cache_import(
    source: str | Path,
    cache: str | Path | None = None,
    *,
    judge: str | None = None,
    prompts: str | Path | None = None,
    responses: str | Path | None = None,
    attribute: str | None = None,
    template: str | None = None,
    api_base: str | None = None,
) -> CacheImport:
    """Fill the cache from a run file, or from a judgment log whose requests are rendered again
    from ``prompts``/``responses`` for the judge profile ``judge``."""
    from .imports import import_log, import_run

    source = Path(source)
    if not source.is_file():
        raise OrchestratorError(f"{source}: no such file")
    with source.open("rb") as fh:
        is_run = fh.read(16) == b"SQLite format 3\x00"
    path = cache_path(cache)
    if path.exists() and path.resolve() == source.resolve():
        raise OrchestratorError(f"{source}: that is the cache itself")
    if is_run:
        if judge or prompts or responses or template or attribute or api_base:
            raise OrchestratorError(
                "a run file carries its judges, templates and messages: --judge/--prompts/--responses/--template/--attribute/--api-base are for logs"
            )
        with JudgmentCache(path) as opened:
            result = import_run(opened, source)
    else:
        if judge is None or prompts is None or responses is None:
            raise OrchestratorError("importing a log needs --judge PROFILE --prompts FILE --responses FILE (to render its requests again)")
        with JudgmentCache(path) as opened:
            result = import_log(
                opened, source, judge=judge, prompts=prompts, responses=responses, attribute=attribute, template=template, api_base=api_base
            )
    return CacheImport(path, is_run, result.read, result.added, result.skipped)
