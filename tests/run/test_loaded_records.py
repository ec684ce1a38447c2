"""A judgment record loaded from the run file is built without validation, by writing pydantic's own
slots (faster than ``model_construct``: benchmarks/speed/record_load.py). That is
kept only while this test passes: a record built that way must be, in everything pydantic and the
package can observe but the order of a dump's keys, the record ``model_validate`` builds from the same row. A pydantic release
that changes its slots fails here, not in a user's ``rank``."""

from __future__ import annotations

import json
import pickle

from pydantic import BaseModel

from orchestrator.store.rows import JudgmentRecord, parse_candidates


def _row() -> dict:
    return {
        "key": "k1",
        "judge": "judge-a",
        "template": "poe-pairwise",
        "kind": "pairwise",
        "prompt_id": "p1",
        "candidates": '["M0", "M1"]',
        "status": "ok",
        "probs": '[{"A": 0.7, "B": 0.3}]',
        "p_first": 0.7,
        "method": "logprobs",
        "capped": "[[]]",
        "unresolved": "[[]]",
        "top_logprobs": "[]",
        "text": "A",
        "raw": None,
        "prompt_tokens": 12,
        "completion_tokens": 1,
        "cost_usd": 0.0,
        "latency_s": 0.25,
        "attempts": 1,
        "error": None,
        "error_type": None,
        "note": None,
        "round": 3,
        "created_at": 1.5,
        "cached": 0,
        "repeat": 0,
        "samples": None,
        "completions": None,
        "stated": None,
    }


def _validated(row: dict) -> JudgmentRecord:
    fields = {name: row.get(name) for name in JudgmentRecord.model_fields if name in row}
    fields["candidates"] = list(parse_candidates(row["candidates"]))
    for name in ("probs", "capped", "unresolved", "top_logprobs"):
        fields[name] = json.loads(row[name])
    fields["cached"] = bool(row["cached"])
    return JudgmentRecord.model_validate(fields)


def test_pydantic_still_keeps_the_slots_the_fast_load_writes():
    for slot in ("__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"):
        assert hasattr(BaseModel.__dict__[slot], "__set__"), slot


def test_a_loaded_record_is_the_validated_record_in_everything_observable():
    row = _row()
    loaded, validated = JudgmentRecord.from_row(dict(row)), _validated(row)
    assert loaded == validated
    # the same fields and values; a dump lists them in the row's column order, not the class's
    assert loaded.model_dump() == validated.model_dump() and json.loads(loaded.model_dump_json()) == json.loads(validated.model_dump_json())
    assert loaded.model_fields_set == set(JudgmentRecord.model_fields)
    assert loaded.model_extra is None and loaded.__pydantic_private__ is None
    assert pickle.loads(pickle.dumps(loaded)) == validated
    changed = loaded.model_copy(update={"round": 4})
    assert changed.round == 4 and loaded.round == 3 and changed.model_dump() == {**validated.model_dump(), "round": 4}
    assert JudgmentRecord.model_validate(loaded.model_dump()) == validated
    try:
        loaded.round = 5  # type: ignore[misc]
    except Exception as exc:  # frozen, as a validated one is
        assert "frozen" in str(exc).lower()
    else:
        raise AssertionError("a loaded record could be changed")
