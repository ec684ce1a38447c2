"""The public API's human labels: a person labelling a run's items on a local page,
and the labels a run file holds, as the JSONL file every ``--human`` option reads."""

from __future__ import annotations

from pathlib import Path

from ..errors import OrchestratorError


def label_server(run: str | Path, *, annotator: str = "human", port: int = 0, order: str = "random"):
    """``orchestrator label RUN``: a :class:`orchestrator.people.LabelServer` for the run's
    judged items, offered in rounds over the candidates (or pairs), at random or where the judges
    disagree most (``order``; :mod:`orchestrator.people.choice`). Not yet serving: use it as a
    context manager, or call ``serve_forever``."""
    from ..people import LabelServer, LabelSession

    if not 0 <= port <= 65535:
        raise OrchestratorError(f"--port must be in 0..65535 (got {port})")
    session = LabelSession(run, annotator, order)
    try:
        return LabelServer(session, port=port)
    except BaseException:
        session.close()
        raise


def export_labels(run: str | Path, *, out: str | Path = "-") -> int:
    """``orchestrator label RUN --export FILE``: the run file's labels as JSONL (``-``: stdout),
    the format of docs/human-labels.md; the number written."""
    from ..offline.judges.human_labels import run_labels, write_labels
    from ..outputs import check_output, open_output
    from ..store import open_run

    check_output(out, option="--export", inputs=[run, f"{run}-wal", f"{run}-shm"])
    open_run(run, write=False).close()  # one line for a missing or foreign file, before anything is written
    labels = run_labels(run)
    with open_output(out, option="--export", inputs=[run, f"{run}-wal", f"{run}-shm"]) as fh:
        return write_labels(labels, fh)


def import_labels(run: str | Path, path: str | Path) -> dict[str, int]:
    """``orchestrator label RUN --import FILE``: people's labels from a JSONL or CSV file
    (docs/human-labels.md) into the run file, with their provenance (``import:FILE``); all or none.
    A label for an item and annotator the file holds already with another verdict replaces it (the
    old one is kept in the ``human_labels_history`` table). ``{"added", "replaced", "unchanged"}``.

    Raises:
        OrchestratorError: a bad file (naming its line), or a label of a prompt or candidate the run
            does not have (nothing is stored then).
    """
    from ..offline.judges.human_labels import load_human_labels
    from ..records.labels import AbsoluteLabel, PairwiseLabel, label_candidates
    from ..run.requests import DATASET_ANCHOR
    from ..store import open_run
    from ..store.labels import LabelStore

    labels = load_human_labels(path)
    run_file = open_run(run, write=False)
    try:
        dataset = run_file.dataset()
    finally:
        run_file.close()
    rows: list[AbsoluteLabel | PairwiseLabel] = [*labels.absolute, *labels.pairwise]
    for label in rows:
        names = label_candidates(label)
        answers = dataset.responses.get(label.prompt_id)
        if answers is None:
            raise OrchestratorError(f"{path}: prompt {label.prompt_id!r} is not in {run}; nothing was stored")
        anchor_text = dataset.prompts[label.prompt_id].reference if label.prompt_id in dataset.prompts else None
        missing = [n for n in names if n not in answers and not (n == DATASET_ANCHOR and anchor_text)]
        if missing:
            raise OrchestratorError(f"{path}: {missing[0]!r} has no answer to prompt {label.prompt_id!r} in {run}; nothing was stored")
    store = LabelStore(Path(run))
    try:
        return store.add_many(rows, f"import:{Path(path).name}")
    finally:
        store.close()
