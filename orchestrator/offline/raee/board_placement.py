"""A new model placed on an existing board (``[reference] board = "PATH"``): the board's
reference judgments (a run file or a judgment log, same anchor) fit the 2PL prompt model of
:mod:`orchestrator.raee.board`; each candidate of the run is placed from the prompts it was judged
on — its win rate over the board's prompts with an interval, and its rank interval among the
board's models (their full-data win rates)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...errors import OrchestratorError
from ...paths import file_sha256
from ...raee import ReferenceJudgments
from ...raee.board import Board, fit_board, kept_outcomes, place
from ...raee.tables import item_matrix

__all__ = ["MIN_BOARD_MODELS", "board_snapshot", "check_board_against_data", "load_board", "own_board_placements", "placements"]

MIN_BOARD_MODELS = 3
"""A board needs this many models for its prompts' difficulty and discrimination to mean anything."""


def load_board(path: str | Path, anchor: str, *, soft: bool) -> tuple[list[str], list[str], np.ndarray]:
    """``(models, prompts, y)`` of the board at ``path`` under ``anchor`` (a ``.jsonl`` judgment log,
    else a run file).

    Raises:
        OrchestratorError: one line: no such file, not a run file or log, no judgment against
            ``anchor``, fewer than :data:`MIN_BOARD_MODELS` models."""
    from .fit import load_reference_judgments

    path = Path(path)
    if not path.is_file():
        raise OrchestratorError(f"reference.board: {path}: no such file (a run file or a judgment log of the board)")
    data, _ = load_reference_judgments(path, log=path.suffix.lower() in (".jsonl", ".json"))
    models, prompts, y = item_matrix(data, anchor, soft=soft)
    if not models:
        anchors = sorted({str(a) for a in data.anchor.tolist()})
        raise OrchestratorError(
            f"reference.board: {path} has no judgments against the anchor {anchor!r} "
            f"(its anchors: {', '.join(anchors) or 'none'}); a board is placed on against the same anchor"
        )
    if len(models) < MIN_BOARD_MODELS:
        raise OrchestratorError(f"reference.board: {path} has {len(models)} model(s) against {anchor!r}; a board needs {MIN_BOARD_MODELS}")
    return models, prompts, y


def board_snapshot(path: str | Path, anchor: str, *, soft: bool) -> dict:
    """What a run keeps of its ``[reference] board`` (an attachment of the run file): the board's
    models, prompts and outcomes against ``anchor`` and the file's sha256, so that the run's
    placements never depend on where the file is now or what it holds now."""
    models, prompts, y = load_board(path, anchor, soft=soft)
    payload = {
        "anchor": anchor,
        "soft": soft,
        "models": models,
        "prompts": prompts,
        "y": [[None if np.isnan(v) else float(v) for v in row] for row in y],
    }
    return {"source": str(path), "digest": file_sha256(Path(path)), "payload": payload}


def check_board_against_data(path: str | Path, snapshot: dict, prompts: set[str], candidates: set[str], anchor: str) -> None:
    """Refuse a board that cannot place this run's candidates, before any call is paid: one with no
    prompt in common with the run's data (nothing would be placed, and ``rank`` would print the run's
    own figures), or one that already holds a candidate of the run (it would be placed on itself).

    Raises:
        OrchestratorError: one line naming the board and what is wrong."""
    payload = snapshot["payload"]
    shared = prompts & set(payload["prompts"])
    if not shared:
        raise OrchestratorError(
            f"reference.board: {path} shares no prompt with this run's data ({len(prompts)} prompts; the board's "
            f"{len(payload['prompts'])}, e.g. {payload['prompts'][0]!r}): a candidate is placed from its judged prompts "
            "among the board's, so use the board's prompts (ids as in the board)"
        )
    already = sorted((candidates & set(payload["models"])) - {anchor})
    if already:
        raise OrchestratorError(
            f"reference.board: {path} already holds {', '.join(map(repr, already[:5]))} against {anchor!r}: a board places "
            "newcomers; remove them from the run's responses (or rank them with the board's own run)"
        )


def placements(
    path: str | Path, anchor: str, data: ReferenceJudgments, *, soft: bool, level: float = 0.95, snapshot: dict | None = None
) -> tuple[dict, dict[str, dict]]:
    """The board's summary and, per candidate of ``data`` (this run's judgments) judged on at least
    one of the board's prompts, its placement: ``win_rate``, ``win_rate_low``, ``win_rate_high``
    (percent, over the board's prompts), ``prompts`` (judged), ``board_rank_low``/``board_rank_high``
    (its rank among the board's other models and itself), ``in_range`` and ``slope``.

    ``snapshot``: the board as the run kept it (:func:`board_snapshot`), used instead of the file;
    the summary's ``file`` says whether the file at ``path`` is gone or changed since."""
    if snapshot is not None and snapshot["payload"].get("anchor") == anchor and snapshot["payload"].get("soft") == soft:
        payload = snapshot["payload"]
        y = kept_outcomes(payload["y"])
        summary, placed = _place_all(payload["models"], payload["prompts"], y, item_matrix(data, anchor, soft=soft), str(path), level)
        where = Path(path)
        if not where.is_file():
            summary["file"] = f"no longer at {path}: the copy this run kept when it started is used"
        elif file_sha256(where) != snapshot["digest"]:
            summary["file"] = f"{path} has changed since this run started: the copy the run kept is used, not the file"
        else:
            summary["file"] = "unchanged since this run started"
        return summary, placed
    models, prompts, y = load_board(path, anchor, soft=soft)
    return _place_all(models, prompts, y, item_matrix(data, anchor, soft=soft), str(path), level)


def own_board_placements(
    data: ReferenceJudgments, anchor: str, newcomers: set[str], *, soft: bool, level: float = 0.95
) -> tuple[dict, dict[str, dict]] | None:
    """``extend`` of a reference run: the run's own candidates from before the extension
    are the board and the ``newcomers`` are placed on it, as :func:`placements` does with a board in
    another file. ``None`` when fewer than :data:`MIN_BOARD_MODELS` candidates were there before."""
    candidates, prompts, y = item_matrix(data, anchor, soft=soft)
    before = [k for k, name in enumerate(candidates) if name not in newcomers]
    added = [k for k, name in enumerate(candidates) if name in newcomers]
    if len(before) < MIN_BOARD_MODELS or not added:
        return None
    newcomer_matrix = ([candidates[k] for k in added], prompts, y[added])
    return _place_all(
        [candidates[k] for k in before], prompts, y[before], newcomer_matrix, "this run (its candidates before the extension)", level
    )


def _place_all(
    models: list[str], prompts: list[str], y: np.ndarray, own_matrix: tuple[list[str], list[str], np.ndarray], source: str, level: float
) -> tuple[dict, dict[str, dict]]:
    board: Board = fit_board(models, y)
    candidates, own_prompts, own = own_matrix
    column = {p: k for k, p in enumerate(prompts)}
    placed: dict[str, dict] = {}
    judged: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for m in range(len(candidates)):
        pairs = [(column[p], float(own[m, j])) for j, p in enumerate(own_prompts) if p in column and not np.isnan(own[m, j])]
        if pairs:
            judged[m] = (np.array([k for k, _ in pairs]), np.array([v for _, v in pairs]))
    # intervals that hold all at once over the placed candidates: each at Bonferroni's level, on the
    # board's prompts like the one-at-a-time ones (so they contain them)
    together_level = 1.0 - (1.0 - level) / len(judged) if len(judged) >= 2 else None
    for m, (where, outcomes) in judged.items():
        candidate = candidates[m]
        result = place(board, where, outcomes, level=level)
        others = np.array([rate for name, rate in zip(models, board.win_rate) if name != candidate])
        placed[candidate] = {
            "win_rate": round(100 * result.win_rate, 3),
            "win_rate_low": round(100 * result.low, 3),
            "win_rate_high": round(100 * result.high, 3),
            "prompts": result.n,
            "board_rank_low": int(1 + np.sum(others > result.high)),
            "board_rank_high": int(1 + np.sum(others > result.low)),
            "in_range": result.in_range,
            "slope": round(result.slope, 4),
        }
        if together_level is not None:
            both = place(board, where, outcomes, level=together_level)
            placed[candidate]["win_rate_low_together"] = round(100 * min(both.low, result.low), 3)
            placed[candidate]["win_rate_high_together"] = round(100 * max(both.high, result.high), 3)
    summary = {
        "path": source,
        "models": len(models),
        "prompts": len(prompts),
        "leaderboard": {name: round(100 * float(rate), 3) for name, rate in sorted(zip(models, board.win_rate), key=lambda x: -x[1])},
    }
    return summary, placed
