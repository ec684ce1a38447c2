"""The loop and the rebuild not slower after a redesign (issues #29, #53): the same benchmark scripts
(this tree's) against the package of two trees — a base commit's and this one's — alternating, so
that both share the machine's state; the ratio this / base per measure.

    python -m benchmarks.speed.trees --base 26fbc38 [--runs 3]

The base tree is checked out with ``git worktree`` into a temporary folder and removed afterwards.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import harness

MEASURES = {"speed.loop_overhead": "ms_per_judgment", "speed.rebuild": "seconds"}


def measure(script: str, package_root: Path, scratch: Path, quick: bool) -> float:
    """One run of ``script`` (this tree's) with ``orchestrator`` imported from ``package_root``."""
    runner = scratch / "runner"
    runner.mkdir(exist_ok=True)
    if not (runner / "benchmarks").exists():
        (runner / "benchmarks").symlink_to(harness.ROOT / "benchmarks")
    out = scratch / "figures.json"
    env = os.environ | {"PYTHONPATH": str(package_root), "BENCHMARK_FIGURES_TO": str(out), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    command = [sys.executable, "-m", f"benchmarks.{script}", "--no-record", *(["--quick"] if quick else [])]
    check = subprocess.run(
        [sys.executable, "-c", "import orchestrator; print(orchestrator.__file__)"], cwd=runner, env=env, capture_output=True, text=True
    )
    if not check.stdout.startswith(str(package_root)):
        sys.exit(f"error: the package was imported from {check.stdout.strip() or check.stderr.strip()}, not from {package_root}")
    done = subprocess.run(command, cwd=runner, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed in {package_root}:\n{done.stderr[-2000:]}")
    return float(json.loads(out.read_text())[MEASURES[script]])


def main() -> None:
    ap = harness.parser(__doc__, quick="one run each, the quick forms of both scripts")
    ap.add_argument("--base", required=True, help="the commit to compare with (before the redesign)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs = 1 if args.quick else args.runs
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        base = scratch / "base"
        added = subprocess.run(
            ["git", "worktree", "add", "--detach", str(base), args.base], cwd=harness.ROOT, capture_output=True, text=True
        )
        if added.returncode != 0:
            sys.exit(f"error: cannot check out {args.base}: {added.stderr.strip()}")
        try:
            values: dict[str, dict[str, list[float]]] = {s: {"base": [], "this": []} for s in MEASURES}
            for k in range(runs):
                for script in MEASURES:
                    for label, root in (("base", base), ("this", harness.ROOT)) if k % 2 == 0 else (("this", harness.ROOT), ("base", base)):
                        values[script][label].append(measure(script, root, scratch, args.quick))
                        print(f"  run {k + 1}: {script} {label} {values[script][label][-1]:.3f}", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=harness.ROOT, capture_output=True)
    medians = {s: {label: statistics.median(v) for label, v in pair.items()} for s, pair in values.items()}
    ratios = {s: round(m["this"] / m["base"], 3) for s, m in medians.items()}
    summary = "; ".join(
        f"{s.split('.')[1]}: {medians[s]['this']:.3f} vs {medians[s]['base']:.3f} ({MEASURES[s]}, medians of {runs}), ratio {ratios[s]:.2f}×"
        for s in MEASURES
    )
    harness.record(
        __file__, args, f"this tree / {args.base}: {summary}", {"base": args.base, "runs": runs, "values": values, "ratios": ratios}
    )


if __name__ == "__main__":
    main()
