"""Nothing paid twice across kill -9 and resume, whatever a provider of one's own answers: answers
in every wrong way are stored as failures that say why, and nothing committed is asked again."""

from __future__ import annotations

import os
import sqlite3
import textwrap

import pytest

from judgekit import write_config, write_dataset
from orchestrator import api
from orchestrator.judging.answers import INVALID


def _provider_profile(folder, name, spec):
    (folder / f"{name}.toml").write_text(
        f'name = "{name}"\nprovider = "{spec}"\nlogprobs = true\nprefill = true\nprice_input_per_mtok = 0\nprice_output_per_mtok = 0\n'
    )


# --- nothing paid twice across kill -9 and resume, whatever the provider answers ----------------------

LOGGING_PROVIDER = textwrap.dedent(
    '''
    import hashlib
    import math
    import os
    import time


    class Erratic:
        """Answers some requests well and others in every wrong way, by the key's hash; writes every
        key it is asked (and when) to $ASKED_LOG, as a provider's bill would list it."""

        def __init__(self, profile):
            self.name = profile.name

        async def judge(self, request):
            with open(os.environ["ASKED_LOG"], "a") as fh:
                fh.write(f"{request.key} {time.time()}\\n")
            kind = int(hashlib.sha256(request.key.encode()).hexdigest(), 16) % 5
            if kind == 0:
                return request.answer({"A": 0.7, "B": 0.3})
            if kind == 1:
                return request.answer({"A": math.nan, "B": 0.3})
            if kind == 2:
                return request.answer({"A": 1.0, "B": 0.0}, method="verdict")
            if kind == 3:
                return request.answer({"A": 0.7, "B": 0.3}).model_copy(update={"prompt_id": "elsewhere"})
            return request.failure("overloaded", error_type="server", retryable=False)
    '''
)


@pytest.mark.slow
def test_nothing_committed_is_asked_again_across_kills_whatever_the_provider_answers(tmp_path, monkeypatch):
    import childkit

    (tmp_path / "erratic_judges.py").write_text(LOGGING_PROVIDER)
    judges = tmp_path / "judges"
    judges.mkdir()
    _provider_profile(judges, "erratic", "erratic_judges:Erratic")
    prompts, responses = write_dataset(tmp_path / "data", prompts=6, candidates=4, seed=8)
    config = write_config(
        tmp_path, None, name="erratic", prompts=prompts, responses=responses, judges='["erratic"]', max_calls=48, batch=4, concurrency=2
    )
    config.write_text(config.read_text() + '\n[stopping]\nrule = "budget"\n')
    asked_log = tmp_path / "asked.txt"
    env = {**os.environ, "ASKED_LOG": str(asked_log), "ORCHESTRATOR_JUDGMENT_CACHE": "off"}
    env.pop("ORCHESTRATOR_JUDGES", None)
    run = tmp_path / "runs" / "erratic.sqlite"
    command, kills = ["run", str(config)], 0
    for failpoint in ("commit_judgment:5", "add_round:2", "commit_judgment:3", "refit:2"):
        killed = childkit.run(command, env={**env, "ORCHESTRATOR_FAILPOINTS": failpoint}, capture_output=True, text=True, timeout=120)
        assert killed.returncode in (-9, 0, 2), killed.stderr
        kills += killed.returncode == -9
        if run.exists():
            command = ["resume", str(run)]
    assert kills >= 3
    final = childkit.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert final.returncode in (0, 2), final.stderr
    db = sqlite3.connect(run)
    committed = dict(db.execute("select key, created_at from judgments"))
    asked = [line.split() for line in asked_log.read_text().splitlines()]
    assert [k for k, t in asked if k in committed and float(t) > committed[k]] == []  # never asked after its commit
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = db.execute("select status, error_type, probs, prompt_id, key in (select key from requests) from judgments").fetchall()
    assert len(rows) == len(committed) > 0 and all(r[4] for r in rows)
    for status, error_type, probs, prompt, _ in rows:
        assert prompt != "elsewhere"
        if status == "ok":
            assert "nan" not in probs.lower()
        else:
            assert error_type in (INVALID, "server")
    assert api.status(run).as_dict()["spent"]["calls"] <= 48
