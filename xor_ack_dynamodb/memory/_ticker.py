"""The clock of the timeout generations: an asyncio task that calls ``tick()``.

The trackers read no clock (``_generations`` is sans-I/O); this is the one
place where time passes.  ``Ack.ticking()`` returns a :class:`Ticker`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType

__all__ = ["Ticker"]


class Ticker:
    """Calls ``tick()`` every ``interval`` seconds from an asyncio task.

    Each tick comes a whole ``interval`` after the previous one ended, however
    late that one ran (a blocked event loop): missed ticks are skipped, not
    caught up in a burst, so chains whose completions were stuck behind the
    same blockage get their time, and a late tick never brings the next one
    closer, which would expire a chain added just before it early.  An
    exception from a listener during a tick goes to the loop's exception
    handler and ticking goes on.
    """

    def __init__(self, tick: Callable[[], object], interval: float) -> None:
        self._tick = tick
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start ticking (needs a running event loop)."""
        if self.running:
            raise RuntimeError("the ticker is already running")
        self._task = asyncio.get_running_loop().create_task(self._run(), name="xor-ack-ticker")

    async def stop(self) -> None:
        """Stop ticking and wait for the task to end."""
        task, self._task = self._task, None
        if task is None:
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
