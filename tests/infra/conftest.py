"""Fixtures of the infrastructure tests."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from xor_ack_dynamodb.local import stop_detached


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A state folder of its own for ``xor-ack local`` (``XOR_ACK_RUN_DIR``)."""
    folder = tmp_path / "run"
    monkeypatch.setenv("XOR_ACK_RUN_DIR", str(folder))
    yield folder
    stop_detached(folder)  # never leave a server behind, whatever the test did


@contextlib.contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """An HTTP server of ``handler`` on 127.0.0.1 (a port of its own): its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _NotDynamoDB(http.server.BaseHTTPRequestHandler):
    """A web server that is not DynamoDB (a dev server, a dashboard on the wrong port):
    every request gets 200 and a page of HTML."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b"<html><body>hello from some other web app</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def not_dynamodb() -> Iterator[str]:
    with serving(_NotDynamoDB) as url:
        yield url
