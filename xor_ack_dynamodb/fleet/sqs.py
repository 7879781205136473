"""Sending envelopes to an SQS queue (aiobotocore), ten per ``SendMessageBatch``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import XorAckError
from .envelope import Envelope


class SendFailed(XorAckError):
    """SQS refused some messages of a batch; the handler fails and its message comes back."""


class SqsSender:
    """Sends envelopes to ``queue_url``; ``sent`` counts the messages."""

    def __init__(self, sqs: Any, queue_url: str) -> None:
        self.sqs = sqs
        self.queue_url = queue_url
        self.sent = 0

    async def __call__(self, envelopes: Sequence[Envelope]) -> None:
        for start in range(0, len(envelopes), 10):
            chunk = envelopes[start : start + 10]
            entries = [{"Id": str(i), "MessageBody": e.to_json()} for i, e in enumerate(chunk)]
            response = await self.sqs.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            failed = response.get("Failed") or []
            if failed:
                first = failed[0]
                raise SendFailed(
                    f"SQS refused {len(failed)} of {len(chunk)} messages to {self.queue_url} "
                    f"({first.get('Code')}: {first.get('Message')}); the message will be retried"
                )
            self.sent += len(chunk)
