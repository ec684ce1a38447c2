"""Why a run stopped is typed: a StopReason is its message (what a person reads, stored as before)
with a ``kind`` that code reads instead of the words (orchestrator/run/stops.py)."""

from __future__ import annotations

import sqlite3

import pytest

from judgekit import STOP_AT_BUDGET, quality_behaviour, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.run.stops import StopReason, kind_of


@pytest.mark.parametrize(
    "kwargs, extra, kind", [({}, STOP_AT_BUDGET, "budget"), ({"pilot": 8}, STOP_AT_BUDGET, "pilot"), ({}, "", "campaign")]
)
def test_a_run_says_why_it_stopped_in_words_and_in_kind(tmp_path, kwargs, extra, kind):
    prompts, responses = write_dataset(tmp_path / "data", prompts=4, candidates=6, seed=1)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(
            tmp_path, server.url, name=kind, prompts=prompts, responses=responses, max_calls=20 if extra else None, budget_extra=extra
        )
        path, reason = api.start(config, **kwargs)
    assert isinstance(reason, StopReason) and reason.kind == kind and kind_of(reason) == kind
    stored = sqlite3.connect(path).execute("select stop_reason from runs").fetchone()[0]
    assert stored.startswith(str(reason)) and str(reason)  # the words are what is stored and shown


def test_a_plain_string_reason_reads_as_the_campaigns_own():
    assert kind_of("every candidate is separated") == "campaign"
    longer = StopReason("budget spent", "budget").extended("; judge x stopped")
    assert longer == "budget spent; judge x stopped" and longer.kind == "budget"
