"""The suite cleans up after itself: a test that leaves a thread, a server or a
subprocess running fails, and the test server ends its kept-alive connections when it closes."""

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from orchestrator.judging.testserver import FakeOpenAIServer

HERE = Path(__file__).resolve().parents[1]  # tests/

LEAKY_TESTS = """
import subprocess
import sys
import threading
import time

import childkit
from orchestrator.judging.testserver import FakeOpenAIServer


def _linger():
    time.sleep(30)


def test_leaves_a_thread():
    threading.Thread(target=time.sleep, args=(30,), name="forgotten", daemon=True).start()


def test_leaves_a_server():
    server = FakeOpenAIServer()
    server.__enter__()  # never closed


def test_leaves_a_subprocess():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])


def test_leaves_a_command():  # forked by childkit's fork server, not a child of this process
    childkit.popen(["--help"], stdout=subprocess.DEVNULL, preexec_fn=_linger)


def test_cleans_up():
    worker = threading.Thread(target=time.sleep, args=(0.1,))
    worker.start()
    worker.join()
"""


def test_a_test_that_leaves_a_thread_a_server_or_a_process_fails(tmp_path):
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    shutil.copy(HERE / "childkit.py", tmp_path / "childkit.py")
    (tmp_path / "test_leaky.py").write_text(LEAKY_TESTS)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-rE", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    out = result.stdout
    assert result.returncode == 1, out
    assert "5 passed, 4 errors" in out, out
    assert "test_leaves_a_thread left running: thread 'forgotten'" in out
    assert "test_leaves_a_server left running: thread 'fake-openai-server'" in out
    assert "test_leaves_a_subprocess left running: process" in out and "time.sleep(30)" in out
    assert "test_leaves_a_command left running: process" in out


def test_closing_the_test_server_ends_kept_alive_connections_and_their_threads():
    before = set(threading.enumerate())
    client = httpx.Client()  # keeps its connection open in its pool, as litellm's clients do
    try:
        with FakeOpenAIServer() as server:
            for _ in range(3):
                assert client.post(f"{server.url}/chat/completions", json={"model": "m", "messages": []}).status_code == 200
            handlers = [t for t in threading.enumerate() if t not in before and t.name != "fake-openai-server"]
            assert handlers  # the connection's handler is waiting for the next request
            started = time.monotonic()
        assert time.monotonic() - started < 5
        assert not [t for t in threading.enumerate() if t not in before and t.is_alive()]
    finally:
        client.close()
