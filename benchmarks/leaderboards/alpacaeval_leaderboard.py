"""The AlpacaEval 2.0 leaderboard from its own annotations (issue #5 "must show", full data).

Writes ``../shared/data/alpacaeval/annotations.jsonl`` as a soft reference-anchored judgment log
(A = the reference model gpt4_1106_preview, B = the model; P(B) = preference − 1, repeated
annotations as repeats), fits it with ``orchestrator fit raee --log … --soft --json`` exactly as a
user would, and compares 100·p̂ with ``win_rate`` in ``leaderboard.csv``. The reference's own row
(50 by definition) and models without a leaderboard row are reported, not compared. The test suite
does the same on a bundled 6-model subset.

    python -m benchmarks.leaderboards.alpacaeval_leaderboard [--data ../shared/data/alpacaeval]
"""

import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import harness
from benchmarks.harness import SHARED_DATA
from benchmarks.leaderboards.common import reference_records


def main() -> None:
    parser = harness.parser(__doc__, quick="the same run (it takes seconds)")
    parser.add_argument("--data", type=Path, default=SHARED_DATA / "alpacaeval")
    args = parser.parse_args()
    annotations = [json.loads(line) for line in (args.data / "annotations.jsonl").open()]
    self_judged = sum(a["model"] == a["reference_model"] for a in annotations)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "alpacaeval.jsonl"
        log.write_text("".join(json.dumps(record) + "\n" for record in reference_records(annotations)))
        fit = subprocess.run(
            [sys.executable, "-m", "orchestrator", "fit", "raee", "--log", str(log), "--soft", "--json", "--population", "805"],
            capture_output=True,
            text=True,
        )
    if fit.returncode != 0:
        sys.exit(f"fit raee failed ({fit.returncode}): {fit.stderr.strip()}")
    rows = {r["candidate"]: r for r in json.loads(fit.stdout)["rows"] if r["judge"] == "gpt4_turbo"}
    board = {r[""]: float(r["win_rate"]) for r in csv.DictReader((args.data / "leaderboard.csv").open())}
    compared = [m for m in board if m in rows]
    worst = max(abs(rows[m]["p_hat"] * 100 - board[m]) for m in compared)
    same_order = sorted(compared, key=lambda m: -rows[m]["elo"]) == sorted(compared, key=lambda m: -board[m])
    print(
        f"{len(annotations)} annotations ({self_judged} of the reference against itself, left out); "
        f"{len(rows)} models fitted, {len(board)} leaderboard rows"
    )
    print(
        f"compared: {len(compared)} models; not fitted (leaderboard only): {sorted(set(board) - set(rows))}; "
        f"fitted, no leaderboard row: {sorted(set(rows) - set(board))}"
    )
    summary = f"max |100·p̂ − win_rate| = {worst:.2e} (goal 1e-6); leaderboard order reproduced: {same_order}"
    harness.record(__file__, args, summary, {"models": len(compared), "max_abs_difference": worst, "same_order": same_order})
    if worst > 1e-6 or not same_order:
        sys.exit(1)


if __name__ == "__main__":
    main()
