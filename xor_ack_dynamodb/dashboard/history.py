"""Each chain's history from the stream: created, every stamp and touch, how it ended.

The events of ``xor_ack_dynamodb.events`` say when a chain was created and how it ended;
an intermediate stamp is no event, but it is a stream record (live -> live, same chain,
``version`` + 1), and so is a touch (the ``deadline`` moved, the ``stamp`` not).  This
module turns each record into entries of its tag's history, reading the few attributes
of the item it needs (``version``, ``stamp``, ``deadline``, ``updated_at``: the item
layout of docs/design.md) from the record's images.

Memory is bounded: the histories of the last ``max_tags`` tags written (least recently
written dropped first), the last ``max_entries`` entries of each, plus its first and its
latest creation.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from xor_ack_dynamodb import events


@dataclass(frozen=True, slots=True)
class Entry:
    """One moment of a chain: ``what`` happened at ``time`` (epoch seconds)."""

    time: float
    #: created, stamped, touched, acked, failed, timed_out, expired, deleted
    what: str
    version: int | None
    chain_id: bytes
    #: The state (or a removed item's state) as hex, the reason, the new deadline...
    detail: str = ""
    #: The chain's stamp after this write (the created entry's: the first stamp).
    stamp: bytes | None = None

    @property
    def zero(self) -> bool:
        """The write left the state all zeros (the chain acked)."""
        return self.stamp is not None and not any(self.stamp)


@dataclass
class Story:
    entries: list[Entry]
    dropped: int = 0


def _number(image: dict[str, Any] | None, name: str) -> float | None:
    value = (image or {}).get(name)
    if not isinstance(value, dict) or "N" not in value:
        return None
    try:
        return float(value["N"])
    except (TypeError, ValueError):
        return None


def _blob(image: dict[str, Any] | None, name: str) -> bytes | None:
    value = (image or {}).get(name)
    if isinstance(value, dict) and isinstance(value.get("B"), (bytes, bytearray)):
        return bytes(value["B"])
    return None


def is_chain_record(record: events.StreamRecord) -> bool:
    """Does the record hold a chain (a ``stamp``), not a marker item a fleet keeps?"""
    return _blob(record.new_image, "stamp") is not None or (
        _blob(record.old_image, "stamp") is not None
    )


def entries_of(record: events.StreamRecord, found: list[events.ChainEvent]) -> list[Entry]:
    """The history entries of one record, given its events."""
    new, old = record.new_image, record.old_image
    version = _number(new, "version")
    stamp = _blob(new, "stamp")
    out: list[Entry] = []
    for event in found:
        detail = ""
        if isinstance(event, events.Acked) and event.latency is not None:
            detail = f"after {event.latency:.3f} s"
        elif isinstance(event, events.Failed):
            detail = event.reason
        elif isinstance(event, (events.Expired, events.Deleted)):
            detail = f"was {event.state}"
        removed = event.kind in ("expired", "deleted")
        out.append(
            Entry(
                time=event.time,
                what=event.kind,
                version=int(v) if (v := _number(old if removed else new, "version")) else None,
                chain_id=event.chain_id,
                detail=detail,
                stamp=None if removed else stamp,
            )
        )
    if found or new is None or old is None or record.event_name != "MODIFY":
        return out
    if _blob(new, "chain_id") != _blob(old, "chain_id"):
        return out
    when = _number(new, "updated_at") or record.approximate_time or 0.0
    chain_id = _blob(new, "chain_id") or b""
    if stamp != _blob(old, "stamp"):
        out.append(Entry(when, "stamped", int(version or 0), chain_id, "", stamp))
    elif _number(new, "deadline") != _number(old, "deadline"):
        deadline = _number(new, "deadline")
        detail = "" if deadline is None else f"{deadline:.3f}"
        out.append(Entry(when, "touched", int(version or 0), chain_id, detail, stamp))
    return out


class History:
    """The recent histories, by tag (see the module docstring)."""

    def __init__(self, max_tags: int = 100_000, max_entries: int = 40) -> None:
        self.max_tags = max_tags
        self.max_entries = max_entries
        self._stories: OrderedDict[str, Story] = OrderedDict()
        self.forgotten = 0  #: tags dropped for room

    def add(self, tag: str, entries: list[Entry]) -> None:
        if not entries:
            return
        story = self._stories.get(tag)
        if story is None:
            story = self._stories[tag] = Story([])
            if len(self._stories) > self.max_tags:
                self._stories.popitem(last=False)
                self.forgotten += 1
        else:
            self._stories.move_to_end(tag)
        story.entries.extend(entries)
        held = story.entries
        if len(held) <= self.max_entries:
            return
        # keep the first entry (how the tag began), the latest creation (how the chain it
        # holds now began: what tells a fleet job) and the latest entries
        created = max((i for i, e in enumerate(held) if e.what == "created"), default=0)
        heads = [0] if created == 0 else [0, created]
        start = len(held) - (self.max_entries - len(heads))
        if created >= start:
            heads, start = [0], len(held) - (self.max_entries - 1)
        kept = [held[i] for i in heads] + held[start:]
        story.dropped += len(held) - len(kept)
        held[:] = kept

    def of(self, tag: str) -> Story | None:
        story = self._stories.get(tag)
        return None if story is None else Story(list(story.entries), story.dropped)

    def __len__(self) -> int:
        return len(self._stories)
