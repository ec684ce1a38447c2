"""A mistyped config key is named with the nearest valid one, in the table that holds it."""

from __future__ import annotations

import pytest

from judgekit import run_cli


@pytest.mark.parametrize(
    "text, said",
    [
        (
            'name = "t"\n[data]\nprompts = "p.jsonl"\n[budget]\nmax_cals = 4\n',
            "budget.max_cals: Extra inputs are not permitted (did you mean 'max_calls'?)",
        ),
        (
            'name = "t"\n[data]\nprompts = "p.jsonl"\n[judging]\njduges = ["x"]\n',
            "judging.jduges: Extra inputs are not permitted (did you mean 'judges'?)",
        ),
        (
            'name = "t"\n[data]\nprompts = "p.jsonl"\n[candidates.mine]\nmodel = "openai/x"\ntemprature = 0.5\n',
            "(did you mean 'temperature'?)",
        ),
        (
            'name = "t"\n[data]\nprompts = "p.jsonl"\n[budget]\ncompletely_else = 4\n',
            "budget.completely_else: Extra inputs are not permitted",
        ),
    ],
)
def test_a_mistyped_key_names_the_nearest_valid_one(tmp_path, capsys, text, said):
    config = tmp_path / "t.toml"
    config.write_text(text)
    assert run_cli(["run", str(config), "--dry-run", "--offline"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert said in err and ("did you mean" in said) == ("did you mean" in err), err
