"""Bad input: every hostile argument and every item this client cannot read gets one typed error.

``CASES`` is the table "What bad input gets" of ``docs/bad-input.md``, row for row
(``test_the_doc_table_is_this_list`` keeps them equal).  Each case runs on both
clients against moto and DynamoDB Local, on a table holding a live chain ``good``
and, for the corrupt-item rows, a damaged item ``bad``; it asserts the error and
that every item of the table is byte-identical afterwards (for the ``*_many`` rows:
every item but the good entries', which land).
"""

from __future__ import annotations

import inspect
import math
import re
import time
from array import array
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aioboto3
import boto3
import pytest
from botocore.exceptions import ClientError

from xor_ack_dynamodb import Stamp, SyncXorAckDynamoDB, XorAckDynamoDB, xor
from xor_ack_dynamodb.dynamodb._core.effects import Sleep
from xor_ack_dynamodb.dynamodb._core.many import Chains
from xor_ack_dynamodb.errors import (
    BufferLengthsUnequal,
    CorruptItem,
    CreateManyFailed,
    GetManyFailed,
    InvalidListing,
    InvalidReason,
    InvalidStamp,
    InvalidTag,
    InvalidTimeout,
    InvalidToken,
    InvalidTTL,
    InvalidWait,
    LessThanTwoBuffers,
    NotAChain,
    StampManyFailed,
    TagExists,
    TagNotFound,
    XorAckError,
    ZeroBufferNoOp,
)
from xor_ack_dynamodb.retry import botocore_config
from xor_ack_dynamodb.stamps import as_stamp
from xor_ack_dynamodb.table import TableSpec, create_table

from .facade import SyncFacade, open_client

DOC = Path(__file__).resolve().parents[2] / "docs" / "bad-input.md"
GOOD = Stamp(bytes(range(1, 17)))  # the live chain "good" holds this 16-byte stamp
S = Stamp(bytes(range(101, 117)))  # a valid 16-byte stamp to send
SURROGATE = "\ud800"  # a str that UTF-8 cannot encode
BIG = Stamp(b"\x01" * 410_000)  # no DynamoDB item holds it (400 KB)


def released() -> memoryview:
    view = memoryview(bytes(S))
    view.release()
    return view


def valid_item(tag: str) -> dict[str, Any]:
    """An item as this client writes it (a live chain, stamp ``GOOD``)."""
    return {
        "tagID": {"S": tag},
        "stamp": {"B": bytes(GOOD)},
        "chain_id": {"B": b"chain-id"},
        "version": {"N": "3"},
        "tokens": {"B": b"t" * 16},
        "created_at": {"N": "1700000000.5"},
        "updated_at": {"N": "1700000001"},
    }


def fixed_item(tag: str, deadline: float) -> dict[str, Any]:
    """A live chain with a fixed deadline (a ``timeout``, no ``idle_timeout``)."""
    return {**valid_item(tag), "deadline": {"N": str(deadline)}}


def damaged(**changes: Any) -> dict[str, Any]:
    """``valid_item("bad")`` with attributes replaced (or removed: ``None``)."""
    item = valid_item("bad")
    for name, value in changes.items():
        if value is None:
            item.pop(name)
        else:
            item[name] = value
    return item


#: One damage per way an item can be unreadable: (attribute, item).
DAMAGES: dict[str, tuple[str, dict[str, Any]]] = {
    "stamp missing": ("stamp", damaged(stamp=None)),
    "stamp a string": ("stamp", damaged(stamp={"S": "AAECAwQFBgcICQoLDA0ODw=="})),
    "stamp empty": ("stamp", damaged(stamp={"B": b""})),
    "version missing": ("version", damaged(version=None)),
    "version a string": ("version", damaged(version={"S": "three"})),
    "version fractional": ("version", damaged(version={"N": "1.5"})),
    "version negative": ("version", damaged(version={"N": "-1"})),
    "tokens not a multiple of 8": ("tokens", damaged(tokens={"B": b"12345"})),
    "tokens a string": ("tokens", damaged(tokens={"S": "tttttttt"})),
    "chain_id a number": ("chain_id", damaged(chain_id={"N": "7"})),
    "created_at a string": ("created_at", damaged(created_at={"S": "yesterday"})),
    "expires_at a string": ("expires_at", damaged(expires_at={"S": "never"})),
    "reason a number": ("reason", damaged(reason={"N": "1"})),
    "deadline a string": ("deadline", damaged(deadline={"S": "soon"})),
    "idle_timeout 0": ("idle_timeout", damaged(idle_timeout={"N": "0"})),
}


@dataclass(frozen=True)
class Case:
    """One row of the table: the input, the call, the error, what may change."""

    id: str
    call: Callable[[Any], Any]
    error: type[XorAckError]
    #: A damage of DAMAGES put under the tag "bad" before the call.
    damage: str | None = None
    #: For ``*_many`` rows: the error of the entry "bad" (the good entries succeed).
    entry_error: type[XorAckError] | None = None
    #: Items the call may change (the good entries of a ``*_many`` row).
    changes: tuple[str, ...] = field(default=())


#: Damages every operation is run against (a wrong type, and a shape no condition sees).
OP_DAMAGES = ("stamp a string", "tokens not a multiple of 8")


def corrupt_cases() -> list[Case]:
    cases = [Case(f"get: {name}", lambda a: a.get("bad"), CorruptItem, name) for name in DAMAGES]
    for name in OP_DAMAGES:
        cases += [
            Case(f"stamp: {name}", lambda a: a.stamp("bad", S), CorruptItem, name),
            Case(
                f"stamp with token: {name}",
                lambda a: a.stamp("bad", S, token="t1"),
                CorruptItem,
                name,
            ),
            Case(
                f"stamp_many: {name}",
                lambda a: a.stamp_many({"bad": S, "good": S}),
                StampManyFailed,
                name,
                CorruptItem,
                ("good",),
            ),
            Case(
                f"stamp_many transact: {name}",
                lambda a: a.stamp_many({"bad": S, "good": S}, transact=True),
                StampManyFailed,
                name,
                CorruptItem,
                ("good",),
            ),
            Case(
                f"get_many: {name}",
                lambda a: a.get_many(["bad", "good"]),
                GetManyFailed,
                name,
                CorruptItem,
            ),
            Case(f"create: {name}", lambda a: a.create("bad", S), CorruptItem, name),
            Case(
                f"create_many: {name}",
                lambda a: a.create_many({"bad": S, "new": S, "new2": S}),
                CreateManyFailed,
                name,
                CorruptItem,
                ("new", "new2"),
            ),
            Case(f"fail: {name}", lambda a: a.fail("bad"), CorruptItem, name),
            Case(f"wait: {name}", lambda a: a.wait("bad", timeout=1), CorruptItem, name),
        ]
    return cases


CASES: list[Case] = [
    # -- tags
    Case("tag empty", lambda a: a.create("", S), InvalidTag),
    Case("tag over 2048 bytes", lambda a: a.stamp("é" * 1025, S), InvalidTag),
    Case("tag not encodable: create", lambda a: a.create(SURROGATE, S), InvalidTag),
    Case("tag not encodable: get", lambda a: a.get("x" + SURROGATE), InvalidTag),
    Case("tag not encodable: stamp_many", lambda a: a.stamp_many({SURROGATE: S}), InvalidTag),
    Case("tag not a str", lambda a: a.get(42), InvalidTag),
    Case("get_many of a str", lambda a: a.get_many("good"), InvalidTag),
    Case("get_many of None", lambda a: a.get_many(None), InvalidTag),
    # -- stamps
    Case("stamp all zeros", lambda a: a.stamp("good", bytes(16)), ZeroBufferNoOp),
    Case("create all zeros", lambda a: a.create("new", bytes(16)), ZeroBufferNoOp),
    Case("stamp empty", lambda a: a.stamp("good", b""), InvalidStamp),
    Case("stamp a str", lambda a: a.stamp("good", "not bytes"), InvalidStamp),
    Case("stamp a released memoryview", lambda a: a.stamp("good", released()), InvalidStamp),
    Case("stamp of another length", lambda a: a.stamp("good", S[:8]), BufferLengthsUnequal),
    Case("create stamp over one item", lambda a: a.create("new", BIG), InvalidStamp),
    Case(
        "create_many stamp over one item",
        lambda a: a.create_many({"new": S, "new2": BIG}),
        InvalidStamp,
    ),
    Case("stamps not a mapping", lambda a: a.stamp_many([("good", S)]), InvalidStamp),
    Case("create_many not a mapping", lambda a: a.create_many(None), InvalidStamp),
    Case("create_many stamp a str", lambda a: a.create_many({"new": "text"}), InvalidStamp),
    Case("stamp_many stamp an int", lambda a: a.stamp_many({"good": 42}), InvalidStamp),
    Case(
        "stamp_many stamp an int, transact",
        lambda a: a.stamp_many({"good": 42}, transact=True),
        InvalidStamp,
    ),
    # -- xor()
    Case("xor of one stamp", lambda a: a.xor(S), LessThanTwoBuffers),
    Case("xor of unequal lengths", lambda a: a.xor(S, S[:8]), BufferLengthsUnequal),
    Case("xor of a str", lambda a: a.xor(S, "text"), InvalidStamp),
    Case("xor of a released memoryview", lambda a: a.xor(released(), S), InvalidStamp),
    Case(
        "xor of 2-byte items, unequal bytes",
        lambda a: a.xor(memoryview(array("H", range(8))), S[:8]),
        BufferLengthsUnequal,
    ),
    # -- tokens
    Case("token not encodable", lambda a: a.stamp("good", S, token=SURROGATE), InvalidToken),
    Case("token an int", lambda a: a.stamp("good", S, token=42), InvalidToken),
    Case("token empty", lambda a: a.stamp("good", S, token=b""), InvalidToken),
    Case("token over 16 bytes", lambda a: a.stamp("good", S, token=b"x" * 17), InvalidToken),
    Case(
        "token for a tag without a stamp",
        lambda a: a.stamp_many({"good": S}, tokens={"other": b"t"}),
        InvalidToken,
    ),
    Case(
        "tokens not a mapping",
        lambda a: a.stamp_many({"good": S}, tokens=[b"t"]),
        InvalidToken,
    ),
    Case(
        "stamp_many token not encodable",
        lambda a: a.stamp_many({"good": S}, tokens={"good": SURROGATE}, transact=True),
        InvalidToken,
    ),
    # -- ttl
    Case("ttl inf", lambda a: a.create("new", S, ttl=math.inf), InvalidTTL),
    Case("ttl nan", lambda a: a.create("new", S, ttl=math.nan), InvalidTTL),
    Case("ttl 0", lambda a: a.create("new", S, ttl=0), InvalidTTL),
    Case("ttl negative", lambda a: a.create("new", S, ttl=-5.0), InvalidTTL),
    Case("ttl a bool", lambda a: a.create("new", S, ttl=True), InvalidTTL),
    Case("ttl a str", lambda a: a.create("new", S, ttl="60"), InvalidTTL),
    Case("ttl over 100 years", lambda a: a.create("new", S, ttl=1e300), InvalidTTL),
    Case("create_many ttl inf", lambda a: a.create_many({"new": S}, ttl=math.inf), InvalidTTL),
    Case("create_many ttl nan", lambda a: a.create_many({"new": S}, ttl=math.nan), InvalidTTL),
    # -- deadlines: timeout, idle_timeout (and a ttl that would end first)
    Case("timeout nan", lambda a: a.create("new", S, timeout=math.nan), InvalidTimeout),
    Case("timeout 0", lambda a: a.create("new", S, timeout=0), InvalidTimeout),
    Case("timeout negative", lambda a: a.create("new", S, timeout=-1), InvalidTimeout),
    Case("timeout a bool", lambda a: a.create("new", S, timeout=True), InvalidTimeout),
    Case("timeout over a year", lambda a: a.create("new", S, timeout=4e7), InvalidTimeout),
    Case("idle_timeout inf", lambda a: a.create("new", S, idle_timeout=math.inf), InvalidTimeout),
    Case("idle_timeout a str", lambda a: a.create("new", S, idle_timeout="9"), InvalidTimeout),
    Case(
        "ttl not longer than the timeout",
        lambda a: a.create("new", S, ttl=60, timeout=60),
        InvalidTTL,
    ),
    Case(
        "create_many timeout nan",
        lambda a: a.create_many({"new": S}, timeout=math.nan),
        InvalidTimeout,
    ),
    Case(
        "create_many ttl shorter than idle_timeout",
        lambda a: a.create_many({"new": S}, ttl=5, idle_timeout=10),
        InvalidTTL,
    ),
    Case("touch timeout 0", lambda a: a.touch("good", timeout=0), InvalidTimeout),
    # A fixed deadline and no idle_timeout: nothing says how far to move it (after one
    # read); past it too, where the refusal came after the timeout write had failed it.
    Case("touch a chain with a fixed timeout only", lambda a: a.touch("fixed"), InvalidTimeout),
    Case("touch it past that deadline", lambda a: a.touch("overdue"), InvalidTimeout),
    # -- the inventory's arguments
    Case("list_chains status unknown", lambda a: drain(a, "done"), InvalidListing),
    Case("list_chains limit negative", lambda a: drain(a, "open", limit=-1), InvalidListing),
    Case("list_chains page_size 101", lambda a: drain(a, "open", page_size=101), InvalidListing),
    Case("sweep page_size 0", lambda a: a.sweep(page_size=0), InvalidListing),
    # -- wait()'s durations
    Case("wait timeout nan", lambda a: a.wait("good", timeout=math.nan), InvalidWait),
    Case("wait timeout negative", lambda a: a.wait("good", timeout=-1), InvalidWait),
    Case(
        "wait poll_interval 0",
        lambda a: a.wait("good", timeout=1, poll_interval=0),
        InvalidWait,
    ),
    Case(
        "wait poll_interval over a year",
        lambda a: a.wait("good", timeout=math.inf, poll_interval=1e10),
        InvalidWait,
    ),
    # -- fail()'s reason
    Case("reason empty", lambda a: a.fail("good", reason=""), InvalidReason),
    Case("reason not encodable", lambda a: a.fail("good", reason=SURROGATE), InvalidReason),
    Case("reason over one item", lambda a: a.fail("good", reason="x" * 410_000), InvalidReason),
    # the deadline's own: a chain failed so was told ChainTimedOut, a timed_out event
    Case("reason the deadline's", lambda a: a.fail("good", reason="timeout"), InvalidReason),
    # -- the chain's state
    Case("create on a live chain", lambda a: a.create("good", S), TagExists),
    Case("stamp an unknown tag", lambda a: a.stamp("missing", S), TagNotFound),
    Case("fail an unknown tag", lambda a: a.fail("missing"), TagNotFound),
    Case("wait on an unknown tag", lambda a: a.wait("missing", timeout=1), TagNotFound),
    Case("delete an unknown tag", lambda a: a.delete("missing"), TagNotFound),
    # -- items this client cannot read
    *corrupt_cases(),
]


async def drain(ack: Any, *args: Any, **options: Any) -> list[Any]:
    """``list_chains`` to its end, on either client (the sync one returns an iterator)."""
    result = ack.list_chains(*args, **options)
    if inspect.isawaitable(result):
        result = await result
    if hasattr(result, "__aiter__"):
        return [state async for state in result]
    return list(result)


def snapshot(raw: Any, table: str) -> dict[str, dict[str, Any]]:
    items = raw.scan(TableName=table, ConsistentRead=True)["Items"]
    return {item["tagID"]["S"]: item for item in items}


@pytest.fixture(scope="module", params=["moto", "ddblocal"])
async def shared(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Any, Any, str]]:
    """(aiobotocore client, boto3 client, table) on each backend, one table for the module.

    Each case empties the table and wraps these clients in a new tracker (own cache):
    a table and a session per case would cost a second each.
    """
    endpoint = request.getfixturevalue(
        "moto_endpoint" if request.param == "moto" else "ddb_local_endpoint"
    )
    spec = TableSpec(name=f"bad-input-{request.param}")
    raw = boto3.client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=botocore_config()
    )
    create_table(raw, spec)
    async with aioboto3.Session().client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=botocore_config()
    ) as client:
        yield client, raw, spec.name
    raw.close()


@pytest.fixture
def fresh(kind: str, shared: tuple[Any, Any, str]) -> tuple[Any, Any, str]:
    """(tracker of ``kind``, raw boto3 client, table): the shared table emptied first."""
    client, raw, table = shared
    for item in raw.scan(TableName=table, ConsistentRead=True)["Items"]:
        raw.delete_item(TableName=table, Key={"tagID": item["tagID"]})
    if kind == "async":
        return XorAckDynamoDB(client, table=table), raw, table
    return SyncFacade(SyncXorAckDynamoDB(raw, table=table)), raw, table


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_bad_input_gets_its_error_and_changes_nothing(
    case: Case, fresh: tuple[Any, Any, str]
) -> None:
    ack, raw, table = fresh
    raw.put_item(TableName=table, Item=valid_item("good"))
    raw.put_item(TableName=table, Item=fixed_item("fixed", time.time() + 3600))
    raw.put_item(TableName=table, Item=fixed_item("overdue", 1700000002))
    if case.damage is not None:
        raw.put_item(TableName=table, Item=DAMAGES[case.damage][1])
    before = snapshot(raw, table)
    with pytest.raises(case.error) as caught:
        result = case.call(ack)
        if inspect.isawaitable(result):
            await result
    error = caught.value
    assert error.code == case.error.__name__
    if case.entry_error is not None:
        assert isinstance(error, (StampManyFailed, CreateManyFailed, GetManyFailed))
        assert set(error.errors) == {"bad"}
        error = error.errors["bad"]
        assert isinstance(error, case.entry_error)
        assert set(caught.value.results) >= set(case.changes)
    if isinstance(error, CorruptItem):
        attribute = DAMAGES[case.damage or ""][0]
        assert error.tag == "bad" and error.attribute == attribute
        assert f'"{attribute}"' in str(error) and "delete" in str(error)
    after = snapshot(raw, table)
    for tag in case.changes:
        after.pop(tag, None)
        before.pop(tag, None)
    assert after == before


def test_the_doc_table_is_this_list() -> None:
    """Every row of the doc's table names one case of CASES, in the same order."""
    text = DOC.read_text()
    section = text.split("## What bad input gets", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)
    assert rows == [case.id for case in CASES]


# -- beyond the table ------------------------------------------------------------


async def test_get_many_failed_carries_the_readable_states(
    ack: Any, raw: Any, backend: tuple[str, TableSpec]
) -> None:
    table = backend[1].name
    raw.put_item(TableName=table, Item=valid_item("good"))
    raw.put_item(TableName=table, Item=DAMAGES["version a string"][1])
    with pytest.raises(GetManyFailed) as caught:
        await ack.get_many(["good", "bad", "missing"])
    assert set(caught.value.results) == {"good", "missing"}
    assert caught.value.results["good"].stamp == GOOD
    assert caught.value.results["missing"] is None
    assert isinstance(caught.value.errors["bad"], CorruptItem)


async def test_delete_removes_a_corrupt_item(
    ack: Any, raw: Any, backend: tuple[str, TableSpec]
) -> None:
    """The remedy CorruptItem names: delete(), then the tag can be created again."""
    table = backend[1].name
    raw.put_item(TableName=table, Item=DAMAGES["expires_at a string"][1])
    await ack.delete("bad")
    assert await ack.get("bad") is None
    assert await ack.create("bad", S) == S


#: Other programs' items under a chain's key: none of a chain's binary attributes.  One
#: has a ``version`` number (optimistic locking, as many ORMs write it), one a ``stamp``
#: string: both were taken for damaged chains, and deleted or written over.
THEIRS = {
    "plain": {"tagID": {"S": "ada"}, "name": {"S": "Ada Lovelace"}},
    "version": {"tagID": {"S": "ada"}, "name": {"S": "Ada"}, "version": {"N": "7"}},
    "stamp a string": {"tagID": {"S": "ada"}, "stamp": {"S": "rubber"}, "tokens": {"N": "2"}},
}


@pytest.mark.parametrize("kind_of_item", THEIRS)
async def test_delete_leaves_an_item_that_is_not_a_chain_alone(
    ack: Any, raw: Any, backend: tuple[str, TableSpec], kind_of_item: str
) -> None:
    """An item with none of a chain's binary attributes (another program's, under the same
    key) is not the package's to delete: NotAChain, and the item stays as it was.  It used
    to be deleted, while every other operation refused it (CorruptItem)."""
    table = backend[1].name
    theirs = THEIRS[kind_of_item]
    raw.put_item(TableName=table, Item=theirs)
    with pytest.raises(CorruptItem) as unread:
        await ack.get("ada")
    assert unread.value.foreign and "another program wrote it" in str(unread.value)
    assert "delete(tag)" not in str(unread.value)  # delete refuses it: no such advice
    with pytest.raises(NotAChain) as caught:
        await ack.delete("ada")
    assert caught.value.tag == "ada" and "not deleted" in str(caught.value)
    assert raw.get_item(TableName=table, Key={"tagID": {"S": "ada"}})["Item"] == theirs


def test_fail_with_a_reason_too_long_for_the_item_is_invalid_reason(
    raw: Any, backend: tuple[str, TableSpec], request: pytest.FixtureRequest
) -> None:
    """A reason that passes the lower bound checked before the write (reason, tag, stamp,
    tokens) but not with the item's other attributes: DynamoDB refuses the write, and that
    is InvalidReason too, not a raw ClientError; the chain stays live."""
    spec = backend[1]
    ack = SyncXorAckDynamoDB(raw, table=spec.name)
    ack.create("r", S)
    state = ack.get("r")
    assert state is not None
    room = 400 * 1024 - len("reason") - len("r") - len(state.stamp) - sum(map(len, state.tokens))
    with pytest.raises(InvalidReason, match="does not fit the chain's DynamoDB item"):
        ack.fail("r", "x" * room)
    if "moto" not in request.node.name:  # moto applies part of a write it then refuses
        after = ack.get("r")
        assert after is not None and after.live and after.version == state.version


@pytest.mark.parametrize("kind_of_item", THEIRS)
@pytest.mark.parametrize("how", ["create", "transactions", "partiql"])
async def test_create_leaves_another_programs_expired_item_alone(
    how: str, ack: Any, raw: Any, backend: tuple[str, TableSpec], kind_of_item: str
) -> None:
    """Another program's item under the key, which happens to have an ``expires_at`` in the
    past (or an ``acked_at``): a closed chain's marks, but none of a chain's binary
    attributes.  No create writes over it: CorruptItem, and the item stays as it was."""
    table = backend[1].name
    theirs = THEIRS[kind_of_item] | {"expires_at": {"N": "1"}, "acked_at": {"N": "1"}}
    raw.put_item(TableName=table, Item=theirs)
    with pytest.raises((CorruptItem, CreateManyFailed)) as caught:
        if how == "create":
            await ack.create("ada", S)
        else:
            await ack.create_many({"ada": S}, via=how)
    error = caught.value
    if isinstance(error, CreateManyFailed):
        error = error.errors["ada"]
    assert isinstance(error, CorruptItem), error
    assert raw.get_item(TableName=table, Key={"tagID": {"S": "ada"}})["Item"] == theirs


@pytest.mark.parametrize("name", (*OP_DAMAGES, "version a string", "stamp empty"))
def test_fail_refuses_an_item_damaged_after_its_read(
    name: str, raw: Any, backend: tuple[str, TableSpec]
) -> None:
    """fail() validates what it read; its write's condition refuses an item damaged since.

    Driven step by step: the read sees a valid chain, the item is then damaged, and
    the write must be refused by DynamoDB (attribute types) and raise CorruptItem.
    The tokens damage is one no condition can see: there the write lands, as stated
    in fail()'s comment, and the test asserts that instead.
    """
    table = backend[1].name
    raw.put_item(TableName=table, Item=valid_item("bad"))
    op = Chains(table=table).fail("bad")
    read = next(op)
    assert read.op == "get_item"
    write = op.send(raw.get_item(**read.params))
    assert not isinstance(write, Sleep) and write.op == "update_item"
    raw.put_item(TableName=table, Item=DAMAGES[name][1])
    before = snapshot(raw, table)
    try:
        raw.update_item(**write.params)
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "ConditionalCheckFailedException"
        with pytest.raises(CorruptItem) as caught:
            effect = op.throw(exc)
            while True:  # a server that leaves ALL_OLD out: the core reads the item
                effect = op.send(getattr(raw, effect.op)(**effect.params))
        assert caught.value.attribute == DAMAGES[name][0]
        assert snapshot(raw, table) == before
        return
    assert name == "tokens not a multiple of 8"  # the one shape a condition cannot check


def test_xor_and_as_stamp_count_bytes_of_wide_memoryviews() -> None:
    """A memoryview of 2-byte items is 2 * len() bytes: xor() and stamps use its bytes."""
    wide = memoryview(array("H", [0x0102, 0x0304, 0x0506, 0x0708]))
    raw_bytes = wide.tobytes()
    assert len(raw_bytes) == 8 and len(wide) == 4
    assert xor(wide, raw_bytes) == bytes(8)
    assert xor(wide, wide, raw_bytes) == raw_bytes
    assert xor(wide, bytes(8)) == raw_bytes
    assert as_stamp(wide) == raw_bytes and len(as_stamp(wide)) == 8


async def test_create_many_over_4_mib_goes_in_smaller_transactions(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """100 chains of 2 KB tags and 40 KB stamps (4.3 MB) fit no transaction: they are split.

    DynamoDB Local enforces the 4 MiB limit (moto does not), so it runs there only.
    """
    endpoint, spec = local
    stamps = {f"{i:03d}".ljust(2048, "t"): Stamp(bytes([i + 1]) * 40_000) for i in range(100)}
    async with open_client(kind, endpoint, spec.name) as ack:
        created = await ack.create_many(stamps)
        assert created == stamps
        assert ack.stats.requests["TransactWriteItems"] == 2
    raw = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    pages = raw.get_paginator("scan").paginate(
        TableName=spec.name, Select="COUNT", ConsistentRead=True
    )
    assert sum(page["Count"] for page in pages) == 100  # a scan page holds 1 MB: ~25 of them
