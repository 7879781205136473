"""What a first-time user of the dashboard meets (docs/dashboard.md): a stream it cannot
read, a table that is not there or holds no chains, DynamoDB Local named by the
environment, a link of an earlier start, a filtered list whose page found nothing yet."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError
from click.testing import CliRunner

from xor_ack_dynamodb import SyncXorAckDynamoDB, events, new_stamp
from xor_ack_dynamodb.cli import cli
from xor_ack_dynamodb.dashboard import Dashboard
from xor_ack_dynamodb.table import TableSpec

from .asgi import Client
from .conftest import dynamodb

pytestmark = pytest.mark.ddblocal
TOKEN = "t0ken-for-the-first-use-tests"


async def logged_in(board: Dashboard) -> Client:
    client = Client(board.app)
    answer = await client.get(f"/?token={TOKEN}")
    assert answer.status == 303, answer.text
    return client


def _stream_line(html: str) -> str:
    found = re.search(r'<p class="status-line" id="stream-status">(.*?)</p>', html, re.S)
    assert found is not None, html
    return re.sub(r"\s+", " ", re.sub(r"<[^>]*>", " ", found.group(1))).strip()


class _DeniedRecords:
    """A ``dynamodbstreams`` client whose GetRecords is refused (a role without
    ``dynamodb:GetRecords``, or a DynamoDB that went away): everything else is the real one's."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def get_records(self, **kwargs: Any) -> Any:
        self.refused += 1
        raise ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": "not authorized"}},
            "GetRecords",
        )


async def test_the_stream_line_does_not_say_following_while_every_read_fails(
    ddb_local_endpoint: str, table_spec: TableSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/dashboard.md: the stream line says "whether the dashboard is still reading the
    stream's last 24 hours or follows it, how many records it read, and why not if it
    cannot".  With DynamoDB Local stopped under a running dashboard (or GetRecords
    denied), the overview said "Stream: following, N records read." for minutes, while
    the windows and histories silently stopped: StreamReader.poll swallows each shard's
    failure (it keeps it in ``failing()``) and Follower._follow sets ``status.error =
    None`` after every poll (follower.py:106), so the failure never reaches the page."""
    real = events.streams_client
    made: list[_DeniedRecords] = []

    def denied(*args: Any, **kwargs: Any) -> _DeniedRecords:
        made.append(_DeniedRecords(real(*args, **kwargs)))
        return made[-1]

    monkeypatch.setattr(events, "streams_client", denied)
    with SyncXorAckDynamoDB.connect(table=table_spec.name, endpoint_url=ddb_local_endpoint) as ack:
        ack.create(f"stream-probe-{uuid.uuid4().hex[:6]}", new_stamp())
    board = Dashboard(table=table_spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        client = await logged_in(board)
        assert (await client.get("/")).status == 200  # the first page starts the dashboard
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not (made and made[0].refused >= 2):
            await asyncio.sleep(0.1)
        assert made and made[0].refused >= 2, "the follower never read the stream"
        line = _stream_line((await client.get("/")).text)
        assert "following" not in line, line
        assert "AccessDenied" in line or "not authorized" in line, line
    finally:
        await board.close()


def test_a_missing_table_names_the_endpoint_from_the_environment(
    ddb_local_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's way to DynamoDB Local is ``eval "$(xor-ack local start ...)"``, which
    exports AWS_ENDPOINT_URL_DYNAMODB; the dashboard uses that endpoint, but its one-line
    refusal said "table nope does not exist at AWS" (and its banner "table ... at AWS"):
    the user looks for the mistake in the wrong place.  command.py:195 and :293 use
    ``config.endpoint_url or "AWS"`` instead of the endpoint the client resolves
    (``dynamodb.aws.endpoint_url``).  Other verbs also say what to do
    (`xor-ack table create`); this line said nothing."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", ddb_local_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "local")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local")
    result = CliRunner().invoke(cli, ["dashboard", "--table", "no-such-table-here", "--port", "0"])
    assert result.exit_code == 1, result.output
    assert "at AWS" not in result.stderr, result.stderr
    assert ddb_local_endpoint in result.stderr, result.stderr


def keyed_as_chains(endpoint: str, name: str) -> Any:
    """A table keyed ``tagID`` (a string) without the inventory indexes; its client."""
    client = dynamodb(endpoint)
    client.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "tagID", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "tagID", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return client


def test_a_table_that_holds_no_chains_is_refused_before_anything_listens(
    ddb_local_endpoint: str,
) -> None:
    """A user's own table that happens to be keyed ``tagID`` (``--table users`` by mistake):
    the dashboard served it, and told the user "an earlier release made it ... Add the
    indexes with `xor-ack --table users table upgrade`" on every count (and the same on
    the lists), which is untrue, and which `table upgrade` then refuses
    (NotAChainsTable); a row's page offered to "delete it (delete(tag))"."""
    name = f"users-{uuid.uuid4().hex[:8]}"
    client = keyed_as_chains(ddb_local_endpoint, name)
    client.put_item(TableName=name, Item={"tagID": {"S": "alice"}, "email": {"S": "a@x"}})
    command = [
        sys.executable, "-c", "from xor_ack_dynamodb.cli import main; main()",
        "--endpoint-url", ddb_local_endpoint, "--table", name, "dashboard", "--port", "0",
    ]  # fmt: skip
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=20, check=False, env=env
        )
    except subprocess.TimeoutExpired as served:
        pytest.fail(f"it served a table that holds no chains: {served.stdout!r}")
    assert result.returncode == 1, result.stderr
    assert result.stdout == "", result.stdout  # no link: nothing listens
    assert result.stderr.startswith("error: ") and "holds no chains" in result.stderr
    assert "table upgrade" not in result.stderr


def test_an_earlier_releases_fleet_table_is_served(ddb_local_endpoint: str) -> None:
    """A table an earlier release made (no inventory index) whose first items are a fleet's
    markers (no stamp) beside its chains is a chains table: the sample that tells a user's
    own table refuses only one without a chain (``check_chains_table``, used at first,
    took the markers for strangers and refused it)."""
    from xor_ack_dynamodb.dashboard.command import _check_chains
    from xor_ack_dynamodb.dashboard.config import DashboardConfig

    name = f"old-fleet-{uuid.uuid4().hex[:8]}"
    client = keyed_as_chains(ddb_local_endpoint, name)
    for i in range(3):  # a fleet's markers (no stamp) beside its one chain: all sampled
        marker = {"tagID": {"S": f"job-{i}#xor-ack-fleet/page/0"}, "tokens": {"B": b"1" * 8}}
        client.put_item(TableName=name, Item=marker)
    with SyncXorAckDynamoDB.connect(table=name, endpoint_url=ddb_local_endpoint) as ack:
        ack.create("job-0", new_stamp())
    described = client.describe_table(TableName=name)["Table"]
    config = DashboardConfig(table=name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    _check_chains(config, described, ddb_local_endpoint)  # served: no Refused


async def test_a_stale_link_says_what_to_do(ddb_local_endpoint: str, table_spec: TableSpec) -> None:
    """The dashboard makes a random token at each start: after a restart, the link in the
    browser's history (or a colleague's chat) is a 401 "Wrong token: the token in this
    link is not this dashboard's token", with a "Back to the overview" link that is
    another 401.  The page should say what to do, as the "Token needed" page does (open
    the link the running `xor-ack dashboard` printed; a restart without --token makes a
    new one).  security.py:141."""
    board = Dashboard(table=table_spec.name, endpoint_url=ddb_local_endpoint, token=TOKEN)
    try:
        answer = await Client(board.app).get("/?token=the-token-of-yesterdays-run")
        assert answer.status == 401
        assert "printed" in answer.text or "--token" in answer.text, answer.text
    finally:
        await board.close()


async def test_a_filtered_page_cut_short_does_not_say_there_are_none(
    ddb_local_endpoint: str,
) -> None:
    """The failed list filtered by reason ("lost") on a table whose newest failures are
    sweeps' "timeout": the first page read its budget of index queries, found none, and
    said "No failed chains failed with reason “lost”." above a "Next page »" link, while
    97 such chains were there on the next pages (seen on 500 failed chains with the
    default 50 a page and 64 queries).  A user reads that there are none.  The empty
    row (templates/_chains_live.html:14) is written whenever the page has no rows, also
    when ``after`` (a next page) is set; the same for a tag prefix that matches little."""
    from .conftest import fresh_table

    spec = fresh_table(ddb_local_endpoint)
    with SyncXorAckDynamoDB.connect(table=spec.name, endpoint_url=ddb_local_endpoint) as ack:
        ack.create("old/rare", new_stamp())
        ack.fail("old/rare", "lost")
        time.sleep(0.02)
        for i in range(120):
            ack.create(f"new/{i:03d}", new_stamp())
            ack.fail(f"new/{i:03d}", "timeout-ish")
    board = Dashboard(
        table=spec.name,
        endpoint_url=ddb_local_endpoint,
        token=TOKEN,
        page_size=5,
        query_budget=16,
    )
    try:
        client = await logged_in(board)
        target: str | None = "/chains?status=failed&reason=lost"
        pages: list[str] = []
        while target is not None and len(pages) < 50:
            answer = await client.get(target)
            assert answer.status == 200, answer.text
            pages.append(answer.text)
            found = re.search(r'class="next" href="([^"]*)"', answer.text)
            target = found.group(1).replace("&amp;", "&") if found else None
        assert any("old/rare" in page for page in pages), "the chain is never listed"
        for page in pages:
            if "old/rare" in page:
                break
            assert "No failed chains failed with reason" not in page, (
                "a page said there are none, and a later page lists one"
            )
    finally:
        await board.close()
