"""A deadline on botocore's re-sends of the requests of a call that has a time limit.

botocore sends a request that failed (a 5xx, a throttle, a lost connection, an
endpoint that refuses connections) again, after a growing wait: with the clients'
ten retries a request that keeps failing takes about a minute and a half.  A call
whose caller gave it a time limit (``wait(tag, timeout=...)``) sends its requests
inside :func:`retries_until`; the retry handler ``_attempts`` installs asks
:func:`passed` before botocore decides on a re-send (past the deadline: none, and
botocore's retry quota is not charged for it) and :func:`capped` for the wait
before one (it ends at the deadline at the latest).  So the call ends about one
request after its limit, with its last attempt's error.  Only reads are sent under
a deadline: a read not sent again leaves nothing unsettled.

The deadline is a ``ContextVar``: it holds in the thread (sync client) or the task
(async client) that sends the call's requests, and nowhere else.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_DEADLINE: ContextVar[float | None] = ContextVar("xor_ack_retry_deadline", default=None)


def seconds_from_now(seconds: object) -> float | None:
    """The deadline ``seconds`` from now (``time.monotonic()``); None for what is no finite
    number of seconds >= 0 (``math.inf``: no deadline; anything else the call refuses)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return None
    try:
        span = float(seconds)
    except OverflowError:  # an int no float holds
        return None
    if not 0 <= span < math.inf:
        return None
    return time.monotonic() + span


@contextmanager
def retries_until(deadline: float | None) -> Iterator[None]:
    """No re-send of a request sent inside this block starts after ``deadline``
    (``time.monotonic()``; None: none of its own); an earlier deadline already set stays."""
    current = _DEADLINE.get()
    if deadline is None or (current is not None and current <= deadline):
        yield
        return
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def passed() -> bool:
    """Is there a deadline, and has it passed?"""
    deadline = _DEADLINE.get()
    return deadline is not None and time.monotonic() >= deadline


def capped(delay: float | None) -> float | None:
    """The wait before a re-send (None: no re-send), ending at the deadline at the latest."""
    deadline = _DEADLINE.get()
    if delay is None or deadline is None:
        return delay
    return max(0.0, min(delay, deadline - time.monotonic()))
