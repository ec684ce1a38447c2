"""RAEE over 1M judgments (issue #5 goal: ≤ 1 s).

Synthetic reference-anchored judgments: 3 judges × 2 repeats × 50 candidates × P prompts
(P = 10^6 / 300 ≈ 3334), soft A/B/C probabilities. Times the full report
(:func:`orchestrator.raee.report.raee_report`: outcomes, run-averaging, ICC(3,k) screens, κ factor,
per-cell Jeffreys estimates, pooled rows, diagnostics) on columnar arrays, hard and soft, and, for
information, loading the same judgments from a run file's SQLite table.

    python -m benchmarks.speed.raee_speed [--judgments 1000000] [--repeats 3]
"""

import json
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from orchestrator.raee import ReferenceJudgments, raee_report


def synthetic(n_target: int, seed: int = 0) -> ReferenceJudgments:
    rng = np.random.default_rng(seed)
    judges, repeats, cands = 3, 2, 50
    prompts = int(np.ceil(n_target / (judges * repeats * cands)))
    j, r, c, p = np.meshgrid(np.arange(judges), np.arange(repeats), np.arange(cands), np.arange(prompts), indexing="ij")
    j, r, c, p = (x.ravel()[:n_target] for x in (j, r, c, p))
    skill = np.linspace(-1.5, 1.5, cands)
    difficulty = rng.normal(0, 1, prompts)
    logit = skill[c] + difficulty[p] + rng.normal(0, 0.3 + 0.3 * j, c.size)
    win = 1 / (1 + np.exp(-logit))
    tie = 0.1 * np.exp(-(logit**2))
    return ReferenceJudgments(
        anchor=np.full(c.size, "ref", dtype=object),
        judge=np.array([f"judge{k}" for k in range(judges)], dtype=object)[j],
        candidate=np.array([f"model{k:02d}" for k in range(cands)], dtype=object)[c],
        prompt=np.array([f"p{k}" for k in range(prompts)], dtype=object)[p],
        repeat=r.astype(np.int64),
        win=win * (1 - tie),
        tie=tie,
        loss=(1 - win) * (1 - tie),
    )


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--judgments", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3, help="timing repetitions (best is reported)")
    args = ap.parse_args()
    data = synthetic(args.judgments)
    print(f"{len(data):,} judgments: 3 judges × 2 runs × 50 candidates × {len(set(data.prompt.tolist())):,} prompts")
    for soft in (False, True):
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            report = raee_report(data, soft=soft, population=5000)
            times.append(time.perf_counter() - t0)
        strong = sum(s.strong for s in report.judges)
        print(
            f"raee_report ({'soft' if soft else 'hard'}): best {min(times):.3f} s, mean {np.mean(times):.3f} s "
            f"({len(report.rows)} rows, {strong} strong judges, ICC {[round(s.icc, 3) for s in report.judges]})"
        )
    # for information: reading the same judgments back from SQLite (the run file's judgments table)
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(Path(tmp) / "j.sqlite")
        db.execute("create table judgments (judge text, prompt_id text, candidates text, repeat int, probs text)")
        db.executemany(
            "insert into judgments values (?, ?, ?, ?, ?)",
            (
                (jn, pn, json.dumps(["ref", cn]), int(rp), json.dumps([{"A": lo, "B": w, "C": t}]))
                for jn, pn, cn, rp, w, t, lo in zip(data.judge, data.prompt, data.candidate, data.repeat, data.win, data.tie, data.loss)
            ),
        )
        db.commit()
        t0 = time.perf_counter()
        rows = []
        for jn, pn, cands, rp, probs in db.execute("select * from judgments"):
            cs = json.loads(cands)
            pr = json.loads(probs)[0]
            rows.append((cs[0], jn, cs[1], pn, rp, pr["B"], pr["C"], pr["A"]))
        loaded = ReferenceJudgments.from_rows(rows)
        t_load = time.perf_counter() - t0
        t0 = time.perf_counter()
        raee_report(loaded, soft=True)
        print(f"load from SQLite {t_load:.2f} s + fit {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    harness.run(main, __file__)
