"""Which events a stream record means: the transition table, and :func:`decode`.

A record carries the item before (old image) and after (new image) one write.
Each image is in one state: ``absent``, ``live``, ``acked`` (stamp all zeros),
``failed`` (``failed_at`` set) or ``timed_out`` (failed with reason ``"timeout"``).
The events of a record are looked up, never decided inline:

- the same chain before and after (same ``chain_id``): :data:`SAME_CHAIN`;
- another chain after (an ``INSERT``, or a create over a finished or expired item):
  the old chain's end from :data:`REPLACED`, then the new chain's events from
  :data:`NEW_CHAIN`;
- the item removed (``REMOVE``): :data:`REMOVED`, by TTL or by a caller.

So an intermediate stamp (live -> live) is no event, a re-created tag (tombstone ->
live with a new ``chain_id``) is ``created``, and a tombstone removed by TTL is
``expired`` with ``state`` ``"acked"`` / ``"failed"`` / ``"timed_out"`` (garbage
collection: consumers that only care about lost work check ``event.lost``).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from ..chain import ChainState
from ..dynamodb.item import DEFAULT_PARTITION_KEY, is_marker
from ..dynamodb.item import decode as decode_item
from ..errors import CorruptItem, CorruptRecord
from ..lifecycle import (
    Acked,
    ChainEvent,
    Created,
    Deleted,
    Expired,
    ItemState,
    Kind,
    failure,
)
from .records import StreamRecord, check_partition_key, parse

State: TypeAlias = Literal["absent", "live", "acked", "failed", "timed_out"]
Removal: TypeAlias = Literal["ttl", "caller"]

#: (old state, new state) of one chain -> its events.  A finished chain never changes
#: state again (the client's conditions refuse it), so those rows are no event.
SAME_CHAIN: dict[tuple[State, State], tuple[Kind, ...]] = {
    ("live", "live"): (),  # an intermediate stamp, a touch
    ("live", "acked"): ("acked",),
    ("live", "failed"): ("failed",),
    ("live", "timed_out"): ("timed_out",),
    **{
        (old, new): ()
        for old in ("acked", "failed", "timed_out")
        for new in ("live", "acked", "failed", "timed_out")
    },
}
#: The old chain's state, when a write replaced it by another chain -> the old chain's
#: events.  A live chain is replaced only once past its ``expires_at`` (it counts as
#: absent then): it expired.  A tombstone's chain already had its end.
REPLACED: dict[State, tuple[Kind, ...]] = {
    "absent": (),
    "live": ("expired",),
    "acked": (),
    "failed": (),
    "timed_out": (),
}
#: The new chain's state after its first write -> its events (a chain first seen
#: finished was created and finished by that write).
NEW_CHAIN: dict[State, tuple[Kind, ...]] = {
    "live": ("created",),
    "acked": ("created", "acked"),
    "failed": ("created", "failed"),
    "timed_out": ("created", "timed_out"),
}
#: (state of the removed item, who removed it) -> events.
REMOVED: dict[tuple[State, Removal], tuple[Kind, ...]] = {
    **{(state, "ttl"): ("expired",) for state in ("live", "acked", "failed", "timed_out")},
    **{(state, "caller"): ("deleted",) for state in ("live", "acked", "failed", "timed_out")},
}


def state_of(chain: ChainState | None) -> State:
    if chain is None:
        return "absent"
    if chain.acked:
        return "acked"
    if chain.failed:
        return "timed_out" if chain.reason == "timeout" else "failed"
    return "live"


def _event(kind: Kind, chain: ChainState, record: StreamRecord) -> ChainEvent:
    if kind == "created":
        return Created(chain.tag, chain.chain_id, chain.created_at)
    if kind == "acked":
        acked_at = chain.acked_at if chain.acked_at is not None else chain.updated_at
        # Times are stored to the millisecond: round away the float subtraction's noise.
        latency = round(acked_at - chain.created_at, 6)
        return Acked(chain.tag, chain.chain_id, acked_at, latency)
    if kind in ("failed", "timed_out"):
        failed_at = chain.failed_at if chain.failed_at is not None else chain.updated_at
        return failure(chain.tag, chain.chain_id, failed_at, chain.reason or "failed")
    when = record.approximate_time if record.approximate_time is not None else chain.updated_at
    state: ItemState = state_of(chain)  # type: ignore[assignment]  # never "absent" here
    if kind == "expired":
        return Expired(chain.tag, chain.chain_id, when, state)
    return Deleted(chain.tag, chain.chain_id, when, state)


def _chain(
    record: StreamRecord, which: Literal["old", "new"], partition_key: str
) -> ChainState | None:
    item = record.old_image if which == "old" else record.new_image
    if item is None:
        return None
    try:
        return decode_item(item, partition_key)
    except CorruptItem as exc:
        raise CorruptRecord(
            record.name,
            f'has a {which} image of "{exc.tag}" whose attribute "{exc.attribute}" {exc.problem}',
        ) from exc


def events_of(record: StreamRecord, partition_key: str = DEFAULT_PARTITION_KEY) -> list[ChainEvent]:
    """The events of one parsed record, in order (old chain's first); ``CorruptRecord`` if bad.

    None for a fleet's marker item (``is_marker``): an item of the table that is no
    chain, written and removed by the fleet itself."""
    key = record.keys.get(partition_key, {}).get("S")
    if is_marker(key, record.old_image, record.new_image):
        return []
    old = _chain(record, "old", partition_key)
    new = _chain(record, "new", partition_key)
    if record.event_name == "REMOVE":
        if old is None:
            raise CorruptRecord(record.name, "is a REMOVE without an old image")
        removal: Removal = "ttl" if record.by_ttl else "caller"
        return [_event(kind, old, record) for kind in REMOVED[state_of(old), removal]]
    if new is None:
        raise CorruptRecord(record.name, f"is an {record.event_name} without a new image")
    if old is None and record.event_name == "MODIFY":  # else every stamp would be "created"
        raise CorruptRecord(
            record.name,
            "is a MODIFY without an old image (a stream view type other than NEW_AND_OLD_IMAGES)",
        )
    if old is not None and old.chain_id == new.chain_id:
        return [_event(kind, new, record) for kind in SAME_CHAIN[state_of(old), state_of(new)]]
    ended = [_event(kind, old, record) for kind in REPLACED[state_of(old)]] if old else []
    return ended + [_event(kind, new, record) for kind in NEW_CHAIN[state_of(new)]]


def decode(record: object, partition_key: str = DEFAULT_PARTITION_KEY) -> list[ChainEvent]:
    """The events of a stream record in either format (see :mod:`.records`).

    Most records give one event or none (an intermediate stamp); a create over a live
    chain past its ``expires_at`` gives two (``expired`` for the old chain, then
    ``created``).  Raises :class:`~xor_ack_dynamodb.errors.CorruptRecord`, naming the
    record, for anything else: decode each record of a batch on its own.
    ``InvalidArgument`` for a ``partition_key`` that is not a non-empty str.
    """
    key = check_partition_key(partition_key)  # the caller's argument before the record
    return events_of(parse(record), key)
