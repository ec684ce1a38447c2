"""A one-candidate reference campaign placed on a board, ``allocation = "adaptive"``: it spends its
budget or stops with a true claim about the board's models (issue #60, must-show 3).

AlpacaEval 2.0's real judgments (``../shared/data/alpacaeval``): each model in turn is the newcomer,
the other 36 the board (a judgment log given as ``[reference] board``); the newcomer's own judgments
answer the run (``orchestrator run CONFIG --from-log``), 805 prompts in the campaign's seeded order,
``max_calls`` = 805. Where the run stops early, its stop reason (``orchestrator status --json``)
names the claim — between two board models, above or below every one, or (with ``resolution``)
within r points of some — and the claim is checked against the newcomer's full-data win rate and the
board models' (all 805 prompts). Every run goes through the product's command path.

``--board summeval``: a board the rule was not designed on — SummEval's experts (15 systems × 100
articles, each system's outcome against the median system by its experts' mean relevance rating: 1,
½ or 0; :func:`~benchmarks.leaderboards.common.summeval_board`), every system in turn the newcomer,
100 prompts, ``max_calls`` = 100.

    python -m benchmarks.leaderboards.board_claims [--seeds 3] [--resolutions none 2] [--workers 2] [--board alpacaeval|summeval]
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.leaderboards.common import load, reference_records, summeval_board

PERCENT = r"\(([\d.]+)%\)"


def claim_true(reason: str, truth: float, rates: dict[str, float], resolution: float | None) -> bool:
    """Whether every claim in a stop reason holds of the newcomer's full-data win rate ``truth``
    (percent); the board models' ``rates`` in percent."""
    between = re.search(r" is between (\S+) " + PERCENT + r" and (\S+) " + PERCENT, reason)
    if between:
        return rates[between.group(3)] <= truth <= rates[between.group(1)]
    above = re.search(r" is above every board model \(the best: (\S+),", reason)
    if above:
        return truth >= rates[above.group(1)]
    below = re.search(r" is below every board model \(the weakest: (\S+),", reason)
    if below:
        return truth <= rates[below.group(1)]
    tied = re.search(r" is within ([\d.]+) points of (.*?) \(the claims", reason)
    if tied:
        names = re.findall(r"(\S+) \([\d.]+%\)", tied.group(2))
        return bool(names) and all(abs(truth - rates[n]) <= float(tied.group(1)) + 1e-9 for n in names)
    raise ValueError(f"no claim read in: {reason}")


def one(job: tuple[str, int, float | None, str, int]) -> dict:
    """One newcomer, seed and resolution through the CLI; its run's figures."""
    held, seed, resolution, root, pool = job
    folder = Path(root) / f"{held}-{seed}-{resolution}"
    folder.mkdir(parents=True)
    shared = Path(root)
    config = folder / "run.toml"
    config.write_text(
        f'name = "newcomer"\nruns_dir = "{folder}"\nseed = {seed}\n\n[data]\nprompts = "{shared}/prompts.jsonl"\n'
        f'responses = "{shared}/responses-{held}.jsonl"\n\n[judging]\njudges = ["local-openai"]\n\n'
        f'[reference]\nanchor = "dataset"\nsoft = true\nallocation = "adaptive"\nboard = "{shared}/board-{held}.jsonl"\n'
        + (f"resolution = {resolution}\n" if resolution is not None else "")
        + f"\n[selection]\nbatch = 10\n\n[budget]\nmax_calls = {pool}\n"
    )
    env = {"ORCHESTRATOR_JUDGMENT_CACHE": "off", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    run = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", str(config), "--from-log", f"{shared}/log-{held}.jsonl"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    if run.returncode != 0:
        raise RuntimeError(f"{held} seed {seed}: run failed ({run.returncode}): {run.stderr.strip()[-600:]}")
    status = subprocess.run(
        [sys.executable, "-m", "orchestrator", "status", str(folder / "newcomer.sqlite"), "--json"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    )
    figures = json.loads(status.stdout)
    return {
        "held": held,
        "seed": seed,
        "resolution": resolution,
        "reason": figures["stop_reason"],
        "calls": figures["spent"]["calls"],
        "pool": pool,
    }


def board_records(board: str) -> tuple[dict[str, float], list[dict]]:
    """The board's models' full-data win rates (percent) and its judgments as reference records
    against the dataset's anchor (judge ``local-openai``, a profile the product ships)."""
    if board == "summeval":
        models, y = summeval_board(harness.shared("summeval"))
        records = [
            {
                "kind": "reference",
                "judge": "local-openai",
                "prompt_id": f"a{i}",
                "candidates": ["reference", m],
                "probs": {"A": 1.0 - y[k, i], "B": y[k, i]},
            }
            for k, m in enumerate(models)
            for i in range(y.shape[1])
            if not np.isnan(y[k, i])
        ]
    else:
        data = harness.shared("alpacaeval")
        models, y = load(data)
        records = reference_records([json.loads(line) for line in (data / "annotations.jsonl").open()])
        for r in records:
            r["candidates"][0], r["judge"] = "reference", "local-openai"  # the dataset's anchor; a profile the product has
    return dict(zip(models, 100 * np.nanmean(y, 1))), records


def main() -> None:
    p = harness.parser(__doc__, quick="1 seed, 8 newcomers spread over the board, resolution 2 only")
    p.add_argument("--seeds", type=harness.count, default=3)
    p.add_argument("--resolutions", nargs="+", default=["none", "2"])
    p.add_argument("--workers", type=harness.count, default=2)
    p.add_argument("--board", choices=["alpacaeval", "summeval"], default="alpacaeval")
    args = p.parse_args()
    rates, records = board_records(args.board)
    models = sorted(rates)
    held_out = [models[k] for k in np.argsort([rates[m] for m in models])[:: 5 if args.quick else 1]]
    seeds = 1 if args.quick else args.seeds
    resolutions = [2.0] if args.quick else [None if r == "none" else float(r) for r in args.resolutions]
    prompts = sorted({r["prompt_id"] for r in records})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "prompts.jsonl").write_text("".join(json.dumps({"id": q, "text": q, "reference": "the reference"}) + "\n" for q in prompts))
        pools = {}
        for held in held_out:
            answered = sorted({r["prompt_id"] for r in records if r["candidates"][1] == held})
            pools[held] = len(answered)
            (root / f"responses-{held}.jsonl").write_text(
                "".join(json.dumps({"prompt_id": q, "candidate": held, "text": "an answer"}) + "\n" for q in answered)
            )
            (root / f"board-{held}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records if r["candidates"][1] != held))
            (root / f"log-{held}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records if r["candidates"][1] == held))
        pool = max(pools.values())
        jobs = [(held, seed, res, str(root), pool) for res in resolutions for seed in range(seeds) for held in held_out]
        with ProcessPoolExecutor(args.workers) as executor:
            results = list(executor.map(one, jobs))
    print(f"{args.board}: {len(held_out)} newcomers, each on a board of the other {len(models) - 1}; up to {pool} prompts each\n")
    print("| resolution | runs | stopped early | wrong claims | calls, mean (stopped runs) | calls, mean (all) | budget |")
    print("|---|---|---|---|---|---|---|")
    for res in resolutions:
        mine = [r for r in results if r["resolution"] == res]
        stopped = [r for r in mine if "settled" in r["reason"]]
        wrong = []
        for r in stopped:
            board = {m: v for m, v in rates.items() if m != r["held"]}
            if not claim_true(r["reason"], rates[r["held"]], board, res):
                wrong.append(r)
                print(f"  wrong: {r['held']} (truth {rates[r['held']]:.2f}%) seed {r['seed']}: {r['reason']}", file=sys.stderr)
        spent = [r["calls"] for r in stopped]
        print(
            f"| {'none' if res is None else f'{res:g} points'} | {len(mine)} | {len(stopped)} | {len(wrong)} | "
            f"{f'{np.mean(spent):.0f}' if spent else '—'} | {np.mean([r['calls'] for r in mine]):.0f} | {pool} |"
        )
        unclaimed = [r for r in mine if r not in stopped and r["calls"] < pools[r["held"]] and "budget" not in r["reason"]]
        for r in unclaimed:
            print(f"  stopped without a board claim: {r['held']}: {r['reason']}", file=sys.stderr)
    print(
        "; ".join(
            f"resolution {'none' if res is None else f'{res:g}'}: "
            f"{sum(1 for r in results if r['resolution'] == res and 'settled' in r['reason'])} of "
            f"{sum(1 for r in results if r['resolution'] == res)} runs stopped early on a claim"
            for res in resolutions
        )
    )


if __name__ == "__main__":
    harness.run(main, __file__)
