"""A local SSE server for driving the real SDK clients over real HTTP (loopback only).

The server runs in a background thread for the whole session. A test registers a body under a
fresh URL prefix and points a client's `base_url` at it; the server then answers
`POST <prefix>/v1/chat/completions`, `/v1/responses`, `/v1/messages`, Gemini's
`/v1beta/models/<model>:streamGenerateContent?alt=sse` and Bedrock's
`/model/<modelId>/converse-stream` with that body (SSE, or AWS event-stream binary for a route
registered with that content type), using chunked transfer encoding so every planned cut is its
own chunk on the wire. A route can drop the connection after N body bytes (no terminating
chunk), which the HTTP client reports as a protocol error, exactly like a provider connection
reset mid-stream, or stall there (a provider that stops sending) until the test releases it.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from .streamkit import Event, pieces, split_points, sse_body

ENDPOINTS = ("/v1/chat/completions", "/v1/responses", "/v1/messages")
SSE = "text/event-stream; charset=utf-8"
# Gemini's streaming path (`v1beta`, or `v1` that google-genai 3.6 asks for by default); the SDK
# asks for SSE with `alt=sse`.
_GEMINI_STREAM = re.compile(r"/v1(?:beta)?/models/[^/:?]+:streamGenerateContent\?alt=sse$")
SPLIT_MODES = ("whole", "random-1", "adversarial")
# The longest a stalled route holds its connection (a test releases it long before).
STALL_BOUND = 30.0


@dataclass
class Route:
    """One registered response body and how to deliver it."""

    server: SSEServer
    prefix: str
    body: bytes
    cuts: list[int]
    drop_after: int | None = None
    status: int = 200
    content_type: str = SSE
    requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    # With `stall`, the connection is not dropped at `drop_after` but held open, sending
    # nothing, until `release` is set (or a bound passes, so a failed test cannot hang).
    stall: bool = False
    release: threading.Event = field(default_factory=threading.Event)

    @property
    def openai_base_url(self) -> str:
        return f"{self.server.origin}{self.prefix}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"{self.server.origin}{self.prefix}"

    @property
    def gemini_base_url(self) -> str:
        """For `genai.Client(http_options=HttpOptions(base_url=...))`: it appends `/v1beta/...`."""
        return f"{self.server.origin}{self.prefix}"

    @property
    def url(self) -> str:
        """Base for plain httpx requests (append an endpoint)."""
        return f"{self.server.origin}{self.prefix}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that stops reading early (the tests that close a stream) resets the
        # connection; that is expected, not a server failure worth printing.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class SSEServer:
    """Registry of routes plus the running HTTP server."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._routes: dict[str, Route] = {}
        self._ids = itertools.count()
        handler = type("Handler", (_Handler,), {"registry": self})
        self.httpd = _Server(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)

    def register(
        self,
        body: bytes,
        *,
        split: str | Sequence[int] = "whole",
        drop_after: int | None = None,
        stall: bool = False,
        status: int = 200,
        content_type: str = SSE,
    ) -> Route:
        """Serve `body` under a fresh prefix, cut at `split` (a mode name or explicit offsets);
        `drop_after` bytes, the connection is dropped, or with `stall` held open silently."""
        cuts = split_points(body, split) if isinstance(split, str) else list(split)
        prefix = f"/s{next(self._ids)}"
        route = Route(self, prefix, body, cuts, drop_after, status, content_type, stall=stall)
        with self._lock:
            self._routes[prefix] = route
        return route

    def register_events(self, events: Sequence[Event], fmt: str, **options: Any) -> Route:
        return self.register(sse_body(events, fmt), **options)

    def route(self, prefix: str) -> Route | None:
        with self._lock:
            return self._routes.get(prefix)


class _Handler(BaseHTTPRequestHandler):
    registry: SSEServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        payload = self.rfile.read(length) if length else b""
        gemini = _GEMINI_STREAM.search(self.path)
        if gemini is not None:
            prefix, path, known = self.path[: gemini.start()], gemini.group(), True
        else:
            prefix, v1, endpoint = self.path.partition("/v1/")
            if v1:
                path = v1 + endpoint
                known = path.split("?")[0] in ENDPOINTS
            else:  # Bedrock: <prefix>/model/<modelId>/converse-stream
                prefix, model, endpoint = self.path.partition("/model/")
                path = model + endpoint
                known = path.split("?")[0].endswith("/converse-stream")
        route = self.registry.route(prefix)
        if route is None or not known:
            self._plain(404, b'{"error": {"message": "no such route", "type": "not_found"}}')
            return
        try:
            request = json.loads(payload) if payload else {}
        except ValueError:
            request = {"raw": payload.decode("utf-8", "replace")}
        route.requests.append({"path": path, "json": request})
        if route.status != 200:
            self._plain(route.status, route.body)
            return
        self.send_response(200)
        self.send_header("content-type", route.content_type)
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        sent = 0
        for piece in pieces(route.body, route.cuts):
            if route.drop_after is not None and sent + len(piece) >= route.drop_after:
                piece = piece[: route.drop_after - sent]
                if piece:
                    self._chunk(piece)
                if route.stall:
                    route.release.wait(STALL_BOUND)
                # No terminating chunk: the client sees the body end early.
                return
            self._chunk(piece)
            sent += len(piece)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _plain(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        self.wfile.write(body)


@pytest.fixture(scope="session")
def sse_server() -> Iterator[SSEServer]:
    server = SSEServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=SPLIT_MODES)
def split(request: pytest.FixtureRequest) -> str:
    """Feed mode of the server: one write, random small writes, or adversarial cuts."""
    return str(request.param)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
