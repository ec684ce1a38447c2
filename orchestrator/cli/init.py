"""``orchestrator init``: a starter config for a user's own prompts and responses."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import typer

from ..errors import OrchestratorError
from .common import _check_range, app, err_console, existing


@app.command("init")
def init_cmd(
    prompts: Path = typer.Option(..., "--prompts", help="prompts.jsonl ({id, text, reference?}).", callback=existing("file")),
    responses: Path = typer.Option(
        ..., "--responses", help="responses.jsonl ({prompt_id, candidate, text, human?}).", callback=existing("file")
    ),
    out: Path = typer.Option(Path("orchestrator.toml"), "--out", help="Config file to write (never overwritten)."),
    judge: str = typer.Option("qwen1.5b", "--judge", help="Judge profile (judges/<name>.toml): qwen1.5b, local-openai, gpt-4o-mini, ..."),
    kind: str = typer.Option("pairwise", "--kind", help="pairwise (rank by comparisons) | reference (win rates against an anchor)."),
    task: str = typer.Option("respond to the input", "--task", help="What the prompts ask for, in words (fills ${task})."),
    criterion: str = typer.Option(
        "which response is more helpful, correct and clear", "--criterion", help="What makes a response better (fills ${criterion})."
    ),
    api_base: Optional[str] = typer.Option(
        None, "--api-base", help="The judge's OpenAI-compatible address (e.g. http://127.0.0.1:8000/v1)."
    ),
    max_calls: Optional[int] = typer.Option(None, "--max-calls", help="Budget (default: from the data's size)."),
    anchor: Optional[str] = typer.Option(
        None, "--anchor", help="--kind reference: the anchor candidate (default: the prompts' references)."
    ),
    truth: Optional[str] = typer.Option(None, "--truth", help="A human score field in the responses to report Spearman against."),
) -> None:
    """Write a starter run config for your own prompts and responses (checked, commented, never overwriting)."""
    from ..records.dataset import load_dataset
    from ..records.starter import KINDS, StarterOptions, starter_config

    if kind not in KINDS:
        raise OrchestratorError(f"--kind must be one of {', '.join(KINDS)} (got {kind!r})")
    _check_range(max_calls, "--max-calls", 1)
    for option, text in (("--task", task), ("--criterion", criterion)):
        if not text.strip():
            raise OrchestratorError(f"{option} must not be empty")
    if out.exists() or out.is_symlink():
        raise OrchestratorError(f"{out} already exists; choose another --out (init never overwrites a file)")
    if not out.parent.is_dir():
        raise OrchestratorError(f"--out {out}: the folder {out.parent} does not exist")
    dataset = load_dataset(prompts, responses)
    if anchor is not None and any(anchor not in by for by in dataset.responses.values()):
        raise OrchestratorError(f"--anchor {anchor!r} has not answered every prompt")
    if truth is not None and not any(truth in r.human for by in dataset.responses.values() for r in by.values()):
        raise OrchestratorError(f"--truth {truth!r}: no response has a human score of that name")
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", out.stem)[:120] or "run"
    text = starter_config(
        dataset,
        StarterOptions(
            prompts=prompts,
            responses=responses,
            out=out,
            name=name,
            judge=judge,
            kind=kind,
            task=task,
            criterion=criterion,
            api_base=api_base,
            max_calls=max_calls,
            anchor=anchor,
            truth=truth,
        ),
    )
    with out.open("x", encoding="utf-8") as fh:  # "x": a file that appeared meanwhile is never overwritten
        fh.write(text)
    err_console.print(f"wrote {out}; check it with `orchestrator run {out} --dry-run`, then `orchestrator run {out}`", soft_wrap=True)
