"""The reliability catalog, classes 1–8: a catalog of hostile inputs and sloppy providers, by
class of defect. Every case runs the real ``orchestrator`` command in a child process, on real
files, against a real HTTP judge server on 127.0.0.1, and checks what a user would see: the exit
code, one clear line (never a traceback), and that nothing stored was lost or changed.

Classes: 1 outputs that destroy inputs, 2 non-finite numbers, 3 success reported on failure,
4 late validation, 5 display injection, 6 locks and storage, 7 secrets, 8 small hangs and silences.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import childkit
import pytest
from cases_display_locks_secrets import cases_display_locks_secrets
from cases_inputs_and_numbers import cases_inputs_and_numbers
from catalog_kit import Case
from catalog_world import make_world, run_case

from judgekit import quality_behaviour, write_config, write_dataset
from orchestrator.judging.testserver import FakeOpenAIServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The servers, files and runs every case runs against (:func:`catalog_world.make_world`)."""
    yield from make_world(tmp_path_factory)


def catalog() -> list[Case]:
    return cases_inputs_and_numbers() + cases_display_locks_secrets()


def test_the_catalog_has_at_least_sixty_cases_in_every_class():
    cases = catalog()
    assert len(cases) >= 60
    assert {case.klass for case in cases} == set(range(1, 9))
    assert len({case.name for case in cases}) == len(cases)


PARTS = 4
"""The catalog runs in this many tests (every ``PARTS``-th case each), so that xdist workers share it."""


@pytest.mark.parametrize("part", range(PARTS))
def test_reliability_catalog(world, part):
    """Every case: the right exit code, one clear line, no traceback, nothing stored changed."""
    cases = catalog()[part::PARTS]
    # the record-echo case needs the echo server's address
    for case in cases:
        case.args = [a.replace("ECHO_AUTH", world["servers"]["echo_auth"].url) for a in case.args]
    if world["ro"] is None:
        skipped = [c.name for c in cases if c.readonly]
        print(f"no read-only storage can be made here (mount, chattr): skipping {skipped}")
        cases = [c for c in cases if not c.readonly]
    lock_cases = [c for c in cases if c.klass == 6 and "writer holds" in c.name]
    parallel = [c for c in cases if c not in lock_cases]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda case: run_case(case, world), parallel))
    for case in lock_cases:  # one lock holder at a time
        results.append(run_case(case, world))
        for holder in world.pop("holders", []):
            holder.kill()
            holder.wait()
    failures = [r for r in results if r]
    print(f"{len(cases)} cases, {len(cases) - len(failures)} behaved, {time.monotonic() - started:.0f} s")
    assert failures == [], "\n".join(failures)


def test_a_second_interrupt_stops_cpu_bound_work_at_once(tmp_path):
    """During a long posterior update (CPU-bound: the event loop cannot run its signal handlers)
    the first SIGINT starts the drain and a second one stops at once; the run resumes."""
    import signal

    data = write_dataset(tmp_path / "d", prompts=2, candidates=5)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, name="stall", prompts=data[0], responses=data[1], max_calls=20)
        env = {**os.environ, "ORCHESTRATOR_STALL": "refit:3"}  # a refit after the first round spins for 60 s
        proc = childkit.popen(["run", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        try:
            # on a loaded machine a progress line (one every 10 s without a terminal) can come first
            before = [proc.stderr.readline()]
            while before[-1] and "stalling at refit" not in before[-1] and len(before) < 50:
                before.append(proc.stderr.readline())
            assert "stalling at refit" in before[-1], before
            started = time.monotonic()
            proc.send_signal(signal.SIGINT)
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=30)
            took = time.monotonic() - started
            stderr = proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        run = tmp_path / "runs" / "stall.sqlite"
        state = sqlite3.connect(run).execute("select status from runs").fetchone()[0]
        resumed = childkit.run(["resume", str(run)], capture_output=True, text=True, timeout=120)
    assert code == 130 and took < 20 and "Traceback" not in stderr, (code, took, stderr)
    assert state == "interrupted"
    assert resumed.returncode == 0, resumed.stderr
    assert sqlite3.connect(run).execute("select count(*) from judgments where status = 'ok'").fetchone()[0] == 20
