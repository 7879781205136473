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
from .validate import DEFAULT_TOKEN_WINDOW, DEFAULT_TOMBSTONE_TTL

#: The expression placeholder of each attribute; a request names the ones it uses.
_ATTRIBUTES = {
    "#s": I.STAMP,
    "#c": I.CHAIN_ID,
    "#v": I.VERSION,
    "#t": I.TOKENS,
    "#ca": I.CREATED_AT,
    "#u": I.UPDATED_AT,
    "#a": I.ACKED_AT,
    "#f": I.FAILED_AT,
    "#r": I.REASON,
    "#e": I.EXPIRES_AT,
}


def _names(*placeholders: str, key: str | None = None) -> dict[str, str]:
    """``ExpressionAttributeNames`` for ``placeholders`` (and ``#pk``: the key attribute)."""
    names = {p: _ATTRIBUTES[p] for p in placeholders}
    if key is not None:
        names["#pk"] = key
    return names


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
        names = _names(*_ATTRIBUTES, key=self.partition_key)
        values: dict[str, Any] = {
            ":s": {"B": bytes(value)},
            ":c": {"B": chain_id},
            ":v": {"N": "1"},
            ":t": {"B": token},
            ":now": {"N": str(now)},
        }
        update = "SET #s = :s, #c = :c, #v = :v, #t = :t, #ca = :now, #u = :now"
        if ttl is not None:
            update += ", #e = :exp"
            values[":exp"] = self._expiry(now, ttl)
            update += " REMOVE #a, #f, #r"
        else:
            update += " REMOVE #a, #f, #r, #e"
        return {
            "TableName": self.table,
            "Key": self._key(tag),
            "UpdateExpression": update,
            "ConditionExpression": (
                "attribute_not_exists(#pk) OR attribute_exists(#a) OR attribute_exists(#f)"
                " OR #e <= :now"
            ),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

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
        """The conditional write of one stamp (or merged stamps), and the state it leads to."""
        names = _names("#s", "#v", "#t", "#u", "#c")
        values: dict[str, Any] = {
            ":s": {"B": bytes(new_state)},
            ":v": {"N": str(state.version + 1)},
            ":old": {"N": str(state.version)},
            ":c": {"B": state.chain_id},
            ":t": {"B": b"".join(tokens)},
            ":now": {"N": str(now)},
        }
        update = "SET #s = :s, #v = :v, #t = :t, #u = :now"
        acked_at = expires_at = None
        if new_state.acked:
            names.update(_names("#a", "#e"))
            values[":exp"] = self._expiry(now, self.tombstone_ttl)
            update += ", #a = :now, #e = :exp"
            acked_at, expires_at = now, float(values[":exp"]["N"])
        params = {
            "TableName": self.table,
            "Key": self._key(tag),
            "UpdateExpression": update,
            "ConditionExpression": "#v = :old AND #c = :c",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
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
        return params, after

    #: The types fail()'s write requires of the attributes it keeps: (placeholder,
    #: type, required).  What ``item.decode`` checks of types, as a condition.
    _FAIL_TYPES = (
        ("#s", "B", True),
        ("#v", "N", True),
        ("#c", "B", False),
        ("#t", "B", False),
        ("#ca", "N", False),
        ("#u", "N", False),
        ("#r", "S", False),
    )

    def _fail_params(self, tag: str, reason: str) -> dict[str, Any]:
        """The write that closes a live chain as failed, refused by a closed or damaged item."""
        now = self._now()
        types = [
            f"attribute_type({p}, :type{kind})"
            if required
            else f"(attribute_not_exists({p}) OR attribute_type({p}, :type{kind}))"
            for p, kind, required in self._FAIL_TYPES
        ]
        return {
            "TableName": self.table,
            "Key": self._key(tag),
            "UpdateExpression": "SET #f = :now, #r = :r, #e = :exp, #u = :now, #v = #v + :one",
            "ConditionExpression": (
                "attribute_exists(#pk) AND attribute_not_exists(#a) AND attribute_not_exists(#f)"
                " AND (attribute_not_exists(#e) OR #e > :now) AND size(#s) > :zero AND "
                + " AND ".join(types)
            ),
            "ExpressionAttributeNames": _names(
                "#s", "#c", "#t", "#ca", "#f", "#r", "#e", "#u", "#v", "#a", key=self.partition_key
            ),
            "ExpressionAttributeValues": {
                ":now": {"N": str(now)},
                ":r": {"S": reason},
                ":one": {"N": "1"},
                ":zero": {"N": "0"},
                ":exp": self._expiry(now, self.tombstone_ttl),
                **{f":type{kind}": {"S": kind} for kind in ("B", "N", "S")},
            },
            "ReturnValues": "ALL_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _delete_params(self, tag: str) -> dict[str, Any]:
        """The write that removes a chain's item, live or tombstone (not an expired one)."""
        return {
            "TableName": self.table,
            "Key": self._key(tag),
            # An expires_at that is not a number (a damaged item) does not hide the item:
            # delete() is how a CorruptItem is removed.
            "ConditionExpression": (
                "attribute_exists(#pk) AND (attribute_not_exists(#e)"
                " OR NOT attribute_type(#e, :typeN) OR #e > :now)"
            ),
            "ExpressionAttributeNames": _names("#e", key=self.partition_key),
            "ExpressionAttributeValues": {
                ":now": {"N": str(self._now())},
                ":typeN": {"S": "N"},
            },
        }
