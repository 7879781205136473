"""DynamoDB Local on 127.0.0.1: the public path of :mod:`xor_ack_dynamodb.dynamodb.local`."""

from __future__ import annotations

from .dynamodb import local as _local
from .dynamodb.local import *  # noqa: F403 - this path's names are the package's own __all__

__all__ = _local.__all__
