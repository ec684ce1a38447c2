"""Build the bundled multi-judge absolute-score example from ../shared/data/summeval (run from the repo root).

Five LLM judges' 1-5 Likert scores of the 12 abstractive SummEval systems on 100 articles (GPT-4-0314,
GPT-3.5-turbo-0301, Llama-2-7B/13B/70B-chat, the "rts" prompt; Shen et al., 2023) for one aspect, in
the judgment-log format (a score s → probs {"s": 1.0}). Where the source left `score` empty, the
score is read from the response text ("... a score of one") when it says one; otherwise the
judgment is left out. The expert truth is in examples/summeval-gpt35/responses.jsonl.

    python examples/make_summeval_likert.py [SHARED_SUMMEVAL_DIR] [ASPECT ...]
"""

import json
import re
import sys
from pathlib import Path

WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
SCORE = re.compile(r"score\D{0,20}?\b([1-5]|one|two|three|four|five)\b", re.IGNORECASE)


def parse_score(response: str) -> int | None:
    """A 1-5 score stated in words or digits after 'score' ("... resulting in a score of one")."""
    match = SCORE.search(response or "")
    if not match:
        return None
    value = match.group(1).lower()
    return WORDS.get(value) or int(value)


def convert(shared: Path, aspect: str, out: Path, style: str = "rts") -> tuple[int, int, int]:
    """Write ``out``; returns (judgments written, scores recovered from the text, left out)."""
    written = recovered = dropped = 0
    with out.open("w") as fh:
        for line in (shared / "judge_likert.jsonl").open():
            row = json.loads(line)
            if row["aspect"] != aspect or row["prompt_style"] != style:
                continue
            score = row["score"]
            if score is None:
                score = parse_score(row["response"])
                if score is None:
                    dropped += 1
                    continue
                recovered += 1
            fh.write(
                json.dumps(
                    {
                        "kind": "absolute",
                        "judge": row["judge"],
                        "prompt_id": row["prompt_id"],
                        "candidates": [row["candidate"]],
                        "probs": {str(score): 1.0},
                    },
                    separators=(",", ":"),
                )
                + "\n"
            )
            written += 1
    return written, recovered, dropped


if __name__ == "__main__":
    shared = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/summeval")
    folder = Path(__file__).parent / "summeval-likert"
    folder.mkdir(exist_ok=True)
    for aspect in sys.argv[2:] or ["coherence"]:
        n, rec, drop = convert(shared, aspect, folder / f"{aspect}.log.jsonl")
        print(f"{aspect}: {n} judgments ({rec} scores read from the response text, {drop} without a score left out)")
