"""What an in-memory `Ack` reports: why a chain failed, and its counters.

Shared by both cores of ``Ack`` and by the Storm-style acker (``FailReason``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, TypeVar

T = TypeVar("T")


class FailReason(StrEnum):
    """Why a chain failed; a ``str``, so ``reason == "timeout"`` works."""

    FAILED = "failed"  #: ``fail(tag)`` was called
    TIMEOUT = "timeout"  #: not complete within its timeout
    OVERFLOW = "overflow"  #: added while the tracker held ``high_water`` chains


def counters_of(report: type[T], tracker: object, **given: Any) -> T:
    """A snapshot ``report`` (a dataclass) of ``tracker``'s counters: each field ``name``
    is the tracker's ``_name``, unless ``given``.  ``AckStats`` of an ``Ack``,
    ``AckerStats`` of an ``Acker``."""
    values = dict(given)
    for field in fields(report):  # type: ignore[arg-type]
        if field.name not in values:
            values[field.name] = getattr(tracker, "_" + field.name)
    return report(**values)


AckedListener = Callable[[str], object]
FailedListener = Callable[[str, FailReason], object]


@dataclass(frozen=True, slots=True)
class AckStats:
    """Counters of one :class:`Ack` (a snapshot).

    ``added == acked + failed + expired + overflowed + pending`` always holds.
    """

    added: int  #: ``add`` calls that started a chain (overflowed ones included)
    acked: int  #: chains whose state reached zero
    failed: int  #: chains failed by ``fail(tag)``
    expired: int  #: chains failed by their timeout
    overflowed: int  #: chains failed at once by the high-water mark
    pending: int  #: chains added and not finished
    unclaimed: int  #: entries whose stamps or fail arrived before their add
    orphaned: int  #: unclaimed entries that timed out without an add
    dropped: int  #: early stamps / fails not kept because the tracker was full
    ack_time_total: float  #: seconds from add to ack, summed over acked chains
    ack_time_max: float  #: the longest time from add to ack, in seconds

    @property
    def ack_time_mean(self) -> float | None:
        """Mean seconds from add to ack, None before the first ack."""
        return self.ack_time_total / self.acked if self.acked else None
