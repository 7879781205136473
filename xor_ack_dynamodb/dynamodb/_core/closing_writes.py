"""The writes that close a chain: fail an overdue one, fail one, delete one.

Their conditions are what keeps them to one landing: the generation and version
read, a deadline passed by this client's clock, a live item of the right types.
What a failed condition means is ``landing``'s.
"""

from __future__ import annotations

from typing import Any

from ...chain import ChainState
from .. import item as I
from .expressions import AnyOf, AttributeValue, Compare, Delete, Exists, Not, Term, Update, Value
from .requests import CHAIN_THERE, Requests, _n


class ClosingWrites(Requests):
    """The parameters of the timeout, fail and delete writes (and the read before a delete)."""

    def _timeout_update(
        self, tag: str, state: ChainState, tokens: tuple[bytes, ...], now: float
    ) -> Update:
        """Fail an overdue chain with reason "timeout": only the state read, still overdue.

        Conditioned on the chain and version read (so it was live then, and nothing
        landed since) and on its deadline having passed by this client's clock: of
        any number of late callers and sweepers, one write lands.
        """
        at = Value(":now", _n(now))
        return Update(
            self.table,
            self._key(tag),
            set=(
                (I.FAILED_AT, at),
                (I.REASON, Value(":r", {"S": "timeout"})),
                (I.EXPIRES_AT, Value(":exp", self._expiry(now, self.tombstone_ttl))),
                (I.UPDATED_AT, at),
                (I.VERSION, Value(":v", _n(state.version + 1))),
                (I.TOKENS, Value(":t", {"B": b"".join(tokens)})),
                (I.FAILED_SHARD, Value(":fs", _n(I.shard_of(tag)))),
            ),
            remove=(I.OPEN_SHARD, I.DUE_AT, I.DEADLINE),
            condition=(
                Compare(I.VERSION, "=", Value(":old", _n(state.version))),
                Compare(I.CHAIN_ID, "=", Value(":c", {"B": state.chain_id})),
                Compare(I.DEADLINE, "<=", at),
                AnyOf((Exists(I.EXPIRES_AT, False), Compare(I.EXPIRES_AT, ">", at))),
            ),
            return_values="ALL_NEW",
        )

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

    def _fail_params(self, tag: str, reason: str, chain_id: bytes, at: float) -> dict[str, Any]:
        """The write that closes a live chain as failed, refused by a closed or damaged item
        and by another generation than ``chain_id`` (a re-created tag).  ``at``: its
        ``failed_at``, with the reason the proof of a re-send.
        """
        now = Value(":now", _n(at))
        kinds = {kind: Value(f":type{kind}", {"S": kind}) for kind in ("B", "N", "S")}
        types: list[Term] = [
            Exists(a, type=kinds[k])
            if required
            else AnyOf((Exists(a, False), Exists(a, type=kinds[k])))
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
                (I.FAILED_SHARD, Value(":fs", _n(I.shard_of(tag)))),
            ),
            increment=((I.VERSION, Value(":one", _n(1))),),
            remove=(I.OPEN_SHARD, I.DUE_AT, I.DEADLINE),  # from the open to the failed index
            condition=(
                Exists(self.partition_key),
                Exists(I.ACKED_AT, False),
                Exists(I.FAILED_AT, False),
                AnyOf((Exists(I.EXPIRES_AT, False), Compare(I.EXPIRES_AT, ">", now))),
                AnyOf((Exists(I.DEADLINE, False), Compare(I.DEADLINE, ">", now))),
                Compare(I.STAMP, ">", Value(":zero", _n(0)), size=True),
                *types,
                Compare(I.CHAIN_ID, "=", Value(":c", {"B": chain_id})),
            ),
            return_values="ALL_NEW",
        ).request()

    def _generation_params(self, tag: str) -> dict[str, Any]:
        """The read of which generation of a chain the item holds: its key, ``chain_id``
        and whether it has a chain's attributes, raw (a damaged item, which ``delete``
        removes, is read as well)."""
        names = {f"#a{i}": a for i, a in enumerate(I.CHAIN_MARKS)}
        return {
            "TableName": self.table,
            "Key": self._key(tag),
            "ConsistentRead": True,
            "ProjectionExpression": ", ".join(("#k", *names)),
            "ExpressionAttributeNames": {"#k": self.partition_key, **names},
        }

    @staticmethod
    def _is_chain(item: dict[str, Any]) -> bool:
        """Does the item hold one of a chain's marks (a chain, maybe a damaged one)?"""
        return I.has_chain_marks(item)

    def _delete_params(self, tag: str, generation: AttributeValue | None) -> dict[str, Any]:
        """The write that removes a chain's item, live or tombstone (not an expired one),
        of that ``generation`` only (its ``chain_id`` as read; None: an item without one).

        So a re-sent delete whose first send landed cannot remove a chain created under
        the tag in between: its condition failing means the generation it meant is gone.
        Nor does it remove an item with none of a chain's marks (``NotAChain``).
        """
        # An expires_at that is not a number (a damaged item) does not hide the item:
        # delete() is how a CorruptItem is removed.
        not_expired = AnyOf(
            (
                Exists(I.EXPIRES_AT, False),
                Not(Exists(I.EXPIRES_AT, type=Value(":typeN", {"S": "N"}))),
                Compare(I.EXPIRES_AT, ">", Value(":now", _n(self._now()))),
            )
        )
        same = (
            Exists(I.CHAIN_ID, False)
            if generation is None
            else Compare(I.CHAIN_ID, "=", Value(":c", generation))
        )
        return Delete(
            self.table,
            self._key(tag),
            condition=(Exists(self.partition_key), not_expired, same, AnyOf(CHAIN_THERE)),
        ).request()
