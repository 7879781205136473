"""A DynamoDB that takes connections and does not answer (a JVM in a long pause, an
overloaded DynamoDB Local, a stuck proxy in front of it): a page's 502 comes in seconds.

It took minutes (210 s measured): the dashboard's client waited 30 s per attempt for a
first byte, three attempts, and its 10 pooled connections were held by the background
count's 48 Queries, each as stuck, so the page's request queued behind them.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from xor_ack_dynamodb.dashboard import Dashboard

from .asgi import Client

TOKEN = "t0ken-for-the-silent-dynamodb"


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An endpoint that accepts every connection, reads what it is sent and never answers."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(2)
        for conn in held:
            conn.close()
        server.close()


async def test_a_page_on_a_dynamodb_that_does_not_answer_is_a_502_within_seconds(
    silent_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each attempt waits ``service.READ_TIMEOUT`` for a first byte (one second here, for a
    short test); the background count does not hold every connection."""
    from xor_ack_dynamodb.dashboard import service

    monkeypatch.setattr(service, "READ_TIMEOUT", 1.0)
    board = Dashboard(table="silent", endpoint_url=silent_endpoint, token=TOKEN)
    try:
        client = Client(board.app)
        login = await client.get(f"/?token={TOKEN}")
        assert login.status == 303
        started = time.monotonic()
        try:
            page = await asyncio.wait_for(client.get("/chain?tag=job-1"), 15)
        except TimeoutError:
            pytest.fail(
                f"the chain's page was still loading after {time.monotonic() - started:.0f} s "
                "with DynamoDB not answering: no 502 page within seconds"
            )
        assert page.status == 502, page.text
        config = board.ack.client.meta.config
        assert (config.read_timeout, config.max_pool_connections) == (1.0, service.CONNECTIONS)
    finally:
        await board.close()
