"""Growing a leaderboard (issue #18 item 4): adding 2 candidates to a finished 10-candidate run
against a fresh 12-candidate run, both to the default stopping rule (the same final rank
uncertainty: every neighbour pair resolved or a practical tie).

One prompt, qualities uniform on [0, 1], a judge P(A) = σ(6 (q_A − q_B) + ε), ε ~ N(0, 1)
(`benchmarks/simjudge.py`), batch 4. Reported: calls of `extend` / calls of the fresh run, per
dataset and overall, and the widest 95% rank interval at the end of each.

    python -m benchmarks.leaderboards.extend_cost [--datasets 10]
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.simjudge import SimJudge, SimSpec
from orchestrator import api
from orchestrator.records.config import RunConfig

SPEC = SimSpec("sim", noise=1.0, usd_per_call=0.001)


def _files(folder: Path, name: str, quality: dict[str, float]) -> tuple[Path, Path]:
    prompts, responses = folder / f"{name}.p.jsonl", folder / f"{name}.r.jsonl"
    prompts.write_text(json.dumps({"id": "p0", "text": "An article."}) + "\n")
    responses.write_text("".join(json.dumps({"prompt_id": "p0", "candidate": c, "text": f"Summary {c}."}) + "\n" for c in quality))
    return prompts, responses


def _config(folder: Path, name: str, prompts: Path, responses: Path, seed: int) -> RunConfig:
    return RunConfig.model_validate(
        {
            "name": name,
            "seed": seed,
            "runs_dir": str(folder),
            "data": {"prompts": str(prompts), "responses": str(responses)},
            "judging": {"judges": ["sim"]},
            "selection": {"batch": 4},
            "budget": {"max_calls": 2000},
        }
    )


def widest(path: Path) -> int:
    (group,) = api.ranking(path).as_dict()["groups"]
    return max(r["rank_high"] - r["rank_low"] + 1 for r in group["ranking"])


def one(seed: int, folder: Path) -> tuple[int, int, int, int]:
    rng = random.Random(seed)
    quality = {f"M{i:02d}": rng.random() for i in range(12)}
    first10 = dict(list(quality.items())[:10])
    newcomers = dict(list(quality.items())[10:])
    prompts, responses = _files(folder, f"base-{seed}", first10)
    base, _ = api.start(_config(folder, f"base-{seed}", prompts, responses, seed), judges={"sim": SimJudge(SPEC, quality, seed)})
    before = api.status(base).as_dict()["spent"]["calls"]
    _, added = _files(folder, f"new-{seed}", newcomers)
    api.extend(base, responses=added, judges={"sim": SimJudge(SPEC, quality, seed + 1)})
    extend_calls = api.status(base).as_dict()["spent"]["calls"] - before
    prompts12, responses12 = _files(folder, f"fresh-{seed}", quality)
    fresh, _ = api.start(_config(folder, f"fresh-{seed}", prompts12, responses12, seed), judges={"sim": SimJudge(SPEC, quality, seed + 2)})
    return extend_calls, api.status(fresh).as_dict()["spent"]["calls"], widest(base), widest(fresh)


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--datasets", type=int, default=10)
    args = ap.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        judges = folder / "judges"
        judges.mkdir()
        (judges / "sim.toml").write_text('name = "sim"\nmodel = "sim/sim"\nprefill = true\nprice_input_per_mtok = 1.0\n')
        os.environ["ORCHESTRATOR_JUDGES"] = str(judges)
        rows = [one(seed, folder) for seed in range(args.datasets)]
    for seed, (ext, fresh, w_ext, w_fresh) in enumerate(rows):
        print(
            f"dataset {seed}: extend {ext} calls, fresh 12 {fresh} calls ({ext / fresh:.2f}); widest 95% rank interval {w_ext} vs {w_fresh}"
        )
    ext_total, fresh_total = sum(r[0] for r in rows), sum(r[1] for r in rows)
    ratios = [r[0] / r[1] for r in rows]
    print(
        f"extend / fresh: {ext_total} / {fresh_total} calls = {ext_total / fresh_total:.2f} "
        f"(per dataset median {np.median(ratios):.2f}, max {max(ratios):.2f}); {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    harness.run(main, __file__)
