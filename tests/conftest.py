import json
import os
import threading
import time
from pathlib import Path

import childkit
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
    from orchestrator.offline.replay.simulate import JUDGE_PRESETS, simulate_dataset

    records, responses = simulate_dataset(3, 8, JUDGE_PRESETS["llm"], seed=3)
    return write_jsonl(tmp_path / "log.jsonl", records), write_jsonl(tmp_path / "responses.jsonl", responses)


def pytest_configure(config):
    if not os.environ.get(ISOLATED_CHILD):
        # (not in an isolated sampler test's process: importing litellm costs ≈ 3 CPU-s each, and
        # the judge client silences the banner itself when it calls litellm)
        import litellm

        litellm.suppress_debug_info = True  # no "Give Feedback" banners on the failures tests provoke
    config.addinivalue_line(
        "markers",
        "isolated(fast_compile=False): runs in a fresh Python process of its own (the NUTS sampler's compilations);"
        " fast_compile: XLA compiles without optimising (compilation outweighs sampling)",
    )
    if not os.environ.get(ISOLATED_CHILD):
        _refuse_the_sampler_in_the_main_process()


# -- the sampler runs in processes of its own --------------------------------------------------------
# Every NUTS fit compiles XLA code that stays in the process; dozens of fits in one process once
# ended a full run with "LLVM ERROR: Unable to allocate section memory" and an abort. A test that
# samples is marked `isolated` and runs in a fresh interpreter; in the main process the sampler
# refuses to run, so a new sampling test cannot forget the mark.
ISOLATED_CHILD = "ORCHESTRATOR_ISOLATED_TEST"


def _refuse_the_sampler_in_the_main_process() -> None:
    from numpyro.infer import MCMC

    def refuse(self, *args, **kwargs):
        raise RuntimeError("this test runs the NUTS sampler: mark it @pytest.mark.isolated (tests/conftest.py says why)")

    MCMC.run = refuse


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run an ``isolated`` test as ``python -m pytest NODEID`` in a fresh process."""
    if pyfuncitem.get_closest_marker("isolated") is None or os.environ.get(ISOLATED_CHILD):
        return None
    import subprocess
    import sys

    env = {**os.environ, ISOLATED_CHILD: "1"}
    if pyfuncitem.get_closest_marker("isolated").kwargs.get("fast_compile"):
        # XLA's backend optimisation level 0 for a test whose compilation outweighs its sampling: it
        # checks what the compiled sampler computes, and compiling costs ≈ 16 CPU-s instead of ≈ 24
        # (with 4 × 2,000 draws the slower compiled code costs more than that saves)
        env["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), "--xla_backend_optimization_level=0"]).strip()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", pyfuncitem.nodeid],
        cwd=pyfuncitem.config.rootpath,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if result.returncode != 0:
        pytest.fail(f"isolated test failed (exit {result.returncode}):\n{result.stdout[-6000:]}\n{result.stderr[-3000:]}", pytrace=False)
    return True


# -- nothing left behind -------------------------------------------------------------------------
# A test that leaves a thread, a server or a subprocess running fails: left-overs pile up over a
# session (a full run once aborted with 100+ idle HTTP handler threads). Threads that libraries
# start once per process and keep by design are recognised by where they come from.
LIBRARY_TARGETS = ("litellm", "httpx", "anyio", "concurrent.futures", "jax", "tqdm", "multiprocessing")


def _library_thread(thread: threading.Thread) -> bool:
    """A thread a library keeps for the whole process, or one that serves a connection of a server
    a longer-lived fixture holds open (not this test's to stop: the server joins it on close)."""
    target = getattr(thread, "_target", None)
    owner = getattr(target, "__self__", None)
    if (
        getattr(target, "__name__", "") == "process_request_thread"
        and getattr(getattr(owner, "socket", None), "fileno", lambda: -1)() != -1
    ):
        return True
    module = getattr(target, "__module__", "") or type(thread).__module__ or ""
    if any(module.startswith(name) for name in LIBRARY_TARGETS):
        return True
    return thread.name.startswith(("asyncio_", "ThreadPoolExecutor-")) or type(thread).__module__.startswith(LIBRARY_TARGETS)


def _children_of(pid: int | str) -> set[int]:
    children: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children.update(int(child) for child in (task / "children").read_text().split())
        except OSError:
            continue
    return children


def _child_processes() -> set[int]:
    """This process's live children (Linux: /proc; elsewhere nothing is checked). The commands
    ``tests/childkit.py`` forks are children of its fork server, which lives as long as this process."""
    children = _children_of("self")
    for helper in childkit.helper_pids() & children:
        children.discard(helper)
        children |= _children_of(helper)
    live = set()
    for pid in children:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            live.add(pid)
    return live


@pytest.fixture(autouse=True)
def one_embedded_judge_at_a_time(request, tmp_path_factory):
    """Tests marked ``embedded_judge`` (a llama.cpp model on the CPU: the README's live runs, the
    embedded judge's own tests) run one at a time across the xdist workers, behind a file lock in
    the session's shared temporary folder: three models on two cores would each take three times as
    long (pytest-xdist's ``loadgroup`` did not group them here). A waiting test waits
    within its own timeout, so these tests carry a long one."""
    if request.node.get_closest_marker("embedded_judge") is None:
        yield
        return
    from filelock import FileLock

    with FileLock(str(tmp_path_factory.getbasetemp().parent / "embedded-judge.lock")):
        yield


@pytest.fixture(autouse=True)
def nothing_left_behind(request):
    """Fail the test if it leaves a thread or a subprocess running (5 s grace to finish)."""
    threads_before = set(threading.enumerate())
    children_before = _child_processes()
    yield
    deadline = time.monotonic() + 5.0
    while True:
        threads = [t for t in threading.enumerate() if t not in threads_before and t.is_alive() and not _library_thread(t)]
        children = _child_processes() - children_before
        if (not threads and not children) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if threads or children:
        what = [f"thread {t.name!r} (target {getattr(getattr(t, '_target', None), '__qualname__', '?')})" for t in threads]
        what += [f"process {pid} ({_command_line(pid)})" for pid in sorted(children)]
        pytest.fail(f"{request.node.nodeid} left running: " + "; ".join(what), pytrace=False)


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


# -- a precise and a noisy judge behind one test server (RAEE tests) ------------------------------
@pytest.fixture
def two_judges(tmp_path, monkeypatch):
    """A precise judge (local-openai) and a noisy one, both served by the test server."""
    from judgekit import reference_behaviour, write_judge
    from orchestrator.judging.testserver import FakeOpenAIServer

    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(write_judge(tmp_path / "judges", "noisy-openai")))
    with FakeOpenAIServer(reference_behaviour({"my-model": 0.05, "noisy": 3.0})) as server:
        yield server
