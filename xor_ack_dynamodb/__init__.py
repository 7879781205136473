"""XOR ack tracking: prove that every piece of work an input caused has finished.

Trackers over one idea (see the README):

- :class:`XorAckDynamoDB` / :class:`SyncXorAckDynamoDB`: chains in DynamoDB,
  conditional writes, safe under retries and concurrency;
- :class:`Ack`: the in-memory tracker with events, timeouts and a high-water mark;
- ``xor_ack_dynamodb.memory.acker``: Storm-style tuple trees.
"""

from __future__ import annotations

from .chain import ChainState
from .dynamodb._core.effects import ClientStats
from .dynamodb._core.validate import Lifetime
from .dynamodb.client import XorAckDynamoDB
from .dynamodb.retry import RetryPolicy
from .dynamodb.sync import SyncXorAckDynamoDB
from .memory.ack import Ack, AckStats, FailReason
from .stamps import AppliedBefore, Stamp, new_stamp, xor

__all__ = [
    "Ack",
    "AckStats",
    "AppliedBefore",
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
