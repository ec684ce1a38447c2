"""An OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks.

Real HTTP (stdlib ``ThreadingHTTPServer`` in a background thread). A ``behaviour`` callable maps
each request body to ``(status, headers, body)``; ``faults`` are answered first, in order (e.g. a
429 with Retry-After, a 500, a delay); a :class:`FaultPlan` injects faults at random with a rate
per kind. Every request is recorded with its idempotency key (the ``X-Idempotency-Key`` header,
or a hash of the model and messages when there is none) and its outcome, so tests can count how
often a key was paid for.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import random
import socket
import struct
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, cast

from .batchserver import BatchEndpoints, BatchFaults

__all__ = ["FakeOpenAIServer", "FaultPlan", "BatchFaults", "FAULT_KINDS", "BILLABLE", "completion", "logprob_entry"]

FAULT_KINDS = (
    "rate_limit",
    "rate_limit_no_retry_after",
    "server_500",
    "server_503",
    "reset",
    "timeout",
    "malformed_json",
    "no_logprobs",
    "no_options",
    "slow_stream",
)
"""What :class:`FaultPlan` can inject:

- ``rate_limit``: 429 with ``Retry-After``; ``rate_limit_no_retry_after``: 429 without it;
- ``server_500`` / ``server_503``: server errors;
- ``reset``: the connection is closed with a TCP reset, no response;
- ``timeout``: no answer until the client has given up (``hang_s``), then the connection closes;
- ``malformed_json``: 200 with a body that is not JSON;
- ``no_logprobs``: a proper answer without log-probabilities (the client falls back to the verdict);
- ``no_options``: an answer whose tokens are none of the template's options;
- ``slow_stream``: the proper answer, its body trickled out over ``slow_s``.
"""

BILLABLE = ("ok", "no_logprobs", "no_options", "slow_stream")
"""Outcomes a real provider would charge for (a full answer was delivered)."""


@dataclass
class FaultPlan:
    """Random faults: ``rates[kind]`` is the probability that a request gets that fault (the rest
    are answered by the behaviour). Seeded, so a campaign is reproducible up to thread timing."""

    rates: dict[str, float]
    seed: int = 0
    retry_after_s: float = 0.05
    hang_s: float = 1.5
    """How long a ``timeout`` request hangs (set the judge's ``timeout_s`` below it)."""
    slow_s: float = 0.3
    injected: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        unknown = set(self.rates) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds: {sorted(unknown)}")
        if sum(self.rates.values()) > 1:
            raise ValueError("fault rates add up to more than 1")
        self._rng = random.Random(self.seed)

    def draw(self) -> str | None:
        u = self._rng.random()
        for kind in FAULT_KINDS:
            u -= self.rates.get(kind, 0.0)
            if u < 0:
                return kind
        return None


def request_identity(headers, body: dict) -> str:
    """The request's idempotency key, or a stable hash of what was asked."""
    key = headers.get("X-Idempotency-Key")
    if key:
        return key
    asked = json.dumps({"model": body.get("model"), "messages": body.get("messages")}, sort_keys=True)
    return "derived:" + hashlib.sha256(asked.encode()).hexdigest()[:16]


Reply = tuple[int, dict[str, str], dict]


def logprob_entry(token: str, alternatives: list[tuple[str, float]]) -> dict:
    """One ``logprobs.content`` entry; ``alternatives`` are ``(token, probability)``."""
    probs = dict(alternatives)
    return {
        "token": token,
        "logprob": math.log(probs.get(token, 1e-9)),
        "bytes": list(token.encode()),
        "top_logprobs": [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())} for t, p in alternatives],
    }


def completion(text: str, entries: list[dict] | None = None, *, model: str = "fake", prompt_tokens: int = 100) -> dict:
    """A chat-completion body with optional logprobs."""
    choice: dict = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
    if entries is not None:
        choice["logprobs"] = {"content": entries}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": max(1, len(entries or [])), "total_tokens": prompt_tokens + 1},
    }


def _default_behaviour(body: dict) -> Reply:
    """Prefers A with probability 0.7 at the first token."""
    return 200, {}, completion("A", [logprob_entry("A", [("A", 0.7), ("B", 0.25), ("\n", 0.05)])])


class _Handler(BaseHTTPRequestHandler):
    """One request to the fake server: a files/batches call, or a chat completion answered by its
    behaviour unless a fault is due."""

    protocol_version = "HTTP/1.1"
    server: "_QuietServer"

    @property
    def fake(self) -> "FakeOpenAIServer":
        return self.server.fake

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):
        status, headers, data = self.fake.batch.get(self.path)
        self._send(status, headers, data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.fake.batch.handles(self.path):
            status, headers, data = self.fake.batch.post(self.path, self.headers, raw)
            self._send(status, headers, data)
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        key = request_identity(self.headers, body)
        with self.fake.lock:
            self.fake.requests.append((self.headers.get("X-Idempotency-Key"), body))
            self.fake.arrivals.append((time.time(), self.headers.get("X-Idempotency-Key")))
            self.fake.authorizations.append(self.headers.get("Authorization"))
            fault = self.fake.faults.pop(0) if self.fake.faults else None
            plan = self.fake.plan
            kind = plan.draw() if plan is not None and fault is None else None
            if kind is not None:
                self.fake.plan.injected[kind] += 1
            self.fake.outcomes[key].append(kind or ("fault" if fault is not None else "ok"))
        if self.fake.delay_s:
            time.sleep(self.fake.delay_s)
        with self.fake.lock:
            # a plan set while the request waited (a server that dies mid-run) applies to it
            if kind is None and fault is None and self.fake.plan is not None and self.fake.plan is not plan:
                kind = self.fake.plan.draw()
                if kind is not None:
                    self.fake.plan.injected[kind] += 1
                    self.fake.outcomes[key][-1] = kind
        if isinstance(fault, (int, float)):
            time.sleep(float(fault))
            fault = None
        if kind is not None and self._inject(kind, body):
            return
        status, headers, payload = fault if fault is not None else self.fake.behaviour(body)
        self._send(status, headers, json.dumps(payload).encode())

    def _send(self, status: int, headers: dict, data: bytes, trickle_s: float = 0.0) -> None:
        self.send_response(status)
        if "Content-Type" not in headers:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if not trickle_s:
            self.wfile.write(data)
            return
        pieces = max(1, min(20, len(data)))
        size = math.ceil(len(data) / pieces)
        for start in range(0, len(data), size):
            self.wfile.write(data[start : start + size])
            self.wfile.flush()
            time.sleep(trickle_s / pieces)

    def _inject(self, kind: str, body: dict) -> bool:
        """Answer with the fault ``kind``; False when the behaviour should answer (slow_stream)."""
        plan = self.fake.plan
        assert plan is not None  # (a fault kind is only drawn from a plan)
        error = lambda status, message, headers=None: self._send(  # noqa: E731
            status, headers or {}, json.dumps({"error": {"message": message, "type": kind}}).encode()
        )
        if kind == "rate_limit":
            error(429, "Rate limit reached", {"Retry-After": f"{plan.retry_after_s:g}"})
        elif kind == "rate_limit_no_retry_after":
            error(429, "Rate limit reached")
        elif kind == "server_500":
            error(500, "Internal server error")
        elif kind == "server_503":
            error(503, "Service unavailable")
        elif kind in ("reset", "timeout"):
            if kind == "timeout":
                time.sleep(plan.hang_s)
            # SO_LINGER 0: close() sends a TCP reset instead of an orderly shutdown
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
        elif kind == "malformed_json":
            self._send(200, {}, b'{"id": "chatcmpl-broken", "choices": [{"message": ')
        elif kind == "no_logprobs":
            status, headers, payload = self.fake.behaviour(body)
            for choice in payload.get("choices", []):
                choice.pop("logprobs", None)
            self._send(status, headers, json.dumps(payload).encode())
        elif kind == "no_options":
            self._send(200, {}, json.dumps(completion("Hmm", [logprob_entry("Hmm", [("Hmm", 0.6), ("Well", 0.4)])])).encode())
        elif kind == "slow_stream":
            status, headers, payload = self.fake.behaviour(body)
            self._send(status, headers, json.dumps(payload).encode(), trickle_s=plan.slow_s)
        return True


class _QuietServer(ThreadingHTTPServer):
    """The fake server's HTTP server: a deep backlog, handler threads tracked and joined."""

    request_queue_size = 256  # socketserver's default backlog of 5 drops bursts of connections
    # Handler threads are tracked and joined on close: clients keep HTTP/1.1 connections
    # alive in their pools, and a handler waiting on one never ends by itself (a test
    # suite once piled up 100+ idle handler threads and aborted).
    daemon_threads = False
    block_on_close = True

    def __init__(self, address, handler, fake: "FakeOpenAIServer") -> None:
        super().__init__(address, handler)
        self.fake = fake
        self.open_connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def process_request(self, request, client_address):
        with self.connections_lock:
            self.open_connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.connections_lock:
            self.open_connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):  # a client killed mid-request is expected here
        pass

    def server_close(self) -> None:
        """Stop listening, end every kept-alive connection, then join the handler threads."""
        self.socket.close()
        with self.connections_lock:
            connections = list(self.open_connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        super().server_close()


class FakeOpenAIServer:
    """Context manager: ``with FakeOpenAIServer(behaviour) as server: server.url``."""

    def __init__(
        self,
        behaviour: Callable[[dict], Reply] | None = None,
        *,
        faults: list[Reply | float] | None = None,
        delay_s: float = 0.0,
        plan: FaultPlan | None = None,
        batch_delay_s: float = 0.05,
        batch_faults: BatchFaults | None = None,
    ):
        self.behaviour = behaviour or _default_behaviour
        self.batch = BatchEndpoints(self.behaviour, delay_s=batch_delay_s, faults=batch_faults)
        """The files and batches endpoints (:mod:`.batchserver`): ``batch.lines`` counts submissions."""
        self.faults = list(faults or [])
        self.delay_s = delay_s
        self.plan = plan
        self.requests: list[tuple[str | None, dict]] = []
        self.arrivals: list[tuple[float, str | None]] = []
        """``(time.time(), key)`` of every request, in arrival order."""
        self.authorizations: list[str | None] = []
        """The ``Authorization`` header of every request (to check that a key reached the judge)."""
        self.outcomes: dict[str, list[str]] = defaultdict(list)
        """Per key, what each of its requests got: ``ok`` or a fault kind (see :data:`BILLABLE`)."""
        self.lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), _Handler, self)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-openai-server", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{cast(str, host)}:{port}/v1"

    def key_counts(self) -> Counter:
        with self.lock:
            return Counter(k for k, _ in self.requests)

    def billable(self) -> Counter:
        """Per key, how many full answers were delivered (what a provider would charge for)."""
        with self.lock:
            return Counter({k: sum(o in BILLABLE for o in v) for k, v in self.outcomes.items()})

    def __enter__(self) -> "FakeOpenAIServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
        self.batch.join()
