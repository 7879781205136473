"""The DynamoDB requests of the core: the parameters of each write, its placeholders.

Which condition guards which write is decided here; what a failed condition or
any other answer means is ``landing``'s.
"""

from __future__ import annotations

import math
import random
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import item as I
from ..item import ChainState
from ..retry import DEFAULT_RETRY, RetryPolicy
from ..stamps import Stamp
from .effects import ClientStats
from .expressions import (
    PLACEHOLDERS,
    AnyOf,
    AttributeValue,
    Compare,
    Delete,
    Exists,
    Not,
    SizeAbove,
    Term,
    TypeIs,
    Update,
    Value,
)
from .validate import DEFAULT_TOKEN_WINDOW, DEFAULT_TOMBSTONE_TTL

#: The expression placeholder of each attribute of the item (rendered in ``expressions``).
_ATTRIBUTES = {placeholder: attribute for attribute, placeholder in PLACEHOLDERS.items()}


def _names(*placeholders: str, key: str | None = None) -> dict[str, str]:
    """``ExpressionAttributeNames`` for ``placeholders`` (and ``#pk``: the key attribute)."""
    names = {p: _ATTRIBUTES[p] for p in placeholders}
    if key is not None:
        names["#pk"] = key
    return names


def _n(number: float | int) -> AttributeValue:
    return {"N": str(number)}


class Requests:
    """The configuration of one table's core, and the DynamoDB requests it sends.

    Holds the configuration, a bounded cache of the last state seen per tag
    (so an uncontended stamp costs one request), and the statistics; builds the
    parameters of every write (its condition, its update, its placeholders).
    """

    def __init__(
        self,
        *,
        table: str,
        partition_key: str = I.DEFAULT_PARTITION_KEY,
        retry: RetryPolicy | None = DEFAULT_RETRY,
        token_window: int = DEFAULT_TOKEN_WINDOW,
        tombstone_ttl: float = DEFAULT_TOMBSTONE_TTL,
        cache_size: int = 10_000,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        if not table or not isinstance(table, str):
            raise ValueError("table must be a non-empty string")
        if not partition_key or not isinstance(partition_key, str):
            raise ValueError("partition_key must be a non-empty string")
        if token_window < 2:
            raise ValueError("token_window must be >= 2")
        if tombstone_ttl <= 0:
            raise ValueError("tombstone_ttl must be > 0")
        self.table = table
        self.partition_key = partition_key
        self.retry = retry
        self.token_window = token_window
        self.tombstone_ttl = tombstone_ttl
        self.cache_size = max(0, cache_size)
        self.clock = clock
        self.monotonic = monotonic
        self.rng = rng or random.Random()
        self.stats = ClientStats()
        self._cache: OrderedDict[str, ChainState] = OrderedDict()

    def _key(self, tag: str) -> dict[str, Any]:
        return {self.partition_key: {"S": tag}}

    def _now(self) -> float:
        return round(self.clock(), 3)

    def _expiry(self, now: float, ttl: float) -> dict[str, str]:
        return {"N": str(math.ceil(now + ttl))}

    def _create_params(
        self, tag: str, value: Stamp, ttl: float | None, now: float, token: bytes, chain_id: bytes
    ) -> dict[str, Any]:
        """The conditional write that starts a chain (a free tag, or a closed or expired one)."""
        return self._create_update(tag, value, ttl, now, token, chain_id).request()

    def _create_update(
        self, tag: str, value: Stamp, ttl: float | None, now: float, token: bytes, chain_id: bytes
    ) -> Update:
        at = Value(":now", _n(now))
        sets: list[tuple[str, Value]] = [
            (I.STAMP, Value(":s", {"B": bytes(value)})),
            (I.CHAIN_ID, Value(":c", {"B": chain_id})),
            (I.VERSION, Value(":v", _n(1))),
            (I.TOKENS, Value(":t", {"B": token})),
            (I.CREATED_AT, at),
            (I.UPDATED_AT, at),
        ]
        remove = [I.ACKED_AT, I.FAILED_AT, I.REASON]
        if ttl is not None:
            sets.append((I.EXPIRES_AT, Value(":exp", self._expiry(now, ttl))))
        else:
            remove.append(I.EXPIRES_AT)
        free = AnyOf(
            (
                Exists(self.partition_key, False),
                Exists(I.ACKED_AT),
                Exists(I.FAILED_AT),
                Compare(I.EXPIRES_AT, "<=", at),
            )
        )
        return Update(
            self.table, self._key(tag), set=tuple(sets), remove=tuple(remove), condition=(free,)
        )

    @staticmethod
    def _created_expiry(params: dict[str, Any]) -> float | None:
        exp = params["ExpressionAttributeValues"].get(":exp")
        return None if exp is None else float(exp["N"])

    def _created_state(
        self, tag: str, value: Stamp, params: dict[str, Any], now: float, token: bytes
    ) -> ChainState:
        chain_id = params["ExpressionAttributeValues"][":c"]["B"]
        expires_at = self._created_expiry(params)
        return ChainState(tag, value, chain_id, 1, (token,), now, now, expires_at=expires_at)

    def _stamp_params(
        self, tag: str, state: ChainState, new_state: Stamp, tokens: tuple[bytes, ...], now: float
    ) -> tuple[dict[str, Any], ChainState]:
        """:meth:`_stamp_update`'s write as ``UpdateItem`` parameters, and the state it leads to."""
        update, after = self._stamp_update(tag, state, new_state, tokens, now)
        return update.request(), after

    def _stamp_update(
        self, tag: str, state: ChainState, new_state: Stamp, tokens: tuple[bytes, ...], now: float
    ) -> tuple[Update, ChainState]:
        """The conditional write of one stamp (or merged stamps), and the state it leads to."""
        at = Value(":now", _n(now))
        sets: list[tuple[str, Value]] = [
            (I.STAMP, Value(":s", {"B": bytes(new_state)})),
            (I.VERSION, Value(":v", _n(state.version + 1))),
            (I.TOKENS, Value(":t", {"B": b"".join(tokens)})),
            (I.UPDATED_AT, at),
        ]
        acked_at = expires_at = None
        if new_state.acked:
            expiry = Value(":exp", self._expiry(now, self.tombstone_ttl))
            sets += [(I.ACKED_AT, at), (I.EXPIRES_AT, expiry)]
            acked_at, expires_at = now, float(expiry.value["N"])
        condition: tuple[Term, ...] = (
            Compare(I.VERSION, "=", Value(":old", _n(state.version))),
            Compare(I.CHAIN_ID, "=", Value(":c", {"B": state.chain_id})),
        )
        update = Update(self.table, self._key(tag), set=tuple(sets), condition=condition)
        after = ChainState(
            tag,
            new_state,
            state.chain_id,
            state.version + 1,
            tokens,
            state.created_at,
            now,
            acked_at=acked_at,
            expires_at=expires_at,
        )
        return update, after

    #: The types fail()'s write requires of the attributes it keeps: (attribute,
    #: type, required).  What ``item.decode`` checks of types, as a condition.
    _FAIL_TYPES = (
        (I.STAMP, "B", True),
        (I.VERSION, "N", True),
        (I.CHAIN_ID, "B", False),
        (I.TOKENS, "B", False),
        (I.CREATED_AT, "N", False),
        (I.UPDATED_AT, "N", False),
        (I.REASON, "S", False),
    )

    def _fail_params(self, tag: str, reason: str) -> dict[str, Any]:
        """The write that closes a live chain as failed, refused by a closed or damaged item."""
        at = self._now()
        now = Value(":now", _n(at))
        kinds = {kind: Value(f":type{kind}", {"S": kind}) for kind in ("B", "N", "S")}
        types: list[Term] = [
            TypeIs(a, kinds[k]) if required else AnyOf((Exists(a, False), TypeIs(a, kinds[k])))
            for a, k, required in self._FAIL_TYPES
        ]
        return Update(
            self.table,
            self._key(tag),
            set=(
                (I.FAILED_AT, now),
                (I.REASON, Value(":r", {"S": reason})),
                (I.EXPIRES_AT, Value(":exp", self._expiry(at, self.tombstone_ttl))),
                (I.UPDATED_AT, now),
            ),
            increment=((I.VERSION, Value(":one", _n(1))),),
            condition=(
                Exists(self.partition_key),
                Exists(I.ACKED_AT, False),
                Exists(I.FAILED_AT, False),
                AnyOf((Exists(I.EXPIRES_AT, False), Compare(I.EXPIRES_AT, ">", now))),
                SizeAbove(I.STAMP, Value(":zero", _n(0))),
                *types,
            ),
            return_values="ALL_NEW",
        ).request()

    def _delete_params(self, tag: str) -> dict[str, Any]:
        """The write that removes a chain's item, live or tombstone (not an expired one)."""
        # An expires_at that is not a number (a damaged item) does not hide the item:
        # delete() is how a CorruptItem is removed.
        not_expired = AnyOf(
            (
                Exists(I.EXPIRES_AT, False),
                Not(TypeIs(I.EXPIRES_AT, Value(":typeN", {"S": "N"}))),
                Compare(I.EXPIRES_AT, ">", Value(":now", _n(self._now()))),
            )
        )
        return Delete(
            self.table, self._key(tag), condition=(Exists(self.partition_key), not_expired)
        ).request()
