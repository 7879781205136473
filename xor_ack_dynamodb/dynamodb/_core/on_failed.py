"""A sweep's ``on_failed``: checked before the sweep, called for each tombstone it makes.

Each chain on its own, the callback too: what it raises for one tombstone is kept, and
the sweep goes on failing the other overdue chains and telling them.  At the end
:meth:`Telling.end` raises ``OnFailedRaised`` (every tombstone, and what was raised for
which); a sweep that ends in an error of its own (``SweepIncomplete``, ``SweepStopped``)
raises that, with a note of the callback's errors (:meth:`Telling.noted`).
"""

from __future__ import annotations

from collections.abc import Callable

from ...chain import ChainState
from ...errors import InvalidArgument, InvalidListener, OnFailedRaised

OnFailed = Callable[[ChainState], object]


def check_on_failed(on_failed: object) -> None:
    """``on_failed`` is None or a plain function (``async def`` would be called, its
    coroutine never run: ``InvalidListener``)."""
    if on_failed is None:
        return
    if not callable(on_failed):
        raise InvalidArgument(f"on_failed must be a function or None, not {on_failed!r}")
    InvalidListener.check(on_failed, "on_failed")


class Telling:
    """Calls ``on_failed`` with each tombstone; keeps what it raises (see the module)."""

    def __init__(self, on_failed: OnFailed) -> None:
        self.on_failed = on_failed
        self.errors: dict[str, BaseException] = {}

    def __call__(self, tombstone: ChainState) -> None:
        try:
            self.on_failed(tombstone)
        except Exception as exc:
            self.errors.setdefault(tombstone.tag, exc)

    def end(self, failed: list[ChainState]) -> list[ChainState]:
        """``failed`` (the sweep's tombstones), or ``OnFailedRaised`` if the callback raised."""
        if self.errors:
            raise OnFailedRaised(failed, self.errors) from next(iter(self.errors.values()))
        return failed

    def noted(self, error: BaseException) -> BaseException:
        """``error`` (the sweep's own), noting what the callback raised, if anything."""
        if self.errors:
            tag, first = next(iter(self.errors.items()))
            error.add_note(
                f"on_failed also raised for {len(self.errors)} chain(s) "
                f'(first: "{tag}": {type(first).__name__}: {first})'
            )
        return error
