"""What the run file's judgment records cost to build, three ways, side by side in one run: the
product's load (``JudgmentRecord.from_light``: pydantic's slots written directly, kept behind
tests/run/test_loaded_records.py), pydantic's public unvalidated path (``model_construct``) and
full validation (``model_validate``). The rows are what ``light_columns`` reads (the bulky
columns left out), 100k of them, as ``rank`` and ``resume`` of a large run load.

    python -m benchmarks.speed.record_load [--rows 100000]
"""

from __future__ import annotations

import json
import time

from benchmarks import harness
from orchestrator.store.rows import _ALL_SET, STORED_FIELDS, JudgmentRecord, _load, parse_candidates


def row(i: int) -> dict:
    found = {name: None for name in STORED_FIELDS}
    found.update(
        key=f"k{i}",
        judge="judge-a",
        template="poe-pairwise",
        kind="pairwise",
        prompt_id=f"p{i % 800}",
        candidates='["M0", "M1"]',
        status="ok",
        probs='[{"A": 0.6, "B": 0.4}]',
        p_first=0.6,
        method="logprobs",
        round=i // 40,
        repeat=0,
        attempts=1,
        created_at=0.0,
        cached=0,
        prompt_tokens=120,
        completion_tokens=1,
        cost_usd=0.0,
        latency_s=0.1,
    )
    return found


def public(fields: dict) -> JudgmentRecord:
    """``model_construct`` over the same fields the product's load takes."""
    fields["candidates"] = list(parse_candidates(fields["candidates"]))
    fields["probs"] = _load(fields["probs"], None) or []
    fields["cached"] = bool(fields["cached"])
    fields.update(retryable=False, retry_after_s=None, capped=[], unresolved=[], top_logprobs=[], text="", raw=None)
    return JudgmentRecord.model_construct(_fields_set=_ALL_SET, **fields)


def validated(fields: dict) -> JudgmentRecord:
    fields["candidates"] = list(parse_candidates(fields["candidates"]))
    fields["probs"] = json.loads(fields["probs"])
    fields["cached"] = bool(fields["cached"])
    return JudgmentRecord.model_validate({k: v for k, v in fields.items() if v is not None})


def main() -> None:
    ap = harness.parser(__doc__, quick="20k rows")
    ap.add_argument("--rows", type=harness.count, default=100_000)
    args = ap.parse_args()
    n = 20_000 if args.quick else args.rows
    rows = [row(i) for i in range(n)]
    ways = {"product (slots)": JudgmentRecord.from_light, "model_construct": public, "model_validate": validated}
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    built = {}
    for _ in range(3):  # alternating, so that the three share the machine's state
        for name, build in ways.items():
            batch = [dict(r) for r in rows]
            t0 = time.perf_counter()
            built[name] = [build(r) for r in batch]
            seconds[name].append(time.perf_counter() - t0)
    assert built["product (slots)"][0] == built["model_construct"][0] == built["model_validate"][0]
    best = {name: min(s) for name, s in seconds.items()}
    print("| build | seconds (best of 3) | × the product's |")
    print("|---|---|---|")
    for name, s in best.items():
        print(f"| {name} | {s:.2f} | {s / best['product (slots)']:.2f} |")
    print(f"\n{n:,} judgment records; model_construct {best['model_construct'] / best['product (slots)']:.2f}× the product's load")


if __name__ == "__main__":
    harness.run(main, __file__)
