"""``SqsSender`` asks SQS about its queue once (``GetQueueAttributes``), whatever it does first."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from xor_ack_dynamodb.fleet import Envelope, MessageTooLarge, QueueUnavailable, SqsSender, root_id

QUEUE = "http://127.0.0.1:1/000000000000/jobs"


class CountingSqs:
    """An SQS client that counts its requests; ``missing``: the queue does not exist."""

    def __init__(self, max_size: int = 1024, missing: bool = False) -> None:
        self.max_size = max_size
        self.missing = missing
        self.asked = 0
        self.batches = 0

    async def get_queue_attributes(self, **request: Any) -> dict[str, Any]:
        self.asked += 1
        if self.missing:
            error = {"Error": {"Code": "QueueDoesNotExist", "Message": "no queue"}}
            raise ClientError(error, "GetQueueAttributes")
        return {"Attributes": {"QueueArn": "arn", "MaximumMessageSize": str(self.max_size)}}

    async def send_message_batch(self, **request: Any) -> dict[str, Any]:
        self.batches += 1
        return {"Successful": [{"Id": e["Id"]} for e in request["Entries"]]}


def message(payload: Any) -> Envelope:
    return Envelope(tag="job", chain_id=bytes(8), id=root_id("job"), payload=payload)


@pytest.mark.parametrize("first", ["check", "send", "fit"])
async def test_the_queue_is_asked_about_once_per_sender(first: str) -> None:
    # A worker's fleet sends children (the queue's size asked) and later submits a job
    # (the queue checked): that asked SQS the same question a second time.
    sqs = CountingSqs()
    sender = SqsSender(sqs, QUEUE)
    if first == "check":
        await sender.check()
    elif first == "send":
        await sender([message(1)])
    else:
        await sender.fit([message(1)])
    await sender.check()
    await sender.fit([message(2)])
    await sender([message(3), message(4)])
    with pytest.raises(MessageTooLarge, match="over the queue's limit of 1,024"):
        await sender([message("x" * 2000)])  # the size it learnt first still holds
    assert sqs.asked == 1
    assert sender.max_message_bytes == 1024


async def test_a_queue_that_does_not_exist_is_still_found_by_check() -> None:
    sqs = CountingSqs(missing=True)
    sender = SqsSender(sqs, QUEUE)
    await sender.fit([message(1)])  # no answer on the size: SQS's bound, told by the send
    with pytest.raises(QueueUnavailable, match=r"does not exist.*the region"):
        await sender.check()  # an answer that proved nothing: asked, and refused
    assert sqs.asked == 2 and sqs.batches == 0
