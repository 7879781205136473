"""A Lambda handler for a function triggered by the chains table's stream.

::

    from xor_ack_dynamodb import events

    handler = events.StreamHandler(
        on_acked=lambda e: start_next_step(e.tag),
        on_failed=lambda e: replay(e.tag, e.reason),   # timed out too, unless on_timed_out
    )                                                  # the function's entry point

What it does with a batch (``event["Records"]``, in stream order):

- each record is decoded (:func:`~.transitions.decode`), whatever the event source
  mapping's filter let through: a record that means no event (an intermediate stamp)
  is skipped, so the handler is right without filter criteria too;
- each event goes to the callback of its kind (``on_timed_out`` falls back to
  ``on_failed``), then to ``on_event``;
- a record that is not a chain's transition (another item of a shared table, a
  record of another shape, an image missing: ``CorruptRecord``) is reported and
  **skipped**: it can never decode, so no retry would help, and failing the batch
  there would block the shard until the mapping's retries run out (24 hours by
  default).  Reported: one warning log line and one ``xor_ack.item_failures`` count
  (``loop="stream_handler"``), ``.skipped`` + 1, and ``on_corrupt(error)`` if given;
- only a callback of yours that raises fails a record: at the **first** such record
  it stops and returns ``{"batchItemFailures": [{"itemIdentifier": <its
  SequenceNumber>}]}``: with ``FunctionResponseTypes: [ReportBatchItemFailures]`` on
  the mapping, Lambda checkpoints the records before it and retries from it.
  Otherwise ``{"batchItemFailures": []}``.

**Idempotence under retries.**  Lambda delivers stream records at least once: the
failing record and every record after it in the batch are delivered again (and all
of them if the function crashed or timed out), so a callback may be called again for
an event it has already handled -- including an earlier event of the failing
record itself.  Records before a reported failure are not delivered again.  Each
event's ``id`` is the same on every delivery (it is made from the chain, not the
delivery): make the callbacks idempotent by it, e.g. a conditional put of the id
into a table of handled ids, or, within one warm execution environment only,
``seen=events.RecentIds()``, which skips ids already handled successfully.

Works with aws-lambda-powertools without depending on it: pass the raw event dict,
or its ``DynamoDBStreamEvent`` (anything with ``.raw_event``).
"""

from __future__ import annotations

import inspect
import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from ..dynamodb.item import DEFAULT_PARTITION_KEY
from ..dynamodb.loops import item_failed
from ..errors import CorruptRecord, InvalidArgument, InvalidEvent, InvalidListener
from ..lifecycle import ChainEvent, Kind
from .records import check_partition_key
from .transitions import decode

Callback = Callable[[Any], object]
_log = logging.getLogger(__name__)


class RecentIds:
    """The ids of the last ``size`` events handled, in memory (one execution environment).

    Not a guarantee across environments or cold starts: only a store shared by every
    instance (a DynamoDB conditional put of the id) is.
    """

    def __init__(self, size: int = 10_000) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidArgument(
                f"RecentIds(size) must be an int >= 1 (how many event ids to keep), not {size!r}"
            )
        self._size = size
        self._ids: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, event_id: str) -> None:
        self._ids[event_id] = None
        self._ids.move_to_end(event_id)
        if len(self._ids) > self._size:
            self._ids.popitem(last=False)


class StreamHandler:
    """A Lambda handler (``handler(event, context)``) calling one callback per event kind."""

    def __init__(
        self,
        *,
        on_created: Callback | None = None,
        on_acked: Callback | None = None,
        on_failed: Callback | None = None,
        on_timed_out: Callback | None = None,
        on_expired: Callback | None = None,
        on_deleted: Callback | None = None,
        on_event: Callable[[ChainEvent], object] | None = None,
        on_corrupt: Callable[[CorruptRecord], object] | None = None,
        partition_key: str | None = None,
        seen: RecentIds | None = None,
    ) -> None:
        """``on_<kind>(event)`` per kind; ``on_event(event)`` for every event after it.

        ``on_corrupt(error)``: also called with each record that is not a chain's
        transition, after it is reported (a log line, a metric) and before it is
        skipped; if it raises, the record fails the batch as a callback's error would.
        ``partition_key``:
        the table's (default: ``XOR_ACK_PARTITION_KEY``, else ``tagID``).  ``seen``:
        skip events whose id it holds, add each handled one.
        """
        callbacks: dict[Kind, Callback | None] = {
            "created": on_created,
            "acked": on_acked,
            "failed": on_failed,
            "timed_out": on_timed_out if on_timed_out is not None else on_failed,
            "expired": on_expired,
            "deleted": on_deleted,
        }
        for name, fn in [*callbacks.items(), ("event", on_event), ("corrupt", on_corrupt)]:
            if fn is not None:
                InvalidListener.check(fn, f"on_{name}")
        self._callbacks = callbacks
        self._on_event = on_event
        self._on_corrupt = on_corrupt
        self._partition_key = check_partition_key(
            partition_key
            if partition_key is not None
            else os.environ.get("XOR_ACK_PARTITION_KEY") or DEFAULT_PARTITION_KEY
        )
        self._seen = seen
        #: Records skipped since this handler was made: not a chain's transition.
        self.skipped = 0

    def handle(self, record: Mapping[str, Any]) -> None:
        """Decode one record and call its callbacks; raises what they raise.

        A record that is no chain's transition is reported and skipped (``on_corrupt``).
        """
        try:
            events = decode(record, self._partition_key)
        except Exception as exc:  # CorruptRecord; anything else is no transition either
            corrupt = exc if isinstance(exc, CorruptRecord) else _unreadable(record, exc)
            self.skipped += 1
            item_failed("stream_handler", corrupt, logger=__name__, event="record-skipped")
            if self._on_corrupt is not None:
                _ran(self._on_corrupt(corrupt), "corrupt")
            return
        for event in events:
            if self._seen is not None and event.id in self._seen:
                continue
            callback = self._callbacks[event.kind]
            if callback is not None:
                _ran(callback(event), event.kind)
            if self._on_event is not None:
                _ran(self._on_event(event), "event")
            if self._seen is not None:
                self._seen.add(event.id)

    def __call__(self, event: Any, context: object = None) -> dict[str, list[dict[str, str]]]:
        """The function's entry point: a partial batch response (``batchItemFailures``)."""
        raw = getattr(event, "raw_event", event)
        records = raw.get("Records") if isinstance(raw, Mapping) else None
        if not isinstance(records, list):
            raise InvalidEvent("not a DynamoDB Streams event: it has no Records list")
        for record in records:
            try:
                self.handle(record)
            except Exception:
                _log.exception("stream record %s failed", _sequence_number(record) or "?")
                return {"batchItemFailures": [{"itemIdentifier": _sequence_number(record)}]}
        return {"batchItemFailures": []}


def _ran(result: object, kind: str) -> None:
    """Refuse what a callback gave back if it is something still to run (a coroutine of
    a function that returns one without being ``async def``): the record fails, loudly,
    instead of being counted handled while its callback never ran."""
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()  # never awaited: no "was never awaited" warning on top
        raise InvalidListener(
            f"on_{kind} returned {type(result).__name__}, something to await, and callbacks "
            "are called, not awaited: it did not run. Pass a plain function"
        )


def _unreadable(record: object, exc: Exception) -> CorruptRecord:
    name = _sequence_number(record) or "?"
    corrupt = CorruptRecord(f"record {name}", f"could not be decoded ({exc!r})")
    corrupt.__cause__ = exc
    return corrupt


def _sequence_number(record: object) -> str:
    body = record.get("dynamodb") if isinstance(record, Mapping) else None
    number = body.get("SequenceNumber") if isinstance(body, Mapping) else None
    # Without one, an empty identifier: Lambda then retries the whole batch.
    return str(number) if number is not None else ""
