"""A dashboard's settings refused when made, and its life across starts and races.

Settings that could never work (a region, an endpoint, an interval no thread can wait,
``allowed_hosts`` as one string, a token a header cannot carry) are ``ConfigError`` when
the dashboard is made; a public URL naming its scheme's port still matches a browser's
``Origin``; an error while starting gets the dashboard's page and headers; a chain that
closes between a touch's confirmation and its POST is told closed; a dashboard started
again after ``close()`` sends live updates and shows each history once.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from botocore.exceptions import CredentialRetrievalError

from xor_ack_dynamodb import new_stamp
from xor_ack_dynamodb.dashboard import ConfigError, Dashboard, DashboardConfig

from .asgi import Client
from .conftest import chains, fresh_table

pytestmark = pytest.mark.ddblocal
TOKEN = "t0ken-for-the-settings-tests"


async def logged_in(board: Dashboard, host: str = "127.0.0.1:8321") -> Client:
    client = Client(board.app, host=host)
    answer = await client.get(f"/?token={TOKEN}")
    assert answer.status == 303, answer.text
    return client


async def test_a_public_url_with_its_default_port_still_takes_actions(
    ddb_local_endpoint: str,
) -> None:
    """``--public-url https://chains.example.com:443/ops`` is accepted, but a browser's
    ``Origin`` never names the scheme's default port (``https://chains.example.com``):
    every action was refused as "Cross-site request"."""
    spec = fresh_table(ddb_local_endpoint)
    board = Dashboard(
        table=spec.name,
        endpoint_url=ddb_local_endpoint,
        token=TOKEN,
        public_url="https://chains.example.com:443/ops",
    )
    try:
        client = await logged_in(board)
        csrf = board.guard.csrf_for(client.cookies[board.guard.cookie])
        answer = await client.post(
            "/actions/sweep",
            form={"csrf": csrf},
            headers={"origin": "https://chains.example.com", "sec-fetch-site": "same-origin"},
        )
        assert answer.status == 200, answer.text
    finally:
        await board.close()


async def test_allowed_hosts_must_be_names_and_are_compared_as_the_host_check_reads_them(
    ddb_local_endpoint: str,
) -> None:
    """``allowed_hosts="localhost"`` (a str, not a tuple) was accepted, and the Host
    check became a substring test: a Host ``host`` (or ``l``, ``calho``...) was served.
    Names in capitals or an IPv6 address in brackets never matched."""
    with pytest.raises(ConfigError, match="allowed_hosts must be a tuple of host names"):
        DashboardConfig(allowed_hosts="localhost")  # type: ignore[arg-type]
    spec = fresh_table(ddb_local_endpoint)
    board = Dashboard(
        table=spec.name,
        endpoint_url=ddb_local_endpoint,
        token=TOKEN,
        allowed_hosts=("LocalHost", "[::1]"),
    )
    try:
        for host in ("localhost:8321", "[::1]:8321"):
            answer = await Client(board.app, host=host).get(f"/?token={TOKEN}")
            assert answer.status == 303, (host, answer.status)
        answer = await Client(board.app, host="host:8321").get(f"/?token={TOKEN}")
        assert answer.status == 400 and "Unexpected Host" in answer.text
    finally:
        await board.close()


def test_a_token_a_header_cannot_carry_is_refused() -> None:
    """A token of printable non-ASCII characters was accepted, and its link worked, but
    ``Authorization: Bearer <token>`` (what the docs give scripts) never matched: the
    header arrives as bytes that Starlette reads as Latin-1."""
    with pytest.raises(ConfigError, match="printable ASCII"):
        DashboardConfig(token="geheimnis-schlüssel-für-alle")


@pytest.mark.parametrize("interval", [float("inf"), 1e10])
def test_a_stream_interval_that_cannot_be_waited_is_refused(interval: float) -> None:
    """``stream_interval=inf`` (or 1e10) is accepted; the stream's thread then waits
    ``threading.Event.wait(interval)``, which raises OverflowError after every poll:
    the overview says "Stream: OverflowError..." and reads it every 5 s instead."""
    with pytest.raises(ConfigError, match="stream_interval"):
        DashboardConfig(stream_interval=interval)


@pytest.mark.parametrize("option", [{"region_name": "not a region"}, {"endpoint_url": "not a url"}])
def test_a_region_or_endpoint_that_cannot_work_is_refused_when_made(option: dict[str, Any]) -> None:
    """Accepted by ``DashboardConfig``, then every request failed starting the client
    (a 502 / 500 page and a traceback, each time)."""
    with pytest.raises(ConfigError):
        DashboardConfig(**option)


async def test_a_dashboard_that_cannot_start_answers_a_page_with_the_security_headers(
    ddb_local_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Starting runs in the Guarded middleware, outside Starlette's exception handlers:
    an error there (credentials that cannot be loaded, a region botocore refuses) was
    answered by the ``Exception`` handler as a 502 page without the CSP, X-Frame-Options
    and nosniff headers, and raised again (a traceback for a handled error)."""
    spec = fresh_table(ddb_local_endpoint)
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)

    async def cannot_start() -> None:
        raise CredentialRetrievalError(provider="sso", error_msg="the SSO session expired")

    monkeypatch.setattr(board, "_start", cannot_start)
    started: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        async def keep(message: Any) -> None:
            if message["type"] == "http.response.start":
                started.append(message)
            await send(message)

        await board.app(scope, receive, keep)

    try:
        client = await logged_in(board)
        client.app = app
        raised: BaseException | None = None
        try:
            await client.get("/")
        except Exception as exc:
            raised = exc
        [start] = started
        headers = {k.decode(): v.decode() for k, v in start["headers"]}
        assert start["status"] == 502
        assert "content-security-policy" in headers and headers["x-frame-options"] == "DENY"
        assert raised is None, f"raised again: {raised!r}"
    finally:
        await board.close()


async def _until(check: Any, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.05)


async def test_a_touch_that_finds_the_chain_acked_does_not_say_it_does_not_exist(
    ddb_local_endpoint: str,
) -> None:
    """The chain acks between the touch's confirmation and its POST: ``touch`` raises
    ``TagNotFound`` for an acked chain, and the page said "404 No such chain: "job" does
    not exist" while the chain's page shows it, acked (a 409: the wrong state)."""
    spec = fresh_table(ddb_local_endpoint)
    writer = chains(ddb_local_endpoint, spec)
    first = new_stamp()
    writer.create("job", first, timeout=600)
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        csrf = (await client.get("/actions/touch?tag=job")).csrf()
        shown = writer.get("job").chain_id.hex()  # type: ignore[union-attr]
        assert writer.stamp("job", first).acked  # the last stamp lands meanwhile
        form = {"csrf": csrf, "timeout": "60", "chain_id": shown}
        answer = await client.post("/actions/touch?tag=job", form=form)
        assert answer.status in (303, 409), answer.status
        assert "does not exist" not in answer.text and "No such chain" not in answer.text
    finally:
        await board.close()


async def test_a_dashboard_started_again_after_close_still_sends_live_updates(
    ddb_local_endpoint: str,
) -> None:
    """``close()`` closes the broadcaster for good; the next request (or a second
    ``running()``/lifespan) starts the dashboard again, but every ``/live`` stream then
    ended at once and no page updated live any more."""
    spec = fresh_table(ddb_local_endpoint)
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        async with board.running():
            pass
        async with board.running():
            stream = board.live.stream()
            assert (await stream.__anext__()).startswith("retry:")
            waiting = asyncio.ensure_future(stream.__anext__())
            await asyncio.sleep(0)
            board.live.changed({"job"})
            message = await asyncio.wait_for(waiting, 5)
            assert message.startswith("event: changed"), message
            await stream.aclose()
    finally:
        await board.close()


async def test_a_dashboard_started_again_after_close_does_not_repeat_histories(
    ddb_local_endpoint: str,
) -> None:
    """After ``close()`` and a new start, the new stream reader reads the stream again
    from its oldest record into the same ``History``: every entry of a chain's page
    was shown twice (the windows dedupe events by id, the histories do not)."""
    spec = fresh_table(ddb_local_endpoint)
    writer = chains(ddb_local_endpoint, spec)
    writer.create("job", new_stamp(), timeout=600)
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        for _ in range(2):
            async with board.running():
                await _until(lambda: board.stream.caught_up and board.story("job") is not None)
                await asyncio.sleep(1.5)  # a few more polls
                story = board.story("job")
                assert story is not None
                assert [e.what for e in story.entries] == ["created"], story.entries
    finally:
        await board.close()
