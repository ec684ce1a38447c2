"""The gate when one system fails on the hard prompts: a model against a copy of another that fails on
the longest third of the prompts, through ``orchestrator compare`` (goal ``gate-lost-prompts``).

AlpacaEval 2.0's GPT-4-turbo preferences (``../shared/data/alpacaeval``) give, per instruction, the
probability that each model beats the reference; a head-to-head judge on the test server answers
``P(A better) = σ(logit p_A − logit p_B)`` for the two models' answers, in both shown orders (no
position bias). Both systems are candidate models served by the same test server: the baseline
always answers, the candidate ``A′`` — a copy of model A — fails (HTTP 500, after the retries) on the
third of the instructions where A's answers are longest. The budget covers every prompt.

The truth under the documented rule (a prompt whose answer could not be generated is lost by its
system) is the mean over every instruction of ``P(A better)`` where A′ answered and 0 where it did
not; a gate that left those prompts out would read the mean over the answered (shorter) ones only.
Per pair: the product's decision and interval next to both readings, and the decision of a gate that
leaves those prompts out (the product before the rule) with the same judge, order, rounds and budget.

    python -m benchmarks.validity.gate_lost_prompts [--pairs 4]
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks import harness

ENV = {"ORCHESTRATOR_JUDGMENT_CACHE": "off", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
TAG = re.compile(r"<<ans:([\w.\-]+):(\d+)>>")
PAIRS = [
    ("claude-2.1", "claude-instant-1.2"),
    ("gpt-3.5-turbo-1106", "claude-2.1_concise"),
    ("OpenHermes-2.5-Mistral-7B", "gpt4_0613_concise"),
    ("vicuna-13b-v1.5", "gemma-7b-it"),
    ("claude", "claude-2.1"),
    ("FuseChat-Llama-3.2-3B-Instruct", "FuseChat-Llama-3.1-8B-Instruct"),
]
"""(A, B) pairs of AlpacaEval models whose win rates are within a few points (the last: A weaker)."""


def logit(p: float) -> float:
    p = min(max(p, 0.01), 0.99)
    return math.log(p / (1 - p))


class World:
    """The test server's behaviour: the two candidate models write tagged answers (the copy fails on
    its failing prompts), the judge reads the tags and answers the preference the data imply."""

    def __init__(self, prefs: dict[str, dict[int, float]], copy_of: str, failing: set[int]):
        self.prefs, self.copy_of, self.failing = prefs, copy_of, failing
        self.lock = threading.Lock()
        self.generations: dict[str, int] = defaultdict(int)

    def __call__(self, body: dict):
        from orchestrator.judging.testserver import completion, logprob_entry

        model = body.get("model", "")
        text = " ".join(m["content"] for m in body.get("messages", []))
        if model in ("cand", "base"):
            prompt = int(re.search(r"Instruction (\d+)", body["messages"][-1]["content"]).group(1))  # type: ignore[union-attr]
            with self.lock:
                self.generations[model] += 1
            if model == "cand" and prompt in self.failing:
                return 500, {}, {"error": {"message": "the model is down", "type": "server_error"}}
            source = self.copy_of if model == "cand" else self.base
            return 200, {}, completion(f"<<ans:{source}:{prompt}>>")
        (a, pa), (b, pb) = TAG.findall(text)[-2:]
        p_first = 1 / (1 + math.exp(-(logit(self.prefs[a][int(pa)]) - logit(self.prefs[b][int(pb)]))))
        return 200, {}, completion("A", [logprob_entry("A", [("A", p_first), ("B", 1 - p_first)])])

    base = ""


def one_pair(a: str, b: str, prefs: dict, lengths: dict, prompts: list[int], folder: Path) -> dict:
    from orchestrator.judging.testserver import FakeOpenAIServer

    by_length = sorted(prompts, key=lambda i: -lengths[a][i])
    failing = set(by_length[: len(prompts) // 3])
    world = World(prefs, a, failing)
    world.base = b
    p_win = {i: 1 / (1 + math.exp(-(logit(prefs[a][i]) - logit(prefs[b][i])))) for i in prompts}
    truth = 100 * float(np.mean([0.0 if i in failing else p_win[i] for i in prompts]))
    left_out = 100 * float(np.mean([p_win[i] for i in prompts if i not in failing]))
    with open(folder / "prompts.jsonl", "w") as fh:
        fh.writelines(json.dumps({"id": f"i{i}", "text": f"Instruction {i}"}) + "\n" for i in prompts)
    judges = folder / "judges"
    judges.mkdir()
    with FakeOpenAIServer(world) as server:
        (judges / "pairjudge.toml").write_text(
            f'name = "pairjudge"\nmodel = "openai/pairjudge"\napi_base = "{server.url}"\nlogprobs = true\ntop_logprobs = 5\n'
            "prefill = true\nprice_input_per_mtok = 0.0\nprice_output_per_mtok = 0.0\n"
        )
        config = folder / "gate.toml"
        config.write_text(
            f'name = "gate"\nseed = 0\nruns_dir = "{folder}/runs"\n[data]\nprompts = "{folder}/prompts.jsonl"\nscope = "global"\n'
            '[judging]\njudges = ["pairjudge"]\npairwise_template = "generic-pairwise"\ntask = "follow the instruction"\ncriterion = "helpfulness"\n'
            '[compare]\ncandidate = "cand"\nbaseline = "base"\n'
            f"[selection]\nbatch = 40\n[budget]\nmax_calls = {2 * len(prompts)}\n"
            "[dispatch]\nconcurrency = 8\nbackoff_initial_s = 0.01\nbackoff_max_s = 0.05\n"
            f'[candidates.cand]\nmodel = "openai/cand"\napi_base = "{server.url}"\nmax_tokens = 16\n'
            f'[candidates.base]\nmodel = "openai/base"\napi_base = "{server.url}"\nmax_tokens = 16\n'
        )
        done = subprocess.run(
            [sys.executable, "-m", "orchestrator", "compare", str(config), "--json"],
            capture_output=True,
            text=True,
            env={**os.environ, **ENV, "ORCHESTRATOR_JUDGES": str(judges)},
            cwd=folder,
        )
    if done.returncode not in (0, 10, 11, 12, 13):
        raise SystemExit(f"compare failed ({done.returncode}): {done.stderr[-800:]}")
    out = json.loads(done.stdout)
    leave_out = leave_out_reading(folder / "runs" / "gate.sqlite", p_win, failing)
    return {
        "pair": f"{a}′ vs {b}",
        "truth": truth,
        "left_out_truth": left_out,
        "decision": out["decision"],
        "win_rate": out["win_rate"],
        "low": out["win_rate_low"],
        "high": out["win_rate_high"],
        "decided_after": out["decided_after"],
        "prompts": len(prompts),
        "lost": out.get("lost", {}).get("cand", 0),
        "leave_out": leave_out,
        "covers": out["win_rate_low"] <= truth <= out["win_rate_high"],
        "generations": dict(world.generations),
    }


def leave_out_reading(path: Path, p_win: dict[int, float], failing: set[int]) -> dict:
    """What the gate that left the failed prompts out (the product before the rule) decides with the
    same budget: the same seeded order and rounds, a failed prompt skipped, each answered one read
    at the judge's outcome (both shown orders of this judge average to ``P(A better)``)."""
    from orchestrator.records.config import RunConfig
    from orchestrator.run.planners.compare import comparison_order, decision_of
    from orchestrator.store import open_run

    with open_run(path, write=False) as store:
        config = RunConfig.from_stored(store.config)
        section = config.compare
        assert section is not None
        order = comparison_order(store.dataset(), section.candidate, section.baseline, config.seed)
    batch = config.selection.batch
    answered = [int(p[1:]) for p in order if int(p[1:]) not in failing][: section.max_prompts or None]
    x = np.array([p_win[i] for i in answered])
    looks, read = [], 0
    for start in range(0, len(order), batch):  # a round of `batch` prompts reads its answered ones
        read += sum(1 for p in order[start : start + batch] if int(p[1:]) not in failing)
        if read and (not looks or read > looks[-1]):
            looks.append(min(read, len(x)))
    found = decision_of(x, section, sorted(set(looks)))
    return {"decision": found.decision, "win_rate": 50 + found.difference, "low": 50 + found.low, "high": 50 + found.high, "at": found.at}


def main() -> None:
    parser = harness.parser(__doc__, quick="2 pairs on 240 instructions")
    parser.add_argument("--pairs", type=harness.count, default=4, help="model pairs (of the list in the script)")
    args = parser.parse_args()
    rows = [json.loads(line) for line in open(harness.shared("alpacaeval", "annotations.jsonl"))]
    prefs: dict[str, dict[int, float]] = defaultdict(dict)
    lengths: dict[str, dict[int, int]] = defaultdict(dict)
    index: dict[str, int] = {}
    for r in rows:
        i = index.setdefault(r["instruction_id"], len(index))
        prefs[r["model"]][i] = float(r["preference"]) - 1
        lengths[r["model"]][i] = int(r["len_model"])
    pairs = [(a, b) for a, b in PAIRS if a in prefs and b in prefs][: 2 if args.quick else args.pairs]
    results = []
    for a, b in pairs:
        prompts = sorted(set(prefs[a]) & set(prefs[b]))
        if args.quick:
            prompts = prompts[:240]
        with tempfile.TemporaryDirectory() as tmp:
            results.append(one_pair(a, b, prefs, lengths, prompts, Path(tmp)))
    print("A model A′ that fails on the longest third of the instructions (HTTP 500 after its retries) against model B,")
    print("through `orchestrator compare` with a budget of every prompt; win rates of A′ over B, percent\n")
    print(
        "| pair | prompts | truth (failed = lost) | reading without the failed prompts | product: decision (after) | "
        "product: win rate (interval) | prompts lost | covers the truth | the gate that leaves them out: decision after (win rate, interval) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        lo = r["leave_out"]
        print(
            f"| {r['pair']} | {r['prompts']} | {r['truth']:.1f} | {r['left_out_truth']:.1f} | {r['decision']} ({r['decided_after']}) | "
            f"{r['win_rate']:.1f} ({r['low']:.1f}–{r['high']:.1f}) | {r['lost']} | {'yes' if r['covers'] else 'NO'} | "
            f"{lo['decision']} after {lo['at']} ({lo['win_rate']:.1f}, {lo['low']:.1f}–{lo['high']:.1f}) |"
        )
    wrong = [r for r in results if (r["decision"] == "better" and r["truth"] <= 50) or (r["decision"] == "worse" and r["truth"] >= 50)]
    misled = [r for r in results if r["leave_out"]["decision"] in ("better", "equivalent", "not worse") and r["truth"] < 45]
    covered = sum(r["covers"] for r in results)
    print(
        f"\n{len(results)} pairs: the product's interval covers the truth in {covered} of {len(results)}, "
        f"{len(wrong)} wrong decisions; leaving the failed prompts out would have called A′ better or equivalent "
        f"in {len(misled)} of the pairs where it is truly worse"
    )


if __name__ == "__main__":
    harness.run(main, __file__)
