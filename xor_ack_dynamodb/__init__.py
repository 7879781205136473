"""XOR ack tracking: prove that every piece of work an input caused has finished.

Trackers over one idea (see the README):

- :class:`XorAckDynamoDB` / :class:`SyncXorAckDynamoDB`: chains in DynamoDB,
  conditional writes, safe under retries and concurrency;
- :class:`Ack`: the in-memory tracker with events, timeouts and a high-water mark;
- ``xor_ack_dynamodb.acker``: Storm-style tuple trees.
"""

from __future__ import annotations

from ._core.validate import Lifetime
from ._ops import ClientStats
from .dynamodb import XorAckDynamoDB
from .item import ChainState
from .memory import Ack, AckStats, FailReason
from .retry import RetryPolicy
from .stamps import Stamp, new_stamp, xor
from .sync import SyncXorAckDynamoDB

__all__ = [
    "Ack",
    "AckStats",
    "ChainState",
    "ClientStats",
    "FailReason",
    "Lifetime",
    "RetryPolicy",
    "Stamp",
    "SyncXorAckDynamoDB",
    "XorAckDynamoDB",
    "new_stamp",
    "xor",
]

__version__ = "0.1.0"
