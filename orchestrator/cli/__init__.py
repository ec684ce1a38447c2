"""Command line: a thin shell over the public API (:mod:`orchestrator.api`), one command per
function with the same argument names. User errors print one line and exit 2; bugs print one line
and the path of a crash log, and exit 1.

``common`` holds the app, consoles and option checks; ``runs`` the commands on runs; ``fits`` the
offline fits; ``tools`` replay, simulate, the embedded judge server and record.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.text import Text

from ..errors import OrchestratorError
from ..secrets import redact
from . import cache, compare, fits, init, labels, runs, tools  # noqa: F401  (registers the commands)
from .common import app, err_console

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning :class:`OrchestratorError` into one line and exit 2."""
    import warnings

    from ..errors import OrchestratorWarning

    default_show = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, OrchestratorWarning):
            err_console.print(Text.assemble(("warning: ", "bold yellow"), redact(str(message)) or ""), soft_wrap=True)
        else:
            default_show(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    # cancelling calls in flight (an interrupt, a storage error) leaves litellm coroutines that were
    # never started; Python's complaint about them is noise on the user's one-line error
    warnings.filterwarnings("ignore", message="coroutine .* was never awaited", category=RuntimeWarning)
    from ..api.lifecycle import interrupts_while_starting

    try:
        with interrupts_while_starting():
            code = app(args=argv, standalone_mode=False)
        # in non-standalone mode click returns (not raises) the code of a typer.Exit
        if isinstance(code, int) and code != 0:
            sys.exit(code)
    except OrchestratorError as exc:
        # Text, not markup: messages quote user data such as "[[rating]]" or "['X']".
        err_console.print(Text.assemble(("error: ", "bold red"), redact(str(exc)) or ""), soft_wrap=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("interrupted")
        sys.exit(130)
    except Exception as exc:  # click usage errors arrive here in non-standalone mode
        if isinstance(exc, _click_exceptions()):
            exc.show()  # type: ignore[attr-defined]
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        storage = _storage_error(exc)
        if storage:
            err_console.print(Text.assemble(("error: ", "bold red"), redact(storage) or ""), soft_wrap=True)
            sys.exit(2)
        # a bug: one line here, the traceback (redacted: it may quote a key) in a log file
        import traceback

        where = _write_crash_log(redact("".join(traceback.format_exception(exc))) or "")
        message = redact(f"{type(exc).__name__}: {exc}".splitlines()[0][:300]) or ""
        err_console.print(
            Text.assemble(
                ("error: ", "bold red"),
                f"internal error ({message}); traceback in {where}. `orchestrator status RUN` shows what a run has committed",
            ),
            soft_wrap=True,
        )
        sys.exit(1)
    finally:
        warnings.showwarning = default_show


def _storage_error(exc: BaseException) -> str | None:
    """One line for a run file or folder that cannot be read or written: a full disk, read-only
    storage, a damaged database. Nothing claims the file is consistent: SQLite rolled back the
    transaction in progress, and ``PRAGMA integrity_check`` is the way to know more."""
    import errno
    import sqlite3

    if isinstance(exc, sqlite3.DatabaseError):
        text = str(exc)
        if "full" in text or "disk I/O" in text:
            return (
                f"the run file could not be written ({text}); the last transaction was rolled back. Free space, "
                "then `orchestrator resume RUN`"
            )
        if "readonly" in text or "read-only" in text:
            return f"the run file is on read-only storage ({text}); copy it somewhere writable to resume it"
        if "malformed" in text or "not a database" in text or "corrupt" in text:
            return f"the run file is damaged ({text}); check it with `sqlite3 RUN 'PRAGMA integrity_check'` and restore it from a copy"
        return f"the run file could not be used ({text})"
    if isinstance(exc, OSError) and exc.errno in (
        errno.ENOSPC,
        errno.EFBIG,
        errno.EDQUOT,
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.EIO,
    ):
        return f"{exc.filename or 'a file'}: {exc.strerror or exc}"
    return None


def _write_crash_log(text: str) -> str:
    """Write a traceback to a log file (``$ORCHESTRATOR_LOG_DIR`` or the temp folder); its path."""
    import os
    import tempfile
    import time

    folder = Path(os.environ.get("ORCHESTRATOR_LOG_DIR") or tempfile.gettempdir())
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f"orchestrator-crash-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".log", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return name
    except OSError:
        sys.stderr.write(text)
        return "the lines above"


def _click_exceptions() -> tuple[type, ...]:
    """Click's exception class, from click itself and from the copy newer typer releases vendor."""
    classes = []
    try:
        import click

        classes.append(click.ClickException)
    except ImportError:  # pragma: no cover - typer without a separate click
        pass
    try:
        from typer._click.exceptions import ClickException

        classes.append(ClickException)  # type: ignore[arg-type]
    except ImportError:  # typer that uses click directly
        pass
    return tuple(classes)
