"""A dashboard as users run it: behind a public URL whose host is an internationalised
domain name (browsers name it in ASCII in ``Origin`` and ``Host``), over a fleet job that
finished before its tombstone was removed (not run again), mounted in a host service
(which stops with a page open: each live stream ends after a while, and the page opens a
new one at once)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from xor_ack_dynamodb.dashboard import Dashboard
from xor_ack_dynamodb.fleet import Envelope, root_id, stamp_of

from .asgi import Client
from .conftest import chains, dynamodb, fresh_table

pytestmark = pytest.mark.ddblocal
TOKEN = "t0ken-for-the-review-tests"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


async def logged_in(board: Dashboard, host: str = "127.0.0.1:8321") -> Client:
    client = Client(board.app, host=host)
    answer = await client.get(f"/?token={TOKEN}")
    assert answer.status == 303, answer.text
    return client


async def test_an_idn_public_url_takes_actions_from_its_own_pages(
    ddb_local_endpoint: str,
) -> None:
    """``--public-url https://bücher.example/ops``: a browser's ``Origin`` is the ASCII
    serialisation, ``https://xn--bcher-kva.example``; the dashboard trusts the Unicode
    spelling only, so every action from its own page is a 403 "Cross-site request"."""
    spec = fresh_table(ddb_local_endpoint)
    board = Dashboard(
        table=spec.name,
        endpoint_url=ddb_local_endpoint,
        token=TOKEN,
        allowed_hosts=LOOPBACK,
        public_url="https://bücher.example/ops",
    )
    try:
        client = await logged_in(board)  # the proxy names the dashboard 127.0.0.1 (nginx)
        csrf = board.guard.csrf_for(client.cookies[board.guard.cookie])
        answer = await client.post(
            "/actions/sweep",
            form={"csrf": csrf},
            headers={"origin": "https://xn--bcher-kva.example", "sec-fetch-site": "same-origin"},
        )
        assert answer.status == 200, answer.text
    finally:
        await board.close()


async def test_an_idn_public_url_answers_to_its_own_host(ddb_local_endpoint: str) -> None:
    """The same dashboard behind a proxy that passes the browser's ``Host``
    (``xn--bcher-kva.example``): every page is a 400 "Unexpected Host"."""
    spec = fresh_table(ddb_local_endpoint)
    board = Dashboard(
        table=spec.name,
        endpoint_url=ddb_local_endpoint,
        token=TOKEN,
        allowed_hosts=LOOPBACK,
        public_url="https://bücher.example/ops",
    )
    try:
        client = Client(board.app, host="xn--bcher-kva.example")
        answer = await client.get(f"/?token={TOKEN}")
        assert answer.status == 303, answer.text
    finally:
        await board.close()


async def test_a_finished_fleet_job_whose_tombstone_is_gone_is_not_replayed(
    ddb_local_endpoint: str,
) -> None:
    """A fleet job acked (every message done); a day later its tombstone is removed (TTL
    after ``tombstone_ttl``; here deleted by hand, the same REMOVE record for the page).
    Its page offers "Replay…", the confirmation shows the form and the POST creates the
    chain again and sends the root message: the finished job runs a second time.
    ``Fleet.replay`` refuses an acked job; the dashboard's history says it acked."""
    sent: list[Envelope] = []

    async def send(envelopes: Sequence[Envelope]) -> None:
        sent.extend(envelopes)

    spec = fresh_table(ddb_local_endpoint)
    writer = chains(ddb_local_endpoint, spec)
    tag = "fleet/done-1"
    root = stamp_of(root_id(tag))
    writer.create(tag, root)  # as Fleet.submit makes it
    assert writer.stamp(tag, root).acked  # the whole job finished
    board = Dashboard(
        table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN, replay_send=send
    )
    try:
        client = await logged_in(board)
        await client.get("/")  # starts the stream reader
        deadline = time.monotonic() + 30

        async def until(entries: int) -> None:
            while (story := board.story(tag)) is None or len(story.entries) < entries:
                assert time.monotonic() < deadline, story
                await asyncio.sleep(0.1)

        await until(2)  # created, acked
        dynamodb(ddb_local_endpoint).delete_item(TableName=spec.name, Key={"tagID": {"S": tag}})
        await until(3)  # ... and removed
        page = await client.get(f"/chain?tag={tag}")
        offered = 'id="action-replay"' in page.text
        confirm = await client.get(f"/actions/replay?tag={tag}")
        csrf = board.guard.csrf_for(client.cookies[board.guard.cookie])
        form = {"csrf": csrf, "chain_id": "", "payload": "null"}
        answer = await client.post(f"/actions/replay?tag={tag}", form=form)
        again = writer.get(tag)
        assert not offered and sent == [] and again is None, (
            f"replay offered: {offered}; POST {answer.status} "
            f"{answer.headers.get('location')}; root messages sent: {len(sent)}; "
            f"chain now: {again}"
        )
        assert confirm.status == answer.status == 409
        assert "acked" in answer.text
    finally:
        await board.close()


def test_a_host_service_stops_while_a_dashboard_page_is_open(ddb_local_endpoint: str) -> None:
    """The docs' "In your own service" example: the dashboard mounted with
    ``lifespan=dashboard.lifespan`` under uvicorn.  With one dashboard page open (its
    ``/live`` stream), the server asked to stop (``should_exit``, Ctrl-C) waits for the
    stream to finish before it runs the lifespan's shutdown that would end it: the stream
    ends by itself (``Broadcaster.lifetime``), and the server stops."""
    spec = fresh_table(ddb_local_endpoint)

    async def home(request: Request) -> PlainTextResponse:
        return PlainTextResponse("my service")

    dashboard = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    app = Starlette(
        routes=[Route("/", home), Mount("/ops/chains", app=dashboard.app)],
        lifespan=dashboard.lifespan,
    )
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run)
    thread.start()
    page: Any = None
    try:
        while not server.started and thread.is_alive():
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        dashboard.live.lifetime = 1.0  # each stream ends after a second (20 s as it is)
        page = socket.create_connection(("127.0.0.1", port), timeout=10)
        page.sendall(  # what an open page's EventSource keeps open
            f"GET /ops/chains/live HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {TOKEN}\r\nAccept: text/event-stream\r\n\r\n".encode()
        )
        head = page.recv(4096)
        assert head.startswith(b"HTTP/1.1 200"), head
        server.should_exit = True  # the service is asked to stop
        thread.join(10)
        assert not thread.is_alive(), "the service did not stop while a dashboard page was open"
    finally:
        if page is not None:
            page.close()
        server.force_exit = True
        thread.join(30)
