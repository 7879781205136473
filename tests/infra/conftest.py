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
