"""Test helpers for runs: a small dataset with hidden qualities, a judge behaviour for the real-HTTP
test server that answers from those qualities, and config files."""

from __future__ import annotations

import json
import math
import random
import re
import threading
from pathlib import Path

from orchestrator.judging.testserver import completion, logprob_entry

QUALITY = re.compile(r"<<q=([0-9.]+)>>")


def write_dataset(folder: Path, *, prompts: int = 3, candidates: int = 6, seed: int = 0,
                  reference: float | None = None, base: list[float] | None = None, spread: float = 1.0) -> tuple[Path, Path]:
    """prompts.jsonl + responses.jsonl; each response text carries its hidden quality ``<<q=…>>``,
    also stored as the human ``coherence`` score. ``reference``: every prompt gets a reference text
    of that quality; ``base``: candidate c's quality is ``base[c]`` plus uniform noise of width ``spread``."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    p_path, r_path = folder / "prompts.jsonl", folder / "responses.jsonl"
    with p_path.open("w") as fp, r_path.open("w") as fr:
        for p in range(prompts):
            row = {"id": f"p{p}", "text": f"Article {p}: the council approved a library."}
            if reference is not None:
                row["reference"] = f"Reference summary <<q={reference:.4f}>>"
            fp.write(json.dumps(row) + "\n")
            for c in range(candidates):
                q = rng.random() if base is None else min(1.0, max(0.0, base[c] + spread * (rng.random() - 0.5)))
                fr.write(json.dumps({"prompt_id": f"p{p}", "candidate": f"M{c}", "text": f"Summary {c} <<q={q:.4f}>>",
                                     "human": {"coherence": q}}) + "\n")
    return p_path, r_path


def reference_behaviour(noise: dict[str, float] | None = None, slope: float = 6.0, first_bias: float = 0.0):
    """A/B/C judge for reference templates: P(B) ∝ σ(slope·(q_B − q_A) − first_bias), a tie mass
    that is largest for equal qualities (``first_bias`` > 0: the judge prefers whatever is shown
    first). ``noise`` (model → SD on the logit) makes each repeated ask of the same prompt a
    different, seeded draw (for ICC); other kinds as :func:`quality_behaviour`."""
    noise = noise or {}
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def behaviour(body: dict):
        text = " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "user")
        qs = [float(x) for x in QUALITY.findall(text)]
        if '"C"' not in text or len(qs) < 2:
            return quality_behaviour(body)
        with lock:
            draw = seen.get(text + body.get("model", ""), 0)
            seen[text + body.get("model", "")] = draw + 1
        sd = noise.get(body.get("model", ""), 0.0)
        eps = random.Random(f"{text}|{body.get('model')}|{draw}").gauss(0.0, sd) if sd else 0.0
        p = 1 / (1 + math.exp(-(slope * (qs[1] - qs[0]) - first_bias + eps)))
        tie = 0.2 * math.exp(-((qs[1] - qs[0]) * 5) ** 2)
        probs = {"A": (1 - tie) * (1 - p) * 0.98, "B": (1 - tie) * p * 0.98, "C": tie * 0.98}
        top = max(probs, key=probs.get)
        return 200, {}, completion(top, [logprob_entry(top, [*probs.items(), ("\n", 0.02)])])

    return behaviour


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


def run_cli(args: list[str]) -> int:
    """Exit code of ``orchestrator ARGS`` run in this process (0 when it returns normally)."""
    from orchestrator.cli import main

    try:
        main(args)
    except SystemExit as exc:
        return exc.code or 0
    return 0


def likert_behaviour(judges: dict[str, tuple[float, float]] | None = None):
    """Absolute 1–5 judge (prompts that ask "between 1 and 5"): the level is ``1 + 4·(q + shift + ε)``
    rounded and clipped, ε ~ N(0, sd) seeded by the prompt and model — ``judges`` maps the model to
    ``(sd, shift)`` (a noisy or lenient judge); the distribution puts 0.7 on that level. Other
    requests as :func:`reference_behaviour`/:func:`quality_behaviour`."""
    judges = judges or {}
    fallback = reference_behaviour()

    def behaviour(body: dict):
        text = " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "user")
        qs = [float(x) for x in QUALITY.findall(text)]
        if "between 1 and 5" not in text or len(qs) != 1:
            return fallback(body)
        sd, shift = judges.get(body.get("model", ""), (0.05, 0.0))
        eps = random.Random(f"{text}|{body.get('model')}").gauss(0.0, sd) if sd else 0.0
        level = min(5, max(1, round(1 + 4 * (qs[0] + shift + eps))))
        alts = [(str(level), 0.7)] + [(str(k), 0.28 / 4) for k in range(1, 6) if k != level] + [("\n", 0.02)]
        return 200, {}, completion(str(level), [logprob_entry(str(level), alts)])

    return behaviour


def write_config(folder: Path, api_base: str | None, *, name: str = "test", prompts: Path, responses: Path,
                 extra: str = "", judges: str = '["local-openai"]', batch: int = 4, max_calls: int | None = 40,
                 concurrency: int = 4, strategy: str = "reorder", scope: str = "per_prompt", debias: str = "none",
                 warm_start: bool = False, budget_extra: str = "", reference: str = "", absolute: str | None = None) -> Path:
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
{('[reference]' + chr(10) + reference) if reference else ''}
{('[absolute]' + chr(10) + absolute) if absolute is not None else ''}
"""
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path
