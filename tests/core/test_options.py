"""The constructors' options: a value no chain could work with is refused at construction."""

from __future__ import annotations

import re
from typing import Any

import aioboto3
import pytest

from xor_ack_dynamodb import Stamp, XorAckDynamoDB, new_stamp
from xor_ack_dynamodb.dynamodb._core.validate import MAX_TOKEN_WINDOW
from xor_ack_dynamodb.errors import InvalidArgument, InvalidStamp
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client


@pytest.mark.parametrize("window", [MAX_TOKEN_WINDOW + 1, 10**6])
async def test_a_token_window_no_chain_item_could_hold_is_refused_at_construction(
    kind: str, local: tuple[str, TableSpec], window: int
) -> None:
    endpoint, spec = local
    with pytest.raises(
        InvalidArgument, match=rf"token_window .*2 to {MAX_TOKEN_WINDOW}\b.*{window}"
    ):
        async with open_client(kind, endpoint, spec.name, token_window=window):
            pass


async def test_the_largest_token_window_fills_one_dynamodb_item(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """At the bound, the smallest chain (a 1-byte tag and stamp) is created and its item
    holds the whole window of tokens on DynamoDB Local; a longer stamp does not fit."""
    endpoint, spec = local
    async with open_client(kind, endpoint, spec.name, token_window=MAX_TOKEN_WINDOW) as ack:
        with pytest.raises(InvalidStamp, match="token_window"):
            await ack.create("t", Stamp(b"\x01" * 16))
        await ack.create("t", Stamp(b"\x01"))
        half = MAX_TOKEN_WINDOW // 2
        for round_ in range(2):  # two writes of half the window each, every token distinct
            state = await ack.get("t")
            stamps = [(b"\x02", f"{round_}-{i}") for i in range(half)]
            await ack.stamp_on_many(state, stamps)
        state = await ack.get("t")
        assert len(state.tokens) == MAX_TOKEN_WINDOW
        assert state.holds(f"1-{half - 1}") and not state.acked


def test_the_bound_is_where_the_smallest_chain_stops_fitting() -> None:
    from xor_ack_dynamodb.dynamodb._core.validate import MAX_ITEM_BYTES, transaction_bytes

    smallest = Stamp(b"\x01")
    assert transaction_bytes("t", smallest, MAX_TOKEN_WINDOW) <= MAX_ITEM_BYTES
    assert transaction_bytes("t", smallest, MAX_TOKEN_WINDOW + 1) > MAX_ITEM_BYTES


def test_docs_api_md_gives_the_bound() -> None:
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    assert f"2 to {MAX_TOKEN_WINDOW}," in text


NOT_BOOLS = ["no", 0, 1, None, "False"]


@pytest.mark.parametrize("flag", ["coalesce", "batch_writes"])
@pytest.mark.parametrize("value", NOT_BOOLS, ids=repr)
async def test_an_on_off_option_that_is_no_bool_is_refused_at_construction(
    kind: str, local: tuple[str, TableSpec], flag: str, value: object
) -> None:
    endpoint, spec = local
    with pytest.raises(InvalidArgument, match=rf"{flag} must be True or False, not {value!r}"):
        async with open_client(kind, endpoint, spec.name, **{flag: value}):
            pass


@pytest.mark.parametrize("value", NOT_BOOLS, ids=repr)
async def test_direct_that_is_no_bool_is_refused_at_construction_and_in_connect(
    local: tuple[str, TableSpec], value: object
) -> None:
    endpoint, spec = local
    refusal = rf"direct must be True or False, not {value!r}"
    session = aioboto3.Session()
    async with session.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1") as c:
        with pytest.raises(InvalidArgument, match=refusal):
            XorAckDynamoDB(c, table=spec.name, direct=value)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=refusal):
        async with XorAckDynamoDB.connect(
            table=spec.name,
            endpoint_url=endpoint,
            direct=value,  # type: ignore[arg-type]
        ):
            pass


@pytest.mark.parametrize("flag", ["coalesce", "batch_writes"])
@pytest.mark.parametrize("value", [True, False])
async def test_an_on_off_option_takes_a_bool(
    kind: str, local: tuple[str, TableSpec], flag: str, value: bool
) -> None:
    endpoint, spec = local
    async with open_client(kind, endpoint, spec.name, **{flag: value}) as ack:
        await ack.create("t", Stamp(b"\x01"))
        assert (await ack.stamp("t", Stamp(b"\x01"))).acked


@pytest.mark.parametrize("value", ["no", 1, None], ids=repr)
async def test_stamp_many_transact_that_is_no_bool_is_refused_before_any_request(
    kind: str, local: tuple[str, TableSpec], value: object
) -> None:
    endpoint, spec = local
    async with open_client(kind, endpoint, spec.name) as ack:
        with pytest.raises(
            InvalidArgument, match=rf"transact must be True or False, not {value!r}"
        ):
            await ack.stamp_many({"t": Stamp(b"\x01")}, transact=value)
        assert ack.stats.total_requests == 0


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("clock", 5, "clock must be a function"),
        ("partition_key", "stamp", "partition_key cannot be 'stamp'"),
        ("partition_key", "version", "partition_key cannot be 'version'"),
    ],
)
async def test_a_clock_or_key_no_chain_could_use_is_refused_at_construction(
    kind: str, local: tuple[str, TableSpec], option: str, value: object, says: str
) -> None:
    """A clock that is no function failed at the first write with a bare TypeError; a
    partition key the chain's item uses sent that write, and DynamoDB refused it with a
    raw ClientError.  Both are refused when the client is made (``InvalidArgument``)."""
    endpoint, spec = local
    with pytest.raises(InvalidArgument, match=re.escape(says)):
        async with open_client(kind, endpoint, spec.name, **{option: value}):
            pass


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda ack: ack.create("t", new_stamp(), timeout=10**400), "InvalidTimeout"),
        (lambda ack: ack.create("t", new_stamp(), idle_timeout=10**400), "InvalidTimeout"),
        (lambda ack: ack.create("t", new_stamp(), ttl=10**400), "InvalidTTL"),
        (lambda ack: ack.touch("t", timeout=10**400), "InvalidTimeout"),
        (lambda ack: ack.wait("t", timeout=10**400), "InvalidWait"),
    ],
    ids=["create timeout", "create idle_timeout", "create ttl", "touch", "wait"],
)
async def test_an_int_too_big_for_a_float_is_refused_with_the_typed_error(
    kind: str, local: tuple[str, TableSpec], call: Any, error: str
) -> None:
    from xor_ack_dynamodb import errors

    endpoint, spec = local
    async with open_client(kind, endpoint, spec.name) as ack:
        with pytest.raises(getattr(errors, error)):
            await call(ack)
        assert ack.stats.writes == 0


def test_tombstone_ttl_too_big_for_a_float_is_invalid_argument() -> None:
    import boto3

    from xor_ack_dynamodb import SyncXorAckDynamoDB
    from xor_ack_dynamodb.errors import InvalidArgument

    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:1")
    with pytest.raises(InvalidArgument):
        SyncXorAckDynamoDB(client, table="t", tombstone_ttl=10**400)
