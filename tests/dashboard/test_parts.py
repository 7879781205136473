"""The dashboard's parts without I/O: windows, counts' moves, histories, cursors, the guard,
the live notices, the charts, the bind rule."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import zlib
from typing import Any
from urllib.parse import unquote

import pytest
from starlette.requests import Request

from xor_ack_dynamodb import ChainState, events, new_stamp
from xor_ack_dynamodb.dashboard import ConfigError, follower
from xor_ack_dynamodb.dashboard.charts import per_minute
from xor_ack_dynamodb.dashboard.config import (
    LOOPBACK_HOSTS,
    DashboardConfig,
    bind_check,
    is_loopback,
)
from xor_ack_dynamodb.dashboard.counts import Counts, Move, moves_of
from xor_ack_dynamodb.dashboard.errors import refusal_of
from xor_ack_dynamodb.dashboard.follower import Follower
from xor_ack_dynamodb.dashboard.history import Entry, History, entries_of
from xor_ack_dynamodb.dashboard.inventory import (
    STATUSES,
    BadCursor,
    decode_cursor,
    encode_cursor,
)
from xor_ack_dynamodb.dashboard.kept_cursors import KeptCursors
from xor_ack_dynamodb.dashboard.live import Broadcaster
from xor_ack_dynamodb.dashboard.pages import fleet_job
from xor_ack_dynamodb.dashboard.render import Renderer, duration, tag_key, url, when
from xor_ack_dynamodb.dashboard.security import COOKIE, Guard, Refused
from xor_ack_dynamodb.dashboard.windows import Windows
from xor_ack_dynamodb.dynamodb.together import every
from xor_ack_dynamodb.errors import ClientClosed, InvalidArgument, XorAckError
from xor_ack_dynamodb.fleet import root_id, stamp_of
from xor_ack_dynamodb.fleet.payloads import nesting
from xor_ack_dynamodb.table import INVENTORY_SHARDS

NOW = 1_800_000_000.0
CHAIN = b"\x07" * 8


def test_windows_count_each_event_once_by_its_own_time() -> None:
    windows = Windows()
    windows.add(events.Created("a", CHAIN, NOW - 5))
    windows.add(events.Created("a", CHAIN, NOW - 5))  # the same event again: once
    windows.add(events.Created("b", b"\x01" * 8, NOW - 3600))  # 1 h ago: 3 h and 24 h
    windows.add(events.Acked("a", CHAIN, NOW - 2, 3.0))
    windows.add(events.Failed("c", CHAIN, NOW - 20_000, "lost"))  # 5.5 h ago: 24 h only
    windows.add(events.TimedOut("d", CHAIN, NOW - 60))
    windows.add(events.Expired("e", CHAIN, NOW - 10, "acked"))  # a tombstone: not counted
    windows.add(events.Expired("f", CHAIN, NOW - 10, "live"))  # lost work: counted
    windows.add(events.Created("old", CHAIN, NOW - 90_000))  # older than a day: dropped
    view = windows.view(NOW)
    table = {w.label: w.counts for w in view.windows}
    assert table["10 min"] == {"created": 1, "acked": 1, "failed": 0, "timed_out": 1, "expired": 1}
    assert table["3 h"] == {"created": 2, "acked": 1, "failed": 0, "timed_out": 1, "expired": 1}
    assert table["24 h"] == {"created": 2, "acked": 1, "failed": 1, "timed_out": 1, "expired": 1}
    assert view.windows[0].latency == {"p50": 3.0, "p90": 3.0, "p99": 3.0}
    assert sum(b.count for b in view.histogram) == 1
    assert [b.label for b in view.histogram if b.count] == ["3 s to 10 s"]  # [low, high)
    assert sum(acked for _, acked, _ in view.per_minute) == 1  # the last hour, by minute
    assert sum(failed for _, _, failed in view.per_minute) == 1  # the timed-out one


def test_window_percentiles_are_nearest_rank() -> None:
    windows = Windows()
    for i in range(1, 101):
        windows.add(events.Acked(f"t{i}", CHAIN, NOW - 1, float(i)))
    assert windows.view(NOW).windows[0].latency == {"p50": 50.0, "p90": 90.0, "p99": 99.0}


def _image(version: int, stamp: bytes, **extra: dict[str, str]) -> dict[str, object]:
    return {
        "tagID": {"S": "file-7"},
        "stamp": {"B": base64.b64encode(stamp).decode()},
        "chain_id": {"B": base64.b64encode(CHAIN).decode()},
        "version": {"N": str(version)},
        "created_at": {"N": "1800000000"},
        "updated_at": {"N": str(1800000000 + version)},
        **extra,
    }


def _record(name: str, old: object, new: object) -> events.StreamRecord:
    body = {"Keys": {"tagID": {"S": "file-7"}}, "SequenceNumber": "1", "StreamViewType": "x"}
    if old is not None:
        body["OldImage"] = old
    body["NewImage"] = new
    return events.parse({"eventID": "1", "eventName": name, "dynamodb": body})


def _b64(blob: bytes) -> dict[str, str]:
    return {"B": base64.b64encode(blob).decode()}


def _removal(old: object, by_ttl: bool = False, at: float = NOW + 300) -> events.StreamRecord:
    body = {"Keys": {"tagID": {"S": "file-7"}}, "SequenceNumber": "1", "StreamViewType": "x"}
    body.update(OldImage=old, ApproximateCreationDateTime=at)
    raw: dict[str, Any] = {"eventID": "1", "eventName": "REMOVE", "dynamodb": body}
    if by_ttl:
        raw["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    return events.parse(raw)


ONE, ZERO, OTHER = b"\x01" * 8, b"\x00" * 8, b"\x09" * 8
#: A live chain past its deadline when the count began (NOW + 100), one not yet past it.
OVERDUE = _image(1, ONE, deadline={"N": str(NOW + 50)})
DUE_LATER = _image(1, ONE, deadline={"N": str(NOW + 150)})
FAILED = _image(2, ONE, failed_at={"N": str(NOW + 10)}, reason={"S": "lost"})
#: (record, what it does to (open, overdue, failed) after a count that began at NOW + 100)
RECORDS: list[tuple[str, events.StreamRecord, tuple[int, int, int]]] = [
    (
        "created",
        _record("INSERT", None, _image(1, ONE, created_at={"N": str(NOW + 200)})),
        (1, 0, 0),
    ),
    ("created before the count began", _record("INSERT", None, _image(1, ONE)), (0, 0, 0)),
    ("stamped", _record("MODIFY", _image(1, ONE), _image(2, OTHER)), (0, 0, 0)),
    (
        "acked",
        _record("MODIFY", DUE_LATER, _image(2, ZERO, acked_at={"N": str(NOW + 120)})),
        (-1, 0, 0),
    ),
    (
        "failed before its deadline",
        _record("MODIFY", DUE_LATER, {**FAILED, "failed_at": {"N": str(NOW + 120)}}),
        (-1, 0, 1),
    ),
    (
        "an overdue chain failed",  # by an operator's fail, not a sweep: it was overdue
        _record("MODIFY", OVERDUE, {**FAILED, "failed_at": {"N": str(NOW + 120)}}),
        (-1, -1, 1),
    ),
    ("an overdue chain deleted", _removal(OVERDUE), (-1, -1, 0)),
    ("a chain due later deleted", _removal(DUE_LATER), (-1, 0, 0)),
    ("a failed chain expired", _removal(FAILED, by_ttl=True), (0, 0, -1)),
    (
        "a failed chain's tag created again",
        _record(
            "MODIFY",
            FAILED,
            _image(1, ONE, chain_id=_b64(OTHER), created_at={"N": str(NOW + 200)}),
        ),
        (1, 0, -1),
    ),
]


class FixedCounts:
    """An inventory whose counts are given."""

    def __init__(self, **counted: int) -> None:
        self.counted = counted

    async def count(self, status: str) -> int:
        return self.counted[status]


@pytest.mark.parametrize(
    ("record", "change"), [r[1:] for r in RECORDS], ids=[r[0] for r in RECORDS]
)
async def test_what_each_record_does_to_the_counts(
    record: events.StreamRecord, change: tuple[int, int, int]
) -> None:
    """The counts of a count that began at NOW + 100, moved by one record.  A failed
    chain's tag created again, and an overdue chain deleted or failed by hand, left the
    failed and overdue counts too high until the next count."""
    counts = Counts(FixedCounts(open=10, overdue=5, failed=7), clock=lambda: NOW + 100)  # type: ignore[arg-type]
    await counts.refresh()
    counts.note(moves_of(record, events.events_of(record), "tagID"))
    after = tuple(count.value for count in counts.now())
    assert after == (10 + change[0], 5 + change[1], 7 + change[2])


@pytest.mark.parametrize(
    ("dated", "change"),
    [(NOW + 100 - 40, -1), (NOW + 100 - 61, 0)],
    ids=["in-the-minute-the-count-began", "a-minute-before"],
)
async def test_a_deletion_dated_by_a_rounded_time_moves_the_count_it_may_follow(
    dated: float, change: int
) -> None:
    """A deletion's time is its stream record's, rounded down (to the minute on DynamoDB
    Local): one made just after a count began read as made before it, and the open count
    kept the chain until the next count (an hour with ``--count-every 3600``)."""
    now = [NOW + 100.0]
    counts = Counts(FixedCounts(open=10, overdue=5, failed=7), clock=lambda: now[0])  # type: ignore[arg-type]
    await counts.refresh()  # began at NOW + 100
    now[0] = NOW + 105  # the record comes after it began
    record = _removal(DUE_LATER, at=dated)
    counts.note(moves_of(record, events.events_of(record), "tagID"))
    assert counts.now()[0].value == 10 + change


def test_a_chains_history_from_its_records() -> None:
    history = History(max_tags=2, max_entries=3)
    one, two, zero = b"\x01" * 8, b"\x02" * 8, b"\x00" * 8
    records = [
        _record("INSERT", None, _image(1, one)),
        _record("MODIFY", _image(1, one), _image(2, two)),
        _record("MODIFY", _image(2, two), _image(3, two, deadline={"N": "1800000600"})),
        _record("MODIFY", _image(3, two), _image(4, zero, acked_at={"N": "1800000004"})),
    ]
    for record in records:
        history.add("file-7", entries_of(record, events.events_of(record)))
    story = history.of("file-7")
    assert story is not None
    assert [(e.what, e.version) for e in story.entries] == [
        ("created", 1),
        ("touched", 3),  # the first entry is kept, the oldest after it dropped
        ("acked", 4),
    ]
    assert story.dropped == 1 and story.entries[0].stamp == one
    history.add("b", entries_of(records[0], events.events_of(records[0])))
    history.add("c", entries_of(records[0], events.events_of(records[0])))
    assert history.of("file-7") is None and len(history) == 2  # least recently written


def test_a_replayed_fleet_job_with_a_long_history_is_still_one() -> None:
    """A history keeps its first entry and its latest ones: a job replayed once whose new
    run wrote more than the rest hold lost its own creation (the first, kept, was the
    earlier generation's), and with the root's token out of the chain's window too, its
    page dropped Replay and the POST was "Not a fleet job".  The latest creation is kept."""
    tag = "fleet/job-big"
    first = stamp_of(root_id(tag))
    gen1, gen2 = b"\x01" * 8, b"\x02" * 8
    history = History(max_entries=40)
    history.add(tag, [Entry(1.0, "created", 1, gen1, "", first)])
    history.add(tag, [Entry(2.0, "failed", 2, gen1, "dead-letter", new_stamp())])
    history.add(tag, [Entry(3.0, "created", 1, gen2, "", first)])  # Fleet.replay
    for n in range(45):  # its messages' stamps
        history.add(tag, [Entry(4.0 + n, "stamped", 2 + n, gen2, "", new_stamp())])
    story = history.of(tag)
    assert story is not None and story.dropped > 0 and len(story.entries) == 40
    assert [e.chain_id for e in story.entries if e.what == "created"] == [gen1, gen2]
    state = ChainState(
        tag, new_stamp(), gen2, 47, tuple(new_stamp(8) for _ in range(64)), 3.0, 49.0
    )  # the root's write out of the token window
    assert fleet_job(tag, state, story)


def test_cursors_round_trip_and_refuse_anything_else() -> None:
    positions: list[object] = [None] * INVENTORY_SHARDS
    positions[3] = ("job/7", "1800000000.5")
    positions[4] = "done"
    cursor = encode_cursor("open", positions)  # type: ignore[arg-type]
    assert decode_cursor("open", cursor)[3] == ("job/7", "1800000000.5")
    with pytest.raises(BadCursor):
        decode_cursor("failed", cursor)  # another list's
    for bad in ("", "%%%", base64.urlsafe_b64encode(b"[1,2]").decode()):
        with pytest.raises(BadCursor):
            decode_cursor("open", bad)
    forged = [None] * INVENTORY_SHARDS
    forged[0] = ["x", "not a number"]  # type: ignore[call-overload]
    raw = base64.urlsafe_b64encode(zlib.compress(json.dumps(["open", forged]).encode()))
    with pytest.raises(BadCursor, match="not a \\(tag, number\\)"):
        decode_cursor("open", raw.decode())
    bomb = base64.urlsafe_b64encode(zlib.compress(b"[" * 10_000_000, 9)).decode()
    assert len(bomb) < 20_000
    with pytest.raises(BadCursor, match="not one this dashboard made"):  # not inflated whole
        decode_cursor("open", bomb)
    # Sixteen tags of 2,000 bytes sharing their path (as files' do) fit a URL easily.
    long = [(f"s3a://lake/{'deep/' * 398}part-{i:05d}", "1800000000.5") for i in range(16)]
    cursor = encode_cursor("open", long)  # type: ignore[arg-type]
    assert len(cursor) < 1_000 and decode_cursor("open", cursor) == long


def _forged(raw: bytes) -> str:
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode()


NOT_A_POSITION = "not a \\(tag, number\\)"


@pytest.mark.parametrize(
    ("position", "why"),
    [
        # numbers DynamoDB refuses in a key: each was a 502 "DynamoDB refused" page
        (["job/7", "1" * 39], NOT_A_POSITION),  # 38 significant digits at most
        (["job/7", "1e200"], NOT_A_POSITION),  # below 1E+126
        (["job/7", "1e-200"], NOT_A_POSITION),  # above 1E-130, or 0
        # tags DynamoDB cannot hold: 2,048 bytes of UTF-8 at most
        (["x" * 2049, "1800000000.5"], NOT_A_POSITION),
        (["\ud800", "1800000000.5"], NOT_A_POSITION),  # a lone surrogate is no UTF-8
    ],
)
def test_a_forged_cursor_is_a_bad_cursor_not_an_error(position: list[str], why: str) -> None:
    """Cursors this dashboard never makes, that got past ``decode_cursor`` to DynamoDB."""
    positions: list[object] = [None] * INVENTORY_SHARDS
    positions[0] = position
    with pytest.raises(BadCursor, match=why):
        decode_cursor("open", _forged(json.dumps(["open", positions]).encode()))


def test_a_cursor_nested_too_deep_is_a_bad_cursor() -> None:
    """163 characters of URL inflate to 100,000 brackets: json.loads raised RecursionError,
    a 500 page and a traceback in the server's log."""
    deep = _forged(b"[" * 50_000 + b"]" * 50_000)
    assert len(deep) < 200
    with pytest.raises(BadCursor, match="not one this dashboard made"):
        decode_cursor("open", deep)


def _request(
    cookie: str = "", headers: dict[str, str] | None = None, name: str | None = None
) -> Request:
    sent = {"host": "127.0.0.1:8321", **(headers or {})}
    if cookie:
        sent["cookie"] = f"{name or Guard('a-token-of-enough-length').cookie}={cookie}"
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/",
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in sent.items()],
    }
    return Request(scope)


@pytest.mark.parametrize(
    ("path", "query", "expected"),
    [
        ("/chains", b"status=failed&token=", "/chains?status=failed"),
        ("/", b"token=", "/"),
        ("//evil.example/", b"token=", "/evil.example/"),  # not //host: another site
        ("/\\evil.example/", b"token=", "/%5Cevil.example/"),  # nor /\\host (Starlette)
    ],
)
def test_the_login_redirect_is_a_path_on_this_site(path: str, query: bytes, expected: str) -> None:
    token = "a-token-of-enough-length"
    scope = {
        "type": "http",
        "method": "GET",
        "scheme": "https",  # as a proxy's X-Forwarded-Proto makes it
        "path": path,
        "query_string": query + token.encode(),
        "headers": [(b"host", b"127.0.0.1:8321")],
        "server": ("127.0.0.1", 8321),
    }
    assert Guard(token).login(Request(scope)) == expected


def test_sessions_are_signed_by_the_token() -> None:
    guard = Guard("a-token-of-enough-length", LOOPBACK_HOSTS)
    session = guard.new_session()
    assert guard.session_of(_request(session)) == session
    tampered = session[:-1] + ("0" if session[-1] != "0" else "1")
    assert guard.session_of(_request(tampered)) is None
    other = Guard("another-token-entirely")
    assert other.session_of(_request(session, name=other.cookie)) is None
    assert guard.csrf_for(session) != guard.csrf_for(guard.new_session())
    with pytest.raises(Refused) as refused:
        guard.check_host(_request(headers={"host": "rebound.example:8321"}))
    assert refused.value.status == 400
    guard.check_host(_request(headers={"host": "localhost:8321"}))


def test_two_dashboards_on_one_host_keep_their_own_sessions() -> None:
    """Browsers keep cookies per host, not per port: two dashboards on 127.0.0.1 (two
    tables, two ports) shared one cookie name, so opening the second replaced the
    first's session and its pages answered 401 until its link was opened again."""
    first, second = Guard("the-first-dashboards-token"), Guard("the-second-dashboards-token")
    assert first.cookie != second.cookie and first.cookie.startswith(COOKIE)
    assert Guard("the-first-dashboards-token").cookie == first.cookie  # a restart keeps it
    one, two = first.new_session(), second.new_session()
    both = {"cookie": f"{first.cookie}={one}; {second.cookie}={two}"}
    assert first.session_of(_request(headers=both)) == one
    assert second.session_of(_request(headers=both)) == two


def test_only_loopback_serves_without_a_chosen_token() -> None:
    assert bind_check("127.0.0.1", False) == LOOPBACK_HOSTS
    assert bind_check("::1", False) == LOOPBACK_HOSTS
    assert is_loopback("127.0.0.2") and not is_loopback("0.0.0.0")
    with pytest.raises(ConfigError, match="token"):
        bind_check("0.0.0.0", False)
    assert bind_check("0.0.0.0", True) is None


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ({"token": "too-short"}, "at least 16 characters"),
        (
            {"count_every": "5"},
            "count_every must be a number of seconds above 0 and at most 86400, not '5'",
        ),
        ({"stream_interval": True}, "stream_interval must be a number of seconds"),
        ({"page_size": 0}, "page_size must be an int from 1 to 500"),
    ],
)
def test_a_setting_that_cannot_work_is_one_error_of_the_package(
    setting: dict[str, object], says: str
) -> None:
    """ConfigError is an InvalidArgument, so ``except XorAckError`` catches it (and a
    ValueError, as before); a setting of the wrong type is one too, not a bare TypeError."""
    with pytest.raises(ConfigError, match=re.escape(says)) as refused:
        DashboardConfig(**setting)  # type: ignore[arg-type]
    assert isinstance(refused.value, InvalidArgument) and isinstance(refused.value, ValueError)
    assert isinstance(refused.value, XorAckError)


def test_a_request_met_by_the_closing_client_is_no_bad_input() -> None:
    """A request still running while the server shuts down meets ``ClientClosed``: it was
    a 400 "Bad input", blaming the request; it is the server's state (503)."""
    refused = refusal_of(ClientClosed("async with XorAckDynamoDB.connect(...)"))
    assert (refused.status, refused.title) == (503, "Shutting down")


async def test_live_notices_are_coalesced_and_end_on_close() -> None:
    live = Broadcaster(overview_every=0.05, tags_every=0.01)
    stream = live.stream()
    assert await anext(stream) == "retry: 2000\n\n"
    waiting = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    live.changed({"b"})
    live.changed({"a", "<x>"})
    live.overview()
    assert await asyncio.wait_for(waiting, 2) == 'event: changed\ndata: ["<x>", "a", "b"]\n\n'
    assert await asyncio.wait_for(anext(stream), 2) == "event: overview\ndata: \n\n"
    ending = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    live.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(ending, 2)
    assert live.subscribers == 0


async def test_a_live_stream_ends_by_itself_after_its_lifetime_saying_so() -> None:
    """A server asked to stop waits for open responses (a host service's lifespan ends the
    dashboard only after): each stream ends after ``lifetime`` with an ``again`` message,
    heartbeats on the way, and is unsubscribed."""
    live = Broadcaster(lifetime=0.3)
    started = asyncio.get_running_loop().time()
    said = [message async for message in live.stream()]
    took = asyncio.get_running_loop().time() - started
    assert said == ["retry: 2000\n\n", "event: again\ndata: \n\n"]
    assert 0.3 <= took < 2.0 and live.subscribers == 0


async def test_a_live_stream_ends_when_cancelled_just_as_a_notice_arrives() -> None:
    """A browser leaves as a notice comes in: its stream's task ends, it is unsubscribed."""
    for turns in range(6):
        live = Broadcaster(overview_every=0.0, tags_every=0.0)

        async def read(stream: Any) -> None:
            async for _ in stream:
                pass

        task = asyncio.create_task(read(live.stream()))
        while live.subscribers == 0:
            await asyncio.sleep(0)
        for _ in range(3):  # into the wait for the next notice
            await asyncio.sleep(0)
        live.changed({"a"})  # sent on the loop's next turn
        for _ in range(turns):
            await asyncio.sleep(0)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=2.0)
        assert task in done and task.cancelled(), f"still streaming after {turns} turns"
        assert live.subscribers == 0


def test_what_the_pages_print() -> None:
    assert when(1_800_000_000.25) == "2027-01-15 08:00:00.250Z"
    # in milliseconds (another program's expires_at): a year past 9999, a 500 page
    assert when(1_800_000_000_250) == "1.8e+12 (no date)"
    assert [duration(s) for s in (0.012, 1.5, 243, 7500, 200_000)] == [
        "12 ms",
        "1.50 s",
        "4 min 3 s",
        "2 h 5 min",
        "2 d 7 h",
    ]
    assert url("/", "chain", tag="a/b c&d=<e>") == "/chain?tag=a%2Fb+c%26d%3D%3Ce%3E"
    chart = per_minute([(NOW + 60 * i, i, 1) for i in range(60)])
    assert chart.top == 100 and len(chart.bars) == 60 and chart.labels[-1][2] == "end"


def test_a_rows_tag_key_survives_html_attributes_and_escapes_nothing() -> None:
    """HTML makes an attribute's CR and CR LF LF, and its NUL U+FFFD: the key the script
    matches a row by is the tag percent-encoded, which has none of those, nor anything
    to escape, and decodes (decodeURIComponent) to the tag exactly."""
    tags = [
        "a\rb",
        "a\r\nb",
        "a\nb",
        "a\0b",
        '"><img src=x onerror=alert(1)>',
        "文/é 𝄞",
        "x" * 2048,
    ]
    for tag in tags:
        key = tag_key(tag)
        assert re.fullmatch(r"[A-Za-z0-9_.~%-]+", key) and unquote(key) == tag
    assert len({tag_key(tag) for tag in tags}) == len(tags)
    template = Renderer().env.from_string('<tr data-key="{{ tag | tag_key }}">')
    assert template.render(tag="a\r\nb") == '<tr data-key="a%0D%0Ab">'


def test_how_deep_json_text_nests() -> None:
    """Brackets in strings (escaped quotes too) are not nesting; no recursion either."""
    assert nesting("3") == 0 and nesting('"[{"') == 0 and nesting("[]") == 1
    assert nesting('{"a":"[[\\"[","b":[[{}]]}') == 4
    assert nesting("[" * 100_000 + "]" * 100_000) == 100_000


class FakeIndex:
    """An index of the shape DynamoDB Query answers: per shard, sorted; Limit counts the
    entries examined, a filter drops entries after that, LastEvaluatedKey is the last one
    examined."""

    def __init__(self, entries: dict[int, list[tuple[float, str]]]) -> None:
        self.entries = {shard: sorted(found) for shard, found in entries.items()}
        self.queries = 0

    async def query(self, **request: object) -> dict[str, object]:
        self.queries += 1
        values = request["ExpressionAttributeValues"]
        assert isinstance(values, dict)
        shard = int(values[":s"]["N"])
        rows = list(self.entries.get(shard, []))
        if request.get("ScanIndexForward") is False:
            rows.reverse()
        start = request.get("ExclusiveStartKey")
        if isinstance(start, dict):
            position = (float(start["due_at"]["N"]), start["tagID"]["S"])
            rows = rows[rows.index(position) + 1 :]
        limit = request["Limit"]
        assert isinstance(limit, int)
        examined, more = rows[:limit], len(rows) > limit
        prefix = values.get(":p", {"S": ""})["S"]
        items = [
            {"tagID": {"S": tag}, "open_shard": {"N": str(shard)}, "due_at": {"N": repr(due)}}
            for due, tag in examined
            if tag.startswith(prefix)
        ]
        answer: dict[str, object] = {"Items": items}
        if more:
            due, tag = examined[-1]
            answer["LastEvaluatedKey"] = {
                "tagID": {"S": tag},
                "open_shard": {"N": str(shard)},
                "due_at": {"N": repr(due)},
            }
        return answer


@pytest.mark.parametrize("prefix", ["", "a/", "b/7"])
@pytest.mark.parametrize("size", [1, 7, 50])
async def test_pages_merge_the_shards_in_one_order_each_entry_once(prefix: str, size: int) -> None:
    import random

    from xor_ack_dynamodb.dashboard.inventory import Inventory

    rng = random.Random(size)
    entries: dict[int, list[tuple[float, str]]] = {s: [] for s in range(INVENTORY_SHARDS)}
    for i in range(700):
        tag = f"{rng.choice('ab')}/{i}"
        entries[rng.randrange(INVENTORY_SHARDS)].append((float(rng.randrange(10_000)), tag))
    index = FakeIndex(entries)
    inventory = Inventory(index, "t", "tagID")
    expected = sorted(e for found in entries.values() for e in found if e[1].startswith(prefix))
    got: list[tuple[float, str]] = []
    cursor = None
    pages = 0
    while True:
        page = await inventory.page("open", size=size, cursor=cursor, prefix=prefix, budget=64)
        got += [(entry.sort, entry.tag) for entry in page.entries]
        assert page.queries <= 64
        pages += 1
        cursor = page.cursor
        if cursor is None:
            break
    assert sorted(got) == expected and len(set(got)) == len(got)  # each entry once
    assert [due for due, _ in got] == sorted(due for due, _ in got)  # one order (ties: any)
    assert pages <= len(expected) // size + 2  # full pages, whatever the filter
    if prefix == "b/7":  # rare matches: shards examined past them are not queried again
        assert index.queries <= 16 * 3


async def test_a_prefix_page_queries_a_shard_again_only_when_it_must() -> None:
    """100 matches among 24,000 entries, due first, in one shard: one query per shard finds
    them, and the shards examined past them (no match) are not queried again to prove it."""
    from xor_ack_dynamodb.dashboard.inventory import Inventory

    entries: dict[int, list[tuple[float, str]]] = {s: [] for s in range(INVENTORY_SHARDS)}
    for i in range(24_000):
        early = i < 100
        tag = f"hit/{i}" if early else f"other/{i}"
        shard = 0 if early else i % INVENTORY_SHARDS  # the hits in one shard, the rest in all
        entries[shard].append((float(i if early else 1000 + i), tag))
    index = FakeIndex(entries)
    page = await Inventory(index, "t", "tagID").page("open", size=50, prefix="hit/")
    assert [entry.tag for entry in page.entries] == [f"hit/{i}" for i in range(50)]
    assert page.queries == index.queries == INVENTORY_SHARDS


class CountsAtOnce:
    """An inventory whose counts answer at once (Counts.run only awaits them)."""

    async def count(self, status: str) -> int:
        return 0


async def test_counting_stops_when_cancelled_just_as_a_recount_was_asked_for() -> None:
    """An action asks for a recount, then the dashboard closes: the counting task ends.

    Whatever the loop's turns between the two, the cancel must not be lost (it was with
    ``asyncio.wait_for`` on Python 3.11, and ``Dashboard.close`` waited for a task that
    went on counting)."""
    for turns in range(4):
        counts = Counts(CountsAtOnce(), every=60.0)  # type: ignore[arg-type]
        task = asyncio.create_task(counts.run())
        while counts.refreshes == 0:
            await asyncio.sleep(0)
        for _ in range(2):  # into the wait for the next recount
            await asyncio.sleep(0)
        counts.request()
        for _ in range(turns):
            await asyncio.sleep(0)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=2.0)
        assert task in done and task.cancelled(), f"still counting after {turns} turns"


class CountsRefusedOnCue:
    """An inventory whose "open" count fails when ``fail`` is set (DynamoDB refused the
    connection) while the other two wait for an answer that does not come."""

    def __init__(self) -> None:
        self.fail = asyncio.Event()
        self.asked = 0

    async def count(self, status: str) -> int:
        self.asked += 1
        if status == "open":
            await self.fail.wait()
            raise ConnectionRefusedError("refused")
        await asyncio.Event().wait()
        return 0


async def test_counting_stops_when_cancelled_as_a_count_fails() -> None:
    """A count whose request fails in the same turn as the dashboard closes: the counting
    task ends.  ``asyncio.gather`` gave the task the request's error instead of the cancel,
    the loop took it for a failed count, went on, and ``close()`` waited on it forever
    (a 300 s hang of the DynamoDB-down test, on a loaded machine)."""
    inventory = CountsRefusedOnCue()
    counts = Counts(inventory, every=60.0)  # type: ignore[arg-type]
    task = asyncio.create_task(counts.run())
    while inventory.asked < len(STATUSES):
        await asyncio.sleep(0)
    inventory.fail.set()
    await asyncio.sleep(0)  # the count's error is raised; the gathering hears of it next turn
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=2.0)
    assert task in done and task.cancelled(), counts.error


async def test_requests_side_by_side_end_together_and_leave_no_cancel_behind() -> None:
    """One request fails: its error is raised as itself, the others are stopped (not left
    running on a client about to close), and the caller's task holds no cancel request
    (a TaskGroup on Python 3.11 left one, and the next page read it as a cancel)."""
    stopped: list[str] = []

    async def refused() -> int:
        await asyncio.sleep(0)
        raise ConnectionRefusedError("refused")

    async def waiting(name: str) -> int:
        try:
            await asyncio.Event().wait()
        finally:
            stopped.append(name)
        return 0

    with pytest.raises(ConnectionRefusedError):
        await every([waiting("a"), refused(), waiting("b")])
    assert sorted(stopped) == ["a", "b"]
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    assert await every([asyncio.sleep(0, result=n) for n in range(3)]) == [0, 1, 2]
    assert await every([]) == []


class FlakyStream:
    """A stream of one shard holding ``records``, whose second DescribeStream fails: as a
    network blip or a throttle does to a dashboard that follows a stream for hours."""

    class exceptions:
        class ExpiredIteratorException(Exception):
            pass

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records
        self.describes = 0

    def describe_stream(self, **kwargs: Any) -> dict[str, Any]:
        self.describes += 1
        if self.describes == 2:
            raise ConnectionError("the network dropped for a moment")
        shard = {"ShardId": "shard-1", "SequenceNumberRange": {"StartingSequenceNumber": "1"}}
        return {"StreamDescription": {"Shards": [shard]}}

    def get_shard_iterator(self, **kwargs: Any) -> dict[str, Any]:
        return {"ShardIterator": kwargs["ShardIteratorType"]}

    def get_records(self, ShardIterator: str) -> dict[str, Any]:
        batch = self.records if ShardIterator == "TRIM_HORIZON" else []
        return {"Records": batch, "NextShardIterator": "AFTER"}


async def test_a_stream_error_does_not_read_the_stream_again_from_its_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A failed DescribeStream is retried where the reader was: read again from the oldest
    record, every chain's history showed each entry twice and the counts moved twice."""
    monkeypatch.setattr(follower, "REFRESH_SHARDS", 0.0)
    monkeypatch.setattr(follower, "RETRY", 0.01)
    body = {"Keys": {"tagID": {"S": "file-7"}}, "SequenceNumber": "1", "StreamViewType": "x"}
    created = {**body, "NewImage": _image(1, b"\x01" * 8)}
    record = {"eventID": "1", "eventName": "INSERT", "dynamodb": created}
    streams = FlakyStream([record])
    heard: list[Move] = []
    history = History()
    reader = Follower(
        streams,
        "tagID",
        Windows(),
        history,
        lambda found, tags, live: heard.extend(found),
        asyncio.get_running_loop(),
        interval=0.01,
    )
    reader.start("arn:stream")
    try:
        for _ in range(500):
            await asyncio.sleep(0.01)
            if streams.describes >= 4:
                break
    finally:
        await asyncio.to_thread(reader.stop)
    assert streams.describes >= 4, "the reader did not go on after the error"
    story = history.of("file-7")
    assert story is not None
    assert [entry.what for entry in story.entries] == ["created"]
    assert [(move.open, move.failed) for move in heard] == [(1, 0)]  # once


def test_a_cursor_too_long_for_a_link_is_kept_under_one_short_name() -> None:
    kept = KeptCursors(kept=2)
    assert kept.named(None) is None and kept.named("short") == "short"
    assert kept.cursor("short") == "short"
    first, second, third = ("a" * 3_000, "b" * 3_000, "c" * 3_000)
    name = kept.named(first)
    assert name is not None and name.startswith("~") and len(name) == 17
    assert kept.named(first) == name and kept.cursor(name) == first
    second_name = kept.named(second)
    kept.cursor(name)  # used again: the most recent
    kept.named(third)  # drops the least recently used: the second
    assert kept.cursor(name) == first
    with pytest.raises(BadCursor, match="no longer kept by the dashboard"):
        kept.cursor("~never-made")
    with pytest.raises(BadCursor):
        kept.cursor(second_name or "")
    assert kept.named(second) not in (None, second_name)  # kept anew, under a new name
