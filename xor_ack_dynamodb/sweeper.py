"""The scheduled sweep's Lambda handler (``xor_ack_dynamodb.sweeper.handler``, as
infra/sweeper.yaml names it): the public path of :mod:`xor_ack_dynamodb.dynamodb.sweeper`."""

from __future__ import annotations

from .dynamodb.sweeper import (
    ENV_PARTITION_KEY,
    ENV_TABLE,
    MAX_TAGS,
    SweeperMisconfigured,
    SweepSummary,
    handler,
    settings,
)

__all__ = [
    "ENV_PARTITION_KEY",
    "ENV_TABLE",
    "MAX_TAGS",
    "SweepSummary",
    "SweeperMisconfigured",
    "handler",
    "settings",
]
