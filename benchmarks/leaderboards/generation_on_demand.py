"""Generation on demand on AlpacaEval 2.0 (issue #71): how many answers a campaign generates when
its candidates are models, against what it judged — on GPT-4-turbo's real judgments of 37 models
against one anchor on 805 instructions (``../shared/data/alpacaeval``), through the command a user
runs.

Each campaign runs twice with the same seed: once with the newcomers as candidates that are models
(``[candidates.NAME]``; their answers from ``--answers-from``, placeholder texts — the judgment log
holds what the judge said of the real ones) and once from a full responses file that holds every
answer up front, as every campaign needed before. The judge answers from the log (``--from-log``)
both times, so the two runs must give the same estimates; the figures are the answers each run with
candidate models generated (``status --json``) against the prompts it judged.

1. **board**: a newcomer placed on a board of the other 36 models (``[reference] board``,
   ``allocation = "adaptive"``) with ``max_calls = 100``: goal ≤ 110 answers generated, not 805.
2. **leaderboard**: five newcomers spread over the board ranked against the anchor at 20% of their
   calls: goal ≤ 25% of their answers generated.
3. **gate**: two newcomers compared through the anchor (``orchestrator compare``, ``anchor =
   "dataset"``; the gate asks both shown orders, and AlpacaEval judged one, so the log holds each
   judgment mirrored as the other order's): goal ≤ 1.05 × the prompts judged, per system.

    python -m benchmarks.leaderboards.generation_on_demand [--newcomers 8] [--workers 2]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.leaderboards.board_claims import board_records

ENV = {"ORCHESTRATOR_JUDGMENT_CACHE": "off", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True, env={**os.environ, **ENV})


def config_text(folder: Path, name: str, seed: int, shared: Path, models: list[str], responses: Path | None, body: str) -> str:
    data = f'prompts = "{shared}/prompts.jsonl"\n' + (f'responses = "{responses}"\n' if responses is not None else "")
    tables = "".join(f'\n[candidates."{m}"]\nmodel = "openai/{m}"\n' for m in models)
    return f'name = "{name}"\nruns_dir = "{folder}"\nseed = {seed}\n\n[data]\n{data}\n[judging]\njudges = ["local-openai"]\n{body}{tables}'


def campaign(job: tuple[str, str, list[str], int, str, str]) -> dict:
    """One campaign twice (candidate models, full responses file); its figures."""
    kind, label, newcomers, seed, body, root = job
    shared = Path(root)
    out: dict = {"kind": kind, "label": label, "newcomers": newcomers}
    rankings = {}
    for variant in ("models", "full"):
        folder = shared / f"{kind}-{label}-{seed}-{variant}"
        folder.mkdir(parents=True)
        responses = None if variant == "models" else shared / f"responses-{label}.jsonl"
        config = folder / "run.toml"
        config.write_text(config_text(folder, "run", seed, shared, newcomers if variant == "models" else [], responses, body))
        command = "compare" if kind == "gate" else "run"
        args = [command, str(config), "--from-log", str(shared / f"log-{label}.jsonl")]
        if variant == "models":
            args += ["--answers-from", str(shared / f"responses-{label}.jsonl")]
        done = cli(*args, *(["--json", "--no-cache"] if kind == "gate" else ["--no-cache", "--no-report"]))
        if done.returncode not in (0, 10, 11, 12, 13):
            raise RuntimeError(f"{kind} {label} {variant}: exit {done.returncode}: {done.stderr.strip()[-600:]}")
        run = folder / "run.sqlite"
        status = json.loads(cli("status", str(run), "--json").stdout)
        ranked = json.loads(cli("rank", str(run), "--json").stdout)
        rankings[variant] = [{k: v for k, v in r.items()} for g in ranked["groups"] for r in g["ranking"]]
        if variant == "models":
            out["generated"] = {c: n["ok"] for c, n in status["answers"].items()}
            out["judged"] = judged_prompts(run, newcomers)
            out["calls"] = status["spent"]["calls"]
            if kind == "gate":
                out["decision"] = json.loads(done.stdout)["decision"]
    out["same_estimates"] = rankings["models"] == rankings["full"]
    return out


def judged_prompts(run: Path, newcomers: list[str]) -> dict[str, int]:
    import sqlite3

    db = sqlite3.connect(run)
    try:
        rows = db.execute("select prompt_id, candidates from judgments where status = 'ok'").fetchall()
    finally:
        db.close()
    return {m: len({p for p, shown in rows if m in json.loads(shown)}) for m in newcomers}


def main() -> None:
    p = harness.parser(__doc__, quick="3 newcomers on the board, one leaderboard, one gate")
    p.add_argument("--newcomers", type=harness.count, default=8, help="models placed on the board in turn")
    p.add_argument("--workers", type=harness.count, default=2)
    args = p.parse_args()
    rates, records = board_records("alpacaeval")
    models = sorted(rates)
    by_rate = [models[k] for k in np.argsort([rates[m] for m in models])]
    spread = lambda n: [by_rate[round(k * (len(by_rate) - 1) / max(n - 1, 1))] for k in range(n)]  # noqa: E731
    newcomers = spread(3 if args.quick else args.newcomers)
    five = spread(5)
    gates = [(by_rate[len(by_rate) // 2], by_rate[len(by_rate) // 2 + 1])] + ([] if args.quick else [(by_rate[5], by_rate[-6])])
    prompts = sorted({r["prompt_id"] for r in records})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "prompts.jsonl").write_text("".join(json.dumps({"id": q, "text": q, "reference": "the reference"}) + "\n" for q in prompts))

        def files(label: str, names: list[str], board: bool, both_orders: bool = False) -> None:
            mine = [r for r in records if r["candidates"][1] in names]
            if both_orders:  # the gate asks both shown orders; AlpacaEval judged one: the same preference, mirrored
                mine += [{**r, "candidates": r["candidates"][::-1], "probs": {"A": r["probs"]["B"], "B": r["probs"]["A"]}} for r in mine]
            (root / f"responses-{label}.jsonl").write_text(
                "".join(
                    json.dumps({"prompt_id": q, "candidate": m, "text": f"an answer of {m}"}) + "\n"
                    for q in prompts
                    for m in names  # a model answers every prompt; the full file holds every answer
                )
            )
            (root / f"log-{label}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mine))
            if board:
                (root / f"board-{label}.jsonl").write_text(
                    "".join(json.dumps(r) + "\n" for r in records if r["candidates"][1] not in names)
                )

        jobs = []
        for m in newcomers:
            files(m, [m], board=True)
            body = f'\n[reference]\nanchor = "dataset"\nsoft = true\nallocation = "adaptive"\nboard = "{root}/board-{m}.jsonl"\n'
            jobs.append(("board", m, [m], 0, body + "\n[selection]\nbatch = 10\n\n[budget]\nmax_calls = 100\n", str(root)))
        files("five", five, board=False)
        calls = round(0.2 * len(five) * len(prompts))
        body = f'\n[reference]\nanchor = "dataset"\nsoft = true\n\n[selection]\nbatch = 20\n\n[budget]\nmax_calls = {calls}\n'
        jobs.append(("leaderboard", "five", five, 0, body, str(root)))
        for k, (a, b) in enumerate(gates):
            files(f"gate{k}", [a, b], board=False, both_orders=True)
            body = f'\n[compare]\ncandidate = "{a}"\nbaseline = "{b}"\nanchor = "dataset"\n\n[budget]\nmax_calls = {2 * len(prompts)}\n'
            jobs.append(("gate", f"gate{k}", [a, b], 0, body, str(root)))
        with ProcessPoolExecutor(args.workers) as executor:
            results = list(executor.map(campaign, jobs))
    print(
        f"AlpacaEval 2.0: {len(models)} models × {len(prompts)} prompts; each campaign with candidate models and from a full responses file\n"
    )
    print(
        "| campaign | newcomers | judge calls | answers generated | prompts judged | generated / judged | generated / all answers | same estimates |"
    )
    print("|---|---|---|---|---|---|---|---|")
    worst: dict[str, float] = {}
    for r in results:
        made, judged = sum(r["generated"].values()), sum(r["judged"].values())
        per_system = max(r["generated"][m] / max(r["judged"][m], 1) for m in r["newcomers"])
        share = made / (len(r["newcomers"]) * len(prompts))
        key = {
            "board": "board: most answers generated",
            "leaderboard": "leaderboard: share of answers generated",
            "gate": "gate: generated / judged, per system",
        }[r["kind"]]
        value = {"board": float(made), "leaderboard": share, "gate": per_system}[r["kind"]]
        worst[key] = max(worst.get(key, 0.0), value)
        print(
            f"| {r['kind']} | {', '.join(r['newcomers'])} | {r['calls']} | {made} | {judged} | {made / max(judged, 1):.3f} | "
            f"{100 * share:.1f}% | {'yes' if r['same_estimates'] else 'NO'}{' (' + r['decision'] + ')' if 'decision' in r else ''} |"
        )
    same = all(r["same_estimates"] for r in results)
    print(
        f"\nboard: at most {worst['board: most answers generated']:.0f} answers generated (goal ≤ 110); leaderboard: "
        f"{100 * worst['leaderboard: share of answers generated']:.1f}% of the answers generated (goal ≤ 25%); gate: "
        f"{worst['gate: generated / judged, per system']:.3f}× the prompts judged (goal ≤ 1.05×); "
        f"estimates {'the same as' if same else 'NOT the same as'} from full responses files in {sum(r['same_estimates'] for r in results)} of {len(results)} campaigns"
    )


if __name__ == "__main__":
    harness.run(main, __file__)
