"""Sending envelopes to an SQS queue (aiobotocore): ``SendMessageBatch`` requests of at most
ten messages and 256 KiB of bodies together.

A FIFO queue (URL ending in ``.fifo``) takes no message without a ``MessageGroupId``:
each message goes in its job's group (``completion.group_id(tag)``, as the job's
continuation does), so SQS hands a job's messages out one at a time, in order, and
carries a ``MessageDeduplicationId`` of its identity *and* its chain's generation: a
re-sent copy within SQS's five minutes is dropped (it is a duplicate anyway), while a
replayed job's root, the same identity in a new generation, is a new message.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from ..dynamodb.aws import error_code, error_message
from ..errors import XorAckError
from .completion import group_id
from .envelope import Envelope

T = TypeVar("T")

#: A ``SendMessageBatch``'s bounds: ten entries, and the sum of their bodies (256 KiB, the
#: limit every SQS has had; 1 MiB since 2025): a larger batch is refused whole.
BATCH_ENTRIES = 10
BATCH_BYTES = 262_144

#: The largest message any SQS queue takes (1 MiB since 2025); a queue may take less: its
#: ``MaximumMessageSize``, which the sender asks for once.
MAX_MESSAGE_BYTES = 1_048_576

#: The codes SQS answers a queue URL that names no queue with (JSON and query protocols).
_NO_QUEUE = ("QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue")


class SendFailed(XorAckError):
    """SQS refused some messages of a batch; the handler fails and its message comes back."""


class QueueUnavailable(XorAckError):
    """The sender's queue does not exist, or SQS cannot be reached: found before a job's
    chain is created (``Fleet.submit``), so nothing was written."""


class MessageTooLarge(XorAckError):
    """A message is larger than its queue takes (the queue's ``MaximumMessageSize``):
    found before any message of the call was sent (``Fleet.submit``: before the job's
    chain is made; a handler's children: before the first of them is sent)."""


def _what(env: Envelope) -> str:
    if env.parent is None:
        return f"the root message of job {env.tag!r}"
    return f"child {env.index} of message {env.parent.hex()} of job {env.tag!r}"


class SqsSender:
    """Sends envelopes to ``queue_url``; ``sent`` counts the messages.

    Every message of a call is measured against the queue's ``MaximumMessageSize``
    (asked once; SQS's 1 MiB when the queue does not say) before the first is sent:
    one too large raises :class:`MessageTooLarge` and none goes out.
    """

    def __init__(self, sqs: Any, queue_url: str) -> None:
        self.sqs = sqs
        self.queue_url = queue_url
        self.sent = 0
        self._checked = False
        #: The queue's ``MaximumMessageSize`` once known (``None``: not asked yet, or no answer).
        self.max_message_bytes: int | None = None
        self._asked = False

    async def check(self) -> None:
        """The queue exists and answers (one ``GetQueueAttributes``, once per sender).

        ``Fleet.submit`` asks before it creates a job's chain: a queue URL that names no
        queue, or an SQS that cannot be reached, raises :class:`QueueUnavailable` and
        leaves no chain waiting for a root that was never sent.  A sender whose queue
        already answered (its size, asked before a send) is not asked again.
        """
        if self._checked:
            return
        try:
            found = await self._ask()
        except ClientError as exc:
            if error_code(exc) not in _NO_QUEUE:
                raise
            raise QueueUnavailable(
                f"queue {self.queue_url} does not exist ({error_message(exc) or error_code(exc)})"
                ": check the queue URL, the SQS endpoint and the region (a queue is in one "
                "region only); nothing was written"
            ) from exc
        except BotoCoreError as exc:
            raise QueueUnavailable(
                f"SQS cannot be reached for queue {self.queue_url} ({exc}): check the SQS "
                "endpoint; nothing was written"
            ) from exc
        self._learn(found)

    async def _ask(self) -> Any:
        """The queue's attributes: the one request ``check`` and ``_limit`` share."""
        return await self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["QueueArn", "MaximumMessageSize"]
        )

    def _learn(self, found: Any) -> None:
        """An answer of the queue: it exists (``check`` holds), and maybe says its size."""
        self._asked = self._checked = True
        with contextlib.suppress(KeyError, TypeError, ValueError):  # not said: SQS's bound
            self.max_message_bytes = int(found["Attributes"]["MaximumMessageSize"])

    async def _limit(self) -> int:
        """The largest message the queue takes, asked once (SQS's bound if it will not say)."""
        if not self._asked:
            try:
                found = await self._ask()
            except ClientError:  # an answer (no permission, no queue): do not ask again
                self._asked = True
            except BotoCoreError:  # no answer: ask again next time
                pass
            else:
                self._learn(found)
        return self.max_message_bytes or MAX_MESSAGE_BYTES

    async def fit(self, envelopes: Sequence[Envelope], then: str = "nothing was sent") -> None:
        """``MessageTooLarge`` (saying ``then``) unless the queue takes every message."""
        await self._fit([(e.to_json(), e) for e in envelopes], then)

    async def _fit(self, bodies: list[tuple[str, Envelope]], then: str) -> None:
        """``fit`` on the messages' bodies, serialized once for the check and the send."""
        limit = await self._limit()
        for body, env in bodies:
            size = len(body.encode("utf-8", "surrogatepass"))
            if size > limit:
                raise MessageTooLarge(
                    f"{_what(env)} is {size:,} bytes, over the queue's limit of {limit:,} "
                    f"({self.queue_url}, its MaximumMessageSize): make the payload smaller "
                    f"(keep large data elsewhere, S3 say, and pass its key); {then}"
                )

    async def __call__(self, envelopes: Sequence[Envelope]) -> None:
        fifo = self.queue_url.endswith(".fifo")
        bodies = [(e.to_json(), e) for e in envelopes]
        await self._fit(bodies, "nothing was sent")
        for chunk in _batches(bodies):
            entries = [
                {"Id": str(i), "MessageBody": body, **(_in_group(env) if fifo else {})}
                for i, (body, env) in enumerate(chunk)
            ]
            response = await self.sqs.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            failed = response.get("Failed") or []
            if failed:
                first = failed[0]
                raise SendFailed(
                    f"SQS refused {len(failed)} of {len(chunk)} messages to {self.queue_url} "
                    f"({first.get('Code')}: {first.get('Message')}); the message will be retried"
                )
            self.sent += len(chunk)


def _in_group(env: Envelope) -> dict[str, str]:
    """A FIFO message's group (its job's) and deduplication id (its identity and generation)."""
    dedup = hashlib.blake2b(env.chain_id + env.id, digest_size=32, person=b"xa-fleet-dedup")
    return {"MessageGroupId": group_id(env.tag), "MessageDeduplicationId": dedup.hexdigest()}


def _batches(bodies: list[tuple[str, T]]) -> list[list[tuple[str, T]]]:
    """``(body, what)`` pairs in order, cut into batches SQS takes (a body too long for any
    batch goes alone, and SQS says why it refuses it)."""
    batches: list[list[tuple[str, T]]] = []
    size = 0
    for body, what in bodies:
        length = len(body.encode("utf-8", "surrogatepass"))
        if not batches or len(batches[-1]) == BATCH_ENTRIES or size + length > BATCH_BYTES:
            batches.append([])
            size = 0
        batches[-1].append((body, what))
        size += length
    return batches


def sqs_client(
    *, endpoint: str | None = None, region_name: str | None = None, config: Any = None
) -> Any:
    """An aiobotocore SQS client (an async context manager), region and credentials as for
    DynamoDB (``xor_ack_dynamodb.dynamodb.aws``); ``endpoint``: e.g. a local SQS on 127.0.0.1;
    ``config``: a ``botocore.config.Config`` (default: the DynamoDB clients' retries)."""
    import aioboto3

    from ..dynamodb.aws import client_options

    session = aioboto3.Session()
    options = client_options(
        endpoint=endpoint, region_name=region_name, session=session, config=config
    )
    return session.client("sqs", **options)
