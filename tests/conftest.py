import json
import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# runs in tests never read or fill the user's judgment cache (tests that want one name it)
os.environ["ORCHESTRATOR_JUDGMENT_CACHE"] = "off"
torch.set_num_threads(min(2, torch.get_num_threads()))

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent


def write_jsonl(path: Path, rows) -> Path:
    with path.open("w") as fh:
        for row in rows:
            fh.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
    return path


@pytest.fixture
def sim_files(tmp_path):
    """A small simulated exhaustive log: 3 prompts × 8 candidates, every ordered pair + absolute."""
    from orchestrator.simulate import JUDGE_PRESETS, simulate_dataset

    records, responses = simulate_dataset(3, 8, JUDGE_PRESETS["llm"], seed=3)
    return write_jsonl(tmp_path / "log.jsonl", records), write_jsonl(tmp_path / "responses.jsonl", responses)


def pytest_configure(config):
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback" banners on the failures tests provoke
