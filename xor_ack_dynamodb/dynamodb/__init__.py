"""The DynamoDB tracker: chains as items, written with conditional writes.

Layer: a tracker. Imports the vocabulary (``errors``, ``stamps``, ``chain``) and
nothing else of the package; never the in-memory tracker beside it.

- ``client.py`` (:class:`XorAckDynamoDB`, aioboto3) and ``sync.py``
  (:class:`SyncXorAckDynamoDB`, boto3): two thin drivers of one sans-I/O core,
  ``_core/`` (every request, condition, verdict and retry: docs/design.md), with
  ``_client.py`` what both share, ``_batches.py`` (batch_writes), ``_coalescing.py``
  (concurrent stamps merged), ``_attempts.py`` (may a send have landed?) and
  ``aws.py`` (boto clients made, AWS errors read, in one place)
- ``item.py``: the item's attributes and decoding into a ``ChainState``
- ``retry.py``: ``RetryPolicy`` for lost races, ``botocore_config``
- ``table.py``: ``TableSpec``, the one table layout; ``ownership.py`` creates and deletes a
  chains table, refusing one it did not make; ``upgrade.py`` brings an older table to it
- ``sweeper.py``: a scheduled Lambda sweep; ``local/``: DynamoDB Local on loopback
"""

from __future__ import annotations

from ._core.deadlines import ListStatus
from ._core.validate import (
    DEFAULT_TOMBSTONE_TTL,
    MAX_TIMEOUT,
    MIN_TIMEOUT,
    Lifetime,
    check_deadline,
)
from .client import XorAckDynamoDB
from .sync import SyncXorAckDynamoDB

__all__ = [
    "DEFAULT_TOMBSTONE_TTL",
    "MAX_TIMEOUT",
    "MIN_TIMEOUT",
    "Lifetime",
    "ListStatus",
    "SyncXorAckDynamoDB",
    "XorAckDynamoDB",
    "check_deadline",
]
