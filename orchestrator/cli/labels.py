"""``orchestrator label RUN``: a person labels the run's items on a local page."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Optional

import typer

from ..errors import OrchestratorError
from .common import app, err_console, file_option, out_console, run_argument


@app.command("label")
def label_cmd(
    run: Path = run_argument("Run file whose judged items a person labels."),
    annotator: str = typer.Option("human", "--annotator", help="Who labels (stored with every label)."),
    port: int = typer.Option(0, "--port", help="Port on 127.0.0.1 (0: any free port)."),
    order: str = typer.Option(
        "random", "--order", help="random (labels that calibrate rankings and judges without bias) | disagreement (where the judges fail)."
    ),
    export: Optional[Path] = typer.Option(
        None, "--export", help="Write the run file's labels as JSONL to this file ('-': stdout) and exit, serving nothing."
    ),
    import_file: Optional[Path] = file_option(
        "--import",
        "Store people's labels from a JSONL or CSV file (docs/human-labels.md) in the run file and exit, serving nothing.",
        default=None,
    ),
) -> None:
    """Serve a labelling page on 127.0.0.1: the run's judged items one at a time, one verdict a key press."""
    from .. import api

    if export is not None and import_file is not None:
        raise OrchestratorError("--import and --export go one at a time")
    if import_file is not None:
        counts = api.import_labels(run, import_file)
        err_console.print(
            f"{import_file} into {run}: {counts['added']} labels added, {counts['replaced']} replaced "
            f"(the old verdicts kept in table human_labels_history), {counts['unchanged']} unchanged",
            soft_wrap=True,
        )
        return
    if export is not None:
        written = api.export_labels(run, out=export)
        err_console.print(f"wrote {written} labels" + ("" if str(export) == "-" else f" to {export}"))
        return
    server = api.label_server(run, annotator=annotator, port=port, order=order)
    session = server.session
    progress = session.progress()
    # a plain line on stdout first (a script or a test reads the address from it), flushed
    out_console.print(f"labelling page: {server.url}", soft_wrap=True, highlight=False)
    err_console.print(
        f"{progress['items']} judged items of {run}, offered {'at random' if order == 'random' else 'where the judges disagree most'}, "
        "in rounds over the candidates; "
        f"{progress['labelled']} labelled by {session.annotator} already. Ctrl-C stops (every verdict is stored at once).",
        soft_wrap=True,
    )

    def stop(signum, frame):  # SIGTERM ends the server as Ctrl-C does
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        done = session.progress()
        server.close()
    err_console.print(
        f"stopped: {done['this_session']} labels stored in this session, {done['labelled']} of {done['items']} items labelled"
    )
