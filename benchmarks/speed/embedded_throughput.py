"""Throughput of the embedded judge (pairwise judgments/s on this machine), with and without
llama.cpp's prompt-prefix reuse (`cache_prompt`), measured side by side in one run.

Requests are the PoE pairwise prompt on SummEval article 1 (bundled sample), all ordered pairs of
the first candidates in the order a recording uses them (consecutive requests share the article
prefix). Both modes answer the same requests; the ratio is the figure to compare across machines.

    python -m benchmarks.speed.embedded_throughput [--model qwen1.5b] [--pairs 20] [--concurrency 1]
"""

import asyncio
import os
import time

from benchmarks import harness
from benchmarks.harness import ROOT
from orchestrator.judging.client import JudgeRequest, LiteLLMJudge, get_profile
from orchestrator.judging.embedded import EmbeddedServer
from orchestrator.records.dataset import load_dataset
from orchestrator.records.templates import get_template

SAMPLE = ROOT / "examples" / "summeval-sample"


async def _measure(judge: LiteLLMJudge, requests: list[JudgeRequest], concurrency: int) -> tuple[float, int]:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(r):
        async with semaphore:
            return await judge.judge(r)

    started = time.perf_counter()
    results = await asyncio.gather(*(one(r) for r in requests))
    elapsed = time.perf_counter() - started
    return elapsed, sum(j.status == "ok" for j in results)


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--model", default="qwen1.5b")
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=1)
    args = ap.parse_args()
    dataset = load_dataset(SAMPLE / "prompts.jsonl", SAMPLE / "responses.jsonl")
    pid = next(iter(dataset.prompts))
    cands = sorted(dataset.responses[pid])
    template = get_template("poe-pairwise")
    profile = get_profile(args.model)
    pairs = [(a, b) for a in cands for b in cands if a != b][: args.pairs]
    print(f"model {args.model}, {len(pairs)} pairwise requests on one article, concurrency {args.concurrency}, {os.cpu_count()} cores")
    with EmbeddedServer(profile.embedded, parallel=args.concurrency) as server:
        figures = {}
        for mode, cache in (("prefix reuse (cache_prompt=true)", True), ("no reuse (cache_prompt=false)", False)):
            with_params = profile.model_copy(update={"params": {**profile.params, "extra_body": {"cache_prompt": cache}}})
            judge = LiteLLMJudge(with_params, api_base=server.api_base)
            requests = []
            for k, (a, b) in enumerate(pairs):
                values = {"context": dataset.prompts[pid].text, "A": dataset.responses[pid][a].text, "B": dataset.responses[pid][b].text}
                requests.append(
                    JudgeRequest(
                        key=f"{mode}-{k}",
                        template=template,
                        prompt_id=pid,
                        candidates=[a, b],
                        messages=template.render(values, attribute="coherence", prefill=profile.prefill),
                    )
                )
            asyncio.run(_measure(judge, requests[:1], 1))  # warm-up (model pages, first prompt)
            elapsed, ok = asyncio.run(_measure(judge, requests, args.concurrency))
            figures[mode] = ok / elapsed
            print(f"{mode}: {ok}/{len(requests)} ok in {elapsed:.1f} s → {ok / elapsed:.3f} judgments/s")
    reuse, no_reuse = figures.values()
    print(f"ratio reuse / no reuse: {reuse / no_reuse:.2f}x")


if __name__ == "__main__":
    harness.run(main, __file__)
