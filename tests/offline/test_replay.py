"""`orchestrator replay` on real files: JSON output, scopes, debiasing, budgets, bad input."""

import json
import subprocess
import sys

import pytest

from conftest import ROOT, write_jsonl
from orchestrator.cli import main
from orchestrator.offline.replay.replay import build_groups, replay, replay_files
from orchestrator.records.log import load_log, load_responses


def run_cli(args, capsys):
    code = 0
    try:
        main(args)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_replay_json_report(sim_files, capsys):
    log, responses = sim_files
    code, out, err = run_cli(
        ["replay", str(log), "--responses", str(responses), "--truth", "quality", "--strategy", "reorder", "--json"], capsys
    )
    assert code == 0, err
    report = json.loads(out)
    assert {"strategy", "scope", "full_spearman", "k90", "k_self90", "curve"} <= set(report)
    assert report["strategy"] == "reorder" and report["scope"] == "per_prompt"
    ks = [k for k, _, _ in report["curve"]]
    assert ks == list(range(0, 57))  # 8 candidates → 56 ordered pairs, one per step
    # with every logged comparison used, the posterior is the all-pairs one
    assert report["curve"][-1][1] == pytest.approx(report["full_spearman"], abs=1e-6)
    assert report["curve"][-1][2] == pytest.approx(1.0)
    assert 0 < report["k90"] <= 56 and 0 < report["k_self90"] <= 56


def test_permutation_debiasing_spends_two_calls_per_pair(sim_files):
    log, responses = sim_files
    groups = build_groups(load_log(log), load_responses(responses), "quality", "per_prompt")
    report = replay(groups, "variance", debias="permutation", batch=4, budget=40)
    ks = [k for k, _, _ in report.curve]
    assert ks == [0, 8, 16, 24, 32, 40]
    home = replay(groups, "reorder", debias="home", budget=30)
    assert home.curve[-1][0] == 30


def test_absolute_warm_start_and_budget(sim_files):
    log, responses = sim_files
    groups = build_groups(load_log(log), load_responses(responses), "quality", "per_prompt")
    report = replay(groups, "reorder", with_absolute=True, batch=5, budget=23)
    assert report.curve[0][0] == 8  # one absolute judgment per candidate first
    assert report.curve[-1][0] <= 23
    assert report.curve[0][1] > 0.2  # absolute scores alone already rank


def test_scopes(sim_files):
    log, responses = sim_files
    records, rows = load_log(log), load_responses(responses)
    glob = build_groups(records, rows, "quality", "global")
    assert len(glob) == 1 and len(glob[0].names) == 8
    assert sum(len(v) for v in glob[0].pairwise.values()) == 3 * 56
    report = replay(glob, "reorder", scope="global", batch=8, budget=64)
    assert report.curve[-1][0] == 64
    items = build_groups(records, rows, "quality", "items")
    assert len(items[0].names) == 24
    assert replay(items, "random", scope="items", batch=10, budget=30).curve[-1][0] == 30


def test_seeds_average_and_plot(sim_files, tmp_path, capsys):
    log, responses = sim_files
    png = tmp_path / "curve.png"
    code, out, err = run_cli(
        [
            "replay",
            str(log),
            "--responses",
            str(responses),
            "--truth",
            "quality",
            "--strategy",
            "random",
            "--seeds",
            "3",
            "--batch",
            "8",
            "--plot",
            str(png),
            "--json",
        ],
        capsys,
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["seeds"] == 3 and report["k90_sd"] is not None
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _bad_log_case(tmp_path, line):
    responses = write_jsonl(
        tmp_path / "r.jsonl",
        [{"prompt_id": "p", "candidate": "a", "human": {"q": 1}}, {"prompt_id": "p", "candidate": "b", "human": {"q": 2}}],
    )
    good = {"kind": "pairwise", "prompt_id": "p", "candidates": ["a", "b"], "probs": {"A": 0.4, "B": 0.6}}
    log = write_jsonl(tmp_path / "l.jsonl", [good, line])
    return log, responses


@pytest.mark.parametrize(
    "line,message",
    [
        (
            '{"kind": "pairwise", "prompt_id": "p", "candidates": ["a", "b"], "probs": {"A": NaN, "B": 0.5}}',
            "l.jsonl:2: probs: probs['A'] is nan",
        ),
        (
            {"kind": "pairwise", "prompt_id": "p", "candidates": ["a", "b"], "probs": {"A": 1.5, "B": 0.5}},
            "l.jsonl:2: probs: probs['A'] = 1.5 is outside [0, 1]",
        ),
        (
            {"kind": "pairwise", "prompt_id": "p", "candidates": ["a", "z"], "probs": {"A": 0.5, "B": 0.5}},
            "l.jsonl:2: unknown candidate 'z' for prompt 'p'",
        ),
        (
            {"kind": "pairwise", "prompt_id": "nope", "candidates": ["a", "b"], "probs": {"A": 0.5, "B": 0.5}},
            "l.jsonl:2: prompt 'nope' has no responses",
        ),
        (
            {"kind": "pairwise", "prompt_id": "p", "candidates": ["a", "b"], "probs": {"X": 1.0}},
            "l.jsonl:2: a pairwise judgment needs probs for 'A' and 'B' (or graded verdicts A>>B, A>B, A=B, B>A, B>>A), got ['X']",
        ),
        ({"kind": "vote", "prompt_id": "p", "candidates": ["a", "b"], "probs": {"A": 1.0, "B": 0.0}}, "l.jsonl:2: kind:"),
        ("{not json", "l.jsonl:2: not valid JSON"),
    ],
)
def test_bad_log_lines_name_the_line(tmp_path, capsys, line, message):
    log, responses = _bad_log_case(tmp_path, line)
    code, out, err = run_cli(["replay", str(log), "--responses", str(responses), "--truth", "q"], capsys)
    assert code == 2
    assert message in " ".join(err.split()), err
    assert "Traceback" not in err


def test_other_bad_inputs(tmp_path, capsys):
    log, responses = _bad_log_case(
        tmp_path, {"kind": "pairwise", "prompt_id": "p", "candidates": ["b", "a"], "probs": {"A": 0.5, "B": 0.5}}
    )
    cases = [
        (["--truth", "coherence"], "truth field 'coherence' is in no response's 'human' scores (fields present: q)"),
        (["--truth", "q", "--strategy", "best"], "unknown strategy 'best'"),
        (["--truth", "q", "--debias", "both"], "unknown debias mode 'both'"),
        (["--truth", "q", "--expert", "beta:x"], "beta:<alpha>,<beta>"),
        (["--truth", "q", "--batch", "0"], "--batch must be >= 1"),
        (["--truth", "q", "--scope", "world"], "unknown scope 'world'"),
    ]
    for extra, message in cases:
        code, out, err = run_cli(["replay", str(log), "--responses", str(responses), *extra], capsys)
        assert code == 2 and message in " ".join(err.split()), (extra, err)
    empty = write_jsonl(tmp_path / "empty.jsonl", [])
    code, _, err = run_cli(["replay", str(empty), "--responses", str(responses), "--truth", "q"], capsys)
    assert code == 2 and "the judgment log is empty" in err
    code, _, err = run_cli(["replay", str(tmp_path / "missing.jsonl"), "--responses", str(responses), "--truth", "q"], capsys)
    assert code == 2 and "no such file" in err
    dup = write_jsonl(
        tmp_path / "dup.jsonl",
        [{"prompt_id": "p", "candidate": "a", "human": {"q": 1}}, {"prompt_id": "p", "candidate": "a", "human": {"q": 2}}],
    )
    code, _, err = run_cli(["replay", str(log), "--responses", str(dup), "--truth", "q"], capsys)
    assert code == 2 and "dup.jsonl:2: duplicate response" in " ".join(err.split())
    partial = write_jsonl(
        tmp_path / "partial.jsonl",
        [{"prompt_id": "p", "candidate": "a", "human": {"q": 1}}, {"prompt_id": "p", "candidate": "b", "human": {"other": 2}}],
    )
    code, _, err = run_cli(["replay", str(log), "--responses", str(partial), "--truth", "q"], capsys)
    assert code == 2 and "partial.jsonl:2: candidate 'b' of prompt 'p' has no human score 'q'" in " ".join(err.split())


def test_bundled_real_judge_example_through_the_installed_command():
    """The README's offline example: GPT-3.5 verdicts on SummEval, systems ranked globally."""
    example = ROOT / "examples" / "summeval-gpt35"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "replay",
            str(example / "coherence.log.jsonl"),
            "--responses",
            str(example / "responses.jsonl"),
            "--truth",
            "coherence",
            "--scope",
            "global",
            "--strategy",
            "reorder",
            "--budget",
            "200",
            "--batch",
            "10",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["scope"] == "global" and report["n_groups"] == 1
    assert report["curve"][-1][0] == 200
    assert report["full_spearman"] > 0.3  # GPT-3.5 agrees with the human system ranking


def test_simulate_then_replay(tmp_path, capsys):
    log, responses = tmp_path / "sim" / "log.jsonl", tmp_path / "sim" / "responses.jsonl"
    code, _, err = run_cli(
        ["simulate", "--out-log", str(log), "--out-responses", str(responses), "--prompts", "2", "--candidates", "5", "--judge", "good"],
        capsys,
    )
    assert code == 0, err
    lines = log.read_text().splitlines()
    assert len(lines) == 2 * (5 * 4 + 5)  # every ordered pair and every absolute score
    code, out, err = run_cli(["replay", str(log), "--responses", str(responses), "--truth", "quality", "--with-absolute", "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["curve"][0][0] == 5 and report["full_spearman"] > 0.5  # a good judge agrees
    code, _, err = run_cli(["simulate", "--out-log", str(log), "--out-responses", str(responses), "--judge", "oracle"], capsys)
    assert code == 2 and "unknown judge preset 'oracle'" in err


def test_a_panel_replays_as_its_runs_asked_every_judge_or_the_cost_aware_one(sim_files, tmp_path):
    """Issue #17: `--panel all` asks each selected comparison of every judge of the log; the default
    (cost-aware) one judge per comparison."""
    log, responses = sim_files
    lines = log.read_text().splitlines()
    two = tmp_path / "two-judges.jsonl"
    two.write_text("".join(line.replace('"judge": "', f'"judge": "{who}-') + "\n" for who in ("a", "b") for line in lines))
    every = replay_files(two, responses, "quality", "reorder", batch=2, budget=8, panel="all", judge_reliability=False)
    assert [k for k, _, _ in every.groups[0].curve] == [0, 4, 8]
    cheapest = replay_files(two, responses, "quality", "reorder", batch=2, budget=8)
    assert [k for k, _, _ in cheapest.groups[0].curve] == [0, 2, 4, 6, 8]
