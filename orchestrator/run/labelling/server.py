"""The labelling page's HTTP server (``orchestrator label RUN``), on 127.0.0.1 only.

``GET /`` the page (``page.html``: the prompt, the answers, the criterion; a verdict by click or
key), ``GET /api/next`` the next item and the progress as JSON, ``POST /api/label`` ``{"item",
"verdict"}`` stores a verdict (400 with ``{"error"}`` for an unknown item or verdict). Each request
is one HTTP/1.0 connection, so no handler thread outlives its request. Requests another site's
page sends through the person's browser (an ``Origin`` not ours), under another host name (DNS
rebinding) or, for a label, as anything but JSON (which a cross-site form could) are refused.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources

from ...errors import OrchestratorError
from .session import LabelSession

__all__ = ["LabelServer"]

MAX_BODY = 64 * 1024


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's name; quiet: the page polls
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, payload: dict) -> None:
        self._send(status, json.dumps(payload).encode())

    def _foreign(self) -> bool:
        """A request another site's page makes through the person's browser (its Origin), or one
        reaching us under another host name (DNS rebinding): refused with 403."""
        port = self.server.server_address[1]
        host = self.headers.get("Host", "")
        origin = self.headers.get("Origin")
        ours = {f"127.0.0.1:{port}", f"localhost:{port}"}
        if host not in ours or (origin is not None and origin.removeprefix("http://") not in ours):
            self._json(403, {"error": "requests come from the labelling page itself"})
            return True
        return False

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        if self._foreign():
            return
        if self.path in ("/", "/index.html"):
            self._send(200, self.server.page, "text/html; charset=utf-8")
        elif self.path == "/api/next":
            self._json(200, self.server.session.next())
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        if self._foreign():
            return
        if self.path != "/api/label":
            self._json(404, {"error": "not found"})
            return
        if not self.headers.get("Content-Type", "").startswith("application/json"):  # a form post needs no preflight
            self._json(415, {"error": "a label is sent as application/json"})
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                raise ValueError("a label is a JSON object of at most 64 KiB")
            body = json.loads(self.rfile.read(length))
            if not isinstance(body, dict):
                raise ValueError("a label is a JSON object {item, verdict}")
            self._json(200, self.server.session.submit(body.get("item"), body.get("verdict")))
        except (ValueError, OrchestratorError) as exc:
            self._json(400, {"error": str(exc)})


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, address, session: LabelSession):
        super().__init__(address, _Handler)
        self.session = session
        self.page = resources.files(__package__).joinpath("page.html").read_bytes()


class LabelServer:
    """``with LabelServer(session, port=0) as server: server.url`` (serving in a thread), or
    :meth:`serve_forever` in the caller's thread (the CLI, until Ctrl-C)."""

    def __init__(self, session: LabelSession, *, port: int = 0):
        try:
            self._server = _Server(("127.0.0.1", port), session)
        except OSError as exc:
            raise OrchestratorError(f"cannot serve the labelling page on 127.0.0.1:{port} ({exc.strerror})") from None
        self.session = session
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def serve_forever(self) -> None:
        self._server.serve_forever(poll_interval=0.2)

    def __enter__(self) -> LabelServer:
        self._thread = threading.Thread(target=self.serve_forever, name="label-server")
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()
        self.session.close()

    def __exit__(self, *exc) -> None:
        self.close()
