"""The sync twin: the same chains over boto3, for Spark executors, Lambda handlers and scripts.

It drives the same sans-I/O operations as the async client (``_core``); only
the sending and the sleeping differ.  It is thread-safe: concurrent ``stamp``
calls on one tag from several threads are merged into one write, and with
``batch_writes`` concurrent writes of different chains go together, as in the
async client.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Unpack

from ..chain import ChainState
from ..errors import SweepIncomplete, SweepStopped
from ..stamps import Stamp
from ._client import Connection, CreateMany, OnStateWrite, StampMany, connection
from ._core.deadlines import DEFAULT_PAGE_SIZE, Listing, ListStatus, check_listing
from ._core.effects import Entry, Op, Outcome
from ._core.on_failed import Telling, check_on_failed
from ._core.validate import Lifetime, check_chain_id, one_entry, unwrap
from ._retry_deadline import retries_until, seconds_from_now
from ._statements import OnState
from ._sync_sending import SyncSending

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class SyncXorAckDynamoDB(SyncSending):
    """Ack chains in a DynamoDB table, blocking; ``client`` is a boto3 DynamoDB client."""

    _client: DynamoDBClient  # boto3's, typed by mypy-boto3-dynamodb

    @classmethod
    @contextmanager
    def connect(cls, *, table: str, **options: Unpack[Connection]) -> Iterator[SyncXorAckDynamoDB]:
        """Open a client that owns its boto3 client (closed on exit); see the async ``connect``.

        ``session``, if given, is a boto3 session.
        """
        from .aws import sync_client

        session, settings, rest = connection(options)
        client = sync_client(session=session, **settings)
        ack = None
        try:
            ack = cls(client, table=table, **rest)
            yield ack
        finally:
            if ack is not None:
                ack._close(f"with {cls.__name__}.connect(...)")
            client.close()

    # -- the API -------------------------------------------------------------

    def create(self, tag: str, stamp: bytes, **lifetime: Unpack[Lifetime]) -> Stamp:
        """Start a chain for ``tag``; see ``XorAckDynamoDB.create`` (deadlines included)."""
        result: Stamp = self._run(self._core.create(tag, stamp, **lifetime))
        return result

    def stamp(self, tag: str, stamp: bytes, *, token: bytes | str | None = None) -> Stamp:
        """XOR ``stamp`` into the chain; see ``XorAckDynamoDB.stamp``."""
        return unwrap(self._stamp_entry(tag, one_entry(tag, stamp, token)))

    def stamp_on(
        self, state: ChainState, stamp: bytes, *, token: bytes | str | None = None
    ) -> Stamp:
        """XOR ``stamp`` into the chain only if it is still exactly ``state``; else ``ChainMoved``.

        See ``XorAckDynamoDB.stamp_on``.
        """
        (outcome,) = self._run(self._core.stamp_on(state, [(stamp, token)]))
        return unwrap(outcome)

    def stamp_on_many(
        self, state: ChainState, stamps: Sequence[tuple[bytes, bytes | str | None]]
    ) -> list[Stamp]:
        """See ``XorAckDynamoDB.stamp_on_many``."""
        outcomes = self._run(self._core.stamp_on(state, stamps))
        return [unwrap(outcome) for outcome in outcomes]

    def _stamp_entry(self, tag: str, entry: Entry) -> Outcome:
        """One validated stamp: merged with concurrent ones on its chain, unless coalesce=False."""
        if self._coalesce:
            return self._submit(tag, entry)
        outcome: Outcome = self._run(self._core.stamp_one(tag, entry))
        return outcome

    def _chunks(
        self, op: Callable[[dict[str, Any]], Op], items: Mapping[str, Any], concurrency: int
    ) -> list[Outcome]:
        """Run ``op`` over ``items``, one transaction per piece, ``concurrency`` at a time.

        Pieces of up to 100 chains and 4 MiB (``Chains.transactions``): a transaction
        over DynamoDB's limits would be refused whole, every time.
        """
        pieces = self._core.transactions(items)

        def one(piece: dict[str, Any]) -> dict[str, Outcome]:
            outcomes: dict[str, Outcome] = self._run(self._core.piece(op, piece))
            return outcomes

        merged: dict[str, Outcome] = {}
        if concurrency == 1 or len(pieces) <= 1:
            for piece in pieces:
                merged.update(one(piece))
        else:
            with ThreadPoolExecutor(max_workers=min(concurrency, len(pieces))) as pool:
                for outcomes in pool.map(one, pieces):
                    merged.update(outcomes)
        return [merged[tag] for tag in items]

    def create_many(
        self, stamps: Mapping[str, bytes], **options: Unpack[CreateMany]
    ) -> dict[str, Stamp]:
        """Start many chains, 100 per transaction (or 25 per batch of statements,
        ``via="partiql"``); see ``XorAckDynamoDB.create_many``."""
        values, op, concurrency = self._creates(stamps, options)
        return self._created(values, self._chunks(op, values, concurrency))

    def stamp_on_each(
        self, writes: Iterable[OnStateWrite], *, concurrency: int = 4
    ) -> list[ChainState | Exception]:
        """One stamp on each of many chains, each exactly on its given state; see
        ``XorAckDynamoDB.stamp_on_each``.  ``concurrency``: requests in flight (threads)."""
        ops, concurrency = self._on_state_ops(writes, concurrency)

        def one(op: Op) -> list[OnState]:
            outcomes: list[OnState] = self._run(op)
            return outcomes

        if concurrency == 1 or len(ops) <= 1:
            return [outcome for op in ops for outcome in one(op)]
        with ThreadPoolExecutor(max_workers=min(concurrency, len(ops))) as pool:
            return [outcome for outcomes in pool.map(one, ops) for outcome in outcomes]

    def known_many(self, tags: Iterable[str]) -> dict[str, ChainState | None]:
        """The chains as this client holds them, reading only the others; see
        ``XorAckDynamoDB.known_many``."""
        result: dict[str, ChainState | None] = self._run(self._core.known_many(tags))
        return result

    def get_many(self, tags: Iterable[str]) -> dict[str, ChainState | None]:
        """The states of many chains (strongly consistent), 100 per BatchGetItem request.

        ``None`` for a tag without a chain.  Raises ``GetManyFailed`` (``.results``:
        the readable states, ``.errors``: a ``CorruptItem`` per item this client
        cannot read) if any item is not a readable chain.
        """
        result: dict[str, ChainState | None] = self._run(self._core.get_many(tags))
        return result

    def stamp_many(
        self, stamps: Mapping[str, bytes], **options: Unpack[StampMany]
    ) -> dict[str, Stamp]:
        """Stamp many chains; see ``XorAckDynamoDB.stamp_many``.

        At most ``concurrency`` requests in flight (threads): single writes, or
        transactions of up to 100 chains with ``transact=True``.
        """
        entries, concurrency = self._stamps(stamps, options)
        if options.get("transact", False):
            return self._stamped(
                entries, self._chunks(self._core.stamp_transact, entries, concurrency)
            )

        if concurrency == 1 or len(entries) <= 1:
            outcomes = [self._stamp_entry(tag, entry) for tag, entry in entries.items()]
        else:
            with ThreadPoolExecutor(max_workers=min(concurrency, len(entries))) as pool:
                outcomes = list(pool.map(self._stamp_entry, entries, entries.values()))
        return self._stamped(entries, outcomes)

    def fail(
        self, tag: str, reason: str = "failed", *, chain_id: bytes | None = None
    ) -> ChainState:
        """Close a live chain as failed; see ``XorAckDynamoDB.fail``."""
        result: ChainState = self._run(self._core.fail(tag, reason, check_chain_id(chain_id)))
        return result

    def delete(self, tag: str) -> None:
        """Delete the chain's item; ``TagNotFound`` if there is none, ``NotAChain`` if it is
        another program's (``XorAckDynamoDB.delete``)."""
        self._run(self._core.delete(tag))

    def get(self, tag: str) -> ChainState | None:
        """The chain's state (strongly consistent read), or None if there is none."""
        result: ChainState | None = self._run(self._core.get(tag))
        return result

    def wait(self, tag: str, *, timeout: float, poll_interval: float = 0.2) -> ChainState:
        """Wait until the chain is acked: ``ChainFailed`` (``ChainTimedOut``), ``TagNotFound``, or
        ``WaitTimeout`` when ``timeout`` runs out (the chain left as it was)."""
        with retries_until(seconds_from_now(timeout)):
            result: ChainState = self._run(self._core.wait(tag, timeout, poll_interval))
        return result

    def touch(
        self, tag: str, *, timeout: float | None = None, chain_id: bytes | None = None
    ) -> ChainState:
        """Extend a live chain's deadline; see ``XorAckDynamoDB.touch``."""
        result: ChainState = self._run(self._core.touch(tag, timeout, check_chain_id(chain_id)))
        return result

    def sweep(
        self,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        on_failed: Callable[[ChainState], object] | None = None,
    ) -> list[ChainState]:
        """Fail every overdue chain once; see ``XorAckDynamoDB.sweep``.  ``on_failed`` is
        called between the sweep's steps, outside the client's lock: it may use the client."""
        check_on_failed(on_failed)
        if on_failed is None:
            result: list[ChainState] = self._run(self._core.sweep(page_size, None))
            return result
        made: list[ChainState] = []
        told = Telling(on_failed)

        def tell() -> None:
            while made:
                told(made.pop(0))

        try:
            result = self._run(self._core.sweep(page_size, made.append), tell)
        except (SweepIncomplete, SweepStopped) as error:
            told.noted(error)
            raise
        return told.end(result)

    def list_chains(
        self,
        status: ListStatus = "open",
        *,
        limit: int | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> Iterator[ChainState]:
        """The "open", "overdue" or "failed" chains; see ``XorAckDynamoDB.list_chains``.

        The arguments are checked at the call, before anything is sent.
        """
        listing = Listing(self._core, check_listing(status, limit, page_size), limit, page_size)
        return self._pages(listing)

    def _pages(self, listing: Listing) -> Iterator[ChainState]:
        while (page := listing.next_page()) is not None:
            states: list[ChainState] = self._run(page)
            yield from states
