"""``wait(tag, timeout=...)`` keeps its timeout when the endpoint fails: botocore's re-sends of
its reads stop at the deadline, and the caller gets the last attempt's error.

Before, a wait of one second on an endpoint answering 500 (or refusing connections) took
the client's ten retries of its first read: about 80 s.  The peers are on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from xor_ack_dynamodb.dynamodb._attempts import _retry_handler
from xor_ack_dynamodb.dynamodb._retry_deadline import retries_until
from xor_ack_dynamodb.local import free_port
from xor_ack_dynamodb.retry import botocore_config

from .facade import open_client


class _Failing(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.server.sends.append(time.monotonic())
        body = json.dumps({"__type": "InternalServerError", "message": "down"}).encode()
        self.send_response(500)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _answering_500() -> Iterator[tuple[str, list[float]]]:
    """(endpoint, when each request came) of a peer that answers every request with a 500."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    server.daemon_threads = True
    server.sends = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.sends  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def _credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_a_wait_on_an_endpoint_answering_500_ends_at_its_timeout(kind: str) -> None:
    with _answering_500() as (url, sends):
        async with open_client(kind, url, "chains") as ack:
            started = time.monotonic()
            with pytest.raises(ClientError) as failed:
                await ack.wait("job-1", timeout=2)
            took = time.monotonic() - started
            assert failed.value.response["Error"]["Code"] == "InternalServerError"
            assert took < 5, f"wait(timeout=2) took {took:.1f} s"
            # botocore still re-sent within the timeout, and none started after it
            assert len(sends) >= 2
            assert sends[-1] - started < 2 + 0.5
            # The deadline was the wait's alone: a read after it gets every attempt.
            before = len(sends)
    config = botocore_config(retries={"mode": "standard", "total_max_attempts": 2})
    with _answering_500() as (url, sends):
        async with open_client(kind, url, "chains", config=config) as ack:
            with pytest.raises(ClientError):
                await ack.get("job-1")
            # the async client's direct path sends once before botocore's two attempts
            expected = 2 + (kind == "async")
            assert len(sends) == expected, f"get() after a wait sent {len(sends)} times"
    assert before >= 2


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_a_wait_on_a_port_nobody_listens_on_ends_at_its_timeout(kind: str) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    async with open_client(kind, nowhere, "chains") as ack:
        started = time.monotonic()
        with pytest.raises(EndpointConnectionError):
            await ack.wait("job-1", timeout=1)
        took = time.monotonic() - started
        assert took < 5, f"wait(timeout=1) took {took:.1f} s"


def test_past_the_deadline_botocore_is_not_asked_and_its_wait_ends_at_the_deadline() -> None:
    asked: list[int] = []

    def botocore(**kwargs: Any) -> float | None:  # its retry handler: back off 5 s
        asked.append(kwargs["attempts"])
        return 5.0

    handler = _retry_handler(3, botocore)
    get = SimpleNamespace(name="GetItem")
    with retries_until(time.monotonic() + 0.2):
        delay = handler(attempts=1, operation=get, response=None)
        assert 0 <= delay <= 0.2  # the re-send goes at the deadline, not 5 s later
    with retries_until(time.monotonic() - 1):
        assert handler(attempts=2, operation=get, response=None) is None  # none past it
    # A later deadline inside an earlier one does not move it; none: botocore's wait.
    with retries_until(time.monotonic() + 0.2), retries_until(time.monotonic() + 60):
        assert handler(attempts=1, operation=get, response=None) <= 0.2
    assert handler(attempts=1, operation=get, response=None) == 5.0
    assert asked == [1, 1, 1]  # not asked past the deadline: its retry quota not charged
