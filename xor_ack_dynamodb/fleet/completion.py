"""What runs when a chain acks: the continuation, after the ack, never lost, effect once.

- **Never before the ack**: it runs only for a chain read (or written) as acked.
- **Never lost**: the message whose write acked the chain is deleted from its
  queue only after the continuation ran and its ``done`` marker was written.  If
  the process dies in between, the message comes back; its token is the last one
  the acked chain holds, so the fleet knows it as the acking message and runs the
  continuation again (``Fleet.complete(tag)`` does the same from a stream event).
- **Effect once**: a continuation that finished writes the ``done`` marker, and
  one found done is not run again.  A run can only repeat when its process died
  between the effect and the marker (or copies in two processes raced there): every run gets
  the same ``continuation_id`` (BLAKE2b of the tag and the chain's generation) for
  the effect to deduplicate on, as ``QueueContinuation`` does with SQS FIFO's
  ``MessageDeduplicationId``.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .errors import ContinuationCancelled, ContinuationExited
from .markers import Markers, done_key


@dataclass(frozen=True)
class Completed:
    """An acked chain, handed to the continuation."""

    tag: str
    chain_id: bytes

    @property
    def continuation_id(self) -> str:
        """The same for every run of this chain's continuation: deduplicate the effect on it."""
        data = self.tag.encode("utf-8", "surrogatepass") + b"\0" + self.chain_id
        return hashlib.blake2b(data, digest_size=16, person=b"xa-fleet-done").hexdigest()


#: An async function, or a plain one returning an awaitable or None.
Continuation = Callable[[Completed], Awaitable[None] | None]


async def _call(continuation: Continuation, done: Completed) -> None:
    """Run ``continuation`` for ``done`` to its end: called on the event loop (a plain
    function may return an awaitable that needs it, ``asyncio.gather(...)``), and what it
    returns awaited if it is awaitable; a plain function's None is its effect done."""
    try:
        result = continuation(done)
        if inspect.isawaitable(result):
            await result
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # its task is being cancelled: the worker (or function) is stopping
        raise ContinuationCancelled(done.tag) from exc
    except SystemExit as exc:  # sys.exit() in it: this continuation's failure only
        raise ContinuationExited(done.tag, exc.code) from exc


class Completion:
    """Runs a continuation once per acked chain, recorded by a ``done`` marker."""

    def __init__(self, markers: Markers, continuation: Continuation | None) -> None:
        self.markers = markers
        self.continuation = continuation
        self.runs = 0
        # One lock per chain whose continuation is being run here: a batch that delivers
        # several messages of one acked chain (re-deliveries) runs it once, not once per
        # message at the same time.  Entries live while a run holds or waits for them.
        self._running: dict[str, tuple[asyncio.Lock, int]] = {}

    async def run(self, done: Completed) -> bool:
        """Run the continuation unless it is recorded done; True if it ran now."""
        if self.continuation is None:
            return False
        key = done_key(done.tag, done.chain_id)
        lock, waiting = self._running.get(key, (asyncio.Lock(), 0))
        self._running[key] = (lock, waiting + 1)
        try:
            async with lock:
                if await self.markers.claimed(key):
                    return False
                await _call(self.continuation, done)
                self.runs += 1
                await self.markers.put(key, done.chain_id)
                return True
        finally:
            lock, waiting = self._running[key]
            if waiting == 1:
                del self._running[key]
            else:
                self._running[key] = (lock, waiting - 1)


#: What SQS takes as a ``MessageGroupId``: 1 to 128 ASCII letters, digits and punctuation.
_GROUP_ID = re.compile(r"[!-~]{1,128}")


def group_id(tag: str) -> str:
    """The message group of a job's continuation messages: its tag, or, for a tag SQS does
    not take as one (over 128 characters, a space, a letter beyond ASCII), the tag's BLAKE2b
    digest, hex: the same for every run of the job, so its continuations stay in order."""
    if _GROUP_ID.fullmatch(tag):
        return tag
    data = tag.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=32, person=b"xa-fleet-group").hexdigest()


class QueueContinuation:
    """A continuation that sends ``{"tag", "chain", "continuation_id"}`` to an SQS queue.

    On a FIFO queue (URL ending in ``.fifo``) the message carries
    ``MessageDeduplicationId=continuation_id`` (SQS drops a repeat within five
    minutes) and ``MessageGroupId=group_id(tag)``; on a standard queue the receiver
    deduplicates on the body's id.
    ``sqs`` is an aiobotocore SQS client.
    """

    def __init__(self, sqs: Any, queue_url: str) -> None:
        self.sqs = sqs
        self.queue_url = queue_url

    async def __call__(self, done: Completed) -> None:
        body = json.dumps(
            {"tag": done.tag, "chain": done.chain_id.hex(), "continuation_id": done.continuation_id}
        )
        extra: dict[str, Any] = {}
        if self.queue_url.endswith(".fifo"):
            extra = {
                "MessageGroupId": group_id(done.tag),
                "MessageDeduplicationId": done.continuation_id,
            }
        await self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=body, **extra)
