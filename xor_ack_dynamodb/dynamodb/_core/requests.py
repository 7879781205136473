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
from dataclasses import replace
from typing import Any

from ...chain import ChainState, write_moment
from ...stamps import Stamp
from .. import item as I
from ..retry import DEFAULT_RETRY, RetryPolicy
from .client_options import (
    check_clock,
    check_count,
    check_name,
    check_partition_key,
    check_retry,
    check_token_window,
    check_tombstone_ttl,
)
from .effects import ClientStats
from .expressions import (
    AnyOf,
    AttributeValue,
    Compare,
    Exists,
    Term,
    Update,
    Value,
)
from .validate import DEFAULT_TOKEN_WINDOW, DEFAULT_TOMBSTONE_TTL, Lifetime, first_deadline

#: "One of a chain's attributes is there": an item without any is another program's, which
#: no write of this package changes or deletes (``AnyOf`` these, in a condition).
CHAIN_THERE: tuple[Term, ...] = tuple(
    Exists(a, type=Value(":typeB", {"S": "B"})) for a in I.CHAIN_MARKS
)


def _n(number: float | int) -> AttributeValue:
    return {"N": str(number)}


def _after_deadline(expiry: int, deadline: float) -> int:
    """An expiry (whole seconds) that comes after the deadline (milliseconds) it follows.

    The deadline is rounded to the millisecond and the expiry up to the second, so a
    ``ttl`` less than a millisecond longer than the ``timeout`` could round to the
    deadline's own second: the chain would be expired at the moment it is overdue, and
    no timeout could land (a timeout is refused by an expired chain).  So the expiry is
    at least the second after the deadline.
    """
    return max(expiry, math.floor(deadline) + 1)


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
        self.table = check_name("table", table)
        self.partition_key = check_partition_key(partition_key)
        self.retry = check_retry(retry)
        self.token_window = check_token_window(token_window)
        self.tombstone_ttl = check_tombstone_ttl(tombstone_ttl)
        self.cache_size = check_count("cache_size", cache_size, 0)
        self.clock = check_clock(clock)
        self.monotonic = monotonic
        self.rng = rng or random.Random()
        self.stats = ClientStats()
        self._cache: OrderedDict[str, ChainState] = OrderedDict()

    def _key(self, tag: str) -> dict[str, Any]:
        return {self.partition_key: {"S": tag}}

    def _now(self) -> float:
        return write_moment(self.clock())

    def _expiry(self, now: float, ttl: float) -> dict[str, str]:
        return {"N": str(math.ceil(now + ttl))}

    def _create_update(
        self,
        tag: str,
        value: Stamp,
        lifetime: Lifetime,
        now: float,
        token: bytes,
        chain_id: bytes,
    ) -> Update:
        """The conditional write that starts a chain (a free tag, or a closed or expired one).

        A live chain is in the open index (``open_shard``, ``due_at``: its deadline,
        or ``NEVER_DUE``); the first deadline is ``timeout`` from now, else
        ``idle_timeout`` (``lifetime`` is validated before: a ``ttl`` ends after it).
        """
        ttl, idle_timeout = lifetime.get("ttl"), lifetime.get("idle_timeout")
        at = Value(":now", _n(now))
        generation = Value(":c", {"B": chain_id})
        sets: list[tuple[str, Value]] = [
            (I.STAMP, Value(":s", {"B": bytes(value)})),
            (I.CHAIN_ID, generation),
            (I.VERSION, Value(":v", _n(1))),
            (I.TOKENS, Value(":t", {"B": token})),
            (I.CREATED_AT, at),
            (I.UPDATED_AT, at),
            (I.OPEN_SHARD, Value(":os", _n(I.shard_of(tag)))),
        ]
        remove = [I.ACKED_AT, I.FAILED_AT, I.REASON, I.FAILED_SHARD]
        span = first_deadline(lifetime)
        deadline_at = None if span is None else round(now + span, 3)
        if ttl is not None:
            expiry = math.ceil(now + ttl)
            if deadline_at is not None:
                expiry = _after_deadline(expiry, deadline_at)
            sets.append((I.EXPIRES_AT, Value(":exp", _n(expiry))))
        else:
            remove.append(I.EXPIRES_AT)
        if deadline_at is not None:
            deadline = Value(":dl", _n(deadline_at))
            sets += [(I.DEADLINE, deadline), (I.DUE_AT, deadline)]
        else:
            sets.append((I.DUE_AT, Value(":due", _n(I.NEVER_DUE))))
            remove.append(I.DEADLINE)
        if idle_timeout is not None:
            sets.append((I.IDLE_TIMEOUT, Value(":idle", _n(idle_timeout))))
        else:
            remove.append(I.IDLE_TIMEOUT)
        free = AnyOf(
            (
                Exists(self.partition_key, False),
                Exists(I.ACKED_AT),
                Exists(I.FAILED_AT),
                Compare(I.EXPIRES_AT, "<=", at),
            )
        )
        # and what is there is a chain: another program's item under the key (none of a
        # chain's attributes) is not written over, whatever its expires_at or acked_at
        ours = AnyOf((Exists(self.partition_key, False), *CHAIN_THERE))
        # and not the chain this create made: botocore re-sending it after a lost answer
        # must not write it again over what it became (acked, failed) in between
        again = AnyOf((Exists(I.CHAIN_ID, False), Compare(I.CHAIN_ID, "<>", generation)))
        return Update(
            self.table,
            self._key(tag),
            set=tuple(sets),
            remove=tuple(remove),
            condition=(free, ours, again),
        )

    @staticmethod
    def _created_expiry(params: dict[str, Any]) -> float | None:
        exp = params["ExpressionAttributeValues"].get(":exp")
        return None if exp is None else float(exp["N"])

    def _created_state(
        self, tag: str, value: Stamp, params: dict[str, Any], now: float, token: bytes
    ) -> ChainState:
        values = params["ExpressionAttributeValues"]
        deadline, idle = values.get(":dl"), values.get(":idle")
        return ChainState(
            tag,
            value,
            values[":c"]["B"],
            1,
            (token,),
            now,
            now,
            expires_at=self._created_expiry(params),
            deadline=None if deadline is None else float(deadline["N"]),
            idle_timeout=None if idle is None else float(idle["N"]),
        )

    def _moved_deadline(
        self, state: ChainState, deadline: float, sets: list[tuple[str, Value]]
    ) -> float | None:
        """SET a later ``deadline`` (and ``due_at``); the ``expires_at`` that keeps its lead.

        TTL is garbage collection: an expiry moves with the deadline, by as much.
        """
        value = Value(":dl", _n(deadline))
        sets += [(I.DEADLINE, value), (I.DUE_AT, value)]
        expires_at = state.expires_at
        if expires_at is not None and state.deadline is not None and deadline > state.deadline:
            expires_at = float(
                _after_deadline(math.ceil(expires_at + deadline - state.deadline), deadline)
            )
            sets.append((I.EXPIRES_AT, Value(":exp", _n(int(expires_at)))))
        return expires_at

    @staticmethod
    def _in_time(state: ChainState, at: Value) -> tuple[Term, ...]:
        """The condition that refuses a write after the chain's deadline (none without one)."""
        return () if state.deadline is None else (Compare(I.DEADLINE, ">", at),)

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
        acked_at = None
        expires_at, deadline = state.expires_at, state.deadline
        remove: tuple[str, ...] = ()
        if new_state.acked:
            expiry = Value(":exp", self._expiry(now, self.tombstone_ttl))
            sets += [(I.ACKED_AT, at), (I.EXPIRES_AT, expiry)]
            acked_at, expires_at, deadline = now, float(expiry.value["N"]), None
            remove = (I.OPEN_SHARD, I.DUE_AT, I.DEADLINE)  # out of the open index
        elif state.idle_timeout is not None:  # progress: the deadline moves, in this write
            deadline = round(now + state.idle_timeout, 3)
            expires_at = self._moved_deadline(state, deadline, sets)
        condition: tuple[Term, ...] = (
            Compare(I.VERSION, "=", Value(":old", _n(state.version))),
            Compare(I.CHAIN_ID, "=", Value(":c", {"B": state.chain_id})),
            *self._in_time(state, at),
        )
        update = Update(
            self.table, self._key(tag), set=tuple(sets), remove=remove, condition=condition
        )
        after = replace(
            state,
            stamp=new_state,
            version=state.version + 1,
            tokens=tokens,
            updated_at=now,
            acked_at=acked_at,
            expires_at=expires_at,
            deadline=deadline,
        )
        return update, after

    def _touch_update(
        self, tag: str, state: ChainState, deadline: float, tokens: tuple[bytes, ...], now: float
    ) -> tuple[Update, ChainState]:
        """The write of ``touch``: a later deadline, conditioned as a stamp (in time, unchanged)."""
        at = Value(":now", _n(now))
        sets: list[tuple[str, Value]] = [
            (I.VERSION, Value(":v", _n(state.version + 1))),
            (I.TOKENS, Value(":t", {"B": b"".join(tokens)})),
            (I.UPDATED_AT, at),
        ]
        expires_at = self._moved_deadline(state, deadline, sets)
        condition = (
            Compare(I.VERSION, "=", Value(":old", _n(state.version))),
            Compare(I.CHAIN_ID, "=", Value(":c", {"B": state.chain_id})),
            *self._in_time(state, at),
        )
        update = Update(self.table, self._key(tag), set=tuple(sets), condition=condition)
        after = replace(
            state,
            version=state.version + 1,
            tokens=tokens,
            updated_at=now,
            expires_at=expires_at,
            deadline=deadline,
        )
        return update, after
