"""An OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks.

Real HTTP (stdlib ``ThreadingHTTPServer`` in a background thread). A ``behaviour`` callable maps
each request body to ``(status, headers, body)``; ``faults`` are answered first, in order (e.g. a
429 with Retry-After, a 500, a delay). Every request is recorded with its ``X-Idempotency-Key``
header so tests can count how often a key was paid for.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

__all__ = ["FakeOpenAIServer", "completion", "logprob_entry"]

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


class FakeOpenAIServer:
    """Context manager: ``with FakeOpenAIServer(behaviour) as server: server.url``."""

    def __init__(self, behaviour: Callable[[dict], Reply] | None = None, *, faults: list[Reply | float] | None = None, delay_s: float = 0.0):
        self.behaviour = behaviour or _default_behaviour
        self.faults = list(faults or [])
        self.delay_s = delay_s
        self.requests: list[tuple[str | None, dict]] = []
        self.arrivals: list[tuple[float, str | None]] = []
        """``(time.time(), key)`` of every request, in arrival order."""
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    body = {}
                with server.lock:
                    server.requests.append((self.headers.get("X-Idempotency-Key"), body))
                    server.arrivals.append((time.time(), self.headers.get("X-Idempotency-Key")))
                    fault = server.faults.pop(0) if server.faults else None
                if server.delay_s:
                    time.sleep(server.delay_s)
                if isinstance(fault, (int, float)):
                    time.sleep(float(fault))
                    fault = None
                status, headers, payload = fault if fault is not None else server.behaviour(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        class QuietServer(ThreadingHTTPServer):
            request_queue_size = 256  # socketserver's default backlog of 5 drops bursts of connections

            def handle_error(self, request, client_address):  # a client killed mid-request is expected here
                pass

        self._httpd = QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def key_counts(self) -> Counter:
        with self.lock:
            return Counter(k for k, _ in self.requests)

    def __enter__(self) -> "FakeOpenAIServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
