"""What a handler returns: its children's payloads (an iterable of them) or None.

A str, bytes or dict is iterable too: a handler that returned "ok" got two child jobs,
"o" and "k" (a dict: one per key; bytes: one per byte), and its job went on with
work nobody asked for.  It is the handler's mistake, the same on every receive: the
job fails at once, saying what was returned and what to return, and no child is sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from xor_ack_dynamodb.errors import XorAckError
from xor_ack_dynamodb.fleet import InvalidChildren, Message, SqsBatchHandler, Verdict
from xor_ack_dynamodb.table import TableSpec

from .test_lambda import Box, batch, opener, submit

pytestmark = pytest.mark.ddblocal

WRONG = [
    ("ok", "str"),
    ("", "str"),
    (b"ok", "bytes"),
    (bytearray(b"ok"), "bytearray"),
    ({"a": 1, "b": 2}, "dict"),
    ({}, "dict"),
    (5, "int"),
    (True, "bool"),
]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["plain", "async"])
@pytest.mark.parametrize(("returned", "kind"), WRONG, ids=[kind for _, kind in WRONG])
async def test_a_handler_that_returns_no_children_fails_its_job_and_sends_none(
    harness_factory: Any, returned: Any, kind: str, asynchronous: bool
) -> None:
    def plain(message: Message) -> Any:
        return returned if message.parent_id is None else []

    async def coroutine(message: Message) -> Any:
        return plain(message)

    async with harness_factory(coroutine if asynchronous else plain) as h:
        root = await h.fleet.submit("job-wrong-return", None)
        h.queue.clear()
        with pytest.raises(InvalidChildren) as refused:
            await h.fleet.handle(root.to_json())
        assert isinstance(refused.value, XorAckError) and isinstance(refused.value, TypeError)
        assert refused.value.returned == kind
        says = str(refused.value)
        assert f"returned a {kind}" in says and "return a list of the children's payloads" in says
        assert h.queue == [] and h.completed == []  # not one child went out; not acked
        state = await h.fleet.ack.get("job-wrong-return")
        assert state is not None and state.failed and not state.acked
        assert f"returned a {kind}" in (state.reason or "")
        assert "return a list" in (state.reason or "")
        # Delivered again (the worker leaves a failed message to the queue): dropped.
        assert (await h.fleet.handle(root.to_json())).verdict is Verdict.CLOSED


def _generator(message: Message) -> Iterator[int]:
    if message.payload > 0:
        yield message.payload - 1
        yield message.payload - 1


@pytest.mark.parametrize(
    "handler",
    [
        lambda m: [m.payload - 1] * 2 if m.payload > 0 else None,  # None: no children
        lambda m: (m.payload - 1,) * 2 if m.payload > 0 else (),
        _generator,
        lambda m: iter([m.payload - 1] * 2) if m.payload > 0 else [],
        lambda m: ["ab", {"k": 1}, b"".hex()] if m.payload > 0 else [],  # children may be str
        # A set's order differs between processes: harmless, a child is named by its payload.
        lambda m: {m.payload - 1, -m.payload} if m.payload > 0 else set(),
    ],
    ids=["list-or-none", "tuple", "generator", "iterator", "str-children", "set"],
)
async def test_a_handler_returning_an_iterable_of_payloads_or_none_keeps_working(
    harness_factory: Any, handler: Any
) -> None:
    def guarded(message: Message) -> Any:
        return handler(message) if isinstance(message.payload, int) else None

    async with harness_factory(guarded) as h:
        await h.fleet.submit("job-right-return", 2)
        await h.drain()
        assert [c.tag for c in h.completed] == ["job-right-return"]
        state = await h.fleet.ack.get("job-right-return")
        assert state is not None and state.acked


def test_the_lambda_handler_reports_the_message_and_fails_its_job(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    box = Box()
    open_fleet = opener(ddb_local_endpoint, ddb_table.name, box, handler=lambda m: "ok")
    submit(open_fleet, "lambda-wrong-return", None)
    root = box.sent.pop()
    handler = SqsBatchHandler(open_fleet)
    try:
        response = handler(batch([root.to_json()]), None)
        assert response == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
        assert box.sent == []  # no "o", no "k"

        async def state() -> Any:
            async with open_fleet() as fleet:
                return await fleet.ack.get("lambda-wrong-return")

        chain = asyncio.run(state())
        assert chain is not None and chain.failed and "returned a str" in chain.reason
        # The next delivery finds the job failed: done with, deleted.
        assert handler(batch([root.to_json()], counts=[2]), None) == {"batchItemFailures": []}
    finally:
        handler.environment.close()


@pytest.mark.parametrize(
    ("children", "index", "kind"),
    [
        ([1, {"a", "b"}], 1, "set"),
        ([b"raw"], 0, "bytes"),
        ([{"n": float("nan")}, object()], 1, "object"),
    ],
    ids=["set", "bytes", "object"],
)
async def test_a_child_that_is_no_json_data_fails_the_job_and_sends_no_child(
    harness_factory: Any, children: list[Any], index: int, kind: str
) -> None:
    """A child's payload travels as JSON: one that cannot (a set, bytes, an object) raised a
    bare TypeError from the sender on every receive until the queue gave up on it."""

    def handler(message: Message) -> Any:
        return children if message.parent_id is None else []

    async with harness_factory(handler) as h:
        root = await h.fleet.submit("job-bad-child", None)
        h.queue.clear()
        with pytest.raises(InvalidChildren) as refused:
            await h.fleet.handle(root.to_json())
        assert (refused.value.returned, refused.value.child) == (kind, index)
        assert f"child {index} " in str(refused.value) and "JSON data" in str(refused.value)
        assert h.queue == [] and h.completed == []
        state = await h.fleet.ack.get("job-bad-child")
        assert state is not None and state.failed and f"child {index} " in (state.reason or "")
        assert (await h.fleet.handle(root.to_json())).verdict is Verdict.CLOSED
