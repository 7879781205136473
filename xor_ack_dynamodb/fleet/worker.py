"""An asyncio SQS worker: long polls, bounded concurrency, visibility kept while working.

- ``concurrency`` messages at most are in hand; a receive asks for no more than
  the free slots (and at most 10, SQS's limit);
- while a message is handled its visibility timeout is extended every third of it,
  so a long handler keeps its message and a dead worker's comes back soon;
- a message that succeeded is deleted; one that failed is made visible again after
  a back-off growing with its receive count, until the queue's redrive policy
  moves it to the dead-letter queue; ``dead_letter_queue_url`` makes the worker
  drain that queue too, failing each message's chain with reason ``dead-letter``;
- on a FIFO queue (URL ending in ``.fifo``) the messages of one group in a receive are
  handled one after another, in order; behind one that is not done, the rest are made
  visible again unhandled (``held_back``), so that they come after it;
- ``stop`` (SIGTERM or SIGINT by ``install_signal_handlers``) stops receiving, lets
  the messages in hand finish for ``shutdown_grace`` seconds, and releases those
  still running (visibility 0) so that another worker takes them at once; with
  ``DaemonThreads`` as the loop's default executor (``xor-ack worker`` sets it) the
  process then exits even while a plain handler still blocks in its thread.  A long
  poll under way is let end (within ``wait_time``) and what it took released: cut off
  on this side, it stays open at SQS, which hands it messages no worker then sees
  until their visibility timeout.  ``now`` (a second signal) stops without waiting.

No message stops a loop: each is handled on its own, and whatever it raises (an
envelope that is none, a handler's error, a DynamoDB or SQS error, a bug) is logged,
counted (``stats``, and ``xor_ack.item_failures`` through ``dynamodb.loops``) and the loop
takes the next one.  The same goes for the dead-letter drain (``dead_letters.py``).
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from typing import Any

from ..dynamodb.loops import item_failed
from ..errors import InvalidArgument
from .app import Fleet
from .dead_letters import LOGGER, settle_dead_letter
from .envelope import named
from .errors import InvalidEnvelope, WindowMismatch
from .kept import Kept
from .process import DaemonThreads, install_signal_handlers
from .telemetry import log

#: SQS's own bounds.
MAX_BATCH = 10
MAX_WAIT = 20
#: With ``wait_time=0`` (short polling), the pause after a receive that found no message:
#: an empty queue is not polled in a tight loop (each receive is a request SQS bills).
EMPTY_PAUSE = 1.0
MAX_VISIBILITY = 43_200


class Worker:
    """Runs ``fleet.handle`` on the messages of ``queue_url`` (``sqs``: aiobotocore SQS)."""

    def __init__(
        self,
        fleet: Fleet,
        sqs: Any,
        queue_url: str,
        *,
        concurrency: int = 16,
        wait_time: int = MAX_WAIT,
        visibility_timeout: int = 60,
        shutdown_grace: float = 30.0,
        dead_letter_queue_url: str | None = None,
    ) -> None:
        if not 1 <= concurrency <= 10_000:
            raise InvalidArgument(f"Worker(concurrency=...) is 1..10000, not {concurrency}")
        if not 0 <= wait_time <= MAX_WAIT:
            raise InvalidArgument(f"Worker(wait_time=...) is 0..{MAX_WAIT} s, not {wait_time}")
        if not 1 <= visibility_timeout <= MAX_VISIBILITY:
            raise InvalidArgument(
                f"Worker(visibility_timeout=...) is 1..{MAX_VISIBILITY} s, not {visibility_timeout}"
            )
        if not (math.isfinite(shutdown_grace) and shutdown_grace >= 0):
            raise InvalidArgument(
                f"Worker(shutdown_grace=...) is a number of seconds >= 0, not {shutdown_grace}"
            )
        self.fleet = fleet
        self.sqs = sqs
        self.queue_url = queue_url
        self.concurrency = concurrency
        self.wait_time = wait_time
        self.visibility_timeout = visibility_timeout
        self.shutdown_grace = shutdown_grace
        self.dead_letter_queue_url = dead_letter_queue_url
        self.stats: Counter[str] = Counter()
        self._tasks: set[asyncio.Task[None]] = set()
        #: Messages received and not yet settled (deleted, backed off, released): a FIFO
        #: group's wait their turn in one task, so tasks are not the measure.
        self._in_hand = 0
        #: Receives under way when the worker stopped, by queue (``_end_polls``).
        self._polls: dict[str, asyncio.Future[Any]] = {}
        self._settled = asyncio.Event()

    async def run(self, stop: asyncio.Event, now: asyncio.Event | None = None) -> Counter[str]:
        """Work until ``stop`` is set, then shut down gracefully (``now`` set: at once);
        returns the counters."""
        stopping = asyncio.ensure_future(stop.wait())
        ending = asyncio.Event()  # the drain's stop: ``stop``, or this run ending otherwise
        stopping.add_done_callback(lambda _: ending.set())
        dead = None
        if self.dead_letter_queue_url is not None:
            dead = asyncio.ensure_future(self._drain_dead_letters(ending))
        try:
            while not stop.is_set():
                free = self.concurrency - self._in_hand
                if free <= 0:
                    self._settled.clear()
                    settled = asyncio.ensure_future(self._settled.wait())
                    await asyncio.wait({stopping, settled}, return_when="FIRST_COMPLETED")
                    settled.cancel()
                    continue
                messages = await self._receive(self.queue_url, min(MAX_BATCH, free), stopping)
                self._in_hand += len(messages)
                for in_order in self._in_order(messages):
                    task = asyncio.ensure_future(self._one_by_one(in_order))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
        finally:
            stopping.cancel()
            ending.set()
            hurry = asyncio.ensure_future((now or asyncio.Event()).wait())
            said = "a second SIGINT or SIGTERM stops at once" if now is not None else None
            try:
                await asyncio.gather(self._shut_down(hurry, said), self._end_polls(dead, hurry))
            finally:
                hurry.cancel()
        return self.stats

    async def _receive(
        self, queue_url: str, count: int, stopping: asyncio.Future[Any]
    ) -> list[dict[str, Any]]:
        receive = asyncio.ensure_future(
            self.sqs.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=count,
                WaitTimeSeconds=self.wait_time,
                VisibilityTimeout=self.visibility_timeout,
                MessageSystemAttributeNames=["ApproximateReceiveCount", "MessageGroupId"],
            )
        )
        try:
            await asyncio.wait({receive, stopping}, return_when="FIRST_COMPLETED")
        except asyncio.CancelledError:  # the run cancelled: its poll ended as a stop's
            self._polls[queue_url] = receive
            raise
        if not receive.done():  # stopping: ended by _end_polls, what it takes released
            self._polls[queue_url] = receive
            return []
        try:
            messages: list[dict[str, Any]] = list(receive.result().get("Messages", []))
        except Exception as exc:  # a transport error: report it, poll again after a pause
            self.stats["receive_errors"] += 1
            item_failed("worker.receive", exc, logger=LOGGER, event="receive-error")
            await asyncio.sleep(1.0)
            return []
        self.stats["received"] += len(messages)
        if not messages and self.wait_time == 0:
            await asyncio.wait({stopping}, timeout=EMPTY_PAUSE)
        return messages

    def _in_order(self, messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        """The received messages as runs to handle one after another: on a FIFO queue, the
        messages of each group, in the order received (SQS gives a group's next messages
        only once these are deleted or visible again); elsewhere, each message alone."""
        if not self.queue_url.endswith(".fifo"):
            return [[message] for message in messages]
        groups: dict[str, list[dict[str, Any]]] = {}
        for position, message in enumerate(messages):
            group = message.get("Attributes", {}).get("MessageGroupId")
            groups.setdefault(group if isinstance(group, str) else f"\0{position}", []).append(
                message
            )
        return list(groups.values())

    async def _one_by_one(self, messages: list[dict[str, Any]]) -> None:
        """Messages in order, each on its own: nothing they raise reaches the loop (but a
        cancellation).  All are kept visible while they wait their turn; once one is not
        done (failed, refused, cancelled), the rest are held back: made visible again, not
        handled, so that they come after it (``held_back``; ``released`` when stopping)."""
        pending = [Kept(self, message) for message in messages]  # never raises
        try:
            while pending:
                one = pending[0]
                try:
                    done = await self._handle(one)
                except asyncio.CancelledError:
                    self._settle(pending.pop(0))  # released by _handle
                    raise
                except Exception as exc:  # a bug, an SQS error after the handler: go on
                    await one.stop()
                    self.stats["item_errors"] += 1
                    message_id = one.message.get("MessageId")
                    item_failed("worker", exc, logger=LOGGER, message_id=message_id)
                    done = False
                self._settle(pending.pop(0))
                if not done:
                    await self._hold_back(pending, "held_back")
        except asyncio.CancelledError:
            await self._hold_back(pending, "released")
            raise

    def _settle(self, one: Kept) -> None:
        """``one`` is out of hand: a receive may take another message."""
        self._in_hand -= 1
        self._settled.set()

    async def _hold_back(self, pending: list[Kept], counted: str) -> None:
        """Make each pending message visible again, unhandled (taken from ``pending`` once
        done: a cancellation midway leaves the rest there to be released)."""
        while pending:
            one = pending[0]
            await one.stop()
            receipt = one.message.get("ReceiptHandle")
            if isinstance(receipt, str):
                await self._set_visibility(receipt, 0)
            self.stats[counted] += 1
            self._settle(pending.pop(0))

    async def _handle(self, one: Kept) -> bool:
        """Handle one message: True once its handler succeeded (it is then deleted)."""
        message = one.message
        receipt = message["ReceiptHandle"]
        count = int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))
        message_id = message.get("MessageId")
        try:
            try:
                handled = await self.fleet.handle(message["Body"], count)
            except BaseException:  # an extension under way ends first: it would undo the
                await one.stop()  # back-off or the release that follows
                raise
            await one.stop(wait=False)  # deleted next: a late extension does no harm
        except asyncio.CancelledError:
            await self._set_visibility(receipt, 0)  # shutting down: another worker takes it
            self.stats["released"] += 1
            raise
        except InvalidEnvelope as exc:  # checked before anything ran: the handler never saw it
            self.stats["invalid"] += 1
            item_failed(
                "worker", exc, logger=LOGGER, event="invalid-envelope", message_id=message_id
            )
            return False  # left to the redrive policy: it ends in the dead-letter queue
        except WindowMismatch as exc:  # refused before the handler: a worker of the right
            self.stats["refused"] += 1  # window may take it once it is visible again
            item_failed(
                "worker", exc, logger=LOGGER, event="window-mismatch", message_id=message_id
            )
            await self._set_visibility(receipt, min(2**count, self.visibility_timeout))
            return False
        except Exception as exc:
            self.stats["failed"] += 1
            item_failed(
                "worker",
                exc,
                logger=LOGGER,
                event="handler-failed",
                receives=count,
                **named(message["Body"], message_id),
            )
            await self._set_visibility(receipt, min(2**count, self.visibility_timeout))
            return False
        self.stats[handled.verdict.value] += 1
        try:
            await self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=receipt)
        except Exception as exc:  # it comes back, and is then a duplicate: applied once
            self.stats["delete_errors"] += 1
            item_failed("worker", exc, logger=LOGGER, event="delete-failed", message_id=message_id)
        return True

    async def _keep_visible(self, receipt: str, handled: asyncio.Event) -> None:
        """Extend the message's visibility every third of it until ``handled`` is set; an
        extension under way then is let finish (``Kept.stop``): cancelled, it may still
        reach SQS after the back-off that follows, and undo it."""
        period = self.visibility_timeout / 3  # extended well before it runs out (1 s too)
        while True:
            try:
                await asyncio.wait_for(handled.wait(), period)
                return
            except TimeoutError:
                pass
            await self._set_visibility(receipt, self.visibility_timeout)
            self.stats["extended"] += 1

    async def _set_visibility(self, receipt: str, seconds: int, queue: str | None = None) -> bool:
        """Whether SQS took it (an error is logged: the message may be gone, or its receipt
        stale; it comes back after its timeout)."""
        try:
            await self.sqs.change_message_visibility(
                QueueUrl=queue or self.queue_url, ReceiptHandle=receipt, VisibilityTimeout=seconds
            )
        except Exception as exc:
            log("visibility-error", "-", None, error=repr(exc))
            return False
        return True

    async def _release(self, queue: str, messages: list[dict[str, Any]]) -> None:
        """Make ``messages`` visible again at once, unhandled (``released``: those SQS took)."""
        for message in messages:
            receipt = message.get("ReceiptHandle")
            if isinstance(receipt, str) and await self._set_visibility(receipt, 0, queue):
                self.stats["released"] += 1

    async def _shut_down(self, hurry: asyncio.Future[Any], again: str | None) -> None:
        """The messages in hand get ``shutdown_grace`` (until ``hurry``); those still
        running are then released.  ``again``: what a second signal does, if anything."""
        log(
            "stopping", "-", None, in_hand=self._in_hand, grace=self.shutdown_grace,
            polls=len(self._polls), **({} if again is None else {"again": again}),
        )  # fmt: skip
        deadline = asyncio.get_running_loop().time() + self.shutdown_grace
        running: set[asyncio.Future[Any]] = set(self._tasks)
        while running and not hurry.done():
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                break
            _, running = await asyncio.wait(
                running | {hurry}, timeout=left, return_when="FIRST_COMPLETED"
            )
            running.discard(hurry)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    async def _end_polls(
        self, dead: asyncio.Future[Any] | None, hurry: asyncio.Future[Any]
    ) -> None:
        """Let each receive left under way end (within ``wait_time``, or until ``hurry``),
        and make what it took visible again at once; the dead-letter drain first gets the
        grace to settle the dead letter in hand (it releases the others)."""
        if dead is not None:
            await asyncio.wait(
                {dead, hurry}, timeout=self.shutdown_grace, return_when="FIRST_COMPLETED"
            )
            dead.cancel()
            await asyncio.gather(dead, return_exceptions=True)
        await asyncio.gather(*(self._end_poll(q, p, hurry) for q, p in self._polls.items()))
        self._polls.clear()

    async def _end_poll(self, queue: str, poll: asyncio.Future[Any], hurry: Any) -> None:
        await asyncio.wait(
            {poll, hurry}, timeout=self.wait_time + 5.0, return_when="FIRST_COMPLETED"
        )
        if not poll.done():  # a second signal: cut off, what it takes comes back in time
            poll.cancel()
        answer: Any = (await asyncio.gather(poll, return_exceptions=True))[0]
        await self._release(
            queue, [] if isinstance(answer, BaseException) else answer.get("Messages", [])
        )

    async def _drain_dead_letters(self, stop: asyncio.Event) -> None:
        """Fail the chain of each dead letter; one that cannot be settled now is kept (it is
        visible again after its timeout), one that never can be is dropped; never stops."""
        queue = self.dead_letter_queue_url
        assert queue is not None
        stopping = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                received = await self._receive(queue, MAX_BATCH, stopping)
                for at, message in enumerate(received):
                    if stop.is_set():  # stopping: the rest go back to the queue at once
                        await self._release(queue, received[at:])
                        break
                    try:
                        await self._one_dead_letter(queue, message)
                    except asyncio.CancelledError:  # the grace ran out: the one in hand (a
                        await self._release(queue, received[at:])  # closed chain's settling
                        raise  # again does nothing) and the rest go back at once
        finally:
            stopping.cancel()

    async def _one_dead_letter(self, queue: str, message: dict[str, Any]) -> None:
        message_id = message.get("MessageId")
        try:
            kept = await settle_dead_letter(
                self.fleet, message["Body"], "worker.dead_letters", message_id
            )
            if kept is not None:
                self.stats["dead_letter_errors"] += 1
                return
            self.stats["dead_letters"] += 1
            await self.sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
        except Exception as exc:  # a failed delete, a message without a body: go on
            self.stats["dead_letter_errors"] += 1
            item_failed("worker.dead_letters", exc, logger=LOGGER, message_id=message_id)


__all__ = ["DaemonThreads", "Worker", "install_signal_handlers"]
