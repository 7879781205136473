"""Chain events: what happened to a chain, as typed values, for every tracker.

Layer: an integration. Imports the DynamoDB tracker and the vocabulary (the event kinds
themselves are the vocabulary's ``lifecycle``).

- :mod:`xor_ack_dynamodb.lifecycle`: the events (``Created``, ``Acked``, ``Failed``, ``TimedOut``,
  ``Expired``, ``Deleted``), frozen, each with ``tag``, ``chain_id``, ``time`` and a
  deterministic ``id``;
- :func:`decode`: a DynamoDB Streams record (Lambda event or ``GetRecords`` format)
  -> its events, by the transition tables of :mod:`.transitions`;
- :class:`StreamHandler`: a Lambda handler for a stream-triggered function, with
  partial batch responses; :class:`RecentIds`: a tiny in-memory dedupe;
- :func:`follow` / :func:`read`: the stream of a table, shard by shard (DynamoDB Local
  or AWS), as the CLI's ``xor-ack events follow`` and ``xor-ack chain stats`` use it;
- ``Ack.on("event", fn)`` and ``Acker.on("event", fn)`` give the same events from
  the in-memory trackers (:mod:`.trackers`).

See docs/events.md.
"""

from __future__ import annotations

from ..errors import CorruptRecord
from ..lifecycle import (
    CLASSES,
    KINDS,
    Acked,
    ChainEvent,
    Created,
    Deleted,
    Event,
    Expired,
    Failed,
    ItemState,
    Kind,
    TimedOut,
)
from .follow import follow, read, stream_arn, streams_client
from .handler import RecentIds, StreamHandler
from .records import RECORD_TIME_STEP, StreamRecord, parse
from .shards import StreamReader
from .stats import Summary
from .transitions import NEW_CHAIN, REMOVED, REPLACED, SAME_CHAIN, decode, events_of

__all__ = [
    "CLASSES",
    "KINDS",
    "NEW_CHAIN",
    "RECORD_TIME_STEP",
    "REMOVED",
    "REPLACED",
    "SAME_CHAIN",
    "Acked",
    "ChainEvent",
    "CorruptRecord",
    "Created",
    "Deleted",
    "Event",
    "Expired",
    "Failed",
    "ItemState",
    "Kind",
    "RecentIds",
    "StreamHandler",
    "StreamReader",
    "StreamRecord",
    "Summary",
    "TimedOut",
    "decode",
    "events_of",
    "follow",
    "parse",
    "read",
    "stream_arn",
    "streams_client",
]
