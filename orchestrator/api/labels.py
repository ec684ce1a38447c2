"""The public API's human labels (issue #34): a person labelling a run's items on a local page,
and the labels a run file holds, as the JSONL file every ``--human`` option reads."""

from __future__ import annotations

from pathlib import Path

from ..errors import OrchestratorError


def label_server(run: str | Path, *, annotator: str = "human", port: int = 0):
    """``orchestrator label RUN``: a :class:`orchestrator.run.labelling.LabelServer` for the run's
    items, chosen where its judges disagree most per minute of reading (not yet serving: use it as a
    context manager, or call ``serve_forever``)."""
    from ..run.labelling import LabelServer, LabelSession

    if not 0 <= port <= 65535:
        raise OrchestratorError(f"--port must be in 0..65535 (got {port})")
    session = LabelSession(run, annotator)
    try:
        return LabelServer(session, port=port)
    except BaseException:
        session.close()
        raise


def export_labels(run: str | Path, *, out: str | Path = "-") -> int:
    """``orchestrator label RUN --export FILE``: the run file's labels as JSONL (``-``: stdout),
    the format of docs/human-labels.md; the number written."""
    from ..offline.human_labels import run_labels, write_labels
    from ..outputs import check_output, open_output
    from ..store import open_run

    check_output(out, option="--export", inputs=[run, f"{run}-wal", f"{run}-shm"])
    open_run(run, write=False).close()  # one line for a missing or foreign file, before anything is written
    labels = run_labels(run)
    with open_output(out, option="--export", inputs=[run, f"{run}-wal", f"{run}-shm"]) as fh:
        return write_labels(labels, fh)
