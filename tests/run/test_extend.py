"""`orchestrator extend RUN --responses NEW.jsonl`: a finished run grows by two
candidates, pays only for comparisons that involve them, never asks anything twice, and keeps a
fingerprinted snapshot history; a reference (RAEE) campaign likewise; bad input changes nothing."""

import json
import sqlite3

import pytest

from judgekit import quality_behaviour, reference_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.errors import OrchestratorError
from orchestrator.judging.testserver import FakeOpenAIServer


def _split(responses, folder, new=("M4", "M5")):
    rows = [json.loads(line) for line in responses.read_text().splitlines()]
    base, added = folder / "base.jsonl", folder / "new.jsonl"
    base.write_text("".join(json.dumps(r) + "\n" for r in rows if r["candidate"] not in new))
    added.write_text("".join(json.dumps(r) + "\n" for r in rows if r["candidate"] in new))
    return base, added


def test_two_new_candidates_are_placed_without_asking_anything_twice(tmp_path, capsys):
    prompts, responses = write_dataset(tmp_path / "d", prompts=2, candidates=6, seed=3)
    base, added = _split(responses, tmp_path)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, prompts=prompts, responses=base, max_calls=24)
        path, _ = api.start(config)
        before = dict(server.key_counts())
        assert run_cli(["extend", str(path), "--responses", str(added), "--add-calls", "30", "--no-report"]) == 0
        counts = server.key_counts()
    assert "extended with M4, M5" in capsys.readouterr().err
    assert set(counts.values()) == {1}  # nothing asked twice
    db = sqlite3.connect(path)
    new_keys = set(counts) - set(before)
    shown = [json.loads(c) for (k, c) in db.execute("select key, candidates from requests") if k in new_keys]
    assert shown and all({"M4", "M5"} & set(c) for c in shown)  # only comparisons that place the newcomers
    assert len(shown) <= 30
    assert [n for (n,) in db.execute("select responses from snapshots order by version")] == [8, 12]
    fingerprints = [f for (f,) in db.execute("select fingerprint from snapshots order by version")]
    assert fingerprints[-1] == db.execute("select dataset_fingerprint from runs").fetchone()[0] != fingerprints[0]
    report = api.ranking(path).as_dict()
    assert all({r["candidate"] for r in g["ranking"]} == {f"M{i}" for i in range(6)} for g in report["groups"])
    assert api.status(path).as_dict()["state"] == "finished"


def test_bad_extensions_change_nothing(tmp_path):
    prompts, responses = write_dataset(tmp_path / "d", prompts=2, candidates=5, seed=1)
    base, added = _split(responses, tmp_path, new=("M4",))
    with FakeOpenAIServer(quality_behaviour) as server:
        path, _ = api.start(write_config(tmp_path, server.url, prompts=prompts, responses=base, max_calls=8))
    with pytest.raises(OrchestratorError, match="nothing new"):
        api.extend(path, responses=base)
    changed = tmp_path / "changed.jsonl"
    rows = [json.loads(line) for line in base.read_text().splitlines()]
    rows[0]["text"] = "another text"
    changed.write_text("".join(json.dumps(r) + "\n" for r in rows) + added.read_text())
    with pytest.raises(OrchestratorError, match="extend adds, never replaces"):
        api.extend(path, responses=changed)
    orphan = tmp_path / "orphan.jsonl"
    orphan.write_text(json.dumps({"prompt_id": "p9", "candidate": "M9", "text": "x"}) + "\n")
    with pytest.raises(OrchestratorError, match="orphan.jsonl:1: prompt 'p9' is not in the run"):
        api.extend(path, responses=orphan)
    db = sqlite3.connect(path)
    assert db.execute("select count(*) from responses").fetchone()[0] == 8
    assert db.execute("select status from runs").fetchone()[0] == "finished"
    assert run_cli(["extend", str(path), "--responses", str(base)]) == 2
    assert run_cli(["extend", str(path), "--responses", str(added), "--add-calls", "0"]) == 2


def test_a_reference_campaign_asks_only_the_newcomer(tmp_path):
    prompts, responses = write_dataset(tmp_path / "d", prompts=3, candidates=4, seed=2, reference=0.5)
    base, added = _split(responses, tmp_path, new=("M3",))
    with FakeOpenAIServer(reference_behaviour()) as server:
        config = write_config(
            tmp_path, server.url, prompts=prompts, responses=base, max_calls=None, reference='template = "raee-pairwise-summary"'
        )
        path, _ = api.start(config)
        asked = len(server.requests)
        assert asked == 9  # 3 candidates × 3 prompts against the reference
        new, _ = api.extend(path, responses=added)
        assert new == ["M3"] and len(server.requests) == asked + 3
        shown = [c for (c,) in sqlite3.connect(path).execute("select candidates from requests")]
    assert sum("M3" in c for c in shown) == 3
    leaderboard = api.ranking(path).as_dict()
    assert any("M3" in {r["candidate"] for r in g["ranking"]} for g in leaderboard["groups"])
