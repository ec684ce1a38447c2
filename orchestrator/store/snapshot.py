"""Growing a run's dataset snapshot (``orchestrator extend``): new prompts and responses are
appended, never replacing what the run's judgments were asked on, and each version's fingerprint is
kept in table ``snapshots`` (version 0: the snapshot the run was created with)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from ..errors import OrchestratorError
from ..records.dataset import Dataset, PromptRow, ResponseText, turns_json

if TYPE_CHECKING:
    from .run_store import RunStore

__all__ = ["extend_snapshot", "merge_snapshot"]


def extend_snapshot(store: "RunStore", added: Dataset, config: dict[str, Any]) -> str:
    """Add prompts and responses to the snapshot (``orchestrator extend``) and store the run's
    new ``config``, in one transaction: a new snapshot version whose fingerprint replaces the
    old one, kept with the old in table ``snapshots``. Returns the new fingerprint.

    Raises:
        OrchestratorError: a response already in the snapshot with another text, or a prompt
            id already there with another text (nothing is written then).
    """
    store._dataset = None  # the snapshot changes: read it afresh, and again after
    try:
        return _extend(store, added, config)
    finally:
        store._dataset = None


def _extend(store: "RunStore", added: Dataset, config: dict[str, Any]) -> str:
    current = store.dataset()
    prompts, responses, new_prompts, new_responses = merge_snapshot(current, added)
    fingerprint = Dataset(prompts, responses, current.models).fingerprint()  # the candidate models' answers are not the snapshot's
    position = len(current.prompts)
    with store._transaction():
        store.db.execute(
            "create table if not exists snapshots (version integer primary key, fingerprint text, prompts integer, "
            "responses integer, created_at float)"
        )
        if not next(store.db.query("select count(*) as n from snapshots"))["n"]:
            store.db.execute(
                "insert into snapshots values (0, ?, ?, ?, ?)",
                [store.run["dataset_fingerprint"], len(current.prompts), len(current.snapshot_responses()), store.run["created_at"]],
            )
        rows = [{"id": p.id, "position": position + k, "text": p.text, "reference": p.reference} for k, p in enumerate(new_prompts)]
        if any(p.category is not None for p in new_prompts):
            if not store.prompt_categories_stored():  # a run file from before categories
                store.db.execute("alter table prompts add column category text")
            rows = [{**row, "category": p.category} for row, p in zip(rows, new_prompts)]
        if any(p.messages is not None for p in new_prompts):
            if "messages" not in store.prompt_columns():  # a run file from before conversations
                store.db.execute("alter table prompts add column messages text")
            rows = [{**row, "messages": turns_json(p)} for row, p in zip(rows, new_prompts)]
        store._insert("prompts", rows)
        store._insert(
            "responses",
            [{"prompt_id": r.prompt_id, "candidate": r.candidate, "text": r.text, "human": json.dumps(r.human)} for r in new_responses],
        )
        store.db.execute(
            "insert into snapshots (fingerprint, prompts, responses, created_at) values (?, ?, ?, ?)",
            [fingerprint, len(prompts), sum(1 for by in responses.values() for c in by if c not in current.models), time.time()],
        )
        store.db.execute(
            "update runs set dataset_fingerprint = ?, config = ?, updated_at = ? where id = 1",
            [fingerprint, json.dumps(config), time.time()],
        )
    return fingerprint


def merge_snapshot(current: Dataset, added: Dataset) -> tuple[dict, dict, list[PromptRow], list[ResponseText]]:
    """``(prompts, responses, new prompts, new responses)`` of ``current`` grown by ``added``.

    Raises:
        OrchestratorError: a response or prompt already in ``current`` with another text.
    """
    prompts = dict(current.prompts)
    responses = {p: dict(by) for p, by in current.responses.items()}
    new_prompts: list[PromptRow] = []
    new_responses: list[ResponseText] = []
    for pid, prompt in added.prompts.items():
        if pid in prompts:
            if prompts[pid].text != prompt.text:
                raise OrchestratorError(f"prompt {pid!r} is in the run with another text; give the new prompt another id")
            continue
        prompts[pid] = prompt
        responses[pid] = {}
        new_prompts.append(prompt)
    for pid, by in added.responses.items():
        for cand, response in by.items():
            if cand in current.models:
                raise OrchestratorError(f"{cand!r} is a candidate model of the run: its answers are generated, not added")
            old = responses.get(pid, {}).get(cand)
            if old is not None:
                if old.text != response.text:
                    raise OrchestratorError(
                        f"the response of {cand!r} to prompt {pid!r} is in the run with another text; extend adds, never replaces"
                    )
                continue
            responses.setdefault(pid, {})[cand] = response
            new_responses.append(response)
    return prompts, responses, new_prompts, new_responses
