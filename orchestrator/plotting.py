"""matplotlib for the ``--plot`` options: headless backend, a clear message when it is missing."""

from __future__ import annotations

from pathlib import Path

from .errors import OrchestratorError

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
        raise OrchestratorError("plots need matplotlib: pip install 'llm-judge-orchestrator[plot]'") from None
    return plt


def save(fig, path: str | Path, *, dpi: int = 120) -> Path:
    """Lay out, write the PNG (creating its folder) and close the figure."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path
