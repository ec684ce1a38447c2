"""What every leaderboard benchmark on AlpacaEval shares: its judgments as a models × prompts matrix,
the plain mean with its interval, and the scores a leaderboard is judged by."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau, spearmanr


def load(data: Path) -> tuple[list[str], np.ndarray]:
    items: dict[tuple[str, str], list[float]] = defaultdict(list)
    for line in (data / "annotations.jsonl").open():
        a = json.loads(line)
        if a["model"] != a["reference_model"]:
            items[a["model"], a["instruction_id"]].append(a["preference"] - 1.0)
    models = sorted({m for m, _ in items})
    prompts = sorted({p for _, p in items})
    y = np.full((len(models), len(prompts)), np.nan)
    row, col = {m: k for k, m in enumerate(models)}, {p: k for k, p in enumerate(prompts)}
    for (m, p), v in items.items():
        y[row[m], col[p]] = float(np.mean(v))
    return models, y


def plain(y: np.ndarray, seen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = seen.sum(1)
    values = np.where(seen, y, 0.0)
    mean = values.sum(1) / n
    var = np.where(seen, (y - mean[:, None]) ** 2, 0.0).sum(1) / np.maximum(n - 1, 1)
    population = (~np.isnan(y)).sum(1)
    return mean, np.sqrt(var / n * np.clip(1 - n / population, 0, 1))


def scores(est: np.ndarray, se: np.ndarray, truth: np.ndarray) -> list[float]:
    err = np.abs(est - truth) * 100
    top = list(np.argsort(-est)[:5]) == list(np.argsort(-truth)[:5])
    return [
        float(kendalltau(est, truth)[0]),
        float(spearmanr(est, truth)[0]),
        float(err.max()),
        float(err.mean()),
        float(top),
        float(np.mean(np.abs(est - truth) <= 1.96 * se + 1e-12)),
    ]


def reference_records(annotations: list[dict]) -> list[dict]:
    """AlpacaEval's annotations as reference judgments in the product's log format (judge
    ``gpt4_turbo``, the reference model shown first, its soft preference as probabilities; a model
    judged twice on a prompt gets repeats 0, 1, …); the reference against itself is left out."""
    repeats: dict[tuple[str, str], int] = defaultdict(int)
    records = []
    for a in annotations:
        if a["model"] == a["reference_model"]:  # the reference against itself: not a candidate
            continue
        key = (a["model"], a["instruction_id"])
        records.append(
            {
                "kind": "reference",
                "judge": "gpt4_turbo",
                "prompt_id": a["instruction_id"],
                "candidates": [a["reference_model"], a["model"]],
                "repeat": repeats[key],
                "probs": {"A": 2 - a["preference"], "B": a["preference"] - 1},
            }
        )
        repeats[key] += 1
    return records


def summeval_board(data: Path, aspect: str = "relevance") -> tuple[list[str], np.ndarray]:
    """A second board, from people rather than a judge: SummEval's 16 systems on 100 articles, each
    system's outcome against the median system (by mean expert rating) per article — 1 when its
    experts' mean rating of ``aspect`` is higher, ½ when equal, 0 when lower: 15 models × 100 prompts."""
    rows = [json.loads(line) for line in (data / "responses.jsonl").open()]
    systems = sorted({r["candidate"] for r in rows}, key=lambda c: int(c[1:]))
    prompts = sorted({r["prompt_id"] for r in rows})
    ratings = np.full((len(systems), len(prompts)), np.nan)
    row, col = {c: k for k, c in enumerate(systems)}, {p: k for k, p in enumerate(prompts)}
    for r in rows:
        ratings[row[r["candidate"]], col[r["prompt_id"]]] = r["human"][aspect]
    anchor = int(np.argsort(np.nanmean(ratings, 1))[len(systems) // 2])
    others = [k for k in range(len(systems)) if k != anchor]
    y = np.where(ratings[others] > ratings[anchor], 1.0, np.where(ratings[others] < ratings[anchor], 0.0, 0.5))
    return [systems[k] for k in others], y
