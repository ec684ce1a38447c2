"""What is code and what is data: a config and its judge profiles may name modules, and running a
config imports them — from beside the config, as docs/extending.md's recipes say, with the console
script run from any folder; reading a run file (status, rank, export, report, judges) imports
nothing it names."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from judgekit import run_cli, write_config, write_dataset
from orchestrator import api

CONSOLE_SCRIPT = Path(sys.executable).parent / "orchestrator"

PLANNER = textwrap.dedent(
    '''
    import os
    from pathlib import Path

    Path(os.environ["IMPORT_MARK"]).write_text("imported")  # the side effect a reader must never cause

    from orchestrator.run.planners import Plan, PlannerBase


    class EveryPair(PlannerBase):
        """Every ordered pair of a prompt's candidates, a prompt per round; its template from [{kind}]."""

        kind, role, done = "{kind}", "pairwise", "every pair has been asked"

        def next_round(self, round_no, cutoff):
            for prompt, by in self.ctx.dataset.responses.items():
                names = sorted(by)
                unit = [
                    self.ctx.request(judge, "pairwise", prompt, [a, b])
                    for a in names
                    for b in names
                    if a != b
                    for judge in self.ctx.judges_for(prompt, (a, b), "pairwise")
                    if (judge, prompt, (a, b)) not in self.ctx.asked
                ]
                if unit:
                    return Plan("pairwise", [unit], [[prompt]])
            return self.done
    '''
)

PROVIDER = textwrap.dedent(
    """
    import re

    QUALITY = re.compile(r"<<q=([0-9.]+)>>")


    class Reader:
        def __init__(self, profile):
            self.name = profile.name

        async def judge(self, request):
            text = " ".join(m["content"] for m in request.messages if m["role"] == "user")
            a, b = (float(x) for x in QUALITY.findall(text)[:2])
            return request.answer({"A": 0.9 if a > b else 0.1, "B": 0.1 if a > b else 0.9})
    """
)


def _folder(tmp_path: Path, module: str, kind: str = "pairs-of-mine") -> tuple[Path, Path]:
    """A project folder as a user lays it out: the config, its data, its judges/ and its modules side by side."""
    project = tmp_path / "project"
    (project / "judges").mkdir(parents=True)
    (project / f"{module}.py").write_text(PLANNER.replace("{kind}", kind))
    (project / f"{module}_judges.py").write_text(PROVIDER)
    (project / "judges" / "mine.toml").write_text(
        f'name = "mine"\nprovider = "{module}_judges:Reader"\nlogprobs = true\nprefill = true\n'
        "price_input_per_mtok = 0\nprice_output_per_mtok = 0\n"
    )
    prompts, responses = write_dataset(project / "data", prompts=2, candidates=3, seed=6)
    config = write_config(project, None, name="mine", prompts=prompts, responses=responses, judges='["mine"]', max_calls=None)
    text = config.read_text().replace("[selection]", f'[selection]\nplanner = "{module}:EveryPair"')
    config.write_text(text + f'\n[{kind}]\ntemplate = "poe-pairwise"\n')
    return project, config


def _console(args: list[str], cwd: Path, mark: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ORCHESTRATOR_JUDGES")}
    env.update(IMPORT_MARK=str(mark), ORCHESTRATOR_JUDGMENT_CACHE="off", LITELLM_LOCAL_MODEL_COST_MAP="True")
    return subprocess.run([str(CONSOLE_SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["here", "away"])
def test_the_recipes_run_as_written_from_the_console_script(tmp_path, where):
    """The provider and the campaign kind beside the config, the console script run from the config's
    folder or from elsewhere: nothing added to the module path by hand, judges/ found beside the config."""
    module = f"kind_{where}"
    project, config = _folder(tmp_path, module)
    mark = tmp_path / "imported.mark"
    cwd = project if where == "here" else tmp_path
    dry = _console(["run", str(config), "--dry-run", "--offline"], cwd, mark)
    assert dry.returncode == 0, dry.stderr
    assert f"{module} from {project / (module + '.py')}" in " ".join(dry.stdout.split()), dry.stdout
    done = _console(["run", str(config)], cwd, mark)
    assert done.returncode == 0, done.stderr
    rows = sqlite3.connect(project / "runs" / "mine.sqlite").execute("select status, judge from judgments").fetchall()
    assert len(rows) == 2 * 3 * 2 and set(rows) == {("ok", "mine")}
    # reading the run file imports nothing it names, even unfinished
    sqlite3.connect(project / "runs" / "mine.sqlite").execute("update runs set status = 'interrupted'").connection.commit()
    mark.unlink()
    for command in (["status"], ["rank"], ["report", "--out", str(tmp_path / "r.html")], ["export", "--out", str(tmp_path / "e.jsonl")]):
        read = _console([command[0], str(project / "runs" / "mine.sqlite"), *command[1:]], tmp_path, mark)
        assert read.returncode == 0, read.stderr
        assert not mark.exists(), f"{command[0]} imported the planner module"


def test_reading_a_run_file_never_imports_what_it_names(tmp_path, monkeypatch, capsys):
    module = f"marked_{abs(hash(str(tmp_path))) % 10**8}"
    project, config = _folder(tmp_path, module)
    mark = tmp_path / "imported.mark"
    monkeypatch.setenv("IMPORT_MARK", str(mark))
    try:
        assert run_cli(["run", str(config), "--no-cache"]) == 0
        assert mark.exists()  # running a config imports what it names
        run = project / "runs" / "mine.sqlite"
        db = sqlite3.connect(run)
        db.execute("update runs set status = 'interrupted'")  # a run still going: status forecasts
        db.commit()
        mark.unlink()
        sys.modules.pop(module, None)
        for command in (
            ["status", str(run)],
            ["status", str(run), "--json"],
            ["rank", str(run), "--json"],
            ["export", str(run), "--out", str(tmp_path / "e.jsonl")],
            ["export", str(run), "--format", "csv", "--out", str(tmp_path / "e.csv")],
            ["report", str(run), "--out", str(tmp_path / "r.html")],
            ["judges", str(run), "--human", str(tmp_path / "none.jsonl")],
        ):
            run_cli(command)
            assert not mark.exists() and module not in sys.modules, command
        capsys.readouterr()
    finally:
        sys.modules.pop(module, None)
        sys.modules.pop(f"{module}_judges", None)


def test_the_dry_run_says_what_a_config_imports_and_from_where(tmp_path, monkeypatch):
    module = f"said_{abs(hash(str(tmp_path))) % 10**8}"
    project, config = _folder(tmp_path, module)
    monkeypatch.setenv("IMPORT_MARK", str(tmp_path / "m"))
    try:
        estimate = api.dry_run(api.load_config(config), smoke=False)
        assert estimate["imports"] == (
            f"{module} from {project / (module + '.py')}; {module}_judges from {project / (module + '_judges.py')}"
        )
        plain = write_config(
            tmp_path, None, name="plain", prompts=project / "data" / "prompts.jsonl", responses=project / "data" / "responses.jsonl"
        )
        monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(Path(__file__).resolve().parents[2] / "judges"))
        assert api.dry_run(api.load_config(plain), smoke=False)["imports"] == "nothing outside the package"
    finally:
        sys.modules.pop(module, None)
        sys.modules.pop(f"{module}_judges", None)


def test_judges_beside_the_config_come_before_the_working_folder(tmp_path, monkeypatch):
    """One rule: what a config names is looked up beside it first, as its data paths are."""
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3)
    project = tmp_path / "project"
    (project / "judges").mkdir(parents=True)
    (project / "judges" / "same.toml").write_text('name = "same"\nmodel = "openai/beside-the-config"\nprefill = true\n')
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "judges").mkdir(parents=True)
    (elsewhere / "judges" / "same.toml").write_text('name = "same"\nmodel = "openai/in-the-working-folder"\nprefill = true\n')
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("ORCHESTRATOR_JUDGES", raising=False)
    config = write_config(project, "http://127.0.0.1:9", name="same", prompts=prompts, responses=responses, judges='["same"]')
    prepared_profiles = api.dry_run(api.load_config(config), smoke=False)["judges"]
    assert prepared_profiles == ["same"]
    from orchestrator.judging.profiles import get_profile

    cfg = api.load_config(config)
    assert get_profile("same", cfg.beside("judges")).model == "openai/beside-the-config"
    assert get_profile("same").model == "openai/in-the-working-folder"  # without a config: the working folder


def test_an_outside_kind_reads_its_own_section_and_a_stray_table_is_one_line(tmp_path, monkeypatch, capsys):
    module = f"sectioned_{abs(hash(str(tmp_path))) % 10**8}"
    project, config = _folder(tmp_path, module, kind="my-kind")
    monkeypatch.setenv("IMPORT_MARK", str(tmp_path / "m"))
    try:
        assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 0
        config.write_text(config.read_text() + "\n[judgin]\njudges = []\n")
        assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
        err = capsys.readouterr().err
        assert "[judgin] is not a section of a run config" in err and len(err.strip().splitlines()) == 1
        plain = config.read_text().replace(f'planner = "{module}:EveryPair"', "")
        config.write_text(plain)
        assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2  # without a planner: unknown tables refused as before
        assert "Extra inputs are not permitted" in capsys.readouterr().err
    finally:
        sys.modules.pop(module, None)
        sys.modules.pop(f"{module}_judges", None)
