"""The dashboard's ASGI app in this process, on DynamoDB Local: no server, no browser.

The token, the session, CSRF, the Host, read-only, every bad request's 4xx page, the
lists paged through the indexes, a fleet job's replay, and the app mounted under a
prefix inside another Starlette app.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import random
import re
import string
import time
import zlib
from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp
from xor_ack_dynamodb.dashboard import ConfigError, Dashboard, DashboardConfig
from xor_ack_dynamodb.dashboard.inventory import encode_cursor
from xor_ack_dynamodb.dynamodb.aws import FAIL_FAST_ATTEMPTS
from xor_ack_dynamodb.fleet import Envelope, SqsSender, root_id, stamp_of
from xor_ack_dynamodb.fleet.payloads import MAX_DEPTH
from xor_ack_dynamodb.table import INVENTORY_SHARDS, TableSpec

from .asgi import Answer, Client
from .conftest import chains, changed, dynamodb, fresh_table, snapshot

pytestmark = pytest.mark.ddblocal
TOKEN = "t0ken-for-the-app-tests"
HOSTILE = "<img src=x onerror=alert(1)>"
#: 100,000 brackets, deflated: json.loads meets a RecursionError reading it.
DEEP_CURSOR = base64.urlsafe_b64encode(zlib.compress(b"[" * 50_000 + b"]" * 50_000)).decode()


def shown(writer: SyncXorAckDynamoDB, tag: str) -> str:
    """The chain id a chain's page shows (hex), as its action forms carry it."""
    state = writer.get(tag)
    assert state is not None
    return state.chain_id.hex()


@pytest.fixture(scope="module")
def populated(ddb_local_endpoint: str, table_spec: TableSpec) -> TableSpec:
    ack = chains(ddb_local_endpoint, table_spec)
    for i in range(40):  # deadlines 1..40 minutes away, created in a shuffled order
        minutes = (i * 17) % 40 + 1
        ack.create(f"job/{minutes:02d}", new_stamp(), timeout=60 * minutes)
    ack.create("other/a", new_stamp())
    ack.create(HOSTILE, new_stamp(), timeout=600)
    for i, reason in enumerate(["lost", "timeout-ish", "lost", "disk full", "lost"]):
        ack.create(f"bad/{i}", new_stamp())
        ack.fail(f"bad/{i}", reason)
        time.sleep(0.01)  # distinct failed_at: newest first is one order
    return table_spec


@pytest.fixture(scope="module")
async def dashboard(ddb_local_endpoint: str, populated: TableSpec) -> AsyncIterator[Dashboard]:
    """One dashboard for the module's tests (none of them changes the table)."""
    board = Dashboard(
        table=populated.name,
        endpoint_url=ddb_local_endpoint,
        token=TOKEN,
        allowed_hosts=("127.0.0.1", "localhost"),
        page_size=7,
    )
    try:
        yield board
    finally:
        await board.close()


async def logged_in(board: Dashboard) -> Client:
    client = Client(board.app)
    answer = await client.get(f"/?token={TOKEN}")
    assert answer.status == 303, answer.text
    return client


async def test_the_token_opens_a_session_and_leaves_the_url(dashboard: Dashboard) -> None:
    client = Client(dashboard.app)
    answer = await client.get(f"/chains?status=failed&token={TOKEN}")
    assert answer.status == 303
    assert answer.headers["location"] == "/chains?status=failed"  # a path: behind a proxy too
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert (await client.get("/chains?status=failed")).status == 200


async def test_the_printed_link_opens_the_dashboard_whatever_the_tokens_characters(
    ddb_local_endpoint: str, populated: TableSpec
) -> None:
    """A token from a password generator (``#``, ``&``, ``+``, ``%``): the link carried it
    raw, so a browser cut it at ``#`` (a fragment), ``&`` or read ``+`` as a space, and
    the link printed to open the dashboard answered "Wrong token"."""
    token = "pass#word&with+odd%2Fchars"
    board = Dashboard(table=populated.name, endpoint_url=ddb_local_endpoint, token=token)
    try:
        link = urlsplit(board.login_url("http://127.0.0.1:8321"))
        assert link.fragment == ""
        client = Client(board.app)
        answer = await client.get(f"{link.path}?{link.query}")
        assert answer.status == 303, answer.text
        assert (await client.get("/")).status == 200
    finally:
        await board.close()


async def test_without_the_token_pages_are_refused_but_not_the_assets(dashboard: Dashboard) -> None:
    client = Client(dashboard.app)
    for target in ("/", "/chains", f"/chain?tag={HOSTILE}", "/live", "/actions/sweep"):
        answer = await client.get(target)
        assert answer.status == 401, target
        assert "Token needed" in answer.text and "Traceback" not in answer.text
    assert (await client.get("/?token=not-the-token-at-all")).status == 401
    assert (await client.get("/static/dashboard.css")).status == 200
    bearer = {"authorization": f"Bearer {TOKEN}"}
    assert (await client.get("/chains", headers=bearer)).status == 200


async def test_every_response_carries_the_security_headers(dashboard: Dashboard) -> None:
    answer = await Client(dashboard.app).get("/")
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["referrer-policy"] == "same-origin"


async def test_a_foreign_host_is_refused(dashboard: Dashboard) -> None:
    """DNS rebinding: a page of evil.example whose name resolves to 127.0.0.1."""
    client = await logged_in(dashboard)
    client.host = "evil.example:8321"
    answer = await client.get("/")
    assert answer.status == 400 and "Unexpected Host" in answer.text


async def test_a_malformed_host_is_a_400_not_a_server_error(dashboard: Dashboard) -> None:
    """A Host that is no host name at all (an unclosed IPv6 bracket) is refused as any
    foreign Host is; it was a 500 and a traceback in the server's log."""
    client = await logged_in(dashboard)
    for host in ("[::1", "[not-an-address]:8321"):
        client.host = host
        answer = await client.get("/")
        assert answer.status == 400 and "Unexpected Host" in answer.text, host


async def test_a_dashboard_on_another_loopback_address_answers_to_it(
    ddb_local_endpoint: str, populated: TableSpec
) -> None:
    """Served on 127.0.0.2 (or [::1] spelt long), its own link's Host is accepted."""
    from xor_ack_dynamodb.dashboard.config import bind_check

    assert bind_check("0:0:0:0:0:0:0:1", False) == ("127.0.0.1", "localhost", "::1")
    board = Dashboard(
        table=populated.name,
        endpoint_url=ddb_local_endpoint,
        token=TOKEN,
        allowed_hosts=bind_check("127.0.0.2", False),
    )
    try:
        client = Client(board.app)
        client.host = "127.0.0.2:8321"
        answer = await client.get(f"/?token={TOKEN}")
        assert answer.status == 303, answer.text
        assert answer.headers["location"] == "/"
        assert (await client.get("/")).status == 200
        client.host = "evil.example:8321"  # a name that resolves to 127.0.0.2: still refused
        assert (await client.get("/")).status == 400
    finally:
        await board.close()


async def test_refused_actions_change_nothing(
    dashboard: Dashboard, ddb_local_endpoint: str, populated: TableSpec
) -> None:
    before = snapshot(ddb_local_endpoint, populated.name)
    state = chains(ddb_local_endpoint, populated).get("job/01")
    assert state is not None
    form = {"tag": "job/01", "chain_id": state.chain_id.hex(), "reason": "x"}
    stranger = Client(dashboard.app)
    assert (await stranger.post("/actions/fail", form=form)).status == 403
    assert (await stranger.post("/actions/sweep", form={})).status == 403
    client = await logged_in(dashboard)
    page = await client.get("/actions/fail?tag=job/01")
    assert page.status == 200
    wrong = await client.post("/actions/fail", form={**form, "csrf": "0" * 64})
    assert wrong.status == 403 and "CSRF" in wrong.text
    missing = await client.post("/actions/fail", form=form)
    assert missing.status == 403
    elsewhere = await client.post(
        "/actions/fail",
        form={**form, "csrf": page.csrf()},
        headers={"origin": "http://evil.example", "sec-fetch-site": "cross-site"},
    )
    assert elsewhere.status == 403 and "Cross-site" in elsewhere.text
    assert changed(before, snapshot(ddb_local_endpoint, populated.name)) == set()


async def test_sweep_now_shows_the_chains_it_failed_and_those_it_could_not(
    ddb_local_endpoint: str,
) -> None:
    """A damaged item in the overdue index: the sweep fails the rest and the page says both."""
    spec = fresh_table(ddb_local_endpoint)
    writer = chains(ddb_local_endpoint, spec)
    for tag in ("late", "damaged"):
        writer.create(tag, new_stamp(), timeout=0.2)
    raw = dynamodb(ddb_local_endpoint)
    raw.update_item(  # another program writes a string where the stamp's bytes belong
        TableName=spec.name,
        Key={"tagID": {"S": "damaged"}},
        UpdateExpression="SET stamp = :s",
        ExpressionAttributeValues={":s": {"S": "abc"}},
    )
    time.sleep(0.4)
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        form = {"csrf": board.guard.csrf_for(client.cookies[board.guard.cookie])}
        answer = await client.post("/actions/sweep", form=form)
        assert answer.status == 200, answer.text
        assert re.search(r'id="swept-count">1<', answer.text), answer.text
        assert "late" in answer.text and "Traceback" not in answer.text
        left = re.search(r'<ul class="unswept">(.*?)</ul>', answer.text, re.S)
        assert left is not None and "damaged" in left.group(1) and "stamp" in left.group(1)
        state = writer.get("late")
        assert state is not None and state.reason == "timeout"
        assert snapshot(ddb_local_endpoint, spec.name)["damaged"]["stamp"] == {"S": "abc"}
    finally:
        await board.close()


async def test_a_table_without_the_inventory_says_to_upgrade_it(ddb_local_endpoint: str) -> None:
    """A table an earlier release made has no inventory indexes: its lists were a 502
    "ValidationException: The table does not have the specified index", and the overview
    said the same of its counts, with not a word of ``xor-ack table upgrade``."""
    name = f"dash-bare-{time.time_ns()}"
    dynamodb(ddb_local_endpoint).create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "tagID", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "tagID", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    board = Dashboard(table=name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        upgrade = f"xor-ack --table {name} table upgrade"
        for status in ("open", "overdue", "failed"):
            answer = await client.get(f"/chains?status={status}")
            assert answer.status == 502, answer.text
            assert "Table not upgraded" in answer.text and upgrade in answer.text, status
            assert "Traceback" not in answer.text
        csrf = board.guard.csrf_for(client.cookies[board.guard.cookie])
        sweep = await client.post("/actions/sweep", form={"csrf": csrf})
        assert sweep.status == 502 and upgrade in sweep.text, sweep.text
        deadline = time.monotonic() + 10
        while board.counts_error is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        overview = await client.get("/")
        assert "Counting the indexes failed" in overview.text and upgrade in overview.text
    finally:
        await board.close()


async def test_read_only_offers_and_takes_no_action(
    ddb_local_endpoint: str, populated: TableSpec
) -> None:
    board = Dashboard(
        table=populated.name, endpoint_url=ddb_local_endpoint, token=TOKEN, read_only=True
    )
    try:
        client = await logged_in(board)
        page = await client.get("/chain?tag=job/01")
        assert page.status == 200 and "read-only" in page.text
        assert "Fail…" not in page.text and "Sweep now" not in (await client.get("/")).text
        assert (await client.get("/actions/fail?tag=job/01")).status == 403
        before = snapshot(ddb_local_endpoint, populated.name)
        form = {"csrf": board.guard.csrf_for(client.cookies[board.guard.cookie])}
        answer = await client.post("/actions/sweep", form=form)
        assert answer.status == 403 and "read-only" in answer.text
        assert changed(before, snapshot(ddb_local_endpoint, populated.name)) == set()
    finally:
        await board.close()


async def test_touch_is_not_offered_past_the_deadline_and_fails_nothing(
    ddb_local_endpoint: str,
) -> None:
    """A touch past the deadline cannot move it: the library fails the chain ("timeout")
    instead. The page offered "Move the deadline" for an overdue chain, and its POST
    failed the chain the operator meant to give more time."""
    spec = fresh_table(ddb_local_endpoint)
    writer = chains(ddb_local_endpoint, spec)
    writer.create("late", new_stamp(), timeout=0.2)
    time.sleep(0.4)
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        page = await client.get("/chain?tag=late")
        assert page.status == 200 and "overdue" in page.text
        assert 'id="action-touch"' not in page.text and 'id="action-fail"' in page.text
        confirm = await client.get("/actions/touch?tag=late")
        assert confirm.status == 200 and "past its deadline" in confirm.text
        assert 'name="timeout"' not in confirm.text
        before = snapshot(ddb_local_endpoint, spec.name)
        form = {"csrf": board.guard.csrf_for(client.cookies[board.guard.cookie])}
        form.update(tag="late", timeout="60", chain_id=shown(writer, "late"))
        answer = await client.post("/actions/touch", form=form)
        assert answer.status == 409 and "Past its deadline" in answer.text, answer.text
        assert changed(before, snapshot(ddb_local_endpoint, spec.name)) == set()
    finally:
        await board.close()


async def test_a_fail_that_finds_the_chain_acked_does_not_say_it_failed_it(
    ddb_local_endpoint: str,
) -> None:
    """The chain acks between the confirmation and the POST: ``fail`` leaves it acked
    (zero wins), and the page said "The chain was failed." above an acked chain."""
    spec = fresh_table(ddb_local_endpoint)
    writer = chains(ddb_local_endpoint, spec)
    first = new_stamp()
    writer.create("job", first, timeout=600)
    state = writer.get("job")
    assert state is not None
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        csrf = (await client.get("/actions/fail?tag=job")).csrf()
        assert writer.stamp("job", first).acked  # the last stamp lands meanwhile
        form = {"csrf": csrf, "tag": "job", "chain_id": state.chain_id.hex(), "reason": "x"}
        answer = await client.post("/actions/fail", form=form)
        assert answer.status == 303
        page = await client.get(answer.headers["location"])
        assert 'id="chain-state">acked<' in page.text
        assert "The chain was failed." not in page.text and "nothing was failed" in page.text
    finally:
        await board.close()


async def test_a_fail_that_finds_the_tag_re_created_says_so_and_fails_nothing(
    ddb_local_endpoint: str,
) -> None:
    """The tag is deleted and created again between the confirmation and the POST: the
    fail, bound to the generation the page showed, writes nothing, and the page said
    "404 No such chain: "job" does not exist" while a chain "job" was there, live.  Now
    it shows the new chain, saying that it is new and that nothing was failed."""
    spec = fresh_table(ddb_local_endpoint)
    writer = chains(ddb_local_endpoint, spec)
    writer.create("job", new_stamp(), timeout=600)
    shown = writer.get("job")
    assert shown is not None
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        csrf = (await client.get("/actions/fail?tag=job")).csrf()
        writer.delete("job")
        writer.create("job", new_stamp(), timeout=600)  # a new generation meanwhile
        before = snapshot(ddb_local_endpoint, spec.name)
        form = {"csrf": csrf, "chain_id": shown.chain_id.hex(), "reason": "x"}
        answer = await client.post("/actions/fail?tag=job", form=form)
        assert changed(before, snapshot(ddb_local_endpoint, spec.name)) == set()
        assert answer.status == 303, answer.text  # to the new chain's page, as for "acked"
        page = await client.get(answer.headers["location"])
        done = re.search(r'id="done">([^<]*)<', page.text)
        assert done is not None and "re-created" in done.group(1), page.text
        assert "nothing was written" in done.group(1)
        assert 'id="chain-state">open<' in page.text and 'id="action-fail"' in page.text
        writer.delete("job")  # no chain under the tag at all: that is a 404
        gone = await client.post("/actions/fail?tag=job", form=form)
        assert gone.status == 404 and "does not exist" in gone.text
    finally:
        await board.close()


async def test_a_touch_that_moves_nothing_does_not_say_it_moved_the_deadline(
    ddb_local_endpoint: str,
) -> None:
    """``touch`` only extends: a deadline already later (or none) stays as it is, and the
    page said "The deadline was moved." all the same."""
    spec = fresh_table(ddb_local_endpoint)
    writer = chains(ddb_local_endpoint, spec)
    writer.create("hour", new_stamp(), timeout=3600)
    writer.create("later", new_stamp(), timeout=3600)
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        csrf = (await client.get("/actions/touch?tag=hour")).csrf()
        for tag, seconds, said in (
            ("hour", "60", "The deadline stays"),
            ("later", "7200", "The deadline was moved."),
        ):
            form = {"csrf": csrf, "tag": tag, "timeout": seconds, "chain_id": shown(writer, tag)}
            answer = await client.post("/actions/touch", form=form)
            assert answer.status == 303, answer.text
            page = await client.get(answer.headers["location"])
            done = re.search(r'id="done">([^<]*)<', page.text)
            assert done is not None and done.group(1).startswith(said), (tag, done)
    finally:
        await board.close()


@contextlib.asynccontextmanager
async def touch_confirmed(endpoint: str, first: bytes) -> AsyncIterator[tuple[Any, ...]]:
    """A table with the live chain "job" (stamp ``first``, 10 minutes to its deadline) and
    the touch confirmation of its page: (spec, writer, board, client, confirm page)."""
    spec = fresh_table(endpoint)
    writer = chains(endpoint, spec)
    writer.create("job", first, timeout=600)
    board = Dashboard(table=spec.name, endpoint_url=endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        yield spec, writer, board, client, await client.get("/actions/touch?tag=job")
    finally:
        await board.close()


async def test_a_touch_from_the_page_of_an_earlier_chain_of_the_tag_touches_nothing(
    ddb_local_endpoint: str,
) -> None:
    """The tag was failed and created again after its page was shown: the touch went to
    the new chain, which the operator never saw (the form named no chain)."""
    async with touch_confirmed(ddb_local_endpoint, new_stamp()) as (
        spec,
        writer,
        _,
        client,
        confirm,
    ):
        old = shown(writer, "job")
        assert f'name="chain_id" value="{old}"' in confirm.text
        writer.fail("job", "lost")
        writer.create("job", new_stamp(), timeout=60)  # a new chain of the tag
        before = snapshot(ddb_local_endpoint, spec.name)
        form = {"csrf": confirm.csrf(), "tag": "job", "timeout": "7200", "chain_id": old}
        answer = await client.post("/actions/touch", form=form)
        assert answer.status == 303, answer.text
        page = await client.get(answer.headers["location"])
        assert "re-created since the page you acted from: nothing was written" in page.text
        assert changed(before, snapshot(ddb_local_endpoint, spec.name)) == set()


async def test_a_tag_re_created_between_the_touch_check_and_its_write_is_not_touched(
    ddb_local_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The action checked the chain id with a read of its own, then touched the tag with no
    chain id: a tag acked and created again by another process in between had its new
    chain's deadline moved.  The other process acts right after the action's read."""
    first = new_stamp()
    async with touch_confirmed(ddb_local_endpoint, first) as (_, writer, board, client, confirm):
        old = shown(writer, "job")
        read = board.ack.get

        async def read_then_the_other_process_writes(tag: str) -> Any:
            state = await read(tag)
            monkeypatch.setattr(board.ack, "get", read)  # once: the action's own check
            assert writer.stamp("job", first).acked
            writer.create("job", new_stamp(), timeout=60)  # a new generation
            return state

        monkeypatch.setattr(board.ack, "get", read_then_the_other_process_writes)
        form = {"csrf": confirm.csrf(), "tag": "job", "timeout": "7200", "chain_id": old}
        answer = await client.post("/actions/touch", form=form)
        assert answer.status == 303, answer.text
        page = await client.get(answer.headers["location"])
        assert "re-created since the page you acted from: nothing was written" in page.text
        now = writer.get("job")
        assert now is not None and now.deadline is not None
        assert now.deadline < time.time() + 120  # the new chain's own deadline, not moved


async def test_a_touch_of_a_chain_failed_since_its_page_says_chain_closed(
    ddb_local_endpoint: str,
) -> None:
    """Only an acked chain (TagNotFound) got the "Chain closed" page; a failed one got the
    library's "Chain failed ... replay its input" page, with no word that nothing was
    written."""
    async with touch_confirmed(ddb_local_endpoint, new_stamp()) as (_, writer, _, client, confirm):
        form = {"csrf": confirm.csrf(), "tag": "job", "timeout": "60"}
        form["chain_id"] = shown(writer, "job")
        writer.fail("job", "lost")  # by someone else, after the page was shown
        answer = await client.post("/actions/touch", form=form)
        assert answer.status == 409, answer.text
        assert "Chain closed" in answer.text and "nothing was written" in answer.text


@pytest.mark.parametrize("action", ["touch", "fail"])
async def test_a_deadline_that_passes_as_the_action_comes_is_said_and_counted(
    ddb_local_endpoint: str, action: str
) -> None:
    """The chain is not overdue when the page showed it and is when the action writes:
    ``touch`` or ``fail`` fails it ("timeout", as a sweep would) and raises
    ``ChainTimedOut``: the page says so (409), and the counts are asked for again (they
    kept the chain overdue until the next count).  The dashboard's clock is set behind
    the library's to hold that instant open."""
    spec = fresh_table(ddb_local_endpoint)
    writer = chains(ddb_local_endpoint, spec)
    writer.create("late", new_stamp(), timeout=0.3)
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    board.clock = lambda: time.time() - 60  # the dashboard sees the chain before its deadline
    recounts: list[None] = []
    board.request_count = lambda: recounts.append(None)  # type: ignore[method-assign]
    try:
        client = await logged_in(board)
        csrf = (await client.get(f"/actions/{action}?tag=late")).csrf()
        time.sleep(0.5)  # past it for the library
        form = {"csrf": csrf, "tag": "late", "timeout": "60", "chain_id": shown(writer, "late")}
        answer = await client.post(f"/actions/{action}", form=form)
        assert answer.status == 409, answer.text
        assert "Past its deadline" in answer.text and "failed" in answer.text
        state = writer.get("late")
        assert state is not None and state.failed and state.reason == "timeout"
        assert recounts == [None]
    finally:
        await board.close()


@pytest.mark.parametrize(
    ("method", "target", "status"),
    [
        ("GET", "/nowhere", 404),
        ("GET", "/chains?status=everything", 400),
        ("GET", "/chains?status=open&cursor=not-a-cursor", 400),
        ("GET", "/chains?status=open&cursor=" + DEEP_CURSOR, 400),  # was a 500 page
        ("GET", "/chains?status=open&size=0", 400),
        ("GET", "/chains?status=open&size=lots", 400),
        # a digit to str.isdigit() but not to int(): they were a 500 page
        ("GET", "/chains?status=open&size=%C2%B2", 400),  # superscript two
        ("GET", "/chains?status=open&size=" + "9" * 5000, 400),  # past int()'s 4,300 digits
        ("GET", "/chain", 400),
        ("GET", "/rows?status=open", 400),
        ("GET", "/rows?status=everything&tag=job/01", 400),
        ("GET", "/chain?tag=" + "x" * 3000, 400),
        ("GET", "/chain?tag=never-created", 404),
        ("GET", "/actions/explode?tag=job/01", 404),
        ("GET", "/actions/replay?tag=job/01", 404),  # no queue: no replays
        ("DELETE", "/chain?tag=job/01", 405),
        ("POST", "/", 405),
    ],
)
async def test_bad_requests_get_a_clear_4xx_page(
    dashboard: Dashboard, method: str, target: str, status: int
) -> None:
    client = await logged_in(dashboard)
    answer = await client.request(method, target)
    assert answer.status == status, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    assert f'<span class="code">{status}</span>' in answer.text or status == 404
    assert "Traceback" not in answer.text and 'File "' not in answer.text


async def test_bad_forms_get_a_clear_4xx_page(
    dashboard: Dashboard, ddb_local_endpoint: str, populated: TableSpec
) -> None:
    client = await logged_in(dashboard)
    csrf = (await client.get("/actions/touch?tag=job/02")).csrf()
    shown_id = shown(chains(ddb_local_endpoint, populated), "job/02")
    before = snapshot(ddb_local_endpoint, populated.name)
    form = {"csrf": csrf, "tag": "job/02", "chain_id": shown_id}
    cases: Sequence[tuple[dict[str, Any], int]] = [
        ({"form": {**form, "timeout": "soon"}}, 400),
        ({"form": {**form, "timeout": "-5"}}, 400),
        ({"form": {**form, "tag": "never-created", "timeout": "60"}}, 404),
        ({"form": {**form, "tag": "", "timeout": "60"}}, 400),
        ({"form": {**form, "chain_id": "", "timeout": "60"}}, 400),  # not from its page
        ({"form": {**form, "chain_id": "zz", "timeout": "60"}}, 400),
        ({"body": b"{}", "headers": {"content-type": "application/json"}}, 415),
        (
            {
                "body": b"a=" + b"x" * 70_000,
                "headers": {"content-type": "application/x-www-form-urlencoded"},
            },
            413,
        ),
    ]
    for kwargs, status in cases:
        answer = await client.post("/actions/touch", **kwargs)
        assert answer.status == status, (kwargs, answer.text)
        assert "Traceback" not in answer.text
    form = {"csrf": csrf, "tag": "job/02", "chain_id": "zz"}
    fail = await client.post("/actions/fail", form=form)
    assert fail.status == 400
    assert changed(before, snapshot(ddb_local_endpoint, populated.name)) == set()


def _tags(html: str) -> list[str]:
    return re.findall(r'<tr data-tag="([^"]*)"[^>]*>', html)


def _next(html: str) -> str | None:
    found = re.search(r'<a class="next" href="([^"]*)"', html)
    return None if found is None else found.group(1).replace("&amp;", "&")


async def _walk(client: Client, first: str) -> tuple[list[str], int]:
    tags: list[str] = []
    target: str | None = first
    pages = 0
    while target is not None:
        answer = await client.get(target)
        assert answer.status == 200, answer.text
        tags += _tags(answer.text)
        target = _next(answer.text)
        pages += 1
    return tags, pages


async def test_lists_page_through_the_index_in_one_order(dashboard: Dashboard) -> None:
    client = await logged_in(dashboard)
    tags, pages = await _walk(client, "/chains?status=open")
    jobs = [f"job/{m:02d}" for m in range(1, 41)]
    hostile = HOSTILE.replace("<", "&lt;").replace(">", "&gt;")
    # soonest deadline first across all 16 shards; no deadline last; each chain once
    assert tags == ["job/01", "job/02", "job/03", "job/04", "job/05", "job/06", "job/07",
                    "job/08", "job/09", "job/10", hostile, *jobs[10:], "other/a"]  # fmt: skip
    assert pages == 6  # 42 chains, 7 a page
    prefixed, _ = await _walk(client, "/chains?status=open&prefix=job/1")
    assert prefixed == [f"job/{m}" for m in range(10, 20)]
    failed, _ = await _walk(client, "/chains?status=failed")
    assert failed == ["bad/4", "bad/3", "bad/2", "bad/1", "bad/0"]  # newest first
    lost, _ = await _walk(client, "/chains?status=failed&reason=lost")
    assert lost == ["bad/4", "bad/2", "bad/0"]
    assert _tags((await client.get("/chains?status=overdue")).text) == []


@pytest.mark.parametrize(
    "stem", ["文" * 100, "corpus/" + "x" * 500, "s3a://lake/" + "date=2026-11-27/" * 120]
)
async def test_lists_of_long_tags_page_to_their_end(ddb_local_endpoint: str, stem: str) -> None:
    """A cursor holds a tag per shard: 100 CJK characters each (300 bytes, written as
    \\u escapes) made one of 13,000 characters, 500 ASCII ones 11,000, over its 8,192
    limit, so the "Next page" link was a 400 page.  Paths of 1,900 bytes made 40,000,
    over its 12,000 limit now, until cursors were deflated."""
    spec = fresh_table(ddb_local_endpoint)
    writer = chains(ddb_local_endpoint, spec)
    made = [f"{stem}-{i:03d}" for i in range(96)]
    for i, tag in enumerate(made):
        writer.create(tag, new_stamp(), timeout=600 + i)
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        tags, pages = await _walk(client, "/chains?status=open&size=40")
        assert tags == made and pages == 3
    finally:
        await board.close()


async def test_a_list_of_long_tags_that_share_nothing_pages_to_its_end(
    ddb_local_endpoint: str,
) -> None:
    """Tags of 1,000 random characters do not deflate: a cursor of 16 of them was 20,000
    characters, over the 12,000 a link may carry, so the "Next page" link was a 400 page.
    The dashboard now keeps such a cursor and the link names it."""
    spec = fresh_table(ddb_local_endpoint)
    writer = chains(ddb_local_endpoint, spec)
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits
    made = ["".join(rng.choices(alphabet, k=1000)) for _ in range(96)]
    for i, tag in enumerate(made):
        writer.create(tag, new_stamp(), timeout=600 + i)
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        first = await client.get("/chains?status=open&size=40")
        link = _next(first.text)
        assert link is not None and len(link) < 200, link
        tags, pages = await _walk(client, "/chains?status=open&size=40")
        assert tags == made and pages == 3
        forgotten = await client.get("/chains?status=open&cursor=~not-kept")
        assert forgotten.status == 400
        assert "no longer kept by the dashboard" in forgotten.text
        assert "start again from the first page" in forgotten.text
    finally:
        await board.close()


async def test_rows_by_tag_are_what_a_list_swaps_in(dashboard: Dashboard) -> None:
    client = await logged_in(dashboard)
    asked = "/rows?status=open&tag=job/03&tag=never-created&tag=" + quote(HOSTILE)
    answer = await client.get(asked)
    assert answer.status == 200
    hostile = HOSTILE.replace("<", "&lt;").replace(">", "&gt;")
    assert _tags(answer.text) == ["job/03", hostile, "never-created"]  # no chain: absent
    assert answer.text.count('class="badge absent"') == 1
    assert "<img" not in answer.text


async def test_a_failed_lists_row_of_a_chain_made_again_names_no_reason(
    ddb_local_endpoint: str,
) -> None:
    """After a replay (any create again) the chain is live: its row swapped into the
    failed list said the reason "None", one no one gave."""
    spec = fresh_table(ddb_local_endpoint)
    writer = chains(ddb_local_endpoint, spec)
    writer.create("job/7", new_stamp())
    writer.fail("job/7", "lost")
    writer.create("job/7", new_stamp(), timeout=600)  # replayed: live again
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        answer = await client.get("/rows?status=failed&tag=job/7")
        assert answer.status == 200 and 'class="badge open"' in answer.text
        assert '<td class="reason"></td>' in answer.text and "None" not in answer.text
    finally:
        await board.close()


async def test_an_overdue_cursor_past_now_is_a_400_not_dynamodb_refusing(
    ddb_local_endpoint: str,
) -> None:
    """A position of the overdue list is at or before the time its page was made; one past
    now (forged, or a clock set back) is outside the Query's ``due_at <= now``: DynamoDB
    refused it, a 502 "DynamoDB refused" with a traceback in the log."""
    spec = fresh_table(ddb_local_endpoint)
    chains(ddb_local_endpoint, spec).create("late", new_stamp(), timeout=1)
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        positions = [["late", "99999999999"]] + [None] * (INVENTORY_SHARDS - 1)
        cursor = encode_cursor("overdue", positions)  # type: ignore[arg-type]
        answer = await client.get(f"/chains?status=overdue&cursor={cursor}")
        assert answer.status == 400 and "Bad cursor" in answer.text, answer.text
    finally:
        await board.close()


async def test_a_row_whose_chain_is_gone_is_swapped_for_one_that_says_so(
    ddb_local_endpoint: str,
) -> None:
    """A list swaps in the rows of the tags the stream wrote: a chain deleted (or expired)
    since the list showed it comes back as absent, not left out (its row stayed "open",
    its deadline counting down, until a reload)."""
    spec = fresh_table(ddb_local_endpoint)
    writer = chains(ddb_local_endpoint, spec)
    writer.create("kept", new_stamp(), timeout=600)
    writer.create("dropped", new_stamp(), timeout=600)
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        assert _tags((await client.get("/chains?status=open")).text) == ["kept", "dropped"]
        writer.delete("dropped")
        answer = await client.get("/rows?status=open&tag=kept&tag=dropped")
        assert answer.status == 200
        rows = dict(re.findall(r'<tr data-tag="([^"]*)"[^>]*>(.*?)</tr>', answer.text, re.S))
        assert rows.keys() == {"kept", "dropped"}
        assert 'class="badge open"' in rows["kept"]
        assert 'class="badge absent"' in rows["dropped"] and "open" not in rows["dropped"]
    finally:
        await board.close()


def failed_fleet_job(
    endpoint: str, tag: str, send: Any, **options: Any
) -> tuple[Dashboard, TableSpec, SyncXorAckDynamoDB]:
    """A fleet job's chain, as ``Fleet.submit`` makes it, failed by its dead letter, and a
    dashboard that may replay it through ``send`` (its table, its chains client too)."""
    table_spec = fresh_table(endpoint)
    ack = chains(endpoint, table_spec)
    ack.create(tag, stamp_of(root_id(tag)))
    ack.fail(tag, "dead-letter")
    board = Dashboard(
        table=table_spec.name, endpoint_url=endpoint, token=TOKEN, replay_send=send, **options
    )
    return board, table_spec, ack


def replay_form(confirm: Answer, tag: str, **fields: str) -> dict[str, str]:
    """The replay confirmation's form as its page fills it (``fields``: the payload)."""
    return {"csrf": confirm.csrf(), "tag": tag, "chain_id": confirm.field("chain_id"), **fields}


async def test_a_fleet_jobs_page_offers_its_replay(ddb_local_endpoint: str) -> None:
    sent: list[Envelope] = []

    async def send(envelopes: Sequence[Envelope]) -> None:
        sent.extend(envelopes)

    board, _, ack = failed_fleet_job(ddb_local_endpoint, "fleet/job-9", send)
    try:
        client = await logged_in(board)
        page = await client.get("/chain?tag=fleet/job-9")
        assert "fleet job" in page.text and 'id="action-replay"' in page.text
        ack.create("plain", new_stamp())
        ack.fail("plain", "lost")
        assert 'id="action-replay"' not in (await client.get("/chain?tag=plain")).text
        confirm = await client.get("/actions/replay?tag=fleet/job-9")
        form = replay_form(confirm, "fleet/job-9", payload='{"n": 3}')
        bad = await client.post("/actions/replay", form={**form, "payload": "{not json"})
        assert bad.status == 400 and sent == []
        # nested deeper than json.loads recurses: a RecursionError, a 500 page, until refused
        deep = await client.post(
            "/actions/replay", form={**form, "payload": "[" * 5000 + "]" * 5000}
        )
        assert deep.status == 400 and "Payload is not JSON" in deep.text and sent == []
        failed = ack.get("fleet/job-9")
        assert failed is not None and failed.reason == "dead-letter"  # nothing written
        done = await client.post("/actions/replay", form=form)
        assert done.status == 303, done.text
        assert [(e.tag, e.payload) for e in sent] == [("fleet/job-9", {"n": 3})]
        state = ack.get("fleet/job-9")
        assert state is not None and state.live and state.chain_id == sent[0].chain_id
        again = await client.post("/actions/replay", form=form)  # replayed: not once more
        assert again.status == 303 and "done=recreated" in again.headers["location"]
        assert len(sent) == 1
        form["chain_id"] = state.chain_id.hex()  # from the new chain's page: live, refused
        live = await client.post("/actions/replay", form=form)
        assert live.status == 409 and len(sent) == 1
    finally:
        await board.close()


async def test_a_replay_whose_root_message_is_not_sent_says_so(ddb_local_endpoint: str) -> None:
    """The chain is created again, then SQS refuses the root message: the page said
    "DynamoDB refused", as if nothing had been written, while the job's chain was live
    again with no message to run it."""
    from botocore.exceptions import ClientError

    async def send(envelopes: Sequence[Envelope]) -> None:
        error = {"Error": {"Code": "AccessDenied", "Message": "not allowed to send"}}
        raise ClientError(error, "SendMessageBatch")

    board, _, ack = failed_fleet_job(ddb_local_endpoint, "fleet/job-4", send)
    try:
        client = await logged_in(board)
        confirm = await client.get("/actions/replay?tag=fleet/job-4")
        form = replay_form(confirm, "fleet/job-4", payload="null")
        answer = await client.post("/actions/replay", form=form)
        assert answer.status == 502, answer.text
        assert "root message was not sent" in answer.text and "not allowed to send" in answer.text
        assert "DynamoDB" not in answer.text
        state = ack.get("fleet/job-4")
        assert state is not None and state.live  # as the page says
    finally:
        await board.close()


async def test_a_job_replayed_since_its_page_is_not_replayed_once_more(
    ddb_local_endpoint: str,
) -> None:
    """Between the confirmation and its POST someone else replayed the job, and the new run
    failed too: the POST replayed it once more, as the form named no generation.  Now the
    form carries the chain id its page showed; another generation is left alone."""
    sent: list[Envelope] = []

    async def send(envelopes: Sequence[Envelope]) -> None:
        sent.extend(envelopes)

    board, table_spec, ack = failed_fleet_job(ddb_local_endpoint, "fleet/job-5", send)
    try:
        client = await logged_in(board)
        confirm = await client.get("/actions/replay?tag=fleet/job-5")
        form = replay_form(confirm, "fleet/job-5", payload="null")
        ack.create("fleet/job-5", stamp_of(root_id("fleet/job-5")))  # replayed elsewhere
        ack.fail("fleet/job-5", "dead-letter")  # and failed again
        before = snapshot(ddb_local_endpoint, table_spec.name)
        answer = await client.post("/actions/replay", form=form)
        assert answer.status == 303 and "done=recreated" in answer.headers["location"]
        unnamed_form = {name: value for name, value in form.items() if name != "chain_id"}
        unnamed = await client.post("/actions/replay", form=unnamed_form)
        assert unnamed.status == 400 and "No chain id" in unnamed.text
        assert (
            sent == [] and changed(before, snapshot(ddb_local_endpoint, table_spec.name)) == set()
        )
    finally:
        await board.close()


class FakeSqs:
    """What ``SqsSender`` calls of an SQS client: the bodies it sends are kept."""

    def __init__(self) -> None:
        self.bodies: list[str] = []

    async def get_queue_attributes(self, **kwargs: Any) -> dict[str, Any]:
        return {"Attributes": {"QueueArn": "arn:aws:sqs:us-east-1:000000000000:jobs"}}

    async def send_message_batch(self, **kwargs: Any) -> dict[str, Any]:
        self.bodies += [entry["MessageBody"] for entry in kwargs["Entries"]]
        return {"Successful": [{"Id": e["Id"]} for e in kwargs["Entries"]]}


async def test_a_replay_payload_nested_too_deep_to_send_changes_nothing(
    ddb_local_endpoint: str,
) -> None:
    """A payload a little under 1,000 levels deep was read (json.loads), the chain created
    again, and then its root message could not be built (json.dumps goes deeper, from
    deeper in the stack): a 502 "Root message not sent" with the job live and no message
    to run it.  Every such payload is refused (400) before anything is written."""
    tag = "fleet/job-7"
    sqs = FakeSqs()
    send = SqsSender(sqs, "http://127.0.0.1:1/000000000000/jobs")
    board, table_spec, _ = failed_fleet_job(ddb_local_endpoint, tag, send)
    try:
        client = await logged_in(board)
        confirm = await client.get(f"/actions/replay?tag={tag}")
        form = replay_form(confirm, tag)
        before = snapshot(ddb_local_endpoint, table_spec.name)
        for depth in range(999, MAX_DEPTH, -1):
            payload = "[" * depth + "]" * depth
            answer = await client.post("/actions/replay", form={**form, "payload": payload})
            assert answer.status == 400, (depth, answer.status, answer.text)
            assert "nested too deep" in answer.text and "Traceback" not in answer.text
        assert sqs.bodies == []
        assert changed(before, snapshot(ddb_local_endpoint, table_spec.name)) == set()
        nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH  # as deep as may be: sent, and read back
        done = await client.post("/actions/replay", form={**form, "payload": nested})
        assert done.status == 303, done.text
        assert [Envelope.from_json(body).payload for body in sqs.bodies] == [json.loads(nested)]
    finally:
        await board.close()


@pytest.mark.parametrize("made", [{1, 2}, 10**5000], ids=["set", "huge-int"])
async def test_a_replay_payload_made_unsendable_changes_nothing(
    ddb_local_endpoint: str, made: Any
) -> None:
    """``replay_payload=`` made a payload its root message cannot carry (not JSON, or not
    JSON a worker reads back): the chain was created again before the message failed to
    build, a 502 "Root message not sent".  It is refused before anything is written, with
    a 500 that names ``replay_payload`` (the dashboard's configuration, not the request)."""
    tag = "fleet/job-8"
    sqs = FakeSqs()
    send = SqsSender(sqs, "http://127.0.0.1:1/000000000000/jobs")
    board, table_spec, _ = failed_fleet_job(
        ddb_local_endpoint, tag, send, replay_payload=lambda tag: made
    )
    try:
        client = await logged_in(board)
        confirm = await client.get(f"/actions/replay?tag={tag}")
        before = snapshot(ddb_local_endpoint, table_spec.name)
        form = replay_form(confirm, tag)
        answer = await client.post("/actions/replay", form=form)
        assert answer.status == 500, answer.text  # the dashboard's configuration, named
        assert (
            "replay_payload" in answer.text
            and "nothing was written" in answer.text
            and "Traceback" not in answer.text
        )
        assert sqs.bodies == []
        assert changed(before, snapshot(ddb_local_endpoint, table_spec.name)) == set()
    finally:
        await board.close()


async def test_mounted_under_a_prefix(ddb_local_endpoint: str, populated: TableSpec) -> None:
    board = Dashboard(table=populated.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    host = Starlette(routes=[Mount("/ops/chains", app=board.app)])
    try:
        client = Client(host)
        login = await client.get(f"/ops/chains/?token={TOKEN}")
        assert login.status == 303
        assert "Path=/ops/chains/" in login.headers["set-cookie"]
        page = await client.get("/ops/chains/chains?status=failed")
        assert page.status == 200
        assert 'href="/ops/chains/chain?tag=bad%2F4"' in page.text
        assert 'src="/ops/chains/static/dashboard.js"' in page.text
        assert (await client.get("/ops/chains/static/dashboard.js")).status == 200
    finally:
        await board.close()


async def test_dynamodb_down_is_a_pages_502_and_its_requests_give_up_soon(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A page waits on its requests: the clients' default budget (ten retries) took about
    50 s per request to give up on a refused connection, so the dashboard's client has
    the CLI's (``aws.fail_fast_config``).  The page says what to check, and the log has
    one line per such page (each one wrote a whole traceback)."""
    nowhere = "http://127.0.0.1:9"  # nothing listens: refused at once
    board = Dashboard(table="no-server", endpoint_url=nowhere, token=TOKEN)
    try:
        client = await logged_in(board)
        caplog.clear()
        page = await client.get("/chains?status=failed")
        assert page.status == 502, page.text
        assert "DynamoDB unreachable" in page.text and "xor-ack local status" in page.text
        said = [r for r in caplog.records if r.name.startswith("xor_ack_dynamodb.dashboard")]
        assert said and all(r.exc_info is None for r in said), said
        assert any("DynamoDB unreachable" in r.getMessage() for r in said), said
        retries = board.ack.client.meta.config.retries
        assert retries["total_max_attempts"] == FAIL_FAST_ATTEMPTS, retries
    finally:
        await board.close()


def test_a_config_that_cannot_work_is_refused() -> None:
    with pytest.raises(ConfigError, match="at least 16"):
        DashboardConfig(token="short")
    with pytest.raises(ConfigError, match="page_size"):
        DashboardConfig(page_size=0)
    with pytest.raises(ConfigError, match="count_every"):
        DashboardConfig(count_every=0)
    assert DashboardConfig().token != DashboardConfig().token  # random by default


async def test_a_chain_that_is_no_fleet_job_is_not_replayed_by_its_url(
    ddb_local_endpoint: str,
) -> None:
    """The page offers Replay for fleet jobs only; the confirmation and the action, reached
    by their URLs, refuse the rest too (a chain another writer made, or none at all),
    before anything is written or sent."""
    sent: list[Envelope] = []

    async def send(envelopes: Sequence[Envelope]) -> None:
        sent.extend(envelopes)

    board, table_spec, ack = failed_fleet_job(ddb_local_endpoint, "fleet/job-1", send)
    ack.create("plain", new_stamp())  # some other producer's chain
    ack.fail("plain", "lost")
    try:
        client = await logged_in(board)
        csrf = (await client.get("/actions/replay?tag=fleet/job-1")).csrf()
        before = snapshot(ddb_local_endpoint, table_spec.name)
        for tag in ("plain", "never-was"):
            confirm = await client.get(f"/actions/replay?tag={tag}")
            assert confirm.status == 409 and "Not a fleet job" in confirm.text
            state = ack.get(tag)
            shown = "" if state is None else state.chain_id.hex()
            form = {"csrf": csrf, "tag": tag, "chain_id": shown, "payload": "null"}
            answer = await client.post("/actions/replay", form=form)
            assert answer.status == 409 and "Not a fleet job" in answer.text, answer.text
        assert (
            sent == [] and changed(before, snapshot(ddb_local_endpoint, table_spec.name)) == set()
        )
    finally:
        await board.close()


async def test_a_fleet_jobs_tag_another_writer_made_again_is_no_fleet_job(
    ddb_local_endpoint: str,
) -> None:
    """The tag was a fleet job once, then another writer made a chain of its own under it
    (a random first stamp), which failed: the stream's record of the earlier generation
    made it a fleet job, so its page offered Replay and the POST replaced that writer's
    chain with a fleet job and sent a root message."""
    sent: list[Envelope] = []

    async def send(envelopes: Sequence[Envelope]) -> None:
        sent.extend(envelopes)

    tag = "reused/1"
    board, table_spec, ack = failed_fleet_job(ddb_local_endpoint, tag, send)
    ack.create(tag, new_stamp())  # another producer's chain under the same tag
    ack.fail(tag, "lost")
    try:
        client = await logged_in(board)
        assert (await client.get("/")).status == 200  # the stream's reader starts
        for _ in range(300):  # the stream read: the earlier generation's record in hand
            if board.stream.caught_up and board.story(tag) is not None:
                break
            await asyncio.sleep(0.1)
        assert board.story(tag) is not None
        page = await client.get(f"/chain?tag={tag}")
        assert page.status == 200 and 'id="action-replay"' not in page.text
        confirm = await client.get(f"/actions/replay?tag={tag}")
        assert confirm.status == 409 and "Not a fleet job" in confirm.text
        state = ack.get(tag)
        assert state is not None
        csrf = (await client.get("/actions/sweep")).csrf()
        before = snapshot(ddb_local_endpoint, table_spec.name)
        form = {"csrf": csrf, "tag": tag, "chain_id": state.chain_id.hex(), "payload": "null"}
        answer = await client.post("/actions/replay", form=form)
        assert answer.status == 409 and "Not a fleet job" in answer.text
        assert (
            sent == [] and changed(before, snapshot(ddb_local_endpoint, table_spec.name)) == set()
        )
    finally:
        await board.close()


async def test_the_page_of_an_unexpected_error_carries_the_security_headers(
    ddb_local_endpoint: str,
) -> None:
    """An error nothing expected (here: ``replay_payload=`` raising) is answered by
    Starlette outside the middleware that adds the headers: the 500 page adds them."""

    async def send(envelopes: Sequence[Envelope]) -> None:
        raise AssertionError("nothing is sent")

    def payload_of(tag: str) -> object:
        raise RuntimeError("the operator's replay_payload has a bug")

    board, _, _ = failed_fleet_job(
        ddb_local_endpoint, "fleet/job-2", send, replay_payload=payload_of
    )
    started: list[dict[str, str]] = []
    try:
        client = await logged_in(board)
        confirm = await client.get("/actions/replay?tag=fleet/job-2")
        form = replay_form(confirm, "fleet/job-2")

        async def app(scope: Any, receive: Any, send_: Any) -> None:
            async def keep(message: Any) -> None:
                if message["type"] == "http.response.start":
                    headers = {k.decode(): v.decode() for k, v in message.get("headers", [])}
                    started.append({**headers, ":status": str(message["status"])})
                await send_(message)

            await board.app(scope, receive, keep)

        client.app = app
        with pytest.raises(RuntimeError):  # Starlette raises it again, for the server's log
            await client.post("/actions/replay", form=form)
        [headers] = started
        assert headers[":status"] == "500"
        assert headers["x-frame-options"] == "DENY" and "content-security-policy" in headers
        assert headers["referrer-policy"] == "same-origin"
    finally:
        await board.close()


async def test_a_stream_of_another_view_type_is_said_once_and_the_pages_still_serve(
    ddb_local_endpoint: str,
) -> None:
    """A NEW_IMAGE stream (another consumer's) cannot tell an ack from a failure: the
    dashboard says so on the overview and runs without windows and histories, as without
    a stream, instead of failing and retrying it every few seconds."""
    spec = TableSpec(name=f"newimage-{time.time_ns()}")
    request = spec.create_request()
    request["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    dynamodb(ddb_local_endpoint).create_table(**request)
    board = Dashboard(table=spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        assert (await client.get("/")).status == 200  # the first page starts the dashboard
        for _ in range(100):
            if board.stream.error:
                break
            await asyncio.sleep(0.05)
        assert board.stream.error is not None and board.stream.error.startswith(
            f"no windows, no histories: table {spec.name} already has a stream with view type "
            "NEW_IMAGE; the chain events need NEW_AND_OLD_IMAGES"
        )  # said as the state it is, not as an error being retried
        page = await client.get("/")
        assert page.status == 200 and "NEW_AND_OLD_IMAGES" in page.text
    finally:
        await board.close()


async def test_sweep_now_that_stopped_part_way_shows_what_it_failed_and_why(
    dashboard: Dashboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of the index throttled after some chains were failed: the page lists those
    chains and says the sweep stopped (a 502 "DynamoDB refused" used to hide them)."""
    from botocore.exceptions import ClientError

    from xor_ack_dynamodb.errors import SweepStopped

    client = await logged_in(dashboard)
    assert (await client.get("/")).status == 200
    failed = (await dashboard.ack.get("bad/0"), await dashboard.ack.get("bad/1"))
    throttled = ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "Query")

    async def stopped_sweep() -> Any:
        raise SweepStopped([s for s in failed if s is not None], {}, 5, throttled)

    monkeypatch.setattr(dashboard.ack, "sweep", stopped_sweep)
    csrf = dashboard.guard.csrf_for(client.cookies[dashboard.guard.cookie])
    answer = await client.post("/actions/sweep", form={"csrf": csrf})
    assert answer.status == 200, answer.text
    assert re.search(r'id="swept-count">2<', answer.text)
    assert "bad/0" in answer.text and "bad/1" in answer.text
    assert "The sweep stopped: the sweep stopped at index shard 5" in answer.text
