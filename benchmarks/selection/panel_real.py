"""Cost-aware panels on real judges (issue #17): SummEval coherence, 12 systems ranked across 100
articles (``scope = "global"``) by five LLM judges' 1–5 scores (absolute) and GPT-3.5's head-to-head
verdicts (pairwise), every request answered from the bundled logs, each judge at its list price per
call. USD until Spearman with the experts' system ranking reaches 90% of what every logged judgment
gives, and Spearman at fixed spends, side by side in one run:

- every judge scores every system first (the fixed absolute warm start), then GPT-3.5 compares
  (``model.absolute_warm_start``, ``selection.panel = "all"``: before issue #17);
- ``selection.kinds = "mixed"``: absolute scores and comparisons of every judge compete by value per
  USD (the default cost-aware panel);
- each judge alone (its kind of judgment only, cost-aware over its own requests).

    python -m benchmarks.selection.panel_real [--seeds 3] [--max-usd 3]
"""

import asyncio
import math
import tempfile
import time
from itertools import chain
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.harness import ROOT
from orchestrator.judging.client import JudgeProfile, JudgeRequest, Judgment
from orchestrator.judging.log_judge import LogJudge
from orchestrator.offline.replay.log_groups import build_groups
from orchestrator.offline.replay.replay import group_dataset
from orchestrator.offline.replay.report import spearman
from orchestrator.records.config import RunConfig
from orchestrator.records.log import load_log, load_responses
from orchestrator.records.templates import get_template
from orchestrator.run.engine import RunEngine
from orchestrator.run.groups import build_groups_for, fit_group
from orchestrator.store import create_run

EXAMPLES = ROOT / "examples"
LOGS = [EXAMPLES / "summeval-likert/coherence.log.jsonl", ROOT / "summeval-gpt35/coherence.log.jsonl"]
RESPONSES = EXAMPLES / "summeval-gpt35/responses.jsonl"
USD_PER_CALL = {  # 2023 list prices per ~1k prompt tokens (a SummEval article and its summaries)
    "gpt-4-0314": 0.03,
    "gpt-3.5-turbo-0301": 0.0015,
    "llama-2-70b-chat-hf": 0.0009,
    "llama-2-13b-chat-hf": 0.0003,
    "llama-2-7b-chat-hf": 0.0002,
}


class PricedLogJudge(LogJudge):
    """A log judge that bills its list price per call."""

    def __init__(self, name, records, usd):
        super().__init__(name, records)
        self.usd = usd

    async def judge(self, request: JudgeRequest) -> Judgment:
        answer = await super().judge(request)
        return answer.model_copy(update={"cost_usd": self.usd, "prompt_tokens": 1000})


def run(group, judges: list[str], settings: dict, seed: int, max_usd: float, folder: Path) -> list[tuple[float, float]]:
    dataset = group_dataset(group)
    run_group = build_groups_for(dataset, "global")[0]
    truth_of = dict(zip(group.names, group.truth))
    truth = np.asarray([truth_of[n] for n in run_group.names], dtype=float)
    config = RunConfig.model_validate(
        {
            "name": "panel-real",
            "seed": seed,
            "data": {"prompts": "(log)", "responses": "(log)", "scope": "global"},
            "judging": {"judges": judges},
            "model": settings.get("model", {}),
            "selection": {"batch": 4, **settings.get("selection", {})},
            "stopping": {"rule": "budget"},
            "budget": {"max_usd": max_usd},
            "dispatch": {"pipeline_depth": 1, "concurrency": 64, "max_attempts": 1},
        }
    )
    profiles = {j: JudgeProfile(name=j, model=f"log/{j}", price_input_per_mtok=USD_PER_CALL[j] * 1e3) for j in judges}
    log_judges = {j: PricedLogJudge(j, group.records, USD_PER_CALL[j]) for j in judges}
    templates = {"pairwise": get_template("poe-pairwise"), "absolute": get_template("poe-absolute")}
    curve: list[tuple[float, float]] = []

    def observe(spend, planner) -> None:
        curve.append((spend.usd, spearman(planner.posteriors[0].mean.numpy(), truth)))

    path = folder / f"{seed}-{'-'.join(judges)[:60]}-{len(curve)}-{time.monotonic_ns()}.sqlite"
    store = create_run(path, name="panel-real", config=config.to_json(), seed=seed, dataset=dataset, templates=templates)
    with store:
        engine = RunEngine(
            store,
            config,
            log_judges,  # type: ignore[arg-type]
            profiles,
            templates,
            answerable=lambda judge, prompt, cands, kind: log_judges[judge].holds(prompt, cands, kind),
            observe=observe,
        )
        asyncio.run(engine.run())
    return curve


def main() -> None:
    ap = harness.parser(__doc__)
    ap.add_argument("--seeds", type=harness.count, default=3)
    ap.add_argument("--max-usd", type=float, default=3.0)
    args = ap.parse_args()
    started = time.perf_counter()
    records = list(chain.from_iterable(load_log(p) for p in LOGS))
    (group,) = build_groups(records, load_responses(RESPONSES), "coherence", "global")
    run_group = build_groups_for(group_dataset(group), "global")[0]
    truth = np.asarray([dict(zip(group.names, group.truth))[n] for n in run_group.names], dtype=float)
    from orchestrator.poe import PoEConfig, get_expert

    poe = PoEConfig(expert=get_expert("soft_bt"), judge_sharpness=True, judge_precision=True)
    full = spearman(fit_group(run_group, group.rows, poe, debias="none").mean.numpy(), truth)
    target = 0.9 * full
    everyone = list(USD_PER_CALL)
    modes = {
        "warm start + all (before)": (everyone, {"model": {"absolute_warm_start": True}, "selection": {"panel": "all"}}),
        "mixed, cost-aware (new)": (everyone, {"selection": {"kinds": "mixed"}}),
    }
    modes.update({f"{j} alone": ([j], {"selection": {"kinds": "mixed"}}) for j in everyone})
    checkpoints = [0.1, 0.3, 1.0, args.max_usd]
    print(f"SummEval coherence, 12 systems × 100 articles, global scope; every logged judgment: Spearman {full:.3f}")
    print(f"USD until Spearman ≥ {target:.3f} (0.9 × that), and Spearman at fixed spends; mean of {args.seeds} seeds")
    print(f"{'mode':28} {'USD to 90%':>10} " + " ".join(f"{'@$' + format(c, 'g'):>8}" for c in checkpoints))
    with tempfile.TemporaryDirectory() as tmp:
        for mode, (judges, settings) in modes.items():
            reach, at = [], {c: [] for c in checkpoints}
            for seed in range(args.seeds):
                curve = run(group, judges, settings, seed, args.max_usd, Path(tmp))
                reach.append(next((usd for usd, rho in curve if rho >= target), math.inf))
                for c in checkpoints:
                    before = [rho for usd, rho in curve if usd <= c + 1e-9]
                    at[c].append(before[-1] if before else 0.0)
            cells = " ".join(f"{np.mean(at[c]):8.3f}" for c in checkpoints)
            print(f"{mode:28} {np.mean(reach):10.3f} {cells}")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    harness.run(main, __file__)
