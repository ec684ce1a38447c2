"""SummEval's LLM-judge Likert scores (``../shared/data/summeval``) as the simplex model's data: the
log written by ``examples/make_summeval_likert.py`` (the "rts" prompt), the paper's three judges,
and the expert truth per system. Shared by the benchmarks that fit SummEval."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from benchmarks.harness import ROOT, SHARED_DATA
from orchestrator.offline.simplex.fit import load_absolute_judgments, truth_scores
from orchestrator.simplex import ScoreData, build_score_data

SUMMEVAL = SHARED_DATA / "summeval"
PAPER_JUDGES = ["gpt-4-0314", "gpt-3.5-turbo-0301", "llama-2-70b-chat-hf"]


def paper_judges_scores(aspect: str, folder: Path) -> tuple[ScoreData, np.ndarray]:
    """The paper's three judges' scores of one aspect (the converted log goes to ``folder``) and the
    mean expert score of each of its candidates, in the data's candidate order."""
    spec = importlib.util.spec_from_file_location("make_likert", ROOT / "examples" / "make_summeval_likert.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    log = folder / f"{aspect}.jsonl"
    module.convert(SUMMEVAL, aspect, log)
    records, _ = load_absolute_judgments(log, log=True)
    data = build_score_data([r for r in records if r[0] in PAPER_JUDGES], levels=5)
    truth = truth_scores(SUMMEVAL / "responses.jsonl", aspect)
    return data, np.array([truth[c] for c in data.candidates])
