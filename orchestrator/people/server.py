"""The labelling page's HTTP server (``orchestrator label RUN``), on 127.0.0.1 only.

``GET /`` the page (``page.html``: the prompt, the answers, the criterion; a verdict by click or
key), ``GET /api/next`` the next item and the progress as JSON, ``POST /api/label`` ``{"item",
"verdict"}`` stores a verdict (400 with ``{"error"}`` for an unknown item or verdict). Each request
is one HTTP/1.0 connection, so no handler thread outlives its request. Requests another site's
page sends through the person's browser (an ``Origin`` not ours), under another host name (DNS
rebinding) or, for a label, as anything but JSON (which a cross-site form could) are refused.

A server anyone on the machine can reach is attacked: a body is at most 64 KiB of
UTF-8 JSON nested at most :data:`MAX_DEPTH` deep, any other shape is a 400 with nothing stored, a
handler's failure is a 500 with one line (never a dropped connection), a connection that sends
nothing for :data:`READ_TIMEOUT` seconds is closed, and :meth:`LabelServer.close` shuts every open
connection down, so Ctrl-C or SIGTERM stops the server at once whatever its clients hold.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources

from ..errors import OrchestratorError
from .session import LabelSession

__all__ = ["LabelServer"]

MAX_BODY = 64 * 1024
MAX_DEPTH = 4
"""Deepest nesting of arrays and objects a label's body may have (a label needs 1)."""
READ_TIMEOUT = 5.0
"""Seconds a connection may wait between bytes of its request (a browser's pre-opened socket)."""


def parse_body(raw: bytes) -> dict:
    """A label request's body as a JSON object, checked before it is parsed: UTF-8, nested at most
    :data:`MAX_DEPTH` deep (the parser recurses per level), no NaN or Infinity.

    Raises:
        ValueError: one line saying what is wrong."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("a label is UTF-8 JSON") from None
    depth, deepest, in_string, escaped = 0, 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                raise ValueError(f"a label is nested at most {MAX_DEPTH} deep")
        elif ch in "]}":
            depth -= 1

    def refuse(constant: str):
        raise ValueError(f"{constant} is not JSON")

    try:
        body = json.loads(text, parse_constant=refuse)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(body, dict):
        raise ValueError("a label is a JSON object {item, verdict}")
    return body


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = READ_TIMEOUT  # the socket's timeout: an idle connection ends its handler thread

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
        self._guarded(self._get)

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        self._guarded(self._post)

    def _guarded(self, handle) -> None:
        """A failure inside a handler is a 500 with one line, never a traceback and a dropped connection."""
        try:
            handle()
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        except Exception as exc:  # noqa: BLE001 - whatever went wrong, the client gets an answer
            print(f"labelling page: internal error ({type(exc).__name__}: {exc})", file=sys.stderr)
            try:
                self._json(500, {"error": "internal error; the label was not stored"})
            except OSError:
                self.close_connection = True

    def _get(self) -> None:
        if self._foreign():
            return
        if self.path in ("/", "/index.html"):
            self._send(200, self.server.page, "text/html; charset=utf-8")
        elif self.path == "/api/next":
            self._json(200, self.server.session.next())
        else:
            self._json(404, {"error": "not found"})

    def _post(self) -> None:
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
            body = parse_body(self.rfile.read(length))
            self._json(200, self.server.session.submit(body.get("item"), body.get("verdict")))
        except (ValueError, OrchestratorError) as exc:
            self._json(400, {"error": str(exc)})


MAX_OPEN_CONNECTIONS = 64
"""Connections served at once; one beyond them is answered ``503`` at once (never left waiting)."""
BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 33\r\nRetry-After: 1\r\nConnection: close\r\n\r\nbusy: too many connections, retry"


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True
    request_queue_size = 1024  # socketserver's default backlog of 5 dropped a crowd's connections (59-104 of 200 answered)

    def __init__(self, address, session: LabelSession):
        super().__init__(address, _Handler)
        self.session = session
        self.page = resources.files(__package__).joinpath("page.html").read_bytes()
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request, client_address):
        with self._open_lock:
            busy = len(self._open) >= MAX_OPEN_CONNECTIONS
            if not busy:
                self._open.add(request)
        if busy:  # a thread per connection has a limit: past it, say so at once
            try:
                request.sendall(BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):  # one line, not the stdlib's traceback
        print(f"labelling page: a connection from {client_address[0]} failed ({sys.exc_info()[1]!r})", file=sys.stderr)

    def drop_connections(self) -> None:
        """Shut every open connection down: a handler waiting on a client returns at once."""
        with self._open_lock:
            for conn in list(self._open):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


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
        """Stop serving and end every connection (its handler thread with it), then close the run file."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.drop_connections()
        self._server.server_close()  # joins the handler threads, each ended above
        self.session.close()

    def __exit__(self, *exc) -> None:
        self.close()
