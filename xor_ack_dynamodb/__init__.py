"""XOR ack tracking: prove that every piece of work an input caused has finished.

Trackers over one idea (see the README):

- :class:`XorAckDynamoDB` / :class:`SyncXorAckDynamoDB`: chains in DynamoDB,
  conditional writes, safe under retries and concurrency;
- :class:`Ack`: the in-memory tracker with events, timeouts and a high-water mark;
- ``xor_ack_dynamodb.acker``: Storm-style tuple trees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._ops import ClientStats
from .dynamodb import XorAckDynamoDB
from .item import ChainState
from .retry import RetryPolicy
from .stamps import Stamp, new_stamp, xor
from .sync import SyncXorAckDynamoDB

if TYPE_CHECKING:
    from .memory import Ack

__all__ = [
    "Ack",
    "ChainState",
    "ClientStats",
    "RetryPolicy",
    "Stamp",
    "SyncXorAckDynamoDB",
    "XorAckDynamoDB",
    "new_stamp",
    "xor",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # ``Ack`` lives in ``memory``; imported on first use so that importing the
    # package never fails while that module is absent or being worked on.
    if name == "Ack":
        from .memory import Ack

        return Ack
    raise AttributeError(f"module 'xor_ack_dynamodb' has no attribute {name!r}")
