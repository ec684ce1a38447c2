"""``python -m orchestrator ARGS`` in a child process, started without paying the imports each time.

The reliability tests start a few hundred child processes on purpose (kills at chosen points,
signals, exit codes, two processes on one run file). Each used to be a fresh interpreter that spent
≈ 5 of its ≈ 7 CPU-s importing litellm, torch and scipy before the command did anything — a third
of the suite's CPU. Here a child is forked from a server process that imported those libraries once
(multiprocessing's *forkserver*): it is still a process of its own — its own pid to kill or signal,
its own exit status, its own stdin/stdout/stderr pipes, the environment and working directory asked
for — and it runs the command the way ``python -m orchestrator`` does (``runpy``, ``sys.argv``,
``atexit``). The orchestrator's own modules are imported in the child, so every environment variable
they read (failpoints, judge folders, caches) is the child's.

``run`` and ``popen`` take the subset of :mod:`subprocess`'s arguments these tests use. With
``ORCHESTRATOR_TEST_FORK=0`` they start a fresh interpreter instead (exactly ``subprocess``).
"""

from __future__ import annotations

import atexit
import io
import multiprocessing
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
import types
from multiprocessing import reduction
from typing import Any, Callable

__all__ = ["helper_pids", "popen", "run"]

PRELOAD = [
    "numpy",
    "scipy.stats",
    "scipy.optimize",
    "scipy.sparse",
    "torch",
    "litellm",
    "pydantic",
    "typer",
    "rich",
    "sqlite_utils",
    "tenacity",
    "httpx",
]
"""Imported once by the server; not the orchestrator itself (its modules read the environment)."""

_context: Any = None
_START_LOCK = threading.Lock()


def _fork_enabled() -> bool:
    return os.environ.get("ORCHESTRATOR_TEST_FORK", "1") != "0"


def _get_context():
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    return _context


def helper_pids() -> set[int]:
    """The fork server's and multiprocessing's resource tracker's pids once they run: long-lived
    children of this process, not a test's."""
    from multiprocessing import forkserver, resource_tracker

    pids = {getattr(forkserver._forkserver, "_forkserver_pid", None), getattr(resource_tracker._resource_tracker, "_pid", None)}
    return {pid for pid in pids if pid}


class _InheritedFd:
    """A file descriptor that travels to the forked child (multiprocessing passes it over its socket)."""

    def __init__(self, fd: int):
        self.fd = fd

    def __reduce__(self):
        return _detach, (reduction.DupFd(self.fd),)


def _detach(dup):
    return dup.detach()


def _child(args: list[str], env: dict[str, str], cwd: str | None, fds: tuple, preexec: Callable[[], None] | None) -> None:
    """In the forked process: become ``python -m orchestrator ARGS``."""
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    unbuffered = env.get("PYTHONUNBUFFERED")
    sys.stdout.reconfigure(line_buffering=bool(unbuffered))
    os.environ.clear()
    os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    # a fresh interpreter's dispositions (the server ignores SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if preexec is not None:
        preexec()
    sys.argv = ["orchestrator", *args]
    try:
        runpy.run_module("orchestrator", run_name="__main__", alter_sys=True)
    finally:
        atexit._run_exitfuncs()


class Child:
    """What :class:`subprocess.Popen` offers the tests, for a forked child."""

    def __init__(self, args: list[str], *, env, cwd, stdin, stdout, stderr, text: bool, preexec_fn):
        self.args = args
        self.returncode: int | None = None
        ends: list[int] = []
        close_after: list[int] = []
        self.stdin = self.stdout = self.stderr = None
        for name, spec in (("stdin", stdin), ("stdout", stdout), ("stderr", stderr)):
            if spec == subprocess.PIPE:
                r, w = os.pipe()
                mine, theirs = (w, r) if name == "stdin" else (r, w)
                mode = "w" if name == "stdin" else "r"
                handle = open(mine, mode + ("" if text else "b"), **({"encoding": "utf-8", "errors": "replace"} if text else {}))
                setattr(self, name, handle)
                ends.append(theirs)
                close_after.append(theirs)
            elif spec == subprocess.DEVNULL or spec is None:
                # None: the test process's own stdout/stderr, as subprocess does (stdin: nothing); DEVNULL: nothing
                fd = (
                    os.open(os.devnull, os.O_RDWR) if spec == subprocess.DEVNULL or name == "stdin" else os.dup(name == "stdout" and 1 or 2)
                )
                ends.append(fd)
                close_after.append(fd)
            elif spec == subprocess.STDOUT and name == "stderr":
                fd = os.dup(ends[1])
                ends.append(fd)
                close_after.append(fd)
            else:
                fd = os.dup(spec if isinstance(spec, int) else spec.fileno())
                ends.append(fd)
                close_after.append(fd)
        ctx = _get_context()
        self._process = ctx.Process(
            target=_child,
            args=(
                args,
                dict(env if env is not None else os.environ),
                None if cwd is None else str(cwd),
                tuple(_InheritedFd(fd) for fd in ends),
                preexec_fn,
            ),
        )
        try:
            with _START_LOCK:
                # multiprocessing would re-run the test runner's main module in the child first
                main = sys.modules["__main__"]
                sys.modules["__main__"] = types.ModuleType("__main__")
                try:
                    self._process.start()
                    # Process.start polls every child it knows (multiprocessing.process._cleanup), from
                    # whichever thread starts one: two threads reading one exit status from the fork
                    # server's pipe leave the loser with EOF, which multiprocessing reports as exit
                    # 255. This child is polled by its own Child only.
                    multiprocessing.process._children.discard(self._process)  # type: ignore[attr-defined]
                finally:
                    sys.modules["__main__"] = main
        finally:
            for fd in close_after:
                os.close(fd)
        self.pid = self._process.pid

    def _finished(self) -> int:
        code = self._process.exitcode
        assert code is not None
        self.returncode = code
        self._process.close()  # its pipe to the fork server
        return code

    def poll(self) -> int | None:
        if self.returncode is None and not self._process.is_alive():
            self._finished()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self._finished()

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def communicate(self, input: Any = None, timeout: float | None = None) -> tuple[Any, Any]:
        """Both outputs, read at once (threads: a full pipe never blocks the child)."""
        results: dict[str, Any] = {}
        readers = []
        for name in ("stdout", "stderr"):
            handle = getattr(self, name)
            if handle is not None:
                readers.append(threading.Thread(target=lambda n=name, h=handle: results.__setitem__(n, h.read()), daemon=True))
        for reader in readers:
            reader.start()
        if self.stdin is not None:
            if input:
                self.stdin.write(input)
            self.stdin.close()
        deadline = None if timeout is None else time.monotonic() + timeout
        for reader in readers:
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        for name in ("stdout", "stderr"):
            handle = getattr(self, name)
            if handle is not None:
                handle.close()
        return results.get("stdout"), results.get("stderr")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for handle in (self.stdin, self.stdout, self.stderr):
            if handle is not None:
                handle.close()
        self.wait()


def popen(args: list[str], *, env=None, cwd=None, stdin=None, stdout=None, stderr=None, text: bool = False, preexec_fn=None):
    """``subprocess.Popen([python, -m, orchestrator, *args], …)``, forked from the preloaded server."""
    if not _fork_enabled():
        return subprocess.Popen(
            [sys.executable, "-m", "orchestrator", *args],
            env=env,
            cwd=cwd,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            text=text,
            preexec_fn=preexec_fn,
        )
    return Child(list(args), env=env, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr, text=text, preexec_fn=preexec_fn)


def run(
    args: list[str],
    *,
    capture_output: bool = False,
    text: bool = False,
    timeout: float | None = None,
    env=None,
    cwd=None,
    input=None,
    preexec_fn=None,
) -> subprocess.CompletedProcess:
    """``subprocess.run([python, -m, orchestrator, *args], …)``, forked from the preloaded server."""
    if not _fork_enabled():
        return subprocess.run(
            [sys.executable, "-m", "orchestrator", *args],
            capture_output=capture_output,
            text=text,
            timeout=timeout,
            env=env,
            cwd=cwd,
            input=input,
            preexec_fn=preexec_fn,
        )
    pipe = subprocess.PIPE if capture_output else None
    child = popen(
        args,
        env=env,
        cwd=cwd,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=pipe,
        stderr=pipe,
        text=text,
        preexec_fn=preexec_fn,
    )
    try:
        out, err = child.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise
    return subprocess.CompletedProcess([sys.executable, "-m", "orchestrator", *args], child.returncode, out, err)
