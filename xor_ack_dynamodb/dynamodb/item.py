"""The DynamoDB item that holds one chain: attribute names and decoding.

One item per tag::

    <partition_key>  S     the tag (attribute name configurable, default "tagID")
    stamp            B     the chain's XOR state; all zeros once acked
    chain_id         B     random per create: a re-created tag is another chain
    version          N     1 on create, +1 per write; stamps are conditioned on
                           (chain_id, version), so a stale cache can never write
    tokens           B     8-byte tokens of the most recent writes, concatenated, newest
                           last, at most the client's token window: proves whether a re-sent
                           write landed, and makes a stamp with an idempotency token land once
    created_at       N     epoch seconds of create
    updated_at       N     epoch seconds of the last write
    acked_at         N     epoch seconds of the write that made the state zero (tombstones only)
    failed_at        N     epoch seconds of fail() (tombstones only)
    reason           S     why it failed ("failed", "timeout", ...; tombstones only)
    expires_at       N     TTL attribute (epoch seconds): set on tombstones, and on live
                           chains created with a ttl; an item past it counts as absent.
                           Garbage collection only: always later than the deadline
    deadline         N     epoch seconds by which the chain must ack (live chains created
                           with a timeout or idle_timeout); a write after it is refused
                           by its own condition and the chain is failed with "timeout"
    idle_timeout     N     seconds; each landed stamp moves the deadline to now + this
    open_shard       N     live chains only: key of the sparse index OPEN_INDEX,
                           shard_of(tag), so that no index partition runs hot
    due_at           N     live chains only: sort key of OPEN_INDEX, the deadline, or
                           NEVER_DUE for a chain without one ("overdue" is due_at <= now)
    failed_shard     N     failed tombstones only: key of the sparse index FAILED_INDEX
                           (sort key failed_at)

Other attributes a user adds survive every write: all writes are UpdateItem.
An item whose attributes above are missing (``stamp``, ``version``), of another
type, or impossible (an empty stamp, a fractional version, tokens of a length
that is not a multiple of 8) is refused with ``CorruptItem`` by every operation.
"""

from __future__ import annotations

import math
import zlib
from decimal import Decimal, InvalidOperation
from typing import Any

from ..chain import ChainState
from ..errors import CorruptItem
from ..stamps import Stamp

DEFAULT_PARTITION_KEY = "tagID"
STAMP = "stamp"
CHAIN_ID = "chain_id"
VERSION = "version"
TOKENS = "tokens"
#: A chain's own binary attributes: an item that holds none of them as binary (``B``) is
#: another program's (not a chain, damaged or not), and no write of this package changes
#: or deletes it.  A ``version`` number is no mark: many programs' items have one.
CHAIN_MARKS = (STAMP, CHAIN_ID, TOKENS)


def has_chain_marks(item: dict[str, Any]) -> bool:
    """Does ``item`` (raw) hold one of a chain's marks (a chain, maybe a damaged one)?"""
    return any(isinstance(item.get(a), dict) and "B" in item[a] for a in CHAIN_MARKS)


CREATED_AT = "created_at"
UPDATED_AT = "updated_at"
ACKED_AT = "acked_at"
FAILED_AT = "failed_at"
REASON = "reason"
#: The TTL attribute; the CloudFormation template and ``table.py`` enable TTL on it.
EXPIRES_AT = "expires_at"
DEADLINE = "deadline"
IDLE_TIMEOUT = "idle_timeout"
OPEN_SHARD = "open_shard"
DUE_AT = "due_at"
FAILED_SHARD = "failed_shard"

#: What a fleet's marker items (its pages and done records, ``<tag>#xor-ack-fleet/...``)
#: have in their key: items of a chains table that are no chain, and no chain's event.
FLEET_MARKER = "#xor-ack-fleet/"


def is_marker_key(key: str) -> bool:
    """Is ``key`` a fleet marker's (a page, a done record), not a chain's tag?"""
    return FLEET_MARKER in key


def is_marker(key: object, *images: dict[str, Any] | None) -> bool:
    """Are these images (raw: a stream record's) of a fleet marker under ``key``?  Its key
    holds ``FLEET_MARKER`` and no image holds a stamp: markers carry none, and a chain the
    plain client made under a tag that merely holds the infix is a chain."""
    if not isinstance(key, str) or not is_marker_key(key):
        return False
    return not any(isinstance(image, dict) and STAMP in image for image in images)


#: The sparse global secondary indexes of the inventory: an item is in OPEN_INDEX
#: while it is live (keys OPEN_SHARD, DUE_AT) and in FAILED_INDEX once failed
#: (keys FAILED_SHARD, FAILED_AT). Both project keys only, so a stamp that moves
#: neither key costs no index write.
OPEN_INDEX = "xor_ack_open"
FAILED_INDEX = "xor_ack_failed"
#: How many partitions each index is spread over (a list queries all of them).
INVENTORY_SHARDS = 16
#: DUE_AT of a live chain without a deadline: 9999-12-31T23:59:59Z, never overdue.
NEVER_DUE = 253_402_300_799
#: Every attribute the chain item uses: none may be the table's partition key.
ATTRIBUTES = frozenset(
    {
        STAMP,
        CHAIN_ID,
        VERSION,
        TOKENS,
        CREATED_AT,
        UPDATED_AT,
        ACKED_AT,
        FAILED_AT,
        REASON,
        EXPIRES_AT,
        DEADLINE,
        IDLE_TIMEOUT,
        OPEN_SHARD,
        DUE_AT,
        FAILED_SHARD,
    }
)


def shard_of(tag: str, shards: int = INVENTORY_SHARDS) -> int:
    """The index shard of ``tag``: stable across processes and Python versions."""
    return zlib.crc32(tag.encode("utf-8", "surrogatepass")) % shards


def _value(item: dict[str, Any], name: str, kind: str, tag: str, required: bool) -> Any:
    """The ``kind`` value ("S", "N" or "B") of attribute ``name``; CorruptItem if it is not one."""
    attr = item.get(name)
    if attr is None:
        if required:
            raise CorruptItem(tag, name, "is missing")
        return None
    if not isinstance(attr, dict) or len(attr) != 1 or kind not in attr:
        found = "/".join(attr) if isinstance(attr, dict) else type(attr).__name__
        raise CorruptItem(tag, name, f"is of type {found}, not {kind}")
    value = attr[kind]
    expected: tuple[type, ...] = (bytes, bytearray) if kind == "B" else (str,)
    if not isinstance(value, expected):
        raise CorruptItem(tag, name, f"holds a {type(value).__name__}, not {kind} data")
    return value


def _number(item: dict[str, Any], name: str, tag: str) -> float | None:
    """An optional number attribute (epoch seconds), as an int where it is whole."""
    text = _value(item, name, "N", tag, required=False)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise CorruptItem(tag, name, f"is not a finite number ({text!r})")
    return int(value) if value.is_integer() else value


def _positive(item: dict[str, Any], name: str, tag: str) -> float | None:
    """An optional duration attribute: a finite number of seconds above zero."""
    value = _number(item, name, tag)
    if value is not None and value <= 0:
        raise CorruptItem(tag, name, f"is not a number of seconds above 0 ({value!r})")
    return value


def _version(item: dict[str, Any], tag: str) -> int:
    text = _value(item, VERSION, "N", tag, required=True)
    try:
        number = Decimal(text)
    except InvalidOperation:
        number = Decimal("NaN")
    if not number.is_finite() or number != number.to_integral_value() or number < 0:
        raise CorruptItem(tag, VERSION, f"is not a whole number >= 0 ({text!r})")
    return int(number)


def _tokens(item: dict[str, Any], tag: str, size: int = 8) -> tuple[bytes, ...]:
    blob = bytes(_value(item, TOKENS, "B", tag, required=False) or b"")
    if len(blob) % size:
        raise CorruptItem(tag, TOKENS, f"is {len(blob)} bytes, not a multiple of {size}")
    return tuple(blob[i : i + size] for i in range(0, len(blob), size))


def decode(item: dict[str, Any], partition_key: str, tag: str | None = None) -> ChainState:
    """Decode a low-level DynamoDB item (``{"stamp": {"B": ...}, ...}``).

    Raises :class:`CorruptItem` (naming the attribute and what is wrong) for an
    item this client did not write or that was damaged: an attribute missing, of
    the wrong type, or of an impossible value.  ``tag``: the tag the item was
    asked for, named in the error when the item's own key is unreadable.  An item with
    none of a chain's marks is another program's: its error says so (``.foreign``).
    """
    try:
        return _decode(item, partition_key, tag)
    except CorruptItem as exc:
        if exc.foreign or has_chain_marks(item):
            raise
        raise CorruptItem(exc.tag, exc.attribute, exc.problem, foreign=True) from None


def _decode(item: dict[str, Any], partition_key: str, tag: str | None) -> ChainState:
    key = item.get(partition_key)
    if isinstance(key, dict) and isinstance(key.get("S"), str):
        tag = key["S"]
    name = "?" if tag is None else tag
    tag = _value(item, partition_key, "S", name, required=True)
    assert isinstance(tag, str)
    stamp = Stamp(bytes(_value(item, STAMP, "B", tag, required=True)))
    if not stamp:
        raise CorruptItem(tag, STAMP, "is empty")
    return ChainState(
        tag=tag,
        stamp=stamp,
        chain_id=bytes(_value(item, CHAIN_ID, "B", tag, required=False) or b""),
        version=_version(item, tag),
        tokens=_tokens(item, tag),
        created_at=_number(item, CREATED_AT, tag) or 0.0,
        updated_at=_number(item, UPDATED_AT, tag) or 0.0,
        acked_at=_number(item, ACKED_AT, tag),
        failed_at=_number(item, FAILED_AT, tag),
        reason=_value(item, REASON, "S", tag, required=False),
        expires_at=_number(item, EXPIRES_AT, tag),
        deadline=_number(item, DEADLINE, tag),
        idle_timeout=_positive(item, IDLE_TIMEOUT, tag),
    )
