"""The typed events of a chain's life (its lifecycle), shared by every tracker and integration.

Six kinds, each a frozen dataclass with ``tag``, ``chain_id``, ``time`` (epoch
seconds) and a deterministic :attr:`ChainEvent.id`:

=============  ==============================================================
``created``    a chain started (``create``)
``acked``      its state reached zero; ``latency`` = ``acked_at - created_at``
``failed``     it was failed (``fail(tag, reason)``); ``reason``
``timed_out``  it was failed because its deadline passed (reason ``"timeout"``);
               a subclass of :class:`Failed`, so ``isinstance(e, Failed)`` holds
``expired``    its item was deleted by TTL; ``state`` says what it was then
``deleted``    its item was deleted by a caller (``delete()``); ``state`` likewise
=============  ==============================================================

``state`` of :class:`Expired` / :class:`Deleted` is ``"live"`` for a chain that
never finished (an expired live chain is work lost), else ``"acked"``,
``"failed"`` or ``"timed_out"`` (a tombstone removed: garbage collection).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields
from typing import ClassVar, Literal, TypeAlias

Kind: TypeAlias = Literal["created", "acked", "failed", "timed_out", "expired", "deleted"]
#: The state a removed item was in.
ItemState: TypeAlias = Literal["live", "acked", "failed", "timed_out"]
KINDS: tuple[Kind, ...] = ("created", "acked", "failed", "timed_out", "expired", "deleted")
#: The reason a chain failed by its deadline carries (``item.REASON``).
TIMEOUT_REASON = "timeout"


@dataclass(frozen=True, slots=True)
class ChainEvent:
    """What every event has: which chain, and when (epoch seconds)."""

    kind: ClassVar[Kind]

    tag: str
    #: The chain's ``chain_id`` (random per create); ``b""`` from the in-memory trackers.
    chain_id: bytes
    time: float

    @property
    def id(self) -> str:
        """A deterministic identity: the same transition always gets the same id.

        It is made of the kind, the tag and the chain id (a chain is created once,
        ends once and is removed once), so a record delivered twice (a Lambda retry,
        a follower restarted) or seen by two consumers decodes to the same id: use
        it to deduplicate.  Events of the in-memory trackers have no chain id; their
        ``time`` is part of the id instead.
        """
        digest = hashlib.blake2b(digest_size=16)
        for part in (self.kind.encode(), self.tag.encode("utf-8", "surrogatepass"), self.chain_id):
            digest.update(len(part).to_bytes(4, "big"))
            digest.update(part)
        if not self.chain_id:
            digest.update(repr(float(self.time)).encode())
        return digest.hexdigest()

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict: ``kind``, ``id``, the fields (``chain_id`` in hex)."""
        out: dict[str, object] = {"kind": self.kind, "id": self.id}
        for field in fields(self):
            value = getattr(self, field.name)
            out[field.name] = value.hex() if isinstance(value, bytes) else value
        return out


@dataclass(frozen=True, slots=True)
class Created(ChainEvent):
    """A chain started; ``time`` is its ``created_at``."""

    kind: ClassVar[Kind] = "created"


@dataclass(frozen=True, slots=True)
class Acked(ChainEvent):
    """The chain's state reached zero; ``time`` is its ``acked_at``.

    ``latency``: seconds from create to ack (the complete latency), None where the
    tracker does not know it (the in-memory trackers' listeners are not told).
    """

    kind: ClassVar[Kind] = "acked"
    latency: float | None = None


@dataclass(frozen=True, slots=True)
class Failed(ChainEvent):
    """The chain was failed; ``time`` is its ``failed_at``, ``reason`` why."""

    kind: ClassVar[Kind] = "failed"
    reason: str = "failed"


@dataclass(frozen=True, slots=True)
class TimedOut(Failed):
    """The chain failed because its deadline passed (reason ``"timeout"``)."""

    kind: ClassVar[Kind] = "timed_out"
    reason: str = TIMEOUT_REASON


@dataclass(frozen=True, slots=True)
class Expired(ChainEvent):
    """TTL deleted the chain's item; ``time`` is when the deletion was recorded.

    ``state`` ``"live"``: the chain never finished and is gone (work lost);
    otherwise a tombstone was collected (the chain's end was its own event).
    """

    kind: ClassVar[Kind] = "expired"
    state: ItemState = "live"

    @property
    def lost(self) -> bool:
        """True if a chain that never finished expired."""
        return self.state == "live"


@dataclass(frozen=True, slots=True)
class Deleted(ChainEvent):
    """A caller deleted the chain's item; ``state`` is what it was (see :class:`Expired`)."""

    kind: ClassVar[Kind] = "deleted"
    state: ItemState = "live"


Event: TypeAlias = Created | Acked | Failed | TimedOut | Expired | Deleted
#: The event class of each kind.
CLASSES: dict[Kind, type[ChainEvent]] = {
    cls.kind: cls for cls in (Created, Acked, Failed, TimedOut, Expired, Deleted)
}


def failure(tag: str, chain_id: bytes, time: float, reason: str) -> Failed:
    """:class:`TimedOut` for reason ``"timeout"``, else :class:`Failed`: the one rule."""
    if reason == TIMEOUT_REASON:
        return TimedOut(tag, chain_id, time)
    return Failed(tag, chain_id, time, reason)
