"""Throughput with several endpoints for one judge (issue #21 item 2; goal ≥ 90% of the summed
concurrency limit): three local OpenAI-compatible servers with 1 s latency, `max_concurrency = 8`
each (24 calls in flight, so at most 24 calls/s), driven through litellm's Router.

0. baseline: the same calls to one endpoint without the Router, 24 at a time (what litellm alone costs);
1. judge level: N requests through the judge and the run's retry layer, 24 at a time;
2. a whole run: the engine planning rounds of `--batch` comparisons (pipeline depth 2, `dispatch.concurrency = 24`).

    python -m benchmarks.speed.router_throughput [--requests 240] [--batch 48]
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks import harness
from orchestrator import api
from orchestrator.judging.client import JudgeRequest, LiteLLMJudge, get_profile
from orchestrator.judging.dispatch import RetryPolicy, call_with_retries
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.records.templates import get_template

LATENCY_S, PER_ENDPOINT, ENDPOINTS = 1.0, 8, 3


def judge_level(judge: LiteLLMJudge, n: int) -> tuple[float, Counter]:
    template = get_template("poe-pairwise")
    messages = template.render({"context": "An article.", "A": "One.", "B": "Two."}, attribute="coherence")
    requests = [JudgeRequest(key=f"k{i}", template=template, messages=messages, prompt_id="p", candidates=["a", "b"]) for i in range(n)]

    async def every() -> list:
        slots = asyncio.Semaphore(PER_ENDPOINT * ENDPOINTS)

        async def one(request):
            async with slots:
                return await call_with_retries(judge, request, RetryPolicy(3, 0.01, 0.1))

        return await asyncio.gather(*(one(r) for r in requests))

    started = time.perf_counter()
    results = asyncio.run(every())
    elapsed = time.perf_counter() - started
    return elapsed, Counter((j.raw or {}).get("_deployment") for j, _ in results if j.status == "ok")


def run_level(folder: Path, n: int, batch: int) -> tuple[float, dict]:
    prompts, responses = folder / "p.jsonl", folder / "r.jsonl"
    prompts.write_text(json.dumps({"id": "p0", "text": "An article."}) + "\n")
    responses.write_text(
        "".join(json.dumps({"prompt_id": "p0", "candidate": f"M{c:02d}", "text": f"Summary {c}."}) + "\n" for c in range(40))
    )
    config = folder / "run.toml"
    config.write_text(
        f'name = "router"\nruns_dir = "{folder}"\n[data]\nprompts = "{prompts}"\nresponses = "{responses}"\n'
        f'[judging]\njudges = ["pool"]\n[selection]\nbatch = {batch}\n[stopping]\nrule = "budget"\n[budget]\nmax_calls = {n}\n'
        f"[dispatch]\nconcurrency = {PER_ENDPOINT * ENDPOINTS}\n"
    )
    started = time.perf_counter()
    path, _ = api.start(config, cache=False)
    elapsed = time.perf_counter() - started
    return elapsed, api.status(path).as_dict()["deployments"]["pool"]


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--requests", type=int, default=240)
    ap.add_argument("--batch", type=int, default=48)
    args = ap.parse_args()
    ideal = PER_ENDPOINT * ENDPOINTS / LATENCY_S
    servers = [FakeOpenAIServer(delay_s=LATENCY_S) for _ in range(ENDPOINTS)]
    for s in servers:
        s.__enter__()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "judges").mkdir()
        text = 'name = "pool"\nmodel = "openai/local"\nprefill = true\nprice_input_per_mtok = 0.0\nprice_output_per_mtok = 0.0\n'
        for k, s in enumerate(servers):
            text += f'[[deployments]]\napi_base = "{s.url}"\nmax_concurrency = {PER_ENDPOINT}\nname = "server-{k}"\n'
        (folder / "judges" / "pool.toml").write_text(text)
        os.environ["ORCHESTRATOR_JUDGES"] = str(folder / "judges")
        (folder / "judges" / "single.toml").write_text(
            f'name = "single"\nmodel = "openai/local"\nprefill = true\napi_base = "{servers[0].url}"\nprice_input_per_mtok = 0.0\n'
        )
        elapsed, _ = judge_level(LiteLLMJudge(get_profile("single")), args.requests)
        rate = args.requests / elapsed
        print(
            f"baseline, one endpoint without the Router, 24 in flight: {args.requests} calls in {elapsed:.1f} s = {rate:.1f}/s ({rate / ideal:.0%})"
        )
        elapsed, spread = judge_level(LiteLLMJudge(get_profile("pool")), args.requests)
        rate = args.requests / elapsed
        print(
            f"judge level: {args.requests} calls in {elapsed:.1f} s = {rate:.1f}/s of {ideal:.0f}/s ({rate / ideal:.0%}); per endpoint {dict(spread)}"
        )
        elapsed, spread = run_level(folder, args.requests, args.batch)
        rate = args.requests / elapsed
        print(
            f"whole run (batch {args.batch}): {args.requests} calls in {elapsed:.1f} s = {rate:.1f}/s of {ideal:.0f}/s ({rate / ideal:.0%}); per endpoint {spread}"
        )
    for s in servers:
        s.__exit__(None, None, None)


if __name__ == "__main__":
    harness.run(main, __file__)
