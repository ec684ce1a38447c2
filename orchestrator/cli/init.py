"""``orchestrator init``: a starter config for a user's own prompts and responses."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .common import app, err_console, file_option


@app.command("init")
def init_cmd(
    prompts: Path = file_option("--prompts", "prompts.jsonl ({id, text, reference?}).", default=...),
    responses: Path = file_option("--responses", "responses.jsonl ({prompt_id, candidate, text, human?}).", default=...),
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
    from .. import api

    out = api.init(
        prompts,
        responses,
        out=out,
        judge=judge,
        kind=kind,
        task=task,
        criterion=criterion,
        api_base=api_base,
        max_calls=max_calls,
        anchor=anchor,
        truth=truth,
    )
    err_console.print(f"wrote {out}; check it with `orchestrator run {out} --dry-run`, then `orchestrator run {out}`", soft_wrap=True)
