"""How a transaction of many chains' writes is sent, and what its failure tells of each.

A cancelled transaction is read per item through ``cancellation.CANCELLED_ITEM``; one
that failed otherwise (its fate unknown) is settled by reading every item back.  The
stamps and creates that go in transactions are ``many``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ...chain import ChainState
from ...errors import AmbiguousWrite, CorruptItem, TransactionItemRejected, UnsettledWrite
from ...stamps import Stamp
from ..aws import cancellation_code
from . import cancellation as C
from .cancellation import Source
from .chains import SingleChain
from .effects import Call, CancelReport, Effect, Entry, Op, Outcome
from .merged import copy_error
from .validate import MAX_TRANSACTION_BYTES, MAX_TRANSACTION_ITEMS, chunked, transaction_bytes


class Transactions(SingleChain):
    """Sending a transaction of Update actions, and reading each item after it failed."""

    def transactions(self, items: Mapping[str, Stamp | Entry]) -> list[dict[str, Any]]:
        """``items`` (stamps or entries by tag) in pieces that fit one transaction each.

        At most 100 chains and, by :func:`transaction_bytes`, 4 MiB per piece.
        """
        return chunked(
            items,
            MAX_TRANSACTION_ITEMS,
            lambda tag, value: transaction_bytes(tag, value, self.token_window),
            MAX_TRANSACTION_BYTES,
        )

    def piece(
        self, op: Callable[[dict[str, Any]], Op], piece: dict[str, Any]
    ) -> Generator[Effect, Any, dict[str, Outcome]]:
        """``op`` over one piece of a ``*_many`` call (:meth:`transactions`); a DynamoDB
        error that escapes it (a read before any write), or a write of it that cannot be
        settled, is the outcome of each item: the other pieces' outcomes are kept."""
        try:
            outcomes: dict[str, Outcome] = yield from op(piece)
        except (AmbiguousWrite, ClientError, BotoCoreError) as exc:
            return dict.fromkeys(piece, exc)
        return outcomes

    def _transact(
        self, params: Sequence[dict[str, Any]]
    ) -> Generator[Effect, Any, ClientError | BotoCoreError | None]:
        """Send Update actions as one transaction: the error, or None when it went through."""
        self.stats.requests["TransactWriteItems"] += 1
        self.stats.writes += len(params)
        try:
            yield Call("transact_write_items", {"TransactItems": [{"Update": p} for p in params]})
        except (ClientError, BotoCoreError) as exc:
            return exc
        return None

    def _after_cancel(
        self, tags: Sequence[str], cancelled: ClientError
    ) -> Generator[Effect, Any, CancelReport]:
        """What a cancelled transaction tells of each item: its state now, or an error.

        Returns (fresh states of the items whose condition failed, the items that
        met another writer, errors of items that cannot be written at all, caused
        by ``cancelled``).  Items the server gave no ``Item`` for are read
        (BatchGetItem), all of them when it gave no reasons that fit the items.
        """
        fresh: dict[str, ChainState | None] = {}
        to_read: list[str] = []
        errors: dict[str, Exception] = {}
        contended: set[str] = set()
        for tag, reason in zip(tags, C.item_reasons(tags, cancelled), strict=True):
            _, raced, source, refusal = C.CANCELLED_ITEM[C.cancelled_of(reason)]
            if raced:
                contended.add(tag)
            if source is Source.READ:
                to_read.append(tag)
            elif source is Source.GIVEN:
                assert reason is not None
                try:
                    fresh[tag] = self._decode(reason.get("Item"), tag=tag)
                except CorruptItem as damaged:
                    errors[tag] = damaged
                    continue
                self.remember(fresh[tag], tag)
            if refusal is TransactionItemRejected:
                assert reason is not None
                code = cancellation_code(reason)
                errors[tag] = TransactionItemRejected(tag, code, reason.get("Message", ""))
                errors[tag].__cause__ = cancelled
        if to_read:
            states, corrupt = yield from self._read_many(to_read)
            fresh.update(states)
            errors.update(corrupt)
        return fresh, contended, errors

    def _read_back(
        self, tags: Sequence[str], error: ClientError | BotoCoreError, outcomes: dict[str, Outcome]
    ) -> Generator[Effect, Any, dict[str, ChainState | None] | None]:
        """Every item of a transaction that failed without a cancellation, read back.

        None when the error is proven not landed (each item's outcome) or the read fails
        (each item's ``UnsettledWrite``).  An item it cannot read gets its ``CorruptItem``.
        """
        try:
            current, corrupt = yield from self._settle_many(tags, error)
        except (ClientError, BotoCoreError, UnsettledWrite) as failure:
            outcomes.update({tag: copy_error(failure, error, tag) for tag in tags})
            return None
        outcomes.update(corrupt)
        return current
