"""The sync twin: the same chains over boto3, for Spark executors, Lambda handlers and scripts.

It drives the same sans-I/O operations as the async client (``_core``); only
the sending and the sleeping differ.  It is thread-safe: concurrent ``stamp``
calls on one tag from several threads are merged into one write, and with
``batch_writes`` concurrent writes of different chains go together, as in the
async client.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any, Unpack

from botocore.exceptions import BotoCoreError, ClientError

from ..chain import ChainState
from ..errors import InterruptedWrite
from ..stamps import Stamp
from ._batches import Write, drain, item_key
from ._client import ClientBase, Connection, CreateMany, OnStateWrite, StampMany, connection
from ._coalescing import Merge, Merging
from ._core.deadlines import DEFAULT_PAGE_SIZE, Listing, ListStatus, check_listing
from ._core.effects import Entry, Op, Outcome, Sleep
from ._core.expressions import Update
from ._core.merged import one_each
from ._core.validate import Lifetime, check_chain_id, one_entry, unwrap
from ._statements import OnState

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


#: A batch's result while its sending thread has not finished: it was interrupted.
_INTERRUPTED = object()


class SyncXorAckDynamoDB(ClientBase["DynamoDBClient"]):
    """Ack chains in a DynamoDB table, blocking; ``client`` is a boto3 DynamoDB client."""

    _client: DynamoDBClient  # boto3's, typed by mypy-boto3-dynamodb

    def _setup(self) -> None:
        # The core's cache and counters are shared by the threads: one lock guards
        # each step of a generator (never the I/O), the queues have their own.
        self._core_lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._merging: Merging[Future[Outcome]] = Merging()

    @classmethod
    @contextmanager
    def connect(cls, *, table: str, **options: Unpack[Connection]) -> Iterator[SyncXorAckDynamoDB]:
        """Open a client that owns its boto3 client (closed on exit); see the async ``connect``.

        ``session``, if given, is a boto3 session.
        """
        from .aws import sync_client

        session, settings, rest = connection(options)
        client = sync_client(session=session, **settings)
        try:
            yield cls(client, table=table, **rest)
        finally:
            client.close()

    def _run(self, op: Op) -> Any:
        """Drive one sans-I/O operation: send its calls, sleep its sleeps."""
        try:
            with self._core_lock:
                effect = next(op)
            while True:
                if isinstance(effect, Sleep):
                    time.sleep(effect.seconds)
                    with self._core_lock:
                        effect = op.send(None)
                    continue
                try:
                    if effect.batch is not None and self._batcher is not None:
                        response = self._write(effect.params, effect.batch)
                    else:
                        response = getattr(self._client, effect.op)(**effect.params)
                except (ClientError, BotoCoreError) as exc:
                    with self._core_lock:
                        effect = op.throw(exc)
                else:
                    with self._core_lock:
                        effect = op.send(response)
        except StopIteration as stop:
            return stop.value

    def _write(self, params: dict[str, Any], update: Update) -> Any:
        """A stamp write, sent alone at once or, while the slots are taken, in a batch.

        Whoever makes a batch ready hands it to the thread of the batch's first
        write (its inbox gets ``lead``), which sends it; every thread then waits
        for its own write's result (``done``).
        """
        assert self._batcher is not None
        inbox: SimpleQueue[tuple[str, Any]] = SimpleQueue()
        write = self._batcher.prepare(params, update, inbox)
        if write is None:
            return self._client.update_item(**params)
        with self._queue_lock:
            ready = self._batcher.plan.offer(item_key(update), write)
        for writes in ready:
            writes[0].waiter.put(("lead", writes))
        try:
            while True:
                kind, value = inbox.get()
                if kind != "lead":
                    break
                self._flush(value)
        except BaseException:  # interrupted before its answer came
            with self._queue_lock:
                withdrawn = self._batcher.plan.withdraw(write)
            if not withdrawn:  # in a batch: its lead may come here, and must still be sent
                threading.Thread(target=drain, args=(inbox, self._flush), daemon=True).start()
            raise
        if value is _INTERRUPTED:  # the thread sending its batch was interrupted
            tag = str(update.key[self._core.partition_key]["S"])
            raise InterruptedWrite(tag, self.token_window)
        if isinstance(value, BaseException):
            raise value
        return value

    def _flush(self, writes: list[Write]) -> None:
        """Send writes (one, or a batch), hand each its result, and pass on what waited."""
        assert self._batcher is not None
        results: list[Any] = [_INTERRUPTED] * len(writes)
        try:
            results = self._run(self._batcher.send(writes))
        except Exception as exc:  # the batcher returns DynamoDB's errors; anything else
            results = list(one_each(exc, len(writes)))
        finally:  # (or an interruption) still reaches every waiter, and nothing stays queued
            with self._queue_lock:
                ready = self._batcher.plan.finished()
            for batch in ready:
                batch[0].waiter.put(("lead", batch))
            for write, result in zip(writes, results, strict=True):
                write.waiter.put(("done", result))

    def _submit(self, tag: str, entry: Entry) -> Outcome:
        """Stamp now if no write for ``tag`` is in flight; else ride on the next merged write.

        The first caller writes its stamp; the stamps that queued meanwhile are written,
        merged, by a thread of their own until none are left (the plan is
        ``_coalescing``'s), as the async client's writer task does.
        """
        with self._queue_lock:
            ticket = self._merging.submit(tag, entry, Future)
        if not isinstance(ticket, Merge):
            return ticket.result()
        outcomes = self._write_merges(ticket, own=True)
        assert outcomes is not None  # or its own write's error was raised
        return outcomes[0]

    def _write_merges(
        self, merge: Merge[Future[Outcome]] | None, *, own: bool = False
    ) -> list[Outcome] | None:
        """Write a chain's merges one at a time until none are left; the first's outcomes.

        As the async client does: ``own`` (the caller's own write, the first) is the only
        one the caller writes; the stamps queued behind it are written by another thread,
        whether it landed or raised (raised: to the caller alone); a later merge raising
        gives its error to its callers and to those queued behind it.
        Interrupted (``KeyboardInterrupt``): the stamps of the write in flight get
        ``InterruptedWrite`` (it may have landed), and those queued behind it, never
        sent, are written by another thread, as the async client's writer task does.
        """
        first: list[Outcome] | None = None
        while merge is not None:
            try:
                outcomes = self._run(merge.write(self._core))
            except Exception as exc:
                if own and first is None:  # the caller's own write: its error, not theirs
                    with self._queue_lock:
                        after = self._merging.finished(merge, exc)
                    if after is not None:
                        self._hand_off(after)
                    raise
                with self._queue_lock:  # the chain's error: this merge's and the queued
                    self._merging.abandon(merge, exc)
                return first
            except BaseException:
                lost = [InterruptedWrite(merge.tag, self.token_window) for _ in merge.entries]
                with self._queue_lock:
                    after = self._merging.finished(merge, lost)
                if after is not None:
                    self._hand_off(after)
                raise
            first = outcomes if first is None else first
            with self._queue_lock:
                merge = self._merging.finished(merge, outcomes)
            if own and merge is not None:
                # The caller's stamp is written: it returns, and the stamps that queued
                # meanwhile are written by a thread of their own (the async client's writer
                # task), or under steady contention this caller would never return.
                self._hand_off(merge)
                break
        return first

    def _hand_off(self, merge: Merge[Future[Outcome]]) -> None:
        """``merge`` (and what queues behind it) written by a thread of its own; by this one
        if no thread can be started (a process out of threads, or shutting down): taken off
        the queue, nobody else would write them, and the tag would wait for them forever."""
        try:
            threading.Thread(target=self._write_rest, args=(merge,), daemon=True).start()
        except RuntimeError:
            self._write_rest(merge)

    def _write_rest(self, merge: Merge[Future[Outcome]]) -> None:
        """:meth:`_write_merges` in a thread of its own: its errors reached the waiters."""
        with contextlib.suppress(Exception):
            self._write_merges(merge)

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
        """Fail every overdue chain once; see ``XorAckDynamoDB.sweep``."""
        result: list[ChainState] = self._run(self._core.sweep(page_size, on_failed))
        return result

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
