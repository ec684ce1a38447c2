"""The public API's tools: the judgment cache."""

from __future__ import annotations

from pathlib import Path


def cache_stats(cache: str | Path | None = None) -> dict:
    """``orchestrator cache stats --json``: :func:`orchestrator.offline.cache_admin.cache_stats`."""
    from ..offline.cache_admin import cache_stats as stats

    return stats(cache)


def cache_prune(cache: str | Path | None = None, *, older_than: float | None = None, model: str | None = None, everything: bool = False):
    """``orchestrator cache prune``; ``(removed, left)``."""
    from ..offline.cache_admin import cache_prune as prune

    return prune(cache, older_than=older_than, model=model, everything=everything)


def cache_import(source: str | Path, cache: str | Path | None = None, **log_options):
    """``orchestrator cache import``: :func:`orchestrator.offline.cache_admin.cache_import`."""
    from ..offline.cache_admin import cache_import as fill

    return fill(source, cache, **log_options)
