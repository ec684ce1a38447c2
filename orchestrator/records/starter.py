"""A starter run config for a user's own dataset (``orchestrator init``): the data's shape read
from the files, sensible defaults for a first run, and a comment on every choice a user may want
to change. Pure text from a :class:`~orchestrator.records.dataset.Dataset`; the CLI writes it."""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from .dataset import Dataset

__all__ = ["KINDS", "StarterOptions", "starter_config", "write_starter"]

KINDS = ("pairwise", "reference")


@dataclass(frozen=True)
class StarterOptions:
    """What ``orchestrator init`` was told (paths as given; they are written relative to the config)."""

    prompts: Path
    responses: Path
    out: Path
    name: str
    judge: str = "qwen1.5b"
    """The judge profile (``judges/<name>.toml``)."""
    kind: str = "pairwise"
    """``pairwise`` (rank by comparisons) or ``reference`` (win rates against an anchor)."""
    task: str = "respond to the input"
    criterion: str = "which response is more helpful, correct and clear"
    """The words the generic templates' ``${task}`` and ``${criterion}`` become."""
    api_base: str | None = None
    max_calls: int | None = None
    """The budget (None: one that fits the data's size)."""
    anchor: str | None = None
    truth: str | None = None
    """A human score field of the responses to report Spearman against."""
    answers_prefill: bool = True
    """Whether the judge answers a template's prefix with an option (its profile's
    ``answers_prefill``): False picks the ``generic-*-noprefill`` templates."""


def _toml(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _relative(path: Path, folder: Path) -> str:
    return Path(os.path.relpath(path.resolve(), folder.resolve())).as_posix()


def _campaign_lines(dataset: Dataset, options: StarterOptions, per_prompt: list[int], candidates: list[str]) -> list[str]:
    """The campaign's part of a starter config: its template, model and selection (``pairwise``) or
    its anchor (``reference``), and a budget that fits the data."""
    has_reference = all(p.reference for p in dataset.prompts.values())
    lines: list[str] = []
    suffix = "" if options.answers_prefill else "-noprefill"
    pairwise, reference = f"generic-pairwise{suffix}", f"generic-reference{suffix}"
    if options.kind == "pairwise":
        pairs = sum(k * (k - 1) for k in per_prompt)  # every ordered pair of every prompt
        budget = options.max_calls or min(pairs, max(40, 6 * len(candidates) * max(1, math.ceil(math.log2(max(2, len(candidates)))))))
        lines += [
            f'pairwise_template = "{pairwise}"   # prompts/{pairwise}.toml: ${{task}} and ${{criterion}} filled from above'
            + ("" if options.answers_prefill else f"; {options.judge} answers with a bare letter, not after a prefix"),
            "",
            "[model]",
            'debias = "home"                  # fit each judge\'s position bias (LLM judges often prefer the first answer shown)',
            "",
            "[selection]",
            'strategy = "lookahead"           # ask the comparison expected to remove the most misordered pairs (reorder: the seed paper\'s rule)',
            "batch = 4",
            "",
            "[budget]",
            f"max_calls = {budget}                  # at most; every ordered pair of every prompt would be {pairs}",
        ]
    else:
        anchor = options.anchor or ("dataset" if has_reference else candidates[0])
        budget = options.max_calls or 2 * sum(per_prompt)
        lines += [
            "",
            "[reference]",
            f"anchor = {_toml(anchor)}"
            + (
                "               # the prompts' reference texts"
                if anchor == "dataset"
                else "               # this candidate is the anchor every other one is compared with"
            ),
            f'template = "{reference}"  # prompts/{reference}.toml: A = the anchor, B = the candidate, C = a tie',
            'allocation = "all"',
            "soft = true                      # win rates from the judge's probabilities",
            "both_orders = true               # ask anchor-first and anchor-second: cancels position bias",
            "",
            "[budget]",
            f"max_calls = {budget}",
        ]
    return lines


def starter_config(dataset: Dataset, options: StarterOptions) -> str:
    """The TOML text of a starter config for ``dataset`` (``options.kind``: ``pairwise`` ranks the
    candidates by comparisons between them, PoE; ``reference`` compares each candidate with an
    anchor, RAEE)."""
    per_prompt = [len(by) for by in dataset.responses.values()]
    candidates = sorted({c for by in dataset.responses.values() for c in by})
    shared = sum(1 for c in candidates if sum(c in by for by in dataset.responses.values()) > 1)
    scope = "global" if shared >= 2 else "per_prompt"
    folder = options.out.parent
    lines = [
        f"# Starter config written by `orchestrator init` for {len(dataset.prompts)} prompts and {len(candidates)} candidates",
        f"# ({min(per_prompt)}–{max(per_prompt)} responses per prompt). Check it without spending anything:",
        f"#   orchestrator run {options.out.as_posix()} --dry-run --offline",
        "# then run it; every field is described by `orchestrator docs own-data` and `orchestrator docs configuration`.",
        f"name = {_toml(options.name)}",
        "seed = 0",
        "",
        "[data]",
        f"prompts = {_toml(_relative(options.prompts, folder))}      # paths are relative to this file",
        f"responses = {_toml(_relative(options.responses, folder))}",
    ]
    if options.kind == "pairwise":
        lines.append(
            f"scope = {_toml(scope)}"
            + (
                "                # one ranking of the candidates across prompts (a comparison is always within one prompt)"
                if scope == "global"
                else "            # one ranking per prompt (the candidates differ from prompt to prompt)"
            )
        )
    if options.truth:
        lines.append(f'truth = {_toml(options.truth)}              # human scores in responses\' "human": Spearman is reported')
    lines += [
        "",
        "[judging]",
        f"judges = [{_toml(options.judge)}]          # judges/<name>.toml; several judges form a panel",
        f"task = {_toml(options.task)}",
        f"criterion = {_toml(options.criterion)}",
    ]
    lines += _campaign_lines(dataset, options, per_prompt, candidates)
    lines += ["", "[dispatch]", "concurrency = 4"]
    if options.api_base:
        lines.append(f"api_base = {_toml(options.api_base)}   # the judges' OpenAI-compatible address")
    return "\n".join(lines) + "\n"


def write_starter(options: StarterOptions) -> Path:
    """Check ``options`` against the data and write the starter config to ``options.out`` (never
    over an existing file); the path written. ``options.name`` empty: from the file's name.

    Raises:
        OrchestratorError: a bad kind, budget, task or criterion, an existing or unplaceable
            ``out``, an anchor that has not answered every prompt, a truth field no response has.
    """
    from ..errors import OrchestratorError
    from .dataset import load_dataset

    out = options.out
    if options.kind not in KINDS:
        raise OrchestratorError(f"--kind must be one of {', '.join(KINDS)} (got {options.kind!r})")
    if options.max_calls is not None and options.max_calls < 1:
        raise OrchestratorError(f"--max-calls must be at least 1 (got {options.max_calls})")
    for option, text in (("--task", options.task), ("--criterion", options.criterion)):
        if not text.strip():
            raise OrchestratorError(f"{option} must not be empty")
    for option, value in (
        ("--out", str(out)),
        ("--prompts", str(options.prompts)),
        ("--responses", str(options.responses)),
        ("--name", options.name),
        ("--judge", options.judge),
        ("--api-base", options.api_base or ""),
        ("--anchor", options.anchor or ""),
        ("--truth", options.truth or ""),
    ):
        bad = next((c for c in value if ord(c) < 32 or ord(c) == 127), None)
        if bad is not None:  # a newline in a name that reaches a comment line would start a config key
            raise OrchestratorError(f"{option} {value!r} holds a control character ({bad!r}); use a plain name")
    if out.exists() or out.is_symlink():
        raise OrchestratorError(f"{out} already exists; choose another --out (init never overwrites a file)")
    if not out.parent.is_dir():
        raise OrchestratorError(f"--out {out}: the folder {out.parent} does not exist")
    dataset = load_dataset(options.prompts, options.responses)
    if options.anchor is not None and any(options.anchor not in by for by in dataset.responses.values()):
        raise OrchestratorError(f"--anchor {options.anchor!r} has not answered every prompt")
    if options.truth is not None and not any(options.truth in r.human for by in dataset.responses.values() for r in by.values()):
        raise OrchestratorError(f"--truth {options.truth!r}: no response has a human score of that name")
    if not options.name:
        options = replace(options, name=re.sub(r"[^A-Za-z0-9_.-]", "-", out.stem)[:120] or "run")
    text = starter_config(dataset, options)
    # the task and criterion are written as TOML strings, escaped (several lines included): refuse only
    # what a TOML file cannot hold (a lone surrogate), by reading the written text back
    try:
        back = tomllib.loads(text.encode("utf-8").decode("utf-8"))["judging"]
    except (tomllib.TOMLDecodeError, UnicodeError) as exc:
        raise OrchestratorError(f"--task/--criterion: cannot be written as a TOML string ({exc})") from None
    for option, value in (("--task", options.task), ("--criterion", options.criterion)):
        if back.get(option[2:]) != value:
            raise OrchestratorError(f"{option} {value!r} cannot be written as a TOML string; use plain text")
    with out.open("x", encoding="utf-8") as fh:  # "x": a file that appeared meanwhile is never overwritten
        fh.write(text)
    return out
