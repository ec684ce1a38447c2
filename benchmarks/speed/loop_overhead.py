"""Loop overhead per judgment: everything the orchestrator does around a judge call (selection,
posterior refit, planning writes, SQLite commit of every judgment, progress), measured with an
injected judge that answers instantly. Goal: ≤ 2 ms per judgment.

Side by side in the same run: the time of the bare SQLite commits alone (the floor), so the ratio
shows what the statistics cost on top.

    python -m benchmarks.speed.loop_overhead [--prompts 100] [--candidates 16] [--calls 3200] [--batch 64] [--strategy S]
"""

import asyncio
import json
import random
import tempfile
import time
from pathlib import Path

from benchmarks import harness
from orchestrator.judging.client import JudgeProfile, JudgeRequest, Judgment
from orchestrator.records.config import RunConfig
from orchestrator.records.dataset import load_dataset
from orchestrator.records.templates import get_template
from orchestrator.run.engine import RunEngine
from orchestrator.store import PlannedRequest, create_run


class InstantJudge:
    """Answers from hidden qualities in the response texts, with no I/O."""

    def __init__(self, quality: dict[str, float]):
        self.name = "instant"
        self.quality = quality

    async def judge(self, request: JudgeRequest) -> Judgment:
        a, b = request.candidates
        qa = self.quality[f"{request.prompt_id}/{a}"]
        qb = self.quality[f"{request.prompt_id}/{b}"]
        p = 1 / (1 + pow(2.718281828, -4 * (qa - qb)))
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
            top_logprobs=[[("A", -0.5), ("B", -1.0)]],
            text="A",
            prompt_tokens=600,
            completion_tokens=1,
        )


def write_dataset(folder: Path, prompts: int, candidates: int) -> tuple[Path, Path, dict]:
    rng = random.Random(0)
    quality = {}
    with (folder / "p.jsonl").open("w") as fp, (folder / "r.jsonl").open("w") as fr:
        for p in range(prompts):
            fp.write(json.dumps({"id": f"p{p}", "text": "An article. " * 200}) + "\n")
            for c in range(candidates):
                quality[f"p{p}/M{c}"] = rng.gauss(0, 1)
                fr.write(json.dumps({"prompt_id": f"p{p}", "candidate": f"M{c}", "text": f"Summary {c}. " * 20}) + "\n")
    return folder / "p.jsonl", folder / "r.jsonl", quality


def main() -> None:
    ap = harness.parser(__doc__, quick="800 calls instead of 3200")
    ap.add_argument("--prompts", type=int, default=100)
    ap.add_argument("--candidates", type=int, default=16)
    ap.add_argument("--calls", type=int, default=3200)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--no-reliability", action="store_true", help="shared judge parameters (before issue #17)")
    ap.add_argument("--strategy", default=None, help="selection.strategy (default: the product's, lookahead since issue #36)")
    args = ap.parse_args()
    if args.quick:
        args.calls = 800
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        prompts, responses, quality = write_dataset(folder, args.prompts, args.candidates)
        config = RunConfig.model_validate(
            {
                "name": "overhead",
                "runs_dir": str(folder),
                "data": {"prompts": str(prompts), "responses": str(responses)},
                "judging": {"judges": ["instant"]},
                "selection": {"batch": args.batch, **({"strategy": args.strategy} if args.strategy else {})},
                "budget": {"max_calls": args.calls},
                "stopping": {"rule": "budget"},  # measure the same work whatever the stopping rule
                "model": {"judge_reliability": not args.no_reliability},
                "dispatch": {"concurrency": args.batch},
            }
        )
        dataset = load_dataset(prompts, responses)
        templates = {"pairwise": get_template("poe-pairwise")}
        profile = JudgeProfile(name="instant", model="openai/instant", prefill=True)
        store = create_run(config.run_path, name="overhead", config=config.to_json(), seed=0, dataset=dataset, templates=templates)
        engine = RunEngine(store, config, {"instant": InstantJudge(quality)}, {"instant": profile}, templates, local={"instant"})
        started = time.perf_counter()
        reason = asyncio.run(engine.run())
        elapsed = time.perf_counter() - started
        n = store.spend().calls
        rounds = store.rounds()
        fit = sum(r["fit_s"] or 0 for r in rounds)
        select = sum(r["select_s"] or 0 for r in rounds)
        rows = list(store.judgments(ok_only=False))
        store.close()

        # The floor: committing the same judgments one transaction each, nothing else.
        floor_path = folder / "floor.sqlite"
        floor_store = create_run(floor_path, name="floor", config=config.to_json(), seed=0, dataset=dataset, templates=templates)
        floor_store.add_round(
            0,
            "pairwise",
            [],
            [
                PlannedRequest(
                    key=r.key,
                    judge=r.judge,
                    template=r.template,
                    kind=r.kind,
                    prompt_id=r.prompt_id,
                    candidates=r.candidates,
                    messages=[],
                    reserved_tokens=0,
                    reserved_usd=0.0,
                )
                for r in rows
            ],
            {},
        )
        judgments = [
            Judgment(
                key=r.key,
                judge="instant",
                template="poe-pairwise",
                kind="pairwise",
                prompt_id=r.prompt_id,
                candidates=r.candidates,
                status="ok",
                probs=r.probs,
                top_logprobs=r.top_logprobs,
            )
            for r in rows
        ]
        t0 = time.perf_counter()
        for j in judgments:
            floor_store.commit_judgment(j, 1, 0)
        floor = time.perf_counter() - t0
        floor_store.close()
    print(
        f"{args.prompts} prompts × {args.candidates} candidates, per_prompt, batch {args.batch}, {n} judgments, "
        f"{len(rounds)} rounds, stop: {reason}"
    )
    print(f"loop overhead: {elapsed:.2f} s → {1000 * elapsed / n:.3f} ms per judgment (goal ≤ 2 ms)")
    print(f"  of which refits {1000 * fit / n:.3f} ms, selection+planning {1000 * select / n:.3f} ms per judgment")
    print(f"  bare SQLite commit of the same judgments: {1000 * floor / n:.3f} ms per judgment (loop / floor = {elapsed / floor:.1f}x)")
    figures = {"judgments": n, "strategy": args.strategy or "default", "ms_per_judgment": round(1000 * elapsed / n, 3)}
    figures |= {
        "refit_ms": round(1000 * fit / n, 3),
        "selection_ms": round(1000 * select / n, 3),
        "sqlite_floor_ms": round(1000 * floor / n, 3),
    }
    summary = f"{figures['ms_per_judgment']:.2f} ms per judgment with the {figures['strategy']} selection ({n} judgments; selection {figures['selection_ms']:.2f} ms)"
    harness.record(__file__, args, summary, figures)


if __name__ == "__main__":
    main()
