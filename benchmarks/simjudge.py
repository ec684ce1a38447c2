"""Simulated judges injected into the real run engine (shared by the issue #17 benchmarks).

A judge answers P(A) = σ(slope · (q_A − q_B) + noise) from hidden qualities, or a near-random
probability, and reports a fixed price per call; runs go through `RunEngine` on a real run file."""

from __future__ import annotations

import asyncio
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from orchestrator.judging.client import JudgeProfile, JudgeRequest, Judgment
from orchestrator.records.config import RunConfig
from orchestrator.records.dataset import load_dataset
from orchestrator.records.templates import get_template
from orchestrator.run.engine import RunEngine
from orchestrator.store import create_run


@dataclass(frozen=True)
class SimSpec:
    name: str
    slope: float = 6.0
    noise: float = 0.0
    """sd of Gaussian noise on the logit."""
    usd_per_call: float = 0.0
    coin: bool = False
    """Answer P(A) ~ U(0.3, 0.7) whatever the candidates."""
    resolution: float = 0.0
    """Quality gaps smaller than this are not seen (logit = noise only): a small model that tells
    clear differences apart and close ones not at all."""


class SimJudge:
    def __init__(self, spec: SimSpec, quality: dict[str, float], seed: int):
        self.spec, self.name, self.quality = spec, spec.name, quality
        self.rng = random.Random(f"{seed}/{spec.name}")

    async def judge(self, request: JudgeRequest) -> Judgment:
        a, b = request.candidates
        if self.spec.coin:
            p = self.rng.uniform(0.3, 0.7)
        else:
            gap = self.quality[a] - self.quality[b]
            seen = gap if abs(gap) >= self.spec.resolution else 0.0
            p = 1 / (1 + math.exp(-(self.spec.slope * seen + self.rng.gauss(0, self.spec.noise))))
        return Judgment(
            key=request.key,
            judge=self.name,
            template=request.template.name,
            kind="pairwise",
            prompt_id=request.prompt_id,
            candidates=list(request.candidates),
            status="ok",
            probs=[{"A": p, "B": 1 - p}],
            method="logprobs",
            prompt_tokens=1000,
            cost_usd=self.spec.usd_per_call,
        )


def run(
    folder: Path,
    name: str,
    quality: dict[str, float],
    specs: list[SimSpec],
    *,
    overrides: dict,
    seed: int = 0,
    observe: Callable | None = None,
) -> tuple[Path, str, float, int]:
    """One run of one prompt whose candidates have ``quality``; returns (run file, stop reason, USD, calls)."""
    prompts, responses = folder / f"{name}.p.jsonl", folder / f"{name}.r.jsonl"
    prompts.write_text(json.dumps({"id": "p0", "text": "An article."}) + "\n")
    responses.write_text("".join(json.dumps({"prompt_id": "p0", "candidate": c, "text": f"Summary {c}."}) + "\n" for c in quality))
    settings: dict = {
        "name": name,
        "runs_dir": str(folder),
        "data": {"prompts": str(prompts), "responses": str(responses)},
        "judging": {"judges": [s.name for s in specs]},
        "dispatch": {"pipeline_depth": 1},
    }
    for section, values in overrides.items():
        settings[section] = {**settings.get(section, {}), **values}
    config = RunConfig.model_validate(settings)
    templates = {"pairwise": get_template("poe-pairwise")}
    # a worst-case reservation proportional to the price per call (every request is the same size)
    profiles = {s.name: JudgeProfile(name=s.name, model=f"sim/{s.name}", price_input_per_mtok=s.usd_per_call * 1e3) for s in specs}
    dataset = load_dataset(prompts, responses)
    store = create_run(config.run_path, name=name, config=config.to_json(), seed=seed, dataset=dataset, templates=templates)
    with store:
        judges = {s.name: SimJudge(s, quality, seed) for s in specs}
        engine = RunEngine(store, config, judges, profiles, templates, observe=observe)  # type: ignore[arg-type]
        reason = asyncio.run(engine.run())
        spend = store.spend()
    return config.run_path, reason, spend.usd, spend.calls
