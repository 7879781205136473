"""How the async client sends: the core's operations driven, its requests sent, its writes merged.

:class:`Sending` runs the sans-I/O operations of ``_core`` (their requests on the direct
path, ``_direct``, or through the aiobotocore client; their sleeps), merges concurrent
stamps on one chain into one write (the plan is ``_coalescing``'s) and, with
``batch_writes``, sends concurrent writes of different chains together (``_batches``).
:class:`~xor_ack_dynamodb.dynamodb.client.XorAckDynamoDB` is its API.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Unpack

from botocore.exceptions import BotoCoreError, ClientError

from ..errors import InterruptedWrite
from ._batches import Write, item_key
from ._client import ClientBase, Options, check_flag
from ._coalescing import Merge, Merging
from ._core.effects import Entry, Op, Outcome, Sleep
from ._core.expressions import Update
from ._core.merged import one_each
from ._direct import OPERATIONS, Direct
from .together import every

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient


class Sending(ClientBase["DynamoDBClient"]):
    """The async client's sending, under its API (see the module)."""

    _client: DynamoDBClient  # aiobotocore's, typed by types-aiobotocore-dynamodb
    _asynchronous = True

    def __init__(
        self,
        client: DynamoDBClient,
        *,
        table: str,
        direct: bool = False,
        **options: Unpack[Options],
    ) -> None:
        """``direct``: send the chain requests without botocore's pipeline nor its event hooks
        (``_direct``: the core's requests need none of its per-request work); :meth:`connect`'s
        default."""
        check_flag("direct", direct)
        super().__init__(client, table=table, **options)
        self._direct = Direct.of(client) if direct else None

    def _setup(self) -> None:
        self._merging: Merging[asyncio.Future[Outcome]] = Merging()
        self._writers: set[asyncio.Task[None]] = set()

    # -- plumbing ------------------------------------------------------------

    async def _run(self, op: Op) -> Any:
        """Drive one sans-I/O operation: send its calls, sleep its sleeps."""
        self._refuse_closed(op)
        sent: list[str] = []
        try:
            effect = next(op)
            while True:
                if isinstance(effect, Sleep):
                    await asyncio.sleep(effect.seconds)
                    effect = op.send(None)
                    continue
                self._refuse_closed(op, sent)  # a block that ended while it ran
                sent.append(effect.op)
                try:
                    if effect.batch is not None and self._batcher is not None:
                        response = await self._write(effect.params, effect.batch)
                    else:
                        response = await self._call(effect.op, effect.params)
                except (ClientError, BotoCoreError) as exc:
                    self._refuse_closed(op, sent, exc)  # its pool closed under it
                    effect = op.throw(self._told(exc))
                else:
                    effect = op.send(response)
        except StopIteration as stop:
            return stop.value

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        """One request: on the direct path if this client has one and it takes ``method``."""
        if self._direct is not None and method in OPERATIONS:
            return await self._direct.call(method, params)
        return await getattr(self._client, method)(**params)

    async def _write(self, params: dict[str, Any], update: Update) -> Any:
        """A stamp write, sent alone at once or, while the slots are taken, in a batch."""
        assert self._batcher is not None
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        write = self._batcher.prepare(params, update, future)
        if write is None:
            return await self._call("update_item", params)
        for writes in self._batcher.plan.offer(item_key(update), write):
            if len(writes) == 1 and writes[0] is write:
                await self._flush(writes, write)  # a free slot: this task sends its own write
            else:
                self._spawn(self._flush(writes))
        return await future

    async def _flush(self, writes: list[Write], own: Write | None = None) -> None:
        """Send writes (one, or a batch), hand each its result, and start what waited;
        ``own``: the write of the task that sends them, if it is one of them."""
        assert self._batcher is not None
        # A caller cancelled while its write waited is left out: its stamp is not sent
        # (as for a stamp still queued to be merged).  The request's slot is still freed.
        writes = [write for write in writes if not write.waiter.done()]
        results: list[Any] | None = None
        try:
            if writes:
                results = await self._run(self._batcher.send(writes))
        except Exception as exc:  # the batcher returns DynamoDB's errors; anything else
            results = one_each(exc, len(writes))
        finally:  # (or a cancellation) still reaches every waiter, and nothing stays queued
            for ready in self._batcher.plan.finished():
                self._spawn(self._flush(ready))
            for i, write in enumerate(writes):
                if write.waiter.done():
                    continue
                if results is None:  # cancelled in flight: the caller's own write, its
                    if write is own:  # task cancelled (its future awaited by no one)
                        write.waiter.cancel()
                    else:  # the others' writes may have landed
                        tag = write.tag(self._core.partition_key)
                        write.waiter.set_exception(InterruptedWrite(tag, self.token_window))
                elif isinstance(results[i], BaseException):
                    write.waiter.set_exception(results[i])
                else:
                    write.waiter.set_result(results[i])

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._writers.add(task)
        task.add_done_callback(self._writers.discard)

    async def drain(self) -> None:
        """Wait until every coalesced write in flight has finished.  Cancelled (a timeout
        around it), it stops waiting: the writes go on (``asyncio.wait``, not ``gather``,
        which cancels what it waits for)."""
        while self._writers:
            done, _ = await asyncio.wait(list(self._writers))
            for task in done:  # its error went to its callers: retrieved, not logged
                if not task.cancelled():
                    task.exception()

    async def _submit(self, tag: str, entry: Entry) -> Outcome:
        """Stamp now if no write for ``tag`` is in flight; else ride on the next merged write.

        The first caller writes in its own task; the stamps that queue meanwhile
        are written, merged, by a writer task (the plan is ``_coalescing``'s).
        """
        ticket = self._merging.submit(tag, entry, asyncio.get_running_loop().create_future)
        if not isinstance(ticket, Merge):
            return await ticket
        try:
            outcomes: list[Outcome] = await self._run(ticket.write(self._core))
        except BaseException as exc:
            self._write_merges(self._merging.finished(ticket, exc))
            raise
        self._write_merges(self._merging.finished(ticket, outcomes))
        return outcomes[0]

    def _write_merges(self, merge: Merge[asyncio.Future[Outcome]] | None) -> None:
        """Write a chain's next merges in a writer task, one at a time, until none are left."""
        if merge is None:  # nothing queued meanwhile: the common case, no task
            return

        async def writer(merge: Merge[asyncio.Future[Outcome]] | None) -> None:
            while merge is not None:
                try:
                    outcomes = await self._run(merge.write(self._core))
                except asyncio.CancelledError:  # the task, not its callers: they are told
                    cut = InterruptedWrite(merge.tag, self.token_window)  # it may have landed
                    self._merging.abandon(merge, cut)
                    raise
                except BaseException as exc:
                    self._merging.abandon(merge, exc)
                    raise
                merge = self._merging.finished(merge, outcomes)

        self._spawn(writer(merge))

    async def _stamp_entry(self, tag: str, entry: Entry) -> Outcome:
        """One validated stamp: merged with concurrent ones on its chain, unless coalesce=False."""
        if self._coalesce:
            return await self._submit(tag, entry)
        outcome: Outcome = await self._run(self._core.stamp_one(tag, entry))
        return outcome

    async def _chunks(
        self, op: Callable[[dict[str, Any]], Op], items: Mapping[str, Any], concurrency: int
    ) -> list[Outcome]:
        """Run ``op`` over ``items``, one transaction per piece, ``concurrency`` at a time.

        Pieces of up to 100 chains and 4 MiB (``Chains.transactions``): a transaction
        over DynamoDB's limits would be refused whole, every time.
        """
        pieces = (self._core.piece(op, piece) for piece in self._core.transactions(items))
        merged: dict[str, Outcome] = {}
        for outcomes in await self._run_all(pieces, concurrency):
            merged.update(outcomes)
        return [merged[tag] for tag in items]

    async def _run_all(self, ops: Iterable[Op], concurrency: int) -> list[Any]:
        """``_run`` each op, ``concurrency`` at a time; their results, in order."""
        gate = asyncio.Semaphore(concurrency)

        async def one(op: Op) -> Any:
            async with gate:
                return await self._run(op)

        return await every(map(one, ops))
