"""The inventory's two sparse indexes, read page by page: lists in one order, and counts.

The indexes (``xor_ack_dynamodb.table.INDEXES``, docs/inventory.md) hold keys only and are
spread over ``INVENTORY_SHARDS`` partitions.  A list page is a merge of the shards:

- each shard is queried from where the last page left it (``Limit`` a few keys, or many
  when a tag prefix filters them: ``begins_with`` on the tag, evaluated by DynamoDB);
- the smallest sort key among the shards' next keys is taken, while every shard that may
  hold more has a next key in hand, so the page is in one order across shards: open
  chains by deadline (none last), overdue ones most overdue first, failed ones newest
  first;
- the cursor is each shard's position: the key of its last entry taken, or of the last
  entry a query examined when every fetched one was taken.

A page sends at most ``budget`` queries: a prefix that matches little ends a page short,
with a cursor to go on from.  Counting is ``Select=COUNT``, every shard at once.  Nothing
here scans the table.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import json
import math
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from botocore.exceptions import ClientError

from xor_ack_dynamodb.chain import write_moment
from xor_ack_dynamodb.dynamodb.aws import inventory_refusal
from xor_ack_dynamodb.dynamodb.together import every
from xor_ack_dynamodb.errors import InvalidTag
from xor_ack_dynamodb.table import FAILED_INDEX, INDEXES, INVENTORY_SHARDS, OPEN_INDEX

Status: TypeAlias = Literal["open", "overdue", "failed"]
STATUSES: tuple[Status, ...] = ("open", "overdue", "failed")
#: Keys examined per query when a prefix filters them (a keys-only entry is ~60 bytes).
FILTERED_LIMIT = 500
#: A shard's position: None (from its start), DONE (read to its end), or (tag, sort key).
Position: TypeAlias = "tuple[str, str] | Literal['done'] | None"
DONE: Literal["done"] = "done"


class BadCursor(ValueError):
    """A ``cursor`` that this dashboard did not make (or made for another status)."""


def index_of(status: Status) -> tuple[str, str, str]:
    """(index name, shard attribute, sort attribute) that lists ``status``."""
    name = FAILED_INDEX if status == "failed" else OPEN_INDEX
    shard_key, sort_key = INDEXES[name]
    return name, shard_key, sort_key


#: A cursor's JSON, inflated, at most: 16 tags of DynamoDB's 2,048 bytes, \u-escaped.
_MAX_CURSOR_JSON = INVENTORY_SHARDS * (2048 * 6 + 64) + 64


def encode_cursor(status: Status, positions: list[Position]) -> str:
    # UTF-8, not \u escapes: a CJK character is 3 bytes, not 6 (a cursor holds 16 tags),
    # deflated: the tags of one list mostly share their paths, so a cursor of long tags
    # stays far below the URL's limit (``pages.MAX_CURSOR``).
    raw = json.dumps([status, positions], separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def decode_cursor(status: Status, cursor: str) -> list[Position]:
    """The shards' positions a cursor holds; ``BadCursor`` for anything else."""
    try:
        packed = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        inflate = zlib.decompressobj()
        raw = inflate.decompress(packed, _MAX_CURSOR_JSON)
        if inflate.unconsumed_tail or not inflate.eof:
            raise ValueError("not one whole deflated cursor of at most its size")
        data = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError, zlib.error, RecursionError) as exc:
        # RecursionError: "[[[[..." deflates to a few bytes and json.loads recurses per level
        raise BadCursor("the cursor is not one this dashboard made") from exc
    if not isinstance(data, list) or len(data) != 2 or data[0] != status:
        raise BadCursor(f"the cursor is not one of the {status} list")
    positions = data[1]
    if not isinstance(positions, list) or len(positions) != INVENTORY_SHARDS:
        raise BadCursor("the cursor does not have a position for every shard")
    checked: list[Position] = []
    for position in positions:
        if position is None or position == DONE:
            checked.append(position)
            continue
        if (
            not isinstance(position, list)
            or len(position) != 2
            or not all(isinstance(part, str) for part in position)
            or not _is_tag(position[0])
            or not _is_number(position[1])
        ):
            raise BadCursor("the cursor holds a position that is not a (tag, number)")
        checked.append((position[0], position[1]))
    return checked


def _is_tag(text: str) -> bool:
    """A tag DynamoDB can hold: 1 to 2,048 bytes of UTF-8 (the library's rule)."""
    try:
        InvalidTag.check(text)
    except InvalidTag:
        return False
    return True


_SMALLEST, _TOO_LARGE = decimal.Decimal("1E-130"), decimal.Decimal("1E+126")


def _is_number(text: str) -> bool:
    """A number DynamoDB takes in a key: 38 significant digits at most, 0 or a magnitude
    from 1E-130 to below 1E+126 (``float`` takes more, and the Query was a 502)."""
    if len(text) > 40:
        return False
    try:
        number = decimal.Decimal(text)
    except decimal.InvalidOperation:
        return False
    if not number.is_finite():
        return False
    if number.is_zero():
        return True
    digits = "".join(map(str, number.as_tuple().digits)).strip("0")  # not normalize(): it rounds
    return len(digits) <= 38 and _SMALLEST <= abs(number) < _TOO_LARGE


@dataclass(frozen=True)
class Entry:
    """One index entry: the tag and its sort key (deadline or ``failed_at``)."""

    tag: str
    sort: float
    shard: int


@dataclass
class IndexPage:
    """Entries in the list's order, and the cursor of the next page (None: the end)."""

    entries: list[Entry]
    cursor: str | None
    queries: int


@dataclass
class _Shard:
    number: int
    position: Position
    buffer: deque[tuple[Entry, dict[str, Any]]] = field(default_factory=deque)
    #: The key after which the next query starts (the last one a query examined).
    frontier: dict[str, Any] | None = None
    exhausted: bool = False
    taken: Position = None
    #: The sort key of ``frontier``: every entry of the shard up to it has been examined.
    frontier_sort: float | None = None


def _covers(shard: _Shard, sort: float, newest_first: bool) -> bool:
    """Has ``shard`` been examined past ``sort`` (so it holds nothing to take before it)?"""
    if shard.frontier_sort is None:
        return False
    return shard.frontier_sort <= sort if newest_first else shard.frontier_sort >= sort


class Inventory:
    """Reads the indexes of ``table`` through ``client`` (an aiobotocore DynamoDB client)."""

    def __init__(
        self,
        client: Any,
        table: str,
        partition_key: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.table = table
        self.partition_key = partition_key
        self.clock = clock

    def _query(
        self, status: Status, shard: int, now: float, prefix: str, limit: int
    ) -> dict[str, Any]:
        index, shard_key, sort_key = index_of(status)
        names = {"#s": shard_key}
        values: dict[str, Any] = {":s": {"N": str(shard)}}
        condition = "#s = :s"
        if status == "overdue":
            names["#d"] = sort_key
            values[":now"] = {"N": repr(write_moment(now))}
            condition += " AND #d <= :now"
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": index,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": status != "failed",
            "Limit": limit,
        }
        if prefix:
            names["#k"] = self.partition_key
            values[":p"] = {"S": prefix}
            request["FilterExpression"] = "begins_with(#k, :p)"
        return request

    async def query(self, request: dict[str, Any]) -> Any:
        """One ``Query``; ``InventoryMissing`` (run ``table upgrade``) for a table an earlier
        release made, without the index, as ``sweep()`` and ``list_chains()`` say it."""
        try:
            return await self.client.query(**request)
        except ClientError as exc:
            refusal = inventory_refusal(exc, self.table, request["IndexName"])
            if refusal is not None:
                raise refusal from exc
            raise

    def _key(self, status: Status, shard: int, position: tuple[str, str]) -> dict[str, Any]:
        _, shard_key, sort_key = index_of(status)
        return {
            self.partition_key: {"S": position[0]},
            shard_key: {"N": str(shard)},
            sort_key: {"N": position[1]},
        }

    async def count(self, status: Status) -> int:
        """How many entries ``status`` has now: ``Select=COUNT``, every shard at once."""
        now = self.clock()

        async def shard_count(shard: int) -> int:
            request = self._query(status, shard, now, "", 10_000)
            del request["Limit"]
            request["Select"] = "COUNT"
            total = 0
            while True:
                answer = await self.query(request)
                total += int(answer.get("Count", 0))
                after = answer.get("LastEvaluatedKey")
                if not after:
                    return total
                request["ExclusiveStartKey"] = after

        counts = await every(shard_count(s) for s in range(INVENTORY_SHARDS))
        return sum(counts)

    async def page(
        self,
        status: Status,
        *,
        size: int,
        cursor: str | None = None,
        prefix: str = "",
        budget: int = 64,
    ) -> IndexPage:
        """The next ``size`` entries of ``status`` after ``cursor`` (``BadCursor``)."""
        positions: list[Position] = (
            decode_cursor(status, cursor) if cursor else [None] * INVENTORY_SHARDS
        )
        now = self.clock()
        if status == "overdue" and any(
            isinstance(p, tuple) and float(p[1]) > write_moment(now) for p in positions
        ):  # outside the Query's "due_at <= now": DynamoDB refuses it (a 502, not a 400)
            raise BadCursor("the cursor's position is past now")
        shards = [_Shard(n, p, taken=p) for n, p in enumerate(positions)]
        for shard in shards:
            shard.exhausted = shard.position == DONE
            if isinstance(shard.position, tuple):
                shard.frontier = self._key(status, shard.number, shard.position)
                shard.frontier_sort = float(shard.position[1])
        limit = FILTERED_LIMIT if prefix else max(4, 2 * math.ceil(size / INVENTORY_SHARDS) + 2)
        newest_first = status == "failed"
        taken: list[Entry] = []
        queries = 0
        while len(taken) < size:
            ready = [s for s in shards if s.buffer]
            pick = (max if newest_first else min)(
                ready, key=lambda s: s.buffer[0][0].sort, default=None
            )
            # A shard with nothing in hand holds no entry before its frontier (the last key
            # its queries examined): it needs a query only if the next pick may be beyond it.
            hungry = [
                s
                for s in shards
                if not s.buffer
                and not s.exhausted
                and (pick is None or not _covers(s, pick.buffer[0][0].sort, newest_first))
            ]
            if hungry:
                if queries + len(hungry) > budget:
                    break
                queries += len(hungry)
                await every(self._fill(status, s, now, prefix, limit) for s in hungry)
                continue
            if pick is None:
                break
            entry, key = pick.buffer.popleft()
            taken.append(entry)
            pick.taken = (entry.tag, key[index_of(status)[2]]["N"])
        final: list[Position] = []
        for shard in shards:
            if shard.buffer:
                final.append(shard.taken)
            elif shard.exhausted:
                final.append(DONE)
            else:
                assert shard.frontier is not None or shard.position is None
                final.append(self._position(status, shard.frontier) if shard.frontier else None)
        more = any(position != DONE for position in final)
        return IndexPage(taken, encode_cursor(status, final) if more else None, queries)

    def _position(self, status: Status, key: dict[str, Any]) -> tuple[str, str]:
        return (key[self.partition_key]["S"], key[index_of(status)[2]]["N"])

    async def _fill(
        self, status: Status, shard: _Shard, now: float, prefix: str, limit: int
    ) -> None:
        request = self._query(status, shard.number, now, prefix, limit)
        if shard.frontier is not None:
            request["ExclusiveStartKey"] = shard.frontier
        answer = await self.query(request)
        sort_key = index_of(status)[2]
        for item in answer.get("Items", []):
            entry = Entry(item[self.partition_key]["S"], float(item[sort_key]["N"]), shard.number)
            shard.buffer.append((entry, item))
        after = answer.get("LastEvaluatedKey")
        shard.frontier = after or shard.frontier
        shard.exhausted = not after
        if after:
            shard.frontier_sort = float(after[sort_key]["N"])
