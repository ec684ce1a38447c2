"""The OpenAI files and batches endpoints for the test server (:class:`~.testserver.FakeOpenAIServer`):
``POST /v1/files`` (multipart upload), ``GET /v1/files/{id}/content``, ``POST /v1/batches``,
``GET /v1/batches/{id}``, ``GET /v1/batches`` (list, newest first), ``POST /v1/batches/{id}/cancel``.

A batch is worked off in a background thread: each input line's body is answered by the server's
behaviour (the same answers as live calls), after ``delay_s``. :class:`BatchFaults` injects what
providers do: a line that fails (in the error file), a batch that expires after N lines (partial
output), a batch that fails validation, a batch cancelled while it runs. ``lines`` counts how often
each ``custom_id`` was submitted in any batch, so a test can assert that nothing was paid twice.
"""

from __future__ import annotations

import email
import email.policy
import itertools
import json
import random
import threading
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["BatchEndpoints", "BatchFaults"]


@dataclass
class BatchFaults:
    line_error_rate: float = 0.0
    """Probability that a line fails (``server_error`` in the error file) on its first and second
    submission; a third always answers (a transient fault, within any retry limit). Drawn from the
    seed, the line and its submission count — not from a shared stream — so the same lines fail
    whatever order concurrent batches are worked in."""
    expire_after: int | None = None
    """Expire each batch after answering this many of its lines (the rest get no output)."""
    fail_batches: int = 0
    """The first this many batches fail validation (status ``failed``, no output)."""
    lost_creates: int = 0
    """The first this many batch creations succeed but answer 500 (the answer is lost)."""
    status_errors: int = 0
    """The first this many status requests answer 500."""
    foreign_after_lost_create: int = 0
    """After each lost create, this many batches of someone else are created (the lost one is no
    longer on the first page of the list)."""
    malformed_lines: int = 0
    """The first this many output lines (over all batches) are written damaged (cut in half)."""
    error_message: str = "injected"
    """The message of a failed line and of a failed batch (a provider may quote what it was sent)."""
    seed: int = 0
    submissions: Counter = field(default_factory=Counter, init=False)
    """Per custom id, how often its line was worked on."""

    def line_fails(self, custom_id: str) -> bool:
        """Whether this submission of the line ``custom_id`` fails (see :attr:`line_error_rate`)."""
        n = self.submissions[custom_id]
        self.submissions[custom_id] += 1
        return n < 2 and random.Random(f"{self.seed}:{custom_id}:{n}").random() < self.line_error_rate


class BatchEndpoints:
    def __init__(self, behaviour: Callable[[dict], tuple[int, dict, dict]], *, delay_s: float = 0.05, faults: BatchFaults | None = None):
        self.behaviour = behaviour
        self.delay_s = delay_s
        self.faults = faults or BatchFaults()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.lines: Counter[str] = Counter()
        """``custom_id`` → times submitted in a batch."""
        self.created = 0
        self._ids = itertools.count(1)
        self.lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        self._closing = False
        self._closed = threading.Event()

    def join(self) -> None:
        """Stop every batch still being worked on (as a provider's expiry would) and wait for its
        worker thread: a test leaves no thread behind."""
        with self.lock:
            self._closing = True
            workers = list(self._workers)
        self._closed.set()
        for worker in workers:
            worker.join()

    def handles(self, path: str) -> bool:
        return path.split("?")[0].rstrip("/").split("/v1", 1)[-1].startswith(("/files", "/batches"))

    # -- dispatch ----------------------------------------------------------------------------------
    def post(self, path: str, headers, body: bytes) -> tuple[int, dict, bytes]:
        route = path.split("?")[0].split("/v1", 1)[-1].rstrip("/")
        if route == "/files":
            return self._upload(headers, body)
        if route == "/batches":
            return self._create(json.loads(body or b"{}"))
        if route.startswith("/batches/") and route.endswith("/cancel"):
            return self._cancel(route.split("/")[2])
        return 404, {}, json.dumps({"error": {"message": f"no route {route}"}}).encode()

    def get(self, path: str) -> tuple[int, dict, bytes]:
        route = path.split("?")[0].split("/v1", 1)[-1].rstrip("/")
        parts = route.split("/")
        with self.lock:
            if route == "/batches":
                return 200, {}, json.dumps(self._list(path)).encode()
            if len(parts) == 3 and parts[1] == "batches" and parts[2] in self.batches:
                if self.faults.status_errors > 0:
                    self.faults.status_errors -= 1
                    return 500, {}, json.dumps({"error": {"message": "injected status failure"}}).encode()
                return 200, {}, json.dumps(self._public(self.batches[parts[2]])).encode()
            if len(parts) == 4 and parts[1] == "files" and parts[3] == "content" and parts[2] in self.files:
                return 200, {"Content-Type": "application/octet-stream"}, self.files[parts[2]]
            if len(parts) == 3 and parts[1] == "files" and parts[2] in self.files:
                return 200, {}, json.dumps(self._file(parts[2], "batch")).encode()
        return 404, {}, json.dumps({"error": {"message": f"not found: {route}"}}).encode()

    # -- endpoints -----------------------------------------------------------------------------------
    def _list(self, path: str) -> dict:
        """One page of batches, newest first, as OpenAI pages them (``limit``, default 20, at most
        100; ``after`` an id: the batches older than it)."""
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
        limit = max(1, min(100, int((query.get("limit") or ["20"])[0])))
        data = sorted(self.batches.values(), key=lambda b: -b["created_at_ns"])
        after = (query.get("after") or [""])[0] or None
        if after is not None:
            ids = [b["id"] for b in data]
            data = data[ids.index(after) + 1 :] if after in ids else []
        page = [self._public(b) for b in data[:limit]]
        return {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(data) > limit,
        }

    def add_foreign_batches(self, n: int) -> None:
        """``n`` finished batches of someone else (another tool on the same account), newer than
        any batch created so far."""
        with self.lock:
            for _ in range(n):
                batch_id = f"batch_other_{next(self._ids)}"
                self.batches[batch_id] = {
                    "id": batch_id,
                    "object": "batch",
                    "endpoint": "/v1/chat/completions",
                    "status": "completed",
                    "metadata": {"owner": "someone else"},
                    "created_at": int(time.time()),
                    "created_at_ns": time.time_ns(),
                    "_lines": [],
                    "_fail": False,
                }

    def _file(self, file_id: str, purpose: str) -> dict:
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(self.files[file_id]),
            "created_at": int(time.time()),
            "filename": f"{file_id}.jsonl",
            "purpose": purpose,
            "status": "processed",
        }

    def _upload(self, headers, body: bytes) -> tuple[int, dict, bytes]:
        message = email.message_from_bytes(
            b"Content-Type: " + headers.get("Content-Type", "").encode() + b"\r\n\r\n" + body, policy=email.policy.HTTP
        )
        content, purpose = b"", "batch"
        for part in message.iter_parts():  # type: ignore[attr-defined]
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            data = payload if isinstance(payload, bytes) else b""
            if name == "file":
                content = data
            elif name == "purpose":
                purpose = data.decode() or "batch"
        with self.lock:
            file_id = f"file-{next(self._ids)}"
            self.files[file_id] = content
            return 200, {}, json.dumps(self._file(file_id, purpose)).encode()

    def _create(self, request: dict) -> tuple[int, dict, bytes]:
        with self.lock:
            source = self.files.get(request.get("input_file_id", ""))
            if source is None:
                return 400, {}, json.dumps({"error": {"message": "unknown input_file_id"}}).encode()
            lines = [json.loads(line) for line in source.decode().splitlines() if line.strip()]
            batch_id = f"batch_{next(self._ids)}"
            self.created += 1
            for line in lines:
                self.lines[line["custom_id"]] += 1
            batch = {
                "id": batch_id,
                "object": "batch",
                "endpoint": request.get("endpoint", "/v1/chat/completions"),
                "input_file_id": request["input_file_id"],
                "completion_window": request.get("completion_window", "24h"),
                "status": "validating",
                "metadata": request.get("metadata") or {},
                "created_at": int(time.time()),
                "created_at_ns": time.time_ns(),
                "output_file_id": None,
                "error_file_id": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "_lines": lines,
                "_fail": self.created <= self.faults.fail_batches,
            }
            self.batches[batch_id] = batch
        worker = threading.Thread(target=self._work, args=(batch_id,), name=f"fake-batch-{batch_id}", daemon=True)
        with self.lock:
            self._workers.append(worker)
        worker.start()
        with self.lock:
            if self.faults.lost_creates > 0:
                self.faults.lost_creates -= 1
                lost = True
            else:
                lost = False
        if lost:
            self.add_foreign_batches(self.faults.foreign_after_lost_create)
            with self.lock:
                return 500, {}, json.dumps({"error": {"message": "injected: created, answer lost"}}).encode()
        return 200, {}, json.dumps(self._public(batch)).encode()

    def _cancel(self, batch_id: str) -> tuple[int, dict, bytes]:
        with self.lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return 404, {}, json.dumps({"error": {"message": "no such batch"}}).encode()
            if batch["status"] in ("validating", "in_progress"):
                batch["status"] = "cancelling"
            return 200, {}, json.dumps(self._public(batch)).encode()

    def _public(self, batch: dict) -> dict:
        return {k: v for k, v in batch.items() if not k.startswith("_") and k != "created_at_ns"}

    # -- the worker ----------------------------------------------------------------------------------
    def _work(self, batch_id: str) -> None:
        self._closed.wait(self.delay_s)  # (a closing server ends the wait)
        with self.lock:
            batch = self.batches[batch_id]
            if batch["_fail"]:
                batch.update(
                    status="failed",
                    errors={"data": [{"code": "invalid_request", "message": f"validation failure: {self.faults.error_message}"}]},
                )
                return
            if batch["status"] == "validating":
                batch["status"] = "in_progress"
        out: list[dict] = []
        err: list[dict] = []
        for n, line in enumerate(batch["_lines"]):
            with self.lock:
                stop = (
                    self._closing
                    or batch["status"] == "cancelling"
                    or (self.faults.expire_after is not None and n >= self.faults.expire_after)
                )
                failing = not stop and self.faults.line_fails(line["custom_id"])
            if stop:
                break
            self._closed.wait(self.delay_s / max(1, len(batch["_lines"])))
            if failing:
                err.append(
                    {
                        "id": f"req_{n}",
                        "custom_id": line["custom_id"],
                        "response": None,
                        "error": {"code": "server_error", "message": self.faults.error_message},
                    }
                )
                continue
            status, _, body = self.behaviour(line["body"])
            entry = {
                "id": f"req_{n}",
                "custom_id": line["custom_id"],
                "response": {"status_code": status, "request_id": f"r{n}", "body": body},
                "error": None,
            }
            (out if status == 200 else err).append(entry)
        with self.lock:
            final = (
                "cancelled" if batch["status"] == "cancelling" else "expired" if len(out) + len(err) < len(batch["_lines"]) else "completed"
            )
            for name, rows in (("output_file_id", out), ("error_file_id", err)):
                if rows:
                    file_id = f"file-{next(self._ids)}"
                    texts = [json.dumps(r) for r in rows]
                    if name == "output_file_id":
                        for k, text in enumerate(texts[: self.faults.malformed_lines]):
                            texts[k] = text[: len(text) // 2]
                        self.faults.malformed_lines -= min(self.faults.malformed_lines, len(texts))
                    self.files[file_id] = "".join(t + "\n" for t in texts).encode()
                    batch[name] = file_id
            batch["request_counts"] = {"total": len(batch["_lines"]), "completed": len(out), "failed": len(err)}
            batch["status"] = final
