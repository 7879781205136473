"""How the sync client sends: the core's operations driven, its writes merged and batched.

:class:`SyncSending` runs the sans-I/O operations of ``_core`` in the caller's thread
(their requests through the boto3 client, their sleeps), merges concurrent stamps on one
chain into one write (the plan is ``_coalescing``'s: the first caller's thread writes
its own, a thread of their own the ones queued meanwhile) and, with ``batch_writes``,
sends concurrent writes of different chains together (``_batches``).  The async client's
twin is ``_sending.py``; :class:`~xor_ack_dynamodb.dynamodb.sync.SyncXorAckDynamoDB` is
its API.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ..errors import InterruptedWrite
from ._batches import Write, drain, item_key
from ._client import ClientBase
from ._coalescing import Merge, Merging
from ._core.effects import Entry, Op, Outcome, Sleep
from ._core.expressions import Update
from ._core.merged import one_each

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


#: A batch's result while its sending thread has not finished: it was interrupted.
_INTERRUPTED = object()


def in_a_thread(work: Callable[..., object], *args: Any) -> None:
    """``work(*args)`` in a daemon thread of its own, or here if no thread can start (a
    process out of threads, or shutting down): what it writes must not be left unsent."""
    try:
        threading.Thread(target=work, args=args, daemon=True).start()
    except RuntimeError:
        work(*args)


class SyncSending(ClientBase["DynamoDBClient"]):
    """The sync client's sending, under its API (see the module)."""

    _client: DynamoDBClient  # boto3's, typed by mypy-boto3-dynamodb

    def _setup(self) -> None:
        # The core's cache and counters are shared by the threads: one lock guards
        # each step of a generator (never the I/O, nor the caller's code: ``_run``'s
        # ``between``), the queues have their own.
        self._core_lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._merging: Merging[Future[Outcome]] = Merging()

    def _run(self, op: Op, between: Callable[[], object] | None = None) -> Any:
        """Drive one sans-I/O operation: send its calls, sleep its sleeps.  ``between``,
        if given, runs after each step, outside the lock: what a step queued for the
        caller's code (``sweep``'s ``on_failed``, which may use this client)."""
        self._refuse_closed(op)
        sent: list[str] = []
        try:
            with self._core_lock:
                effect = next(op)
            while True:
                if between is not None:
                    between()
                if isinstance(effect, Sleep):
                    time.sleep(effect.seconds)
                    with self._core_lock:
                        effect = op.send(None)
                    continue
                with self._core_lock:  # closing ``op`` runs its cleanup
                    self._refuse_closed(op, sent)  # a block that ended while it ran
                sent.append(effect.op)
                try:
                    if effect.batch is not None and self._batcher is not None:
                        response = self._write(effect.params, effect.batch)
                    else:
                        response = getattr(self._client, effect.op)(**effect.params)
                except (ClientError, BotoCoreError) as exc:
                    with self._core_lock:
                        self._refuse_closed(op, sent, exc)  # its pool closed under it
                        effect = op.throw(self._told(exc))
                else:
                    with self._core_lock:
                        effect = op.send(response)
        except StopIteration as stop:
            return stop.value
        finally:
            if between is not None:
                between()

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
                in_a_thread(drain, inbox, self._flush)
            raise
        if value is _INTERRUPTED:  # the thread sending its batch was interrupted
            raise InterruptedWrite(write.tag(self._core.partition_key), self.token_window)
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
            try:
                return ticket.result()
            except BaseException:  # interrupted while it waited: left out if not sent yet
                with self._queue_lock:
                    ticket.cancel()
                raise
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
                if isinstance(exc, InterruptedWrite):  # its batch's sender was interrupted:
                    with self._queue_lock:  # the queued stamps are still written, here
                        merge = self._merging.finished(merge, exc)
                    continue
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
        in_a_thread(self._write_rest, merge)

    def _write_rest(self, merge: Merge[Future[Outcome]]) -> None:
        """:meth:`_write_merges` in a thread of its own: its errors reached the waiters."""
        with contextlib.suppress(Exception):
            self._write_merges(merge)
