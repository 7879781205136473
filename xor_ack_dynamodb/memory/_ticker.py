"""The clock of the timeout generations: an asyncio task that calls ``tick()``.

The trackers read no clock (``_generations`` is sans-I/O); this is the one
place where time passes.  ``Ack.ticking()`` returns a :class:`Ticker`.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from types import TracebackType

from ..errors import TickerRunning

__all__ = ["Ticker"]

#: The last ticker started for each tracker (``Ticker(owner=...)``), weakly both ways: a
#: ticker refers to its tracker (its ``tick``), which must stay collectable.
_started: weakref.WeakKeyDictionary[object, weakref.ref[Ticker]] = weakref.WeakKeyDictionary()


class Ticker:
    """Calls ``tick()`` every ``interval`` seconds from an asyncio task.

    Each tick comes a whole ``interval`` after the previous one ended, however
    late that one ran (a blocked event loop): missed ticks are skipped, not
    caught up in a burst, so chains whose completions were stuck behind the
    same blockage get their time, and a late tick never brings the next one
    closer, which would expire a chain added just before it early.  An
    exception from a listener during a tick goes to the loop's exception
    handler and ticking goes on.

    ``owner``: the tracker ``tick`` belongs to.  One ticker of an owner runs at a time
    (``TickerRunning`` otherwise): two would tick it twice as often, and its chains
    would fail before their timeout.
    """

    def __init__(
        self, tick: Callable[[], object], interval: float, owner: object | None = None
    ) -> None:
        self._tick = tick
        self.interval = interval
        self._owner = owner
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """Ticking: its task not done, in a loop not closed (a loop closed without
        stopping it leaves the task pending for good, and it never ticks again)."""
        task = self._task
        return task is not None and not task.done() and not task.get_loop().is_closed()

    def start(self) -> None:
        """Start ticking (needs a running event loop); ``TickerRunning`` if the owner's
        ticker (this one or another) is running."""
        owner = self._owner
        last = None if owner is None else _started.get(owner)
        running = (last() if last is not None else None) or self
        if running.running:
            what = "this ticker is" if running is self else "another ticker of this Ack is"
            raise TickerRunning(
                f"{what} already running: one ticker per Ack, or its chains would time out "
                "early; use the running one, or await ticker.stop() on it first"
            )
        self._task = asyncio.get_running_loop().create_task(self._run(), name="xor-ack-ticker")
        if owner is not None:
            _started[owner] = weakref.ref(self)

    async def stop(self) -> None:
        """Stop ticking and wait for the task to end."""
        task, self._task = self._task, None
        if task is None or task.get_loop().is_closed():  # nothing left to stop
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise

    async def __aenter__(self) -> Ticker:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            # A whole interval from the end of the last tick, however late that one ran:
            # a chain added just before a late tick must not expire one interval early.
            await asyncio.sleep(self.interval)
            try:
                self._tick()
            except Exception as exc:
                loop.call_exception_handler(
                    {"message": "an Ack listener raised during tick()", "exception": exc}
                )
