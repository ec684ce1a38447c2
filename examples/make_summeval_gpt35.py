"""Build the bundled real-judge example from ../shared/data/summeval (run from the repo root).

GPT-3.5-turbo-0301 head-to-head verdicts (Shen et al., 2023) on SummEval, both orders, one
aspect, turned into the judgment-log format: verdict A → P(A)=1, B → P(B)=1, tie C → P(C)=1
(a tie counts as half a win). Responses keep the human scores and drop the summary texts.
"""

import json
import sys
from pathlib import Path

shared = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/summeval")
out = Path(__file__).parent / "summeval-gpt35"
aspect = "coherence"
systems = set()
with (out / f"{aspect}.log.jsonl").open("w") as fh:
    for line in (shared / "judge_pairwise.jsonl").open():
        row = json.loads(line)
        if row["aspect"] != aspect or row["verdict"] is None:
            continue
        probs = {"A": 0.0, "B": 0.0, "C": 0.0}
        probs[row["verdict"]] = 1.0
        systems |= {row["first"], row["second"]}
        fh.write(
            json.dumps(
                {
                    "kind": "pairwise",
                    "judge": row["judge"],
                    "prompt_id": row["prompt_id"],
                    "candidates": [row["first"], row["second"]],
                    "probs": probs,
                    "source": "verdict",
                }
            )
            + "\n"
        )
with (out / "responses.jsonl").open("w") as fh:
    for line in (shared / "responses.jsonl").open():
        row = json.loads(line)
        if row["candidate"] in systems:
            fh.write(json.dumps({"prompt_id": row["prompt_id"], "candidate": row["candidate"], "human": row["human"]}) + "\n")
