"""Every file a command writes goes through here ("outputs that destroy inputs").

Rules, for every output option (``export --out``, ``record --out``, ``simulate --out-*``, plots):

- ``-`` means standard output.
- An output is never one of the files the command reads (the run file and its ``-wal``/``-shm``,
  a dataset, a config), compared by the file itself (device and inode, through symlinks and
  hard links), not by its name; nor an existing SQLite database (a run file of another run).
- A symlink is written through (the file it points to is replaced), a character device or FIFO
  (``/dev/stdout``) is written to directly, a directory is refused with one line.
- A regular file is written atomically: to a temporary file beside the real target, flushed,
  then renamed over it; on any error the temporary file is removed and the target is unchanged.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import IO, Iterable, Iterator

from .errors import OrchestratorError

__all__ = ["check_output", "open_output", "same_file", "is_stdout"]

SQLITE_MAGIC = b"SQLite format 3\x00"


def is_stdout(path: str | Path) -> bool:
    return str(path) == "-"


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name the same existing file (symlinks and hard links included)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _protected(inputs: Iterable[str | Path | None]) -> list[Path]:
    out = []
    for path in inputs:
        if path is None:
            continue
        path = Path(path)
        out.append(path)
        if path.suffix == ".sqlite" or _is_sqlite(path):  # a run file's journal files are part of it
            out += [Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")]
    return out


def _kind(path: Path) -> int | None:
    """``st_mode`` of what ``path`` names, symlinks followed (None when nothing is there)."""
    try:
        return os.stat(path).st_mode
    except OSError:
        return None


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def check_output(
    path: str | Path, *, option: str, inputs: Iterable[str | Path | None] = (), allow_existing_sqlite: bool = False
) -> Path | None:
    """Validate an output path before any work is done; returns the resolved path (None for ``-``).

    Raises:
        OrchestratorError: the output is an input of the command, an existing database, a
            directory, or its folder does not exist.
    """
    if is_stdout(path):
        return None
    path = Path(path)
    inputs = list(inputs)
    for source in _protected(inputs):
        if same_file(path, source) or (not path.exists() and Path(os.path.realpath(path)) == Path(os.path.realpath(source))):
            raise OrchestratorError(f"{option} {path}: that is {source}, which this command reads; choose another output file")
    kind = _kind(path)
    if kind is not None and stat.S_ISDIR(kind):
        raise OrchestratorError(f"{option} {path}: is a directory; give a file name")
    if kind is not None and not stat.S_ISREG(kind):
        return path  # a device or FIFO (/dev/stdout: a pipe or terminal), written directly
    real = Path(os.path.realpath(path))
    if not real.parent.is_dir():
        raise OrchestratorError(f"{option} {path}: the folder {real.parent} does not exist")
    if real.exists() and real.is_file() and not allow_existing_sqlite and _is_sqlite(real):
        raise OrchestratorError(f"{option} {path}: is an SQLite database (a run file?); refusing to overwrite it")
    return real


@contextlib.contextmanager
def open_output(
    path: str | Path, *, option: str, inputs: Iterable[str | Path | None] = (), binary: bool = False, append: bool = False
) -> Iterator[IO]:
    """Open an output for writing under the rules of the module docstring.

    ``append`` keeps what the file holds and adds to it (the ``record`` log); it is not atomic by
    nature, but the file is opened through its real path and checked like any other output.
    """
    real = check_output(path, option=option, inputs=inputs)
    if real is None:
        if binary:
            yield sys.stdout.buffer
            sys.stdout.buffer.flush()
        else:
            yield sys.stdout
            sys.stdout.flush()
        return
    mode = ("a" if append else "w") + ("b" if binary else "")
    encoding = None if binary else "utf-8"
    newline = None if binary else ""
    kind = _kind(real)
    if append or (kind is not None and not stat.S_ISREG(kind)):
        try:
            handle = real.open(mode, encoding=encoding, newline=newline)
        except OSError as exc:
            raise OrchestratorError(f"{option} {path}: cannot write ({exc.strerror})") from None
        with handle:
            yield handle
        return
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".partial", dir=real.parent)
    except OSError as exc:
        raise OrchestratorError(f"{option} {path}: cannot write in {real.parent} ({exc.strerror})") from None
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if real.exists():
            with contextlib.suppress(OSError):
                os.chmod(tmp, stat.S_IMODE(real.stat().st_mode))
        else:
            with contextlib.suppress(OSError):
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, real)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OrchestratorError(f"{option} {path}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
