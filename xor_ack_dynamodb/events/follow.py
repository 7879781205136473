"""Read a table's stream with the ``dynamodbstreams`` API: every shard, in order.

:func:`follow` tails the stream (``xor-ack events follow``), :func:`read` reads what
it holds now, from its oldest record (``xor-ack chain stats``).  Both work on DynamoDB
Local and on AWS, over ``shards``' :class:`StreamReader`: within a shard records come in
order, and a child shard (after a split) is read only once its parent is finished.

Nothing one record or one shard does stops the follower: a record that is no chain's
transition comes out as its ``CorruptRecord`` (the caller reports it and goes on), a
failing shard is reported and read again while the others go on (``shards``), and a
``DescribeStream`` that fails while the follower looks for new shards is a
``refresh-failed`` line and is tried again at the next look.  :func:`read` does not end
while a shard's last read failed: it tries again after a short wait, and raises
:class:`StreamReadFailed` once the same shard failed ``READ_ATTEMPTS`` times in a row
(access denied), rather than count a stream without it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..dynamodb import aws
from ..dynamodb.item import DEFAULT_PARTITION_KEY
from ..dynamodb.loops import code_of, item_failed
from ..dynamodb.table import STREAM_VIEW
from ..errors import CorruptRecord, StreamNotEnabled, StreamReadFailed, StreamViewConflict
from ..lifecycle import ChainEvent
from .shards import StreamReader
from .transitions import decode


def streams_client(
    endpoint_url: str | None = None, region_name: str | None = None, config: Any = None
) -> Any:
    """A boto3 ``dynamodbstreams`` client on the same endpoint as the tables' client.

    ``AWS_ENDPOINT_URL_DYNAMODB`` names the endpoint of ``dynamodb`` only, so the
    endpoint (argument or environment, see ``aws``) is passed on explicitly: DynamoDB
    Local serves both APIs on one port.
    """
    import boto3

    endpoint = aws.endpoint_url(endpoint_url)
    options = aws.client_options(endpoint=endpoint, region_name=region_name, config=config)
    return boto3.session.Session().client("dynamodbstreams", **options)


#: Reads of one shard that may fail in a row before :func:`read` gives up on the stream.
READ_ATTEMPTS = 5
#: :func:`read`'s wait after a round in which a shard failed (seconds): doubled for each
#: failure in a row of that shard, at most ``READ_BACKOFF_MAX``.
READ_BACKOFF = 0.2
READ_BACKOFF_MAX = 2.0


def stream_arn(dynamodb: Any, table: str) -> str:
    """The table's latest stream ARN; :class:`StreamNotEnabled` if it has none,
    :class:`StreamViewConflict` if its view type is not ``NEW_AND_OLD_IMAGES``."""
    return arn_of(dynamodb.describe_table(TableName=table)["Table"])


def arn_of(description: Mapping[str, Any]) -> str:
    """The latest stream ARN of a ``DescribeTable`` result's table; :class:`StreamNotEnabled`
    if it has none, :class:`StreamViewConflict` if the stream's records lack an image the
    events need (``KEYS_ONLY``, ``NEW_IMAGE``, ``OLD_IMAGE``: each record would read as a
    corrupt one, or as no transition, and the figures would be wrong)."""
    arn = description.get("LatestStreamArn")
    table = str(description.get("TableName", "?"))
    stream = description.get("StreamSpecification") or {}
    # A stream turned off keeps its LatestStreamArn: only the specification says it is on.
    enabled = stream.get("StreamEnabled", False)
    if not arn or not enabled:
        raise StreamNotEnabled(table)
    view = stream.get("StreamViewType")
    if view is not None and view != STREAM_VIEW:
        raise StreamViewConflict(table, str(view), STREAM_VIEW)
    return str(arn)


#: One decoded record: the record, and its events or why it could not be decoded.
Decoded = tuple[dict[str, Any], list[ChainEvent] | CorruptRecord]


def _decoded(records: list[dict[str, Any]], partition_key: str) -> Iterator[Decoded]:
    for record in records:
        try:
            events = decode(record, partition_key)
        except CorruptRecord as exc:
            yield record, exc
        except Exception as exc:  # decode's own bug: no transition either, and not the end
            corrupt = CorruptRecord("record ?", f"could not be decoded ({exc!r})")
            corrupt.__cause__ = exc
            yield record, corrupt
        else:
            yield record, events


def follow(
    streams: Any,
    arn: str,
    *,
    from_start: bool = False,
    interval: float = 1.0,
    refresh_every: float = 10.0,
    stop: threading.Event | None = None,
    partition_key: str = DEFAULT_PARTITION_KEY,
    on_ready: Callable[[], object] | None = None,
) -> Iterator[Decoded]:
    """Tail the stream until ``stop`` is set: each record with its events, as they come.

    New shards are looked for every ``refresh_every`` seconds (wall clock, busy or not: a
    split's child shard is found while other shards keep giving records); a round after
    which no shard has more to give waits ``interval`` seconds (``stop.set()`` ends the
    wait at once).  A failing shard is tried again each round, a failing look for new
    shards (``DescribeStream``) at the next look; each failure is reported.
    ``on_ready()`` is called once every shard has its position: a write after it will be
    seen.
    """
    stop = stop or threading.Event()
    reader = StreamReader(streams, arn, from_start=from_start)
    reader.refresh()
    if on_ready is not None:
        on_ready()
    refreshed = time.monotonic()
    while not stop.is_set():
        records, more = reader.poll()
        yield from _decoded(records, partition_key)
        if not more:
            stop.wait(interval)
        if not stop.is_set() and time.monotonic() - refreshed >= refresh_every:
            try:
                reader.refresh()
            except Exception as exc:  # the shards known go on; the next look tries again
                reader.errors += 1
                item_failed("follow", exc, logger=__name__, event="refresh-failed")
            refreshed = time.monotonic()


def read(
    streams: Any, arn: str, *, partition_key: str = DEFAULT_PARTITION_KEY
) -> Iterator[Decoded]:
    """Every record the stream holds now (at most 24 hours' worth), oldest first.

    An open shard counts as read once it answers empty three times in a row, or gives a
    record made after the read began (left out: a table written to all the time never
    answers empty); a closed one is read to its end, past any empty answers.  A shard
    whose read failed is not read yet: it is read again from where it was after a short
    wait (``READ_BACKOFF``, doubled each time); :class:`StreamReadFailed` (the last error
    its ``__cause__``) once it failed ``READ_ATTEMPTS`` times in a row, never a count that
    silently misses its records.
    """
    reader = StreamReader(streams, arn, from_start=True, empty_at_end=3, until=time.time())
    reader.refresh()
    while True:
        records, more = reader.poll()
        yield from _decoded(records, partition_key)
        failing = reader.failing()
        if failing:
            shard, failures, error = max(failing, key=lambda f: f[1])
            if failures >= READ_ATTEMPTS:
                detail = (
                    str(error) if code_of(error) in str(error) else f"{code_of(error)}: {error}"
                )
                raise StreamReadFailed(shard, failures, detail) from error
            time.sleep(min(READ_BACKOFF * 2 ** (failures - 1), READ_BACKOFF_MAX))
        elif not more:
            return
