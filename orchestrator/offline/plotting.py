"""matplotlib for the ``--plot`` options: headless backend, a clear message when it is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..errors import OrchestratorError

__all__ = ["pyplot", "save"]


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display needed).

    Raises:
        OrchestratorError: matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OrchestratorError("plots need matplotlib: pip install matplotlib") from None
    return plt


def save(fig, path: str | Path, *, dpi: int = 120, inputs: Iterable[str | Path | None] = ()) -> Path:
    """Lay out, write the PNG (creating its folder; atomically, never over an input of the
    command: :mod:`orchestrator.outputs`) and close the figure."""
    from ..outputs import open_output

    path = Path(path)
    try:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OrchestratorError(f"--plot {path}: cannot create {path.parent} ({exc.strerror})") from None
        fig.tight_layout()
        with open_output(path, option="--plot", inputs=inputs, binary=True) as fh:
            fig.savefig(fh, dpi=dpi, format="png")
    finally:
        pyplot().close(fig)
    return path
