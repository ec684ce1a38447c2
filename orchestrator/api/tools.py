"""The public API's tools: the judgment cache, a starter config for a dataset, simulated judges,
recording a judge, importing other benchmarks' files, the embedded judge as a server."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..errors import OrchestratorError
from ..judging.sessions import run_closing_clients


def cache_stats(cache: str | Path | None = None) -> dict:
    """``orchestrator cache stats --json``: :func:`orchestrator.offline.cache.admin.cache_stats`."""
    from ..offline.cache.admin import cache_stats as stats

    return stats(cache)


def cache_prune(cache: str | Path | None = None, *, older_than: float | None = None, model: str | None = None, everything: bool = False):
    """``orchestrator cache prune``; ``(removed, left)``."""
    from ..offline.cache.admin import cache_prune as prune

    return prune(cache, older_than=older_than, model=model, everything=everything)


def cache_import(source: str | Path, cache: str | Path | None = None, **log_options):
    """``orchestrator cache import``: :func:`orchestrator.offline.cache.admin.cache_import`."""
    from ..offline.cache.admin import cache_import as fill

    return fill(source, cache, **log_options)


def init(
    prompts: str | Path, responses: str | Path, *, out: str | Path = "orchestrator.toml", judge: str = "qwen1.5b", **choices: Any
) -> Path:
    """``orchestrator init``: a commented starter config for a dataset, checked against it; the
    path written (:func:`orchestrator.records.starter.write_starter`). ``choices``: the other fields
    of :class:`~orchestrator.records.starter.StarterOptions` (``kind``, ``task``, ``criterion``,
    ``api_base``, ``max_calls``, ``anchor``, ``truth``), with its defaults."""
    from dataclasses import fields

    from ..judging.profiles import get_profile
    from ..records.starter import StarterOptions, write_starter

    allowed = {f.name for f in fields(StarterOptions)} - {"prompts", "responses", "out", "name", "judge", "answers_prefill"}
    unknown = sorted(set(choices) - allowed)
    if unknown:
        raise OrchestratorError(f"init: no choice named {unknown[0]!r} (choices: {', '.join(sorted(allowed))})")
    try:
        answers_prefill = get_profile(judge).answers_prefill  # a template the judge answers
    except OrchestratorError:
        answers_prefill = True  # a profile written later: the dry run checks it
    chosen = StarterOptions(Path(prompts), Path(responses), Path(out), name="", judge=judge, answers_prefill=answers_prefill, **choices)
    return write_starter(chosen)


def simulate(
    out_log: str | Path, out_responses: str | Path, *, prompts: int = 10, candidates: int = 16, judge: str = "llm", seed: int = 0
) -> tuple[int, int]:
    """``orchestrator simulate``: an exhaustive judgment log of a simulated judge (preset ``good``,
    ``llm`` or ``weak``) and its responses (truth field ``quality``); ``(judgments, responses)``
    written. ``-`` is standard output."""
    import json

    from ..offline.replay.simulate import JUDGE_PRESETS, simulate_dataset
    from ..outputs import check_output, open_output, same_file

    if judge not in JUDGE_PRESETS:
        raise OrchestratorError(f"unknown judge preset {judge!r}; choose one of {', '.join(JUDGE_PRESETS)}")
    for value, option, low, high in (
        (seed, "--seed", 0, 2**32 - 1),
        (prompts, "--prompts", 1, 100_000),
        (candidates, "--candidates", 2, 10_000),
    ):
        if not low <= value <= high:
            raise OrchestratorError(f"{option} must be between {low} and {high} (got {value})")
    out_log, out_responses = Path(out_log), Path(out_responses)
    if str(out_log) == str(out_responses) or same_file(out_log, out_responses):
        raise OrchestratorError("--out-log and --out-responses must be two different files")
    for path, option in ((out_log, "--out-log"), (out_responses, "--out-responses")):
        if str(path) != "-":
            path.parent.mkdir(parents=True, exist_ok=True)
        check_output(path, option=option)
    records, rows = simulate_dataset(prompts, candidates, JUDGE_PRESETS[judge], seed=seed)
    for path, items, option in ((out_log, records, "--out-log"), (out_responses, rows, "--out-responses")):
        with open_output(path, option=option) as fh:
            for item in items:
                fh.write(json.dumps(item) + "\n")
    return len(records), len(rows)


def import_data(fmt: str, paths: list[str | Path], *, out: str | Path, encoding: str | None = None) -> dict:
    """``orchestrator import``: AlpacaEval, MT-Bench, arena-hard or CSV data as ``prompts.jsonl`` +
    ``responses.jsonl`` in ``out``; what was written (paths, counts, candidates)."""
    from ..records.importers import import_data as read
    from ..records.importers import write_imported

    inputs = [Path(p) for p in paths]
    imported = read(fmt, inputs, encoding=encoding)
    prompts, responses = write_imported(imported, Path(out), [*inputs, *(p / "question.jsonl" for p in inputs if p.is_dir())])
    return {
        "prompts": prompts,
        "responses": responses,
        "n_prompts": len(imported.prompts),
        "n_responses": len(imported.responses),
        "candidates": sorted({c for _, c in imported.responses}),
    }


def embedded_judge(model: str = "qwen1.5b", *, port: int | None = None, threads: int | None = None):
    """The embedded llama.cpp judge as a server on 127.0.0.1 (``orchestrator judge serve``): a
    context manager whose value has ``api_base``."""
    from ..judging.embedded import EmbeddedServer

    return EmbeddedServer(model, port=port, threads=threads)


def record(
    prompts: str | Path,
    responses: str | Path,
    *,
    out: str | Path,
    judge: str = "qwen1.5b",
    prompt_ids: list[str] | None = None,
    first: int | None = None,
    pairwise_template: str | None = "poe-pairwise",
    absolute_template: str | None = "poe-absolute",
    attribute: str = "coherence",
    concurrency: int = 1,
    api_base: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """``orchestrator record``: ask one judge every ordered pair and every absolute score of the
    chosen prompts (``prompt_ids``, or the ``first`` N), appending to the judgment log ``out``
    (run again, it asks only what is missing); the counts planned, skipped, written, failed. A
    profile with ``embedded = ...`` starts and stops its llama.cpp server unless ``api_base``."""
    import contextlib

    from ..judging.client import LiteLLMJudge, get_profile
    from ..judging.embedded import EmbeddedServer
    from ..offline.replay.record import load_prompts, plan_recording
    from ..offline.replay.record import record as run_recording
    from ..outputs import check_output
    from ..records.templates import get_template

    for value, option, high in ((first, "--first", None), (concurrency, "--concurrency", 1024)):
        if value is not None and (value < 1 or (high is not None and value > high)):
            bounds = f"between 1 and {high}" if high is not None else "at least 1"
            raise OrchestratorError(f"{option} must be {bounds} (got {value})")
    check_output(Path(out), option="--out", inputs=[Path(prompts), Path(responses)])
    profile = get_profile(judge)
    prompt_rows = load_prompts(prompts)
    if prompt_ids:
        ids = list(prompt_ids)
    elif first:
        ids = list(prompt_rows)[:first]
    else:
        raise OrchestratorError("choose prompts with --prompt-ids or --first")
    plan = plan_recording(
        prompt_rows,
        responses,
        ids,
        profile.name,
        pairwise=get_template(pairwise_template) if pairwise_template else None,
        absolute=get_template(absolute_template) if absolute_template else None,
        attribute=attribute,
        prefill=profile.prefill,
    )
    server = EmbeddedServer(profile.embedded) if profile.embedded and not api_base else contextlib.nullcontext()
    with server as running:
        base = api_base or (running.api_base if running is not None else None)
        return run_closing_clients(
            run_recording(
                plan,
                LiteLLMJudge(profile, api_base=base),
                Path(out),
                attribute=attribute,
                concurrency=concurrency,
                progress=progress,
                inputs=(Path(prompts), Path(responses)),
            )
        )
