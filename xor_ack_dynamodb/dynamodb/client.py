"""The async client: ack chains in DynamoDB over aioboto3 / aiobotocore.

All decisions are made by the sans-I/O core in ``_core``; this module is the API, and
``_sending`` sends the requests the core builds (on the direct path, ``_direct``, or
through botocore), sleeps when it says so, merges concurrent stamps on one chain into one
write (``_coalescing``) and, with ``batch_writes``, sends concurrent writes of different
chains together (``_batches``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Unpack

from ..chain import ChainState
from ..stamps import Stamp
from ._client import Connection, CreateMany, OnStateWrite, StampMany, connection
from ._core.deadlines import DEFAULT_PAGE_SIZE, Listing, ListStatus, check_listing
from ._core.effects import Entry, Outcome
from ._core.validate import Lifetime, check_chain_id, one_entry, unwrap
from ._retry_deadline import retries_until, seconds_from_now
from ._sending import Sending
from .together import every


class XorAckDynamoDB(Sending):
    """Ack chains in a DynamoDB table, async.

    ``client`` is an aiobotocore DynamoDB client (for example from
    ``aioboto3.Session().client("dynamodb")``); :meth:`connect` makes and owns one.
    Concurrent :meth:`stamp` calls on one tag are merged into one conditional
    write while a write for that tag is in flight (``coalesce=False`` turns it off).
    ``direct``: the chain requests skip botocore's pipeline and event hooks (``_direct``);
    :meth:`connect` turns it on, a client passed here keeps botocore's unless asked.
    """

    @classmethod
    @asynccontextmanager
    async def connect(
        cls, *, table: str, direct: bool = True, **options: Unpack[Connection]
    ) -> AsyncIterator[XorAckDynamoDB]:
        """Open a client that owns its aioboto3 session and connection pool.

        Credentials, region and endpoint come from the standard AWS environment
        (``AWS_REGION``, ``AWS_ENDPOINT_URL_DYNAMODB``, profiles, ...) unless given
        (``endpoint_url``, ``region_name``, an aioboto3 ``session``, a botocore ``config``);
        the order is in ``xor_ack_dynamodb.dynamodb.aws`` (``RegionMissing`` when there is
        no region).  ``direct`` as the constructor's, on here: False sends all via botocore.
        The other ``options`` are the constructor's (``retry``, ``token_window``, ...).
        """
        from .aws import async_client

        session, settings, rest = connection(options)
        async with async_client(session=session, **settings) as client:
            ack = cls(client, table=table, direct=direct, **rest)
            try:
                yield ack
            finally:
                try:
                    await ack.drain()
                finally:  # a drain cancelled or failed: closed all the same
                    ack._close(f"async with {cls.__name__}.connect(...)")

    # -- the API -------------------------------------------------------------

    async def create(self, tag: str, stamp: bytes, **lifetime: Unpack[Lifetime]) -> Stamp:
        """Start a chain for ``tag`` with ``stamp``; ``TagExists`` if a live one exists.

        ``timeout`` (seconds): the chain must ack by now + ``timeout``, or its next
        write (or a :meth:`sweep`) fails it with reason "timeout" and that writer gets
        ``ChainTimedOut``.  ``idle_timeout``: each landed stamp moves the deadline to
        now + ``idle_timeout`` in the same write (also the first deadline without a
        ``timeout``).  ``ttl`` (seconds) is garbage collection only: an abandoned chain
        expires and counts as absent; it must be longer than the first deadline.
        """
        result: Stamp = await self._run(self._core.create(tag, stamp, **lifetime))
        return result

    async def stamp(self, tag: str, stamp: bytes, *, token: bytes | str | None = None) -> Stamp:
        """XOR ``stamp`` into the chain; the result's ``.acked`` is True for exactly one caller.

        ``token`` (1-16 bytes) makes the call idempotent: a stamp whose token the
        chain already holds is not applied again and the current state is returned (on a
        complete chain, ``AppliedBefore`` unless this stamp completed it: not ``.acked``).
        """
        return unwrap(await self._stamp_entry(tag, one_entry(tag, stamp, token)))

    async def stamp_on(
        self, state: ChainState, stamp: bytes, *, token: bytes | str | None = None
    ) -> Stamp:
        """XOR ``stamp`` into the chain only if it is still exactly ``state``; else nothing.

        ``state`` is a ``ChainState`` you read (``get``) or were given (``ChainMoved.current``):
        one write conditioned on its chain and version, never planned again.  If the chain
        moved since (another write landed, or it was closed or deleted), nothing is written
        and ``ChainMoved`` is raised with ``.current``, the chain as it is now (from the
        refused write's answer: no read).  A ``token`` that ``state`` already holds is
        reported applied (``state.stamp``) with no write.  Lost responses, deadlines and
        closed states are handled as by :meth:`stamp`.  Not merged with other stamps.
        """
        (outcome,) = await self._run(self._core.stamp_on(state, [(stamp, token)]))
        return unwrap(outcome)

    async def stamp_on_many(
        self, state: ChainState, stamps: Sequence[tuple[bytes, bytes | str | None]]
    ) -> list[Stamp]:
        """Several ``(stamp, token)`` written on ``state`` in one write, or none of them.

        As :meth:`stamp_on` (``ChainMoved`` if the chain moved), for several pieces of
        work at once, each with its own token (the chain keeps them all): one write
        unit instead of one per stamp.  Returns each stamp's state, in order (the last
        one is the chain's).  At most ``token_window // 2`` stamps, tokens distinct
        (``InvalidStamp``, ``InvalidToken``).  A stamp after those that brought the
        chain to zero is not written: ``TagNotFound`` is raised for it (the others landed).
        """
        outcomes = await self._run(self._core.stamp_on(state, stamps))
        return [unwrap(outcome) for outcome in outcomes]

    async def create_many(
        self, stamps: Mapping[str, bytes], **options: Unpack[CreateMany]
    ) -> dict[str, Stamp]:
        """Start many chains (``{tag: stamp}``), up to 100 per transaction.

        Every input is validated before anything is sent.  A chain whose tag a
        live chain holds is not created (``TagExists``), and neither are the
        others of its transaction on that attempt: they are sent again without it.
        Raises ``CreateManyFailed`` (created stamps and errors) if any was not
        created.  A transaction costs twice the write units of plain writes.

        ``via="partiql"``: 25 chains per ``BatchExecuteStatement``, each an ``INSERT`` (one
        write unit, created or refused alone; ``dynamodb:PartiQLInsert``); a tag a closed
        chain holds is then written alone, as ``create`` writes it.
        """
        values, op, concurrency = self._creates(stamps, options)
        return self._created(values, await self._chunks(op, values, concurrency))

    async def stamp_on_each(
        self, writes: Iterable[OnStateWrite], *, concurrency: int = 4
    ) -> list[ChainState | Exception]:
        """One stamp on each of many chains (``(state, stamp, token)``), each as ``stamp_on``,
        25 per ``BatchExecuteStatement`` (``dynamodb:PartiQLUpdate``; not on moto).  Returns,
        in order, the chain as each write left it or the error ``stamp_on`` would raise
        (``ChainMoved``, ...), raising none.  A write whose token its state already holds
        is not sent and returns that state: ``.acked`` there says the chain is complete,
        not that this stamp completed it (``stamp_on`` says which); docs/api.md."""
        ops, concurrency = self._on_state_ops(writes, concurrency)
        return [out for outcomes in await self._run_all(ops, concurrency) for out in outcomes]

    async def known_many(self, tags: Iterable[str]) -> dict[str, ChainState | None]:
        """The chains as this client holds them (live ones it last wrote or read: its cache),
        reading only the others as ``get_many`` does; another writer may have moved them."""
        result: dict[str, ChainState | None] = await self._run(self._core.known_many(tags))
        return result

    async def get_many(self, tags: Iterable[str]) -> dict[str, ChainState | None]:
        """The states of many chains (strongly consistent), 100 per BatchGetItem request.

        ``None`` for a tag without a chain.  Raises ``GetManyFailed`` (``.results``:
        the readable states, ``.errors``: a ``CorruptItem`` per item this client
        cannot read) if any item is not a readable chain.
        """
        result: dict[str, ChainState | None] = await self._run(self._core.get_many(tags))
        return result

    async def stamp_many(
        self, stamps: Mapping[str, bytes], **options: Unpack[StampMany]
    ) -> dict[str, Stamp]:
        """Stamp many chains at once, at most ``concurrency`` requests in flight.

        Every input is validated before anything is sent.  Raises
        ``StampManyFailed`` (with the states that landed and the errors of the
        rest) if any stamp did not land.

        ``transact=True`` writes up to 100 chains per request (TransactWriteItems,
        each chain conditioned on its own version; states read 100 per
        BatchGetItem): far fewer requests and less CPU on both ends, at twice the
        write units per chain on AWS.  The guarantees are the same.
        """
        entries, concurrency = self._stamps(stamps, options)
        if options.get("transact", False):
            outcomes = await self._chunks(self._core.stamp_transact, entries, concurrency)
            return self._stamped(entries, outcomes)
        gate = asyncio.Semaphore(concurrency)

        async def one(tag: str, entry: Entry) -> Outcome:
            async with gate:
                return await self._stamp_entry(tag, entry)

        outcomes = await every(one(t, e) for t, e in entries.items())
        return self._stamped(entries, outcomes)

    async def fail(
        self, tag: str, reason: str = "failed", *, chain_id: bytes | None = None
    ) -> ChainState:
        """Close a live chain as failed; an acked chain stays acked (zero wins) and is returned.

        A chain already failed stays as it was and the caller is told so: ``ChainFailed``
        (``ChainTimedOut`` if its deadline failed it) with ``.requested_reason`` = ``reason``,
        which was not written; past the deadline the chain is failed with reason "timeout"
        and ``ChainTimedOut`` raised (``.failed_by_this_call``: whose write it was).

        ``chain_id``: fail only that generation of the chain (the ``chain_id`` of a
        ``ChainState`` you read); if the tag holds another one (re-created since),
        ``TagNotFound`` and nothing is written, also when it is re-created between
        this call's read and its write (the write is conditioned on it).
        """
        result: ChainState = await self._run(self._core.fail(tag, reason, check_chain_id(chain_id)))
        return result

    async def delete(self, tag: str) -> None:
        """Delete the chain's item; ``TagNotFound`` if there is none, ``NotAChain`` (nothing
        deleted) if it holds none of a chain's binary attributes.  A chain created under the tag
        after this call read the item is left alone (the call returns)."""
        await self._run(self._core.delete(tag))

    async def get(self, tag: str) -> ChainState | None:
        """The chain's state (strongly consistent read), or None if there is none."""
        result: ChainState | None = await self._run(self._core.get(tag))
        return result

    async def wait(self, tag: str, *, timeout: float, poll_interval: float = 0.2) -> ChainState:
        """Wait until the chain is acked: ``ChainFailed`` (``ChainTimedOut``), ``TagNotFound``, or
        ``WaitTimeout`` when ``timeout`` runs out (the chain left as it was)."""
        with retries_until(seconds_from_now(timeout)):
            result: ChainState = await self._run(self._core.wait(tag, timeout, poll_interval))
        return result

    async def touch(
        self, tag: str, *, timeout: float | None = None, chain_id: bytes | None = None
    ) -> ChainState:
        """Move a live chain's deadline to now + its ``idle_timeout`` (Storm's ``resetTimeout``).

        ``timeout`` moves it to now + ``timeout`` instead (needed for a chain created
        with a fixed ``timeout`` only: ``InvalidTimeout`` otherwise, nothing written).
        A touch only extends: a later deadline, or a chain without one, is returned as
        it is.  Past the deadline: the chain is failed ("timeout") and ``ChainTimedOut``
        raised.  One conditional write (a read first if the chain is not cached).
        ``chain_id``: touch only that generation, as ``fail``'s (``TagNotFound`` for another).
        """
        result: ChainState = await self._run(
            self._core.touch(tag, timeout, check_chain_id(chain_id))
        )
        return result

    async def sweep(
        self,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        on_failed: Callable[[ChainState], object] | None = None,
    ) -> list[ChainState]:
        """Fail every overdue chain with reason "timeout"; the tombstones this sweep made.

        Safe with any number of sweepers at once (each chain is failed by one
        conditional write); one Query per index shard and page (keys only), a
        consistent BatchGetItem per page, one write per overdue chain.
        """
        result: list[ChainState] = await self._run(self._core.sweep(page_size, on_failed))
        return result

    def list_chains(
        self,
        status: ListStatus = "open",
        *,
        limit: int | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> AsyncIterator[ChainState]:
        """The chains that are "open" (live), "overdue" (live past the deadline) or "failed".

        An async iterator, one index page in memory at a time: the sparse index of
        each shard is queried (keys only), then the items are read consistently and
        only those still in that status are yielded (at most ``limit``).  Order: by
        shard, then by deadline ("open", "overdue") or failure time ("failed").
        The arguments are checked at the call, before anything is sent.
        """
        listing = Listing(self._core, check_listing(status, limit, page_size), limit, page_size)
        return self._pages(listing)

    async def _pages(self, listing: Listing) -> AsyncIterator[ChainState]:
        while (page := listing.next_page()) is not None:
            states: list[ChainState] = await self._run(page)
            for state in states:
                yield state
