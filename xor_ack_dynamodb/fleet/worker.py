"""An asyncio SQS worker: long polls, bounded concurrency, visibility kept while working.

- ``concurrency`` messages at most are in hand; a receive asks for no more than
  the free slots (and at most 10, SQS's limit);
- while a message is handled its visibility timeout is extended every third of it,
  so a long handler keeps its message and a dead worker's comes back soon;
- a message that succeeded is deleted; one that failed is made visible again after
  a back-off growing with its receive count, until the queue's redrive policy
  moves it to the dead-letter queue; ``dead_letter_queue_url`` makes the worker
  drain that queue too, failing each message's chain with reason ``dead-letter``;
- ``stop`` (SIGTERM or SIGINT by ``install_signal_handlers``) stops receiving, lets
  the messages in hand finish for ``shutdown_grace`` seconds, and releases those
  still running (visibility 0) so that another worker takes them at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections import Counter
from typing import Any

from .app import Fleet
from .errors import InvalidEnvelope
from .telemetry import log

#: SQS's own bounds.
MAX_BATCH = 10
MAX_WAIT = 20
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
            raise ValueError(f"concurrency must be 1..10000, not {concurrency}")
        if not 0 <= wait_time <= MAX_WAIT:
            raise ValueError(f"wait_time must be 0..{MAX_WAIT} s, not {wait_time}")
        if not 1 <= visibility_timeout <= MAX_VISIBILITY:
            raise ValueError(f"visibility_timeout must be 1..{MAX_VISIBILITY} s")
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

    async def run(self, stop: asyncio.Event) -> Counter[str]:
        """Work until ``stop`` is set, then shut down gracefully; returns the counters."""
        stopping = asyncio.ensure_future(stop.wait())
        dead = None
        if self.dead_letter_queue_url is not None:
            dead = asyncio.ensure_future(self._drain_dead_letters(stop))
        try:
            while not stop.is_set():
                free = self.concurrency - len(self._tasks)
                if free <= 0:
                    await asyncio.wait({stopping, *self._tasks}, return_when="FIRST_COMPLETED")
                    continue
                messages = await self._receive(self.queue_url, min(MAX_BATCH, free), stopping)
                for message in messages:
                    task = asyncio.ensure_future(self._one(message))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
        finally:
            stopping.cancel()
            await self._shut_down()
            if dead is not None:
                dead.cancel()
                await asyncio.gather(dead, return_exceptions=True)
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
                MessageSystemAttributeNames=["ApproximateReceiveCount"],
            )
        )
        await asyncio.wait({receive, stopping}, return_when="FIRST_COMPLETED")
        if not receive.done():
            # Stopping: messages this poll took (if any) come back after their timeout.
            receive.cancel()
            await asyncio.gather(receive, return_exceptions=True)
            return []
        try:
            response = receive.result()
        except Exception as exc:  # a transport error: log it, poll again after a pause
            self.stats["receive_errors"] += 1
            log("receive-error", "-", None, error=repr(exc))
            await asyncio.sleep(1.0)
            return []
        messages: list[dict[str, Any]] = response.get("Messages", [])
        self.stats["received"] += len(messages)
        return messages

    async def _one(self, message: dict[str, Any]) -> None:
        receipt = message["ReceiptHandle"]
        count = int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))
        keeper = asyncio.ensure_future(self._keep_visible(receipt))
        try:
            handled = await self.fleet.handle(message["Body"], count)
        except asyncio.CancelledError:
            await self._set_visibility(receipt, 0)  # shutting down: another worker takes it
            self.stats["released"] += 1
            raise
        except InvalidEnvelope as exc:
            self.stats["invalid"] += 1
            log("invalid-envelope", "-", message.get("MessageId"), error=str(exc))
            return  # left to the redrive policy: it ends in the dead-letter queue
        except Exception as exc:
            self.stats["failed"] += 1
            log("handler-failed", "-", message.get("MessageId"), error=repr(exc), receives=count)
            await self._set_visibility(receipt, min(2**count, self.visibility_timeout))
            return
        finally:
            keeper.cancel()
        self.stats[handled.verdict.value] += 1
        await self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=receipt)

    async def _keep_visible(self, receipt: str) -> None:
        period = max(1.0, self.visibility_timeout / 3)
        while True:
            await asyncio.sleep(period)
            await self._set_visibility(receipt, self.visibility_timeout)
            self.stats["extended"] += 1

    async def _set_visibility(self, receipt: str, seconds: int) -> None:
        try:
            await self.sqs.change_message_visibility(
                QueueUrl=self.queue_url, ReceiptHandle=receipt, VisibilityTimeout=seconds
            )
        except Exception as exc:  # the message may be gone or its receipt stale: harmless
            log("visibility-error", "-", None, error=repr(exc))

    async def _shut_down(self) -> None:
        if self._tasks:
            _, running = await asyncio.wait(set(self._tasks), timeout=self.shutdown_grace)
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    async def _drain_dead_letters(self, stop: asyncio.Event) -> None:
        assert self.dead_letter_queue_url is not None
        stopping = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                for message in await self._receive(self.dead_letter_queue_url, 10, stopping):
                    # A body that is no fleet message has no chain to fail: dropped.
                    with contextlib.suppress(InvalidEnvelope):
                        await self.fleet.dead_letter(message["Body"])
                    self.stats["dead_letters"] += 1
                    await self.sqs.delete_message(
                        QueueUrl=self.dead_letter_queue_url, ReceiptHandle=message["ReceiptHandle"]
                    )
        finally:
            stopping.cancel()


def install_signal_handlers(stop: asyncio.Event) -> None:
    """SIGTERM and SIGINT set ``stop`` (a graceful shutdown) instead of killing the process."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
