"""Concurrent stamps on one chain merged into one write: the plan both clients drive.

This module is sans-I/O: it holds which chains have a write in flight, the
stamps waiting per chain, what the next write of a chain carries and which
caller gets which outcome.  The async client drives it with asyncio futures
and tasks, the sync client with ``concurrent.futures`` futures and its callers'
threads; neither keeps a queue of its own.

The life of a chain's stamps:

- :meth:`Merging.submit`: with no write for the chain in flight, the caller gets
  a :class:`Merge` of its own stamp and sends it itself (in its own task or
  thread: no hand-over when there is no contention); otherwise the stamp queues
  and the caller waits on the waiter it gets.
- :meth:`Merging.finished`: a write's outcomes go to its callers, and the next
  merge carries every stamp that queued meanwhile, in call order (None: the
  chain has no write in flight any more).  A caller whose waiter is already
  done (an asyncio task cancelled while it waited) is left out: its stamp is
  not sent.
- :meth:`Merging.abandon`: the sender stopped (cancelled, interrupted): its
  callers and every stamp still queued get that error, and the chain is idle.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from ._core.effects import ENTRY_ERRORS, Call, Effect, Entry, Outcome
from ._core.many import Chains
from ._core.merged import for_each_caller, one_each


class Waiter(Protocol):
    """Where a queued caller's outcome goes: an asyncio or a ``concurrent.futures`` future."""

    def done(self) -> bool: ...

    def set_result(self, result: Outcome, /) -> None: ...

    def set_exception(self, exception: BaseException, /) -> None: ...


W = TypeVar("W", bound=Waiter)

#: The requests of a stamp's write that write nothing.
_READS = frozenset({"get_item", "batch_get_item", "query"})


@dataclass
class Merge(Generic[W]):
    """One write of a chain: its stamps in call order and who waits for each.

    ``waiters[i]`` is None for the caller that sends the merge itself (it gets
    its outcome from the write's result, not through a waiter).
    """

    tag: str
    entries: list[Entry]
    waiters: list[W | None]

    def write(self, core: Chains) -> Generator[Effect, Any, list[Outcome]]:
        """The sans-I/O write: one outcome per stamp; a chain's error is each stamp's outcome.

        A stamp whose caller left (its waiter done: an asyncio task cancelled) before the
        write's first request that writes is left out of it: the write is planned again
        without it (nothing was written yet), or ends with no outcome when no caller is
        left.  Once a request that writes went out, every stamp it carries stays (it may
        have landed).
        """
        written = False
        while True:
            op = self._stamp_batch(core)
            try:
                effect = next(op)
                while True:
                    if not written and isinstance(effect, Call) and effect.op not in _READS:
                        if self._left_out():  # before the first write: plan again
                            core.stats.unsent(effect)
                            break
                        written = True
                    try:
                        response = yield effect
                    except GeneratorExit:
                        op.close()
                        raise
                    except BaseException as exc:  # the request's error, for the core
                        effect = op.throw(exc)
                    else:
                        effect = op.send(response)
            except StopIteration as stop:
                outcomes: list[Outcome] = stop.value
                return outcomes
            op.close()
            if not self.entries:
                return []

    def _stamp_batch(self, core: Chains) -> Generator[Effect, Any, list[Outcome]]:
        try:
            outcomes: list[Outcome] = yield from core.stamp_batch(self.tag, self.entries)
        except ENTRY_ERRORS as exc:
            return one_each(exc, len(self.entries))
        return outcomes

    def _left_out(self) -> bool:
        """Drop the stamps whose callers left; True if there were any."""
        live = [i for i, w in enumerate(self.waiters) if w is None or not w.done()]
        if len(live) == len(self.entries):
            return False
        self.entries = [self.entries[i] for i in live]
        self.waiters = [self.waiters[i] for i in live]
        return True


@dataclass
class Merging(Generic[W]):
    """The chains of one client with a write in flight, and the stamps queued for each."""

    queues: dict[str, list[tuple[Entry, W]]] = field(default_factory=dict)

    def submit(self, tag: str, entry: Entry, waiter: Callable[[], W]) -> Merge[W] | W:
        """A merge to send now (no write for ``tag`` in flight), or the waiter to wait on."""
        queue = self.queues.get(tag)
        if queue is None:
            self.queues[tag] = []
            return Merge(tag, [entry], [None])
        queued = waiter()
        queue.append((entry, queued))
        return queued

    def finished(
        self, merge: Merge[W], outcomes: Sequence[Outcome] | BaseException
    ) -> Merge[W] | None:
        """Hand ``merge``'s outcomes to its callers (or the error its write raised); what's next.

        The next merge carries the stamps queued while it was in flight, in call
        order; None when none are (the chain is idle).
        """
        for i, waiter in enumerate(merge.waiters):
            if waiter is None or waiter.done():
                continue
            if isinstance(outcomes, BaseException):
                waiter.set_exception(for_each_caller(outcomes))
            else:
                waiter.set_result(outcomes[i])
        queue = self.queues[merge.tag]
        if not queue:  # nothing queued meanwhile: the chain is idle
            del self.queues[merge.tag]
            return None
        waiting = [(entry, waiter) for entry, waiter in queue if not waiter.done()]
        queue.clear()
        if not waiting:
            del self.queues[merge.tag]
            return None
        return Merge(merge.tag, [e for e, _ in waiting], [w for _, w in waiting])

    def abandon(self, merge: Merge[W], error: BaseException) -> None:
        """``merge``'s sender stopped with ``error``: its callers and the queued ones get it."""
        queue = self.queues.pop(merge.tag, [])
        for waiter in [*merge.waiters, *(w for _, w in queue)]:
            if waiter is not None and not waiter.done():
                waiter.set_exception(for_each_caller(error))
