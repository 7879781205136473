"""A message in hand whose visibility is kept (extended) while its handler works."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .worker import Worker


#: How long a message's end waits for a visibility extension under way (which could
#: otherwise land after the back-off or release, and undo it) before cutting it off.
EXTENSION_WAIT = 2.0


class Kept:
    """A message in hand, its visibility extended (``Worker._keep_visible``) until
    :meth:`stop`, which lets an extension under way finish (for ``EXTENSION_WAIT`` at most:
    a hung request holds neither the message's end nor a shutdown)."""

    def __init__(self, worker: Worker, message: dict[str, Any]) -> None:
        self.message = message
        self._done = asyncio.Event()
        receipt = message.get("ReceiptHandle")  # none: a bug, met by _handle, not here
        self._keeper = (
            asyncio.ensure_future(worker._keep_visible(receipt, self._done))
            if isinstance(receipt, str)
            else None
        )

    async def stop(self, *, wait: bool = True) -> None:
        self._done.set()
        if self._keeper is None:
            return
        try:
            if wait:
                await asyncio.wait({self._keeper}, timeout=EXTENSION_WAIT)
        finally:  # cut off (or cancelled meanwhile): it ends here
            self._keeper.cancel()
            await asyncio.gather(self._keeper, return_exceptions=True)
