"""``orchestrator init``: a starter config for a user's own prompts and responses; ``orchestrator
docs``: the documentation it points to, printed where the user is (their folder has no docs/)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import OrchestratorError
from .common import app, err_console, file_option, out_console


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


def docs_folder() -> Path | None:
    """The docs/ folder of the source tree the package was installed from (an editable install, as
    the README's commands make), or None (a wheel carries no docs)."""
    folder = Path(__file__).resolve().parents[2] / "docs"
    return folder if (folder / "configuration.md").is_file() else None


@app.command("docs")
def docs_cmd(
    page: Optional[str] = typer.Argument(None, help="A page: own-data, configuration, compare, … (none: the list of pages)."),
) -> None:
    """Print a page of the documentation (none: where the pages are, and their names)."""
    import difflib

    folder = docs_folder()
    if folder is None:
        raise OrchestratorError("the documentation is not installed with this package: it is the docs/ folder of the source it came from")
    pages = sorted(p.stem for p in folder.glob("*.md"))
    if page is None:
        out_console.print(f"{folder}: " + ", ".join(pages) + " (orchestrator docs PAGE prints one)", soft_wrap=True)
        return
    name = page.removeprefix("docs/").removesuffix(".md")
    if name not in pages:
        near = difflib.get_close_matches(name, pages, n=1)
        raise OrchestratorError(
            f"no page {page!r} in the documentation" + (f"; did you mean {near[0]!r}?" if near else f" (pages: {', '.join(pages)})")
        )
    out_console.print((folder / f"{name}.md").read_text(encoding="utf-8"), markup=False, highlight=False, soft_wrap=True)
