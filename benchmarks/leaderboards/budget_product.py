"""Leaderboards for a fraction of the calls, through the product itself (issue #30): the allocation
driven by ``orchestrator run --from-log`` and read back from ``orchestrator rank --json``, and the
per-category boards' interval coverage. Called by ``leaderboard_budget --through-product`` and
``--slices``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

from benchmarks.leaderboards.common import load
from orchestrator.raee.allocation import win_rate_intervals


def through_product(data: Path, fractions: list[float], workdir: Path | None) -> list[dict]:
    """The comparison through the CLI (module docstring, ``--through-product``); the run files stay
    in ``workdir`` when one is given. Returns one row per run (budget, allocation, τ, errors, the
    seconds of `run` and of `rank`)."""
    models, y = load(data)
    truth = dict(zip(models, np.nanmean(y, 1)))
    total = int((~np.isnan(y)).sum())
    annotations = [json.loads(line) for line in (data / "annotations.jsonl").open()]
    print(
        "| calls | allocation | Kendall τ | max error | mean error | coverage | fewest prompts | rows in the printed Elo's order "
        "| neighbours whose win rates are the other way | run s | rank s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    out: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = workdir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        source = {a["instruction_id"]: a["dataset"] for a in annotations}  # AlpacaEval's source sets: the slices
        prompts = sorted(source)
        with (root / "prompts.jsonl").open("w") as fh:
            fh.writelines(
                json.dumps({"id": p, "text": p, "reference": "the reference answer", "category": source[p]}) + "\n" for p in prompts
            )
        # each slice's full-data win rate: the mean over its prompts of each model's (repeat-averaged) outcome
        outcomes: dict[tuple[str, str], list[float]] = defaultdict(list)
        for a in annotations:
            if a["model"] != a["reference_model"]:
                outcomes[(a["model"], a["instruction_id"])].append(a["preference"] - 1)
        per_slice: dict[tuple[str, str], list[float]] = defaultdict(list)
        for (model, prompt), values in outcomes.items():
            per_slice[(model, source[prompt])].append(float(np.mean(values)))
        slice_truth = {key: float(np.mean(v)) for key, v in per_slice.items()}
        slice_lines = []
        repeats: dict[tuple[str, str], int] = defaultdict(int)
        with (root / "responses.jsonl").open("w") as responses, (root / "log.jsonl").open("w") as log:
            for a in annotations:
                if a["model"] == a["reference_model"]:
                    continue
                key = (a["model"], a["instruction_id"])
                if key not in repeats:
                    responses.write(json.dumps({"prompt_id": a["instruction_id"], "candidate": a["model"], "text": "an answer"}) + "\n")
                record = {
                    "kind": "reference",
                    "judge": "local-openai",
                    "prompt_id": a["instruction_id"],
                    "candidates": ["reference", a["model"]],
                    "repeat": repeats[key],
                    "probs": {"A": 2 - a["preference"], "B": a["preference"] - 1},
                }
                repeats[key] += 1
                log.write(json.dumps(record) + "\n")
        for fraction in fractions:
            for allocation in ("all", "adaptive"):
                name = f"lb-{allocation}-{int(fraction * 100)}"
                config = root / f"{name}.toml"
                config.write_text(
                    f'name = "{name}"\nruns_dir = "{root}"\n\n[data]\nprompts = "prompts.jsonl"\nresponses = "responses.jsonl"\n\n'
                    '[judging]\njudges = ["local-openai"]\n\n'
                    f'[reference]\nanchor = "dataset"\nsoft = true\nallocation = "{allocation}"\n\n'
                    f"[selection]\nbatch = 8\n\n[budget]\nmax_calls = {int(fraction * total)}\n"
                )
                start = time.perf_counter()
                run = subprocess.run(
                    [sys.executable, "-m", "orchestrator", "run", str(config), "--from-log", str(root / "log.jsonl")],
                    capture_output=True,
                    text=True,
                )
                run_s = time.perf_counter() - start
                if run.returncode != 0:
                    sys.exit(f"run failed ({run.returncode}): {run.stderr.strip()[-2000:]}")
                start = time.perf_counter()
                rank = subprocess.run(
                    [sys.executable, "-m", "orchestrator", "rank", str(root / f"{name}.sqlite"), "--json"],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                rank_s = time.perf_counter() - start
                (group,) = json.loads(rank.stdout)["groups"]
                rows = group["ranking"]
                for part in group.get("slices", []):
                    ranked = part["ranking"]
                    s_est = np.array([r["win_rate"] / 100 for r in ranked])
                    s_half = np.array([(r["win_rate_high"] - r["win_rate_low"]) / 200 for r in ranked])
                    s_t = np.array([slice_truth[(r["candidate"], part["slice"])] for r in ranked])
                    s_err = np.abs(s_est - s_t) * 100
                    slice_lines.append(
                        f"| {fraction:.0%} | {allocation} | {part['slice']} | {part['prompts']} | {kendalltau(s_est, s_t)[0]:.3f} | "
                        f"{s_err.max():.2f} | {np.mean(np.abs(s_est - s_t) <= s_half + 1e-9):.2f} | {min(r['prompts'] for r in ranked)} |"
                    )
                # the rows follow the Elo the table prints first; the pool's win rate beside it may
                # disagree where candidates were judged on different prompts (the table says so)
                elo = [r["score"] for r in rows]
                monotone = all(a >= b for a, b in zip(elo, elo[1:])) and [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
                crossed = sum(a["win_rate"] < b["win_rate"] for a, b in zip(rows, rows[1:]))
                names = [r["candidate"] for r in rows]
                est = np.array([r["win_rate"] / 100 for r in rows])
                half = np.array([(r["win_rate_high"] - r["win_rate_low"]) / 200 for r in rows])
                t = np.array([truth[c] for c in names])
                err = np.abs(est - t) * 100
                print(
                    f"| {fraction:.0%} | {allocation} | {kendalltau(est, t)[0]:.3f} | {err.max():.2f} | {err.mean():.2f} | "
                    f"{np.mean(np.abs(est - t) <= half + 1e-9):.2f} | {min(r['prompts'] for r in rows)} | {'yes' if monotone else 'no'} | "
                    f"{crossed} of {len(rows) - 1} | {run_s:.0f} | {rank_s:.1f} |",
                    flush=True,
                )
                out.append(
                    {"budget": fraction, "allocation": allocation, "models": len(names), "prompts": len(prompts)}
                    | {"tau": round(float(kendalltau(est, t)[0]), 3), "max_error": round(float(err.max()), 2)}
                    | {"run_s": round(run_s, 1), "rank_s": round(rank_s, 2), "rows_monotone": monotone, "win_rates_crossed": crossed}
                )
        print("\nPer category (AlpacaEval's source sets), from the same runs' `rank --json` slices:\n")
        print("| calls | allocation | category | prompts judged | Kendall τ | max error | coverage | fewest prompts |")
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(slice_lines))
    return out


def slices(data: Path, draws: int) -> None:
    """Per-category win-rate intervals (``--slices``): for each of AlpacaEval's source sets and a
    number k of its prompts, ``draws`` random k-prompt subsets shared by every model (a cut
    category); coverage of the category's full-data win rates by the product's 95% interval
    (:func:`~orchestrator.raee.allocation.win_rate_intervals`, as `rank` prints it) against the
    interval from each model's own residual sd alone (the variance before 2026-11-26)."""
    annotations = [json.loads(line) for line in (data / "annotations.jsonl").open()]
    source = {a["instruction_id"]: a["dataset"] for a in annotations}
    models, y = load(data)
    prompts = sorted({a["instruction_id"] for a in annotations})
    print("| category | its prompts | k judged | coverage, the product's interval | own sd only (z) | median half-width (points) |")
    print("|---|---|---|---|---|---|")
    for name in sorted(set(source.values())):
        columns = [j for j, p in enumerate(prompts) if source[p] == name]
        part_y = y[:, columns]
        truth = np.nanmean(part_y, 1)
        for k in (5, 10, 20, 40):
            covered, covered_own, halves = [], [], []
            for draw in range(draws):
                chosen = np.random.default_rng(draw).choice(len(columns), k, replace=False)
                cut = np.full_like(part_y, np.nan)
                cut[:, chosen] = part_y[:, chosen]
                est, half, own_sd, *_ = win_rate_intervals(cut, (~np.isnan(part_y)).sum(1))
                covered.append(np.mean(np.abs(est - truth) <= half))
                covered_own.append(np.mean(np.abs(est - truth) <= 1.96 * own_sd))
                halves.append(100 * np.median(half))
            print(f"| {name} | {len(columns)} | {k} | {np.mean(covered):.3f} | {np.mean(covered_own):.3f} | {np.median(halves):.1f} |")
