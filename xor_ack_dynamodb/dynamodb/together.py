"""Requests run side by side, as one await that a cancel always stops.

``asyncio.gather`` has two faults for requests run side by side.  A cancel that comes in
the loop turn one request fails reaches the caller as that request's error, not
``CancelledError``: a ``stamp_many`` cancelled by a timeout raised ``TableMismatch``, and a
loop that reports a failed call and goes on (the dashboard's counts, with DynamoDB
unreachable) ran on after its cancel, so whoever awaited it (``Dashboard.close()``) waited
forever.  And the requests still running when one fails are left running, on a client
that may be about to close.  ``asyncio.TaskGroup`` is no cure on Python 3.11: a child
that fails while the group exits leaves a cancel request on the caller's task (3.12 takes
it back), which the caller's next ``asyncio.timeout`` misreads.

:func:`every` waits with ``asyncio.wait``, which raises no child's error: a cancel of the
caller is its ``CancelledError``; otherwise the first failure (in the coroutines' order)
is raised as itself, after the others are cancelled and awaited.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


async def every(coroutines: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """The results of ``coroutines`` run side by side, in their order."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:  # one failed, or the caller was cancelled: the others stop before this returns
        running = [task for task in tasks if not task.done()]
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running)
    errors = [task.exception() for task in tasks if not task.cancelled()]  # each one seen
    first = next((error for error in errors if error is not None), None)
    if first is not None:
        raise first
    return [task.result() for task in tasks]
