"""A local HTTP server on 127.0.0.1 that answers from a script, for the LLM adapter tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list → JSON; str → sent raw
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Seen] = []
        self.stop = threading.Event()
        self.httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.httpd is not None
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                server.requests.append(
                    Seen(
                        self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw)
                    )
                )
                reply = server.replies.pop(0) if server.replies else Reply(500, "script exhausted")
                if reply.delay and server.stop.wait(reply.delay):
                    return
                data = (
                    reply.body.encode()
                    if isinstance(reply.body, str)
                    else json.dumps(reply.body).encode()
                )
                try:
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler


@contextmanager
def fake_server() -> Iterator[FakeServer]:
    fake = FakeServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    httpd.daemon_threads = True
    fake.httpd = httpd
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()
