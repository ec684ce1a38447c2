"""Who may write a run file, and how a reader opens one (also on read-only storage)."""

from __future__ import annotations

import fcntl
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from filelock import FileLock, Timeout

from ..errors import OrchestratorError

__all__ = ["RunLock", "creation_lock", "readonly", "snapshot_reader"]


class RunLock:
    """The one-writer lock of a run: an exclusive ``flock`` on the run file itself, so it follows
    the file (its inode), not a name: a resume through a symlink or a hard link, or after a lock
    file was deleted, meets the same lock. The kernel drops it when the process dies, so a
    ``kill -9`` leaves no stale lock. (SQLite's own locks are POSIX byte-range locks, which are
    independent of ``flock`` on Linux.)"""

    def __init__(self, path: Path):
        self.path = path
        try:
            self._fd: int | None = os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise OrchestratorError(f"{path}: cannot open the run file ({exc.strerror})") from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)
            self._fd = None
            raise OrchestratorError(f"{path} is in use by another orchestrator process; wait for it to finish or stop it first") from None

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def creation_lock(path: Path) -> FileLock:
    """Serialises two processes creating the same run name (the file does not exist yet)."""
    lock = FileLock(str(path) + ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise OrchestratorError(f"{path} is in use by another orchestrator process; wait for it to finish or stop it first") from None
    return lock


def readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection. On read-only storage a WAL database whose ``-shm`` cannot be created
    is opened as immutable, which is safe there: nothing can write it (and a leftover ``-wal``
    with content rules that out, so then the ordinary error is reported)."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=30.0)
    try:
        conn.execute("select count(*) from sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
        wal = Path(f"{path}-wal")
        if (wal.exists() and wal.stat().st_size > 0) or os.access(path.resolve().parent, os.W_OK):
            raise
        conn = sqlite3.connect(uri + "&immutable=1", uri=True, timeout=30.0)
        return conn


def snapshot_reader(path: Path) -> sqlite3.Connection:
    """A read-only connection inside one read transaction, begun and pinned at once: every query on
    it sees the file as it was at that moment (WAL keeps that snapshot readable while a writer
    commits), so two reads of a run never disagree (``status`` polled beside a live run
    read the requests and the judgments at two different commits). Closing it ends the snapshot."""
    conn = readonly(path)
    try:
        conn.execute("BEGIN")
        conn.execute("select count(*) from sqlite_master").fetchone()  # the snapshot starts at the first read
    except BaseException:
        conn.close()
        raise
    return conn
