"""The public API's tools: the judgment cache, a starter config for a dataset."""

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


def init(
    prompts: str | Path,
    responses: str | Path,
    *,
    out: str | Path = "orchestrator.toml",
    judge: str = "qwen1.5b",
    kind: str = "pairwise",
    task: str = "respond to the input",
    criterion: str = "which response is more helpful, correct and clear",
    api_base: str | None = None,
    max_calls: int | None = None,
    anchor: str | None = None,
    truth: str | None = None,
) -> Path:
    """``orchestrator init``: a commented starter config for a dataset, checked against it; the
    path written (:func:`orchestrator.records.starter.write_starter`)."""
    from ..records.starter import StarterOptions, write_starter

    options = StarterOptions(
        prompts=Path(prompts),
        responses=Path(responses),
        out=Path(out),
        name="",
        judge=judge,
        kind=kind,
        task=task,
        criterion=criterion,
        api_base=api_base,
        max_calls=max_calls,
        anchor=anchor,
        truth=truth,
    )
    return write_starter(options)
