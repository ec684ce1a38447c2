"""Doors: a judge provider from outside the package, named by a profile, runs a campaign
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


    from orchestrator.run.planners import PlannerBase


    class NoRoles(PlannerBase):
        """A campaign kind that forgot to say which templates it asks with."""

        kind, role, done = "no-roles", "pairwise", "never"

        def next_round(self, round_no, cutoff):
            return self.done
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
    groups = api.ranking(path).as_dict()["groups"]
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


def _recipe(heading: str) -> str:
    """The first Python block under ``heading`` in docs/extending.md: the recipe as a reader copies it."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "extending.md").read_text()
    section = text.split(f"## {heading}\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_a_campaign_kind_from_the_recipe_runs_from_the_config(tmp_path, provider, capsys, monkeypatch):
    """docs/extending.md's EveryPair, copied as written: every ordered pair of the first prompt in the
    first round, the next prompt in the next; its judgments rank like any run's; a resume of the
    finished run imports it again and asks nothing more."""
    (tmp_path / "every_pair.py").write_text(_recipe("A new campaign kind"))
    _profile(provider, "mine", "my_judges:QualityReader")
    prompts, responses = write_dataset(tmp_path / "data", prompts=3, candidates=4, seed=2)
    config = write_config(tmp_path, None, name="kind", prompts=prompts, responses=responses, judges='["mine"]', max_calls=None)
    config.write_text(config.read_text().replace("[selection]", '[selection]\nplanner = "every_pair:EveryPair"'))
    assert run_cli(["run", str(config), "--no-cache"]) == 0
    path = tmp_path / "runs" / "kind.sqlite"
    db = sqlite3.connect(path)
    rounds = db.execute("select round, prompt_id, candidates from requests order by round, key").fetchall()
    assert len(rounds) == 3 * 4 * 3  # every ordered pair of 4 candidates on each of 3 prompts
    by_round: dict = {}
    for round_no, prompt, _ in rounds:
        by_round.setdefault(round_no, set()).add(prompt)
    assert [sorted(v) for _, v in sorted(by_round.items())] == [["p0"], ["p1"], ["p2"]]  # a prompt per round, in order
    assert "every pair has been asked" in db.execute("select stop_reason from runs").fetchone()[0]
    assert all(g["judged"] for g in api.ranking(path).as_dict()["groups"])
    assert run_cli(["resume", str(path), "--no-cache"]) == 0
    assert sqlite3.connect(path).execute("select count(*) from requests").fetchone()[0] == len(rounds)


@pytest.mark.parametrize(
    "spec, said",
    [
        ("nowhere_module:Planner", "does not import"),
        ("my_judges:Missing", "has no class 'Missing'"),
        ("my_judges:QualityReader", "lacks"),
        ("my_judges:NoRoles", "has no [no-roles] section naming a template: write its roles(config)"),
    ],
)
def test_a_planner_that_cannot_plan_is_one_line_before_anything_is_written(tmp_path, provider, capsys, spec, said):
    _profile(provider, "mine", "my_judges:QualityReader")
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3)
    config = write_config(tmp_path, None, name="bad", prompts=prompts, responses=responses, judges='["mine"]', max_calls=6)
    config.write_text(config.read_text().replace("[selection]", f'[selection]\nplanner = "{spec}"'))
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
    err = capsys.readouterr().err
    assert said in err and "selection.planner" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "runs" / "bad.sqlite").exists()


def test_a_fit_from_the_recipe_reads_an_exported_run(tmp_path, provider, monkeypatch):
    """docs/extending.md's win_shares, copied as written, on a real run's export: the shares by hand."""
    (tmp_path / "win_share.py").write_text(_recipe("A new fit"))
    _profile(provider, "mine", "my_judges:QualityReader")
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=4, seed=3)
    config = write_config(tmp_path, None, name="fit", prompts=prompts, responses=responses, judges='["mine"]', max_calls=16)
    path, _ = api.start(config, cache=False)
    log = tmp_path / "log.jsonl"
    api.export(path, out=log)
    import win_share

    shares = win_share.win_shares(log)
    rows = sqlite3.connect(path).execute("select candidates, p_first from judgments where status = 'ok'").fetchall()
    won: dict = {}
    for shown, p in rows:
        a, b = __import__("json").loads(shown)
        won.setdefault(a, []).append(p)
        won.setdefault(b, []).append(1 - p)
    assert shares == pytest.approx({c: sum(v) / len(v) for c, v in won.items()})
