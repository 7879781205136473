"""SQS on the moto server (127.0.0.1), queues made per test."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3


def sqs(endpoint: str) -> Any:
    return boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")


def make_queues(endpoint: str, max_receives: int = 5, visibility: int = 30) -> tuple[str, str]:
    """A work queue and its dead-letter queue (redrive after ``max_receives``)."""
    client = sqs(endpoint)
    name = f"work-{uuid.uuid4().hex[:8]}"
    dlq = client.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    arn = client.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": str(max_receives)})
    work = client.create_queue(
        QueueName=name,
        Attributes={"RedrivePolicy": redrive, "VisibilityTimeout": str(visibility)},
    )["QueueUrl"]
    return work, dlq
