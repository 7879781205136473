"""SIGINT and SIGTERM as an event, for the verbs that run until stopped.

``events follow`` and ``sweep --watch`` poll, and stop at their next turn once it is set.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Stop(threading.Event):
    """Set by the first SIGINT or SIGTERM; ``.signal`` names it (``"SIGTERM"``)."""

    signal = ""


@contextmanager
def stop_on_signals() -> Iterator[Stop]:
    """An event set by SIGINT or SIGTERM while inside (the previous handlers come back after)."""
    stop = Stop()

    def on_signal(number: int, frame: FrameType | None) -> None:
        stop.signal = stop.signal or signal.Signals(number).name
        stop.set()

    previous = {
        number: signal.signal(number, on_signal) for number in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
