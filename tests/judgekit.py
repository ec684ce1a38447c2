"""Test helpers for runs: a small dataset with hidden qualities, a judge behaviour for the real-HTTP
test server that answers from those qualities, and config files."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

from orchestrator.judging.testserver import completion, logprob_entry

QUALITY = re.compile(r"<<q=([0-9.]+)>>")


def write_dataset(folder: Path, *, prompts: int = 3, candidates: int = 6, seed: int = 0) -> tuple[Path, Path]:
    """prompts.jsonl + responses.jsonl; each response text carries its hidden quality ``<<q=…>>``,
    also stored as the human ``coherence`` score."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    p_path, r_path = folder / "prompts.jsonl", folder / "responses.jsonl"
    with p_path.open("w") as fp, r_path.open("w") as fr:
        for p in range(prompts):
            fp.write(json.dumps({"id": f"p{p}", "text": f"Article {p}: the council approved a library."}) + "\n")
            for c in range(candidates):
                q = rng.random()
                fr.write(json.dumps({"prompt_id": f"p{p}", "candidate": f"M{c}", "text": f"Summary {c} <<q={q:.4f}>>",
                                     "human": {"coherence": q}}) + "\n")
    return p_path, r_path


def quality_behaviour(body: dict):
    """Pairwise: P(A) = σ(6·(q_A − q_B)) as top logprobs; absolute: a peaked 1–10 distribution."""
    text = " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "user")
    qs = [float(x) for x in QUALITY.findall(text)]
    if len(qs) >= 2:
        p = 1 / (1 + math.exp(-6 * (qs[0] - qs[1])))
        top = "A" if p >= 0.5 else "B"
        return 200, {}, completion(top, [logprob_entry(top, [("A", 0.98 * p), ("B", 0.98 * (1 - p)), ("\n", 0.02)])])
    level = min(9, max(1, round(1 + 8 * (qs[0] if qs else 0.5))))
    alts = [(str(level), 0.6)] + [(str(k), 0.4 / 8) for k in range(1, 10) if k != level]
    return 200, {}, completion(str(level), [logprob_entry(str(level), alts)])


def write_config(folder: Path, api_base: str | None, *, name: str = "test", prompts: Path, responses: Path,
                 extra: str = "", judges: str = '["local-openai"]', batch: int = 4, max_calls: int | None = 40,
                 concurrency: int = 4, strategy: str = "reorder", scope: str = "per_prompt", debias: str = "none",
                 warm_start: bool = False, budget_extra: str = "") -> Path:
    """A run config (TOML) pointing at a test server."""
    budget = f"max_calls = {max_calls}\n" if max_calls is not None else ""
    text = f"""
name = "{name}"
seed = 7
runs_dir = "{(folder / 'runs').as_posix()}"
[data]
prompts = "{prompts.as_posix()}"
responses = "{responses.as_posix()}"
scope = "{scope}"
truth = "coherence"
[judging]
judges = {judges}
[model]
debias = "{debias}"
absolute_warm_start = {str(warm_start).lower()}
[selection]
strategy = "{strategy}"
batch = {batch}
[budget]
{budget}{budget_extra}
[dispatch]
concurrency = {concurrency}
backoff_initial_s = 0.01
backoff_max_s = 0.2
{f'api_base = "{api_base}"' if api_base else ''}
{extra}
"""
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path
