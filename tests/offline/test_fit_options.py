"""Issue #20 item 5: every option of `fit raee` and `fit simplex` on small inputs — each value alone
(good and bad) and combinations — gives a result (exit 0) or one clear line (exit 2), never a
traceback (exit 1 and a crash log)."""

import itertools
import json
import math
import random

import pytest

from conftest import ROOT
from judgekit import run_cli

LIKERT = ROOT / "examples" / "summeval-likert" / "coherence.log.jsonl"
TRUTH = ROOT / "examples" / "summeval-gpt35" / "responses.jsonl"


@pytest.fixture(scope="module")
def reference_log(tmp_path_factory):
    """Two judges, 3 repeats, 4 candidates against a reference on 20 prompts."""
    path = tmp_path_factory.mktemp("raee") / "reference.jsonl"
    rng = random.Random(3)
    quality = {"A": 0.8, "B": 0.3, "C": 0.0, "D": -0.6}
    with path.open("w") as fh:
        for judge, noise in (("strong", 0.2), ("weak", 1.5)):
            for p in range(20):
                for c, q in quality.items():
                    for r in range(3):
                        win = 1 / (1 + math.exp(-(2 * q + rng.gauss(0, noise))))
                        probs = {"A": 0.9 * (1 - win), "B": 0.9 * win, "C": 0.1}
                        row = {
                            "kind": "reference",
                            "judge": judge,
                            "prompt_id": f"p{p}",
                            "candidates": ["reference", c],
                            "probs": probs,
                            "repeat": r,
                        }
                        fh.write(json.dumps(row) + "\n")
    return path


def _one_line_or_result(capsys, args):
    code = run_cli(args)
    captured = capsys.readouterr()
    assert code in (0, 2), f"{args}: exit {code}\n{captured.err[-2000:]}"
    if code == 2:
        lines = [line for line in captured.err.strip().splitlines() if line.strip()]
        assert 1 <= len(lines) <= 3 and "Traceback" not in captured.err, f"{args}: {captured.err}"
    return code


RAEE_VALUES = {
    "--soft": [None],
    "--level": ["0.5", "0.95", "0", "1", "1.5", "nan", "x"],
    "--population": ["20", "100", "0", "-1", "5", "1000000000"],
    "--icc-threshold": ["0.9", "0", "-1", "2", "nan"],
    "--abstain-sd": ["0.3", "0", "-1", "inf"],
    "--pool-all": [None],
    "--judge": ["strong", "unknown"],
}


def _flags(option, value):
    return [option] if value is None else [option, value]


def test_fit_raee_every_option_alone_and_in_combination(tmp_path, capsys, reference_log):
    base = ["fit", "raee", "--log", str(reference_log), "--json"]
    outcomes = {}
    for option, values in RAEE_VALUES.items():
        for value in values:
            outcomes[(option, value)] = _one_line_or_result(capsys, base + _flags(option, value))
    assert outcomes[("--level", "0.5")] == 0 and outcomes[("--level", "1.5")] == 2 and outcomes[("--judge", "unknown")] == 2
    rng = random.Random(0)
    options = list(RAEE_VALUES)
    for _ in range(40):
        chosen = rng.sample(options, 3)
        args = list(itertools.chain.from_iterable(_flags(o, rng.choice(RAEE_VALUES[o])) for o in chosen))
        _one_line_or_result(capsys, base + args)
    # outputs: plots into a folder, the SE curve into a file; a file where a folder is wanted is refused
    assert _one_line_or_result(capsys, base + ["--plot", str(tmp_path / "plots"), "--se-curve", str(tmp_path / "curve.png")]) == 0
    (tmp_path / "file").write_text("x")
    assert _one_line_or_result(capsys, base + ["--plot", str(tmp_path / "file")]) == 2
    assert _one_line_or_result(capsys, ["fit", "raee", "--log", str(tmp_path / "missing.jsonl")]) == 2
    assert _one_line_or_result(capsys, ["fit", "raee", "--log", str(LIKERT)]) == 2  # no reference judgments


SIMPLEX_BAD = {
    "--omega": ["-1", "nan", "abc", "inf"],
    "--beta-max": ["-1", "x", "inf"],
    "--delta": ["1,2", "a,b,c,d,e", "0,0,0,0,0", "-1,1,1,1,1", "nan,1,1,1,1"],
    "--self-judging": ["bad", "gpt-4-0314=", "=M8"],
    "--self-preference": ["other"],
    "--judge": ["unknown"],
    "--chains": ["0", "-1"],
    "--warmup": ["-1"],
    "--draws": ["0", "-5"],
    "--seed": ["99999999999999999999", "-9223372036854775809"],
    "--level": ["0", "1", "1.5", "nan"],
    "--collapse": ["1,2", "a,b,c,d,e", "0,1,2,3,4"],
    "--truth": ["coherence"],  # without --responses
    "--count-weight": ["0", "1.5", "x", "nan", "-1"],
    "--likelihood": ["pairs", ""],
}


def test_fit_simplex_bad_values_are_one_line(tmp_path, capsys):
    base = ["fit", "simplex", "--log", str(LIKERT), "--levels", "5", "--chains", "1", "--warmup", "5", "--draws", "5", "--json"]
    for option, values in SIMPLEX_BAD.items():
        for value in values:
            assert _one_line_or_result(capsys, base + [option, value]) == 2, (option, value)
    assert _one_line_or_result(capsys, base + ["--responses", str(tmp_path / "missing.jsonl"), "--truth", "coherence"]) == 2
    assert _one_line_or_result(capsys, ["fit", "simplex", "--log", str(tmp_path / "missing.jsonl")]) == 2


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra",
    [
        ["--soft"],
        ["--omega", "prior", "--beta-max", "5"],
        ["--omega", "2", "--delta", "1,2,4,8,10"],
        ["--self-judging", "gpt-4-0314=M8", "--self-preference", "shift"],
        ["--sweep"],
        ["--judge", "gpt-4-0314", "--judge", "gpt-3.5-turbo-0301", "--responses", str(TRUTH), "--truth", "coherence", "--level", "0.5"],
        ["--collapse", "1,1,2,2,3", "--plot", "PLOTS"],
        ["--likelihood", "answers", "--soft", "--omega", "2", "--self-judging", "gpt-4-0314=M8", "--self-preference", "shift"],
    ],
    ids=["soft", "omega-prior", "delta", "self-shift", "sweep", "judges-truth-level", "plots", "answers-effects-shift"],
)
@pytest.mark.isolated(fast_compile=True)
def test_fit_simplex_valid_combinations_give_a_result(tmp_path, capsys, extra):
    extra = [str(tmp_path / "plots") if e == "PLOTS" else e for e in extra]
    base = ["fit", "simplex", "--log", str(LIKERT), "--levels", "5", "--chains", "1", "--warmup", "20", "--draws", "20", "--json"]
    assert _one_line_or_result(capsys, base + extra) == 0
