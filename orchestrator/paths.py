"""Where the orchestrator keeps files between runs: one cache folder for the platform.

``$ORCHESTRATOR_CACHE`` when set, else the user cache directory (platformdirs: ``$XDG_CACHE_HOME/
llm-judge-orchestrator``, by default ``~/.cache/llm-judge-orchestrator`` on Linux). The embedded
judge's assembled weights, the JAX compilation cache and (by default) the judgment cache live there,
once per user, whichever virtual environment runs them. Standard library and platformdirs only:
every layer may import this.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["APP_NAME", "cache_dir", "file_sha256"]

APP_NAME = "llm-judge-orchestrator"


def cache_dir() -> Path:
    """The cache folder (not created here)."""
    configured = os.environ.get("ORCHESTRATOR_CACHE", "").strip()
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME))


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read in blocks (a multi-GB model file, a run file used as a board)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()
