"""Doors (issue #61): a judge provider from outside the package, named by a profile, runs a campaign
from the CLI; a provider that cannot serve is one line before anything is written."""

from __future__ import annotations

import sqlite3
import textwrap

import pytest

from judgekit import run_cli, write_config, write_dataset
from orchestrator import api

PROVIDER = textwrap.dedent(
    '''
    import re

    from orchestrator.judging import Judgment

    QUALITY = re.compile(r"<<q=([0-9.]+)>>")


    class QualityReader:
        """A judge of our own: reads the hidden quality of both shown answers (a real provider would
        send request.messages to its model) and states a probability."""

        calls = 0

        def __init__(self, profile):
            self.name = profile.name

        async def judge(self, request):
            type(self).calls += 1
            text = " ".join(m["content"] for m in request.messages if m["role"] == "user")
            a, b = (float(x) for x in QUALITY.findall(text)[:2])
            p = 0.9 if a > b else 0.1
            return Judgment(key=request.key, judge=self.name, template=request.template.name, kind=request.template.kind,
                            prompt_id=request.prompt_id, candidates=list(request.candidates), status="ok",
                            probs=[{"A": p, "B": 1 - p}], method="logprobs", prompt_tokens=10, completion_tokens=1)


    class NotAJudge:
        def __init__(self, profile):
            pass
    '''
)


@pytest.fixture
def provider(tmp_path, monkeypatch):
    (tmp_path / "my_judges.py").write_text(PROVIDER)
    monkeypatch.syspath_prepend(str(tmp_path))
    judges = tmp_path / "judges"
    judges.mkdir()
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(judges))
    return judges


def _profile(folder, name, provider):
    (folder / f"{name}.toml").write_text(
        f'name = "{name}"\nprovider = "{provider}"\nlogprobs = true\nprefill = true\nprice_input_per_mtok = 0\nprice_output_per_mtok = 0\n'
    )


def test_a_provider_from_outside_the_package_runs_a_campaign_from_the_cli(tmp_path, provider, capsys):
    _profile(provider, "mine", "my_judges:QualityReader")
    prompts, responses = write_dataset(tmp_path / "data", prompts=3, candidates=4, seed=2)
    config = write_config(tmp_path, None, name="own", prompts=prompts, responses=responses, judges='["mine"]', max_calls=24)
    assert run_cli(["run", str(config), "--no-cache"]) == 0
    path = tmp_path / "runs" / "own.sqlite"
    rows = sqlite3.connect(path).execute("select judge, status, method from judgments").fetchall()
    assert len(rows) == 24 and {r for r in rows} == {("mine", "ok", "logprobs")}
    import my_judges  # (the module the profile named, as the run imported it)

    assert my_judges.QualityReader.calls == 24
    groups = api.ranking(path)["groups"]
    assert all(g["spearman_vs_truth"] > 0.5 for g in groups if "spearman_vs_truth" in g)


@pytest.mark.parametrize(
    "spec, said",
    [
        ("my_judges", "is not 'package.module:Class'"),
        ("nowhere_module:Judge", "does not import"),
        ("my_judges:Missing", "has no class 'Missing'"),
        ("my_judges:NotAJudge", "has no 'async def judge"),
    ],
)
def test_a_provider_that_cannot_serve_is_one_line_before_anything_is_written(tmp_path, provider, capsys, spec, said):
    _profile(provider, "mine", spec)
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3)
    config = write_config(tmp_path, None, name="bad", prompts=prompts, responses=responses, judges='["mine"]', max_calls=6)
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "runs" / "bad.sqlite").exists()
