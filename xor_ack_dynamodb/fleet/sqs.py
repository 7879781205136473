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


def sqs_client(*, endpoint: str | None = None, region_name: str | None = None) -> Any:
    """An aiobotocore SQS client (an async context manager), region and credentials as for
    DynamoDB (``xor_ack_dynamodb.dynamodb.aws``); ``endpoint``: e.g. a local SQS on 127.0.0.1."""
    import aioboto3

    from ..dynamodb.aws import client_options

    session = aioboto3.Session()
    options = client_options(endpoint=endpoint, region_name=region_name, session=session)
    return session.client("sqs", **options)
