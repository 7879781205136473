"""The fleet the queue verbs (``worker``, ``submit``) act through: an SQS queue and the chains."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..fleet import Fleet


@contextlib.asynccontextmanager
async def queue_fleet(
    settings: Any,
    queue_url: str,
    sqs_endpoint_url: str | None,
    sqs_config: Any = None,
    **fleet_options: Any,
) -> AsyncIterator[tuple[Any, Fleet]]:
    """An SQS client and a :class:`~xor_ack_dynamodb.fleet.Fleet` sending to ``queue_url``,
    on the table the command's settings name; ``fleet_options`` go to ``Fleet.connect``,
    ``sqs_config`` (a botocore ``Config``) to the SQS client."""
    from ..fleet import Fleet, SqsSender
    from ..fleet.sqs import sqs_client

    async with (
        sqs_client(
            endpoint=sqs_endpoint_url, region_name=settings.region, config=sqs_config
        ) as sqs,
        Fleet.connect(
            table=settings.table,
            partition_key=settings.partition_key,
            endpoint_url=settings.endpoint_url,
            region_name=settings.region,
            send=SqsSender(sqs, queue_url),
            **fleet_options,
        ) as fleet,
    ):
        yield sqs, fleet
