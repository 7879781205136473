"""The acker's messages and outcomes: what travels between spouts, bolts and an :class:`Acker`.

Plain frozen dataclasses, no behaviour: :mod:`xor_ack_dynamodb.memory.acker` (which
re-exports them all) documents the protocol and holds the state machine.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TypeAlias

from ._ack_report import FailReason

__all__ = [
    "Acked",
    "AckerMsg",
    "AckerStats",
    "Anchor",
    "Fail",
    "Nacked",
    "Ok",
    "Outcome",
    "Pending",
    "ResetTimeout",
    "Track",
]


# -- messages ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Track:
    """Start tree ``anchor_id`` for ``source_id`` emitted by spout task ``task_id``.

    ``value`` is the XOR of the tree's root tuple ids when the spout folds their
    anchoring into the Track (Storm); 0 when it sends one Anchor per root (FsShelter).
    """

    task_id: Hashable
    source_id: Hashable
    anchor_id: int
    value: int = 0


@dataclass(frozen=True, slots=True)
class Anchor:
    """Tuple ``tuple_id`` was created in tree ``anchor_id``."""

    anchor_id: int
    tuple_id: int


@dataclass(frozen=True, slots=True)
class Ok:
    """Tuple ``tuple_id`` of tree ``anchor_id`` was processed.

    ``tuple_id`` may be a folded value: ``input_id ^ child_1 ^ ... ^ child_n`` acks
    the input and anchors its children in one message.
    """

    anchor_id: int
    tuple_id: int


@dataclass(frozen=True, slots=True)
class Fail:
    """Tuple ``tuple_id`` of tree ``anchor_id`` failed: the tree fails."""

    anchor_id: int
    tuple_id: int = 0


@dataclass(frozen=True, slots=True)
class ResetTimeout:
    """Tree ``anchor_id`` is slow but alive: restart its timeout."""

    anchor_id: int


AckerMsg: TypeAlias = Track | Anchor | Ok | Fail | ResetTimeout


# -- outcomes (what the acker sends back to the spout) ------------------------------


@dataclass(frozen=True, slots=True)
class Acked:
    """Every tuple of the tree was processed: ack ``source_id`` at spout ``task_id``."""

    anchor_id: int
    task_id: Hashable
    source_id: Hashable


@dataclass(frozen=True, slots=True)
class Nacked:
    """The tree failed (``reason``): nack ``source_id`` at spout ``task_id`` (replay it)."""

    anchor_id: int
    task_id: Hashable
    source_id: Hashable
    reason: FailReason


Outcome: TypeAlias = Acked | Nacked


@dataclass(frozen=True, slots=True)
class Pending:
    """A snapshot of a tree the acker holds (the seed's ``Pending`` state)."""

    anchor_id: int
    task_id: Hashable
    source_id: Hashable
    value: int
    tracked: bool  #: False while only messages that overtook the Track have arrived
    failed: bool  #: a Fail arrived before the Track


@dataclass(frozen=True, slots=True)
class AckerStats:
    """Counters of one :class:`Acker`; ``tracked == acked + failed + expired +
    overflowed + pending``."""

    tracked: int
    acked: int
    failed: int
    expired: int
    overflowed: int
    pending: int
    untracked: int  #: trees whose messages overtook their Track
    orphaned: int  #: untracked trees that expired without a Track
    dropped: int  #: messages for unknown trees not kept because the acker was full
