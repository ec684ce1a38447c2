"""The first read, second round: what a newcomer sees while a run goes and when it ends — one
count that only goes up, progress while judgments come from the cache, plain words before the
technical term, and pointers to documentation that exists where the user is."""

from __future__ import annotations

import re

from judgekit import quality_behaviour, run_cli, write_config, write_dataset
from orchestrator.judging.testserver import FakeOpenAIServer

PROGRESS = re.compile(r"^\[\d+:\d\d\] round (\d+): (\d+) of (\d+) calls · (.*)$")


def _progress(err: str) -> list[tuple[int, int, str]]:
    found = [PROGRESS.match(line) for line in err.splitlines()]
    return [(int(m.group(1)), int(m.group(2)), m.group(4)) for m in found if m]


def test_progress_goes_only_up_reads_the_cache_and_ends_on_the_count_it_showed(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_PROGRESS_EVERY_S", "0")
    prompts, responses = write_dataset(tmp_path / "data", prompts=6, candidates=5, seed=3)
    cache = str(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(quality_behaviour) as server:
        for name in ("paid", "cached"):
            config = write_config(tmp_path, server.url, name=name, prompts=prompts, responses=responses, max_calls=24, batch=4)
            capsys.readouterr()
            assert run_cli(["run", str(config), "--no-report", "--cache", cache]) == 0
            err = capsys.readouterr().err
            shown = _progress(err)
            assert len(shown) >= 3, err
            rounds, calls = [r for r, _, _ in shown], [c for _, c, _ in shown]
            assert rounds == sorted(rounds) and calls == sorted(calls)  # never back to an older round, never fewer calls
            (stop,) = [line for line in err.splitlines() if line.startswith("stopped after round")]
            said = re.search(r"\((\d+) calls(?: \((\d+) from the cache\))?, \d+ tok\)$", stop)
            assert said is not None and int(said.group(1)) == calls[-1] == 24, stop
            before = err.splitlines()[err.splitlines().index(stop) - 1]
            assert PROGRESS.match(before) and f": {calls[-1]} of 24 calls" in before  # the stop follows the count it shows
            if name == "cached":  # every judgment from the cache: progress still shown, in the same words
                assert said.group(2) == "24" and "(24 from the cache)" in shown[-1][2]
            for _, _, info in shown:  # plain words: no negative "entropy", no "p90", no "max reorder"
                assert "entropy" not in info and "p90" not in info and "max reorder" not in info


def test_the_closing_paragraph_speaks_plainly(tmp_path, capsys):
    prompts, responses = write_dataset(tmp_path / "data", prompts=6, candidates=4, seed=3, base=[0.2, 0.4, 0.6, 0.8], spread=0.05)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(
            tmp_path, server.url, name="plain", prompts=prompts, responses=responses, max_calls=60, batch=4, scope="global"
        )
        capsys.readouterr()
        assert run_cli(["run", str(config), "--no-report"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "Agreement with the reference scores (Spearman): " in said and "stopping.tie_delta = 0.5" in said  # the word first
    assert "δ =" not in said and "mean over 1 rankings" not in said and "only just" not in said
    assert "in how sure it is, not in which one it picks" not in said


def test_the_starter_config_points_to_a_command_that_prints_the_docs(tmp_path, capsys):
    prompts, responses = write_dataset(tmp_path / "data", prompts=3, candidates=3, seed=1)
    out = tmp_path / "mine.toml"
    assert run_cli(["init", "--prompts", str(prompts), "--responses", str(responses), "--out", str(out)]) == 0
    text = out.read_text()
    assert "docs/" not in text and "`orchestrator docs own-data`" in text
    capsys.readouterr()
    assert run_cli(["docs", "own-data"]) == 0
    assert capsys.readouterr().out.startswith("# Your own data")
    assert run_cli(["docs", "configuraton"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("did you mean 'configuration'?") and len(err.splitlines()) == 1
    assert run_cli(["docs"]) == 0
    assert "own-data" in capsys.readouterr().out


def test_with_lines_far_apart_the_last_progress_line_is_the_final_count(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_PROGRESS_EVERY_S", "3600")  # no line between the first and the stop
    prompts, responses = write_dataset(tmp_path / "data", prompts=6, candidates=5, seed=3)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, name="sparse", prompts=prompts, responses=responses, max_calls=24, batch=4)
        assert run_cli(["run", str(config), "--no-report", "--no-cache"]) == 0
    err = capsys.readouterr().err.splitlines()
    (stop,) = [k for k, line in enumerate(err) if line.startswith("stopped after round")]
    assert PROGRESS.match(err[stop - 1]) and " 24 of 24 calls · " in err[stop - 1]
