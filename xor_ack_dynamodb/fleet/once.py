"""A message's write lands once, however late a duplicate of it comes.

Every fleet write is the client's ``stamp_on_many``: the stamps of one or more
messages of a chain, each with its own token (the digest of the message's
identity), written on the exact state the fleet read and checked (condition:
that version of that chain).  The item keeps its last ``W`` tokens (the client's
``token_window``).  Messages of one chain that finish together in one process
go in one write (**coalescing**: while a write for a chain is in flight, the
next messages of that chain wait and go together in the next one), as many as
the window has room for: a write never evicts a token unless it carries one.

**Positions.**  Number the chain's tokens as they were written: 1 (the create's),
2, ... (the *stream*).  While the window is not full nothing was evicted, and
its tokens are positions ``1 .. L``.  A write that would evict carries one token
only, so once the window is full each write adds one token and one version: the
window at version ``V`` holds positions ``V - F + 1 .. V - F + W``, where ``F``
is the version at which the window was first full.  ``F`` is kept in page 0
(below), the first page any chain needs.

Three facts make "applied once" provable:

1. **Near duplicates.**  A copy whose token is in the window was applied: skip.
2. **Pages.**  The write that evicts position ``e`` is sent only after the page
   holding ``e`` exists (page ``k``: positions ``kP+1 .. kP+P``, ``P <= W``,
   written while they are all in the window, by the writer about to evict its
   first position; page 0 also records ``F``).  The write is conditioned on the
   state the writer read, so the eviction happens only after the page exists.
   Hence every evicted token is in a page: one extra write per ``P`` messages,
   only for chains longer than ``W`` tokens.
3. **Far duplicates.**  A message is written after it was sent, and its envelope's
   ``sent`` is at most the chain's version then, so its token's position is above
   ``sent``.  A copy whose token is not in the window was applied iff its token is
   in a page covering positions ``sent+1 ..`` up to the window; none to look at
   while the window was never full or reaches back to ``sent``.

A copy found new is written on the state it was checked on: if another write
landed in between, the write is refused (``ChainMoved``) and every message of it
is checked again on the chain the refusal returned, then written there.  So
check and write are one atomic step.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..chain import ChainState, token_digest
from ..dynamodb import XorAckDynamoDB
from ..errors import ChainFailed, ChainMoved, TagNotFound
from ..stamps import Stamp
from .envelope import Envelope
from .errors import MarkerMissing, UnsuitableClient
from .markers import Markers


class Verdict(Enum):
    APPLIED = "applied"  # this copy's write landed
    DUPLICATE = "duplicate"  # an earlier copy's write landed
    CLOSED = "closed"  # the chain is acked, failed, gone, another generation, or overdue


@dataclass(frozen=True)
class Result:
    verdict: Verdict
    state: ChainState | None  # the chain as last read (None: no chain under the tag)
    stamp: Stamp | None = None  # APPLIED: the state the write brought the chain to

    @property
    def acked(self) -> bool:
        """This copy's write, or an earlier copy's, is the one that acked the chain."""
        if self.verdict is Verdict.APPLIED:
            return self.stamp is not None and self.stamp.acked
        return self.verdict is Verdict.DUPLICATE and self.state is not None and self.state.acked


@dataclass
class _Waiting:
    """A message waiting to be written with others of its chain."""

    env: Envelope
    value: Stamp
    future: asyncio.Future[Any] = field(repr=False)


@dataclass(frozen=True)
class _Lead:
    """Handed to a waiting message: write this batch (it comes first in it)."""

    batch: list[_Waiting]


class Once:
    """Applies each message's stamp once per chain, with the client's ``stamp_on_many``.

    A refusal (``ChainMoved``) comes back here to be checked again on the chain it
    returned, never planned again unchecked.  ``page_size``: tokens per page (at
    most the client's token window; default half of it).  ``conflicts``: refused
    writes; ``coalesced``: messages written in another message's write.
    """

    def __init__(self, ack: XorAckDynamoDB, markers: Markers, page_size: int | None = None) -> None:
        self.ack = ack
        self.markers = markers
        self.window = ack.token_window
        self.page_size = page_size or max(1, self.window // 2)
        if not 1 <= self.page_size <= self.window:
            raise UnsuitableClient(f"page_size must be 1..{self.window}, not {self.page_size}")
        self.conflicts = 0
        self.coalesced = 0
        self._waiting: dict[str, list[_Waiting]] = {}

    # -- checking ------------------------------------------------------------------

    async def read(self, env: Envelope) -> Result | ChainState:
        """The chain if ``env`` may still land on it, else the verdict (duplicate or closed)."""
        state = await self.ack.get(env.tag)
        return await self._classify(env, state, before_handler=True)

    async def _classify(
        self, env: Envelope, state: ChainState | None, before_handler: bool = False
    ) -> Result | ChainState:
        if state is None or state.chain_id != env.chain_id:
            return Result(Verdict.CLOSED, state)
        token = token_digest(env.id)
        if token in state.tokens:
            return Result(Verdict.DUPLICATE, state)
        if not state.live or (before_handler and state.overdue()):
            # Past its deadline no write lands any more: the handler does not run, and
            # the sweeper fails the chain ("timeout").  After the handler ran, the write
            # goes out: meeting the deadline, it fails the chain itself (once).
            return Result(Verdict.CLOSED, state)
        if await self._in_pages(env, state, token):
            return Result(Verdict.DUPLICATE, state)
        return state

    async def landed(self, env: Envelope, state: ChainState) -> bool:
        """Did a copy of ``env`` land on ``state`` (its generation): its token in the window,
        or in a page?  ``MarkerMissing`` if a page it needs is gone (it cannot be proven)."""
        token = token_digest(env.id)
        if token in state.tokens:
            return True
        if env.window is not None and env.window != self.window:
            return False  # refused on every receive (WindowMismatch): never written
        return await self._in_pages(env, state, token)

    async def _first_position(self, state: ChainState) -> int:
        """The stream position of the first token of ``state``'s (full) window."""
        full_at = await self.markers.full_at(state.tag, state.chain_id)
        if full_at is None:
            if time.time() - state.created_at >= self.markers.first_page_ttl:
                raise MarkerMissing(state.tag, 0)  # it may have expired: nothing to place by
            return 1  # no page 0: nothing was evicted yet, this is the first full window
        return state.version - full_at + 1

    async def _in_pages(self, env: Envelope, state: ChainState, token: bytes) -> bool:
        if len(state.tokens) < self.window:
            return False  # the window was never full: nothing was evicted
        oldest = await self._first_position(state)
        if env.sent + 1 >= oldest:
            return False  # every token written since the message was sent is in the window
        p = self.page_size
        pages = range(env.sent // p, (oldest - 2) // p + 1)  # positions sent+1 .. oldest-1
        found = await self.markers.pages(env.tag, env.chain_id, pages)
        for page, tokens in found.items():
            if tokens is None:
                raise MarkerMissing(env.tag, page)
            if any(tokens[i : i + len(token)] == token for i in range(0, len(tokens), len(token))):
                return True
        return False

    # -- writing -------------------------------------------------------------------

    async def apply(self, env: Envelope, value: Stamp, state: ChainState | None = None) -> Result:
        """Write ``value`` (the message's ``own ^ children``) once for ``env``'s identity.

        While a write for the chain is in flight in this process, the message waits
        and goes with the others that wait in the next write.  ``state``: the chain
        as just read and classified, to spare a read.
        """
        me = _Waiting(env, value, asyncio.get_running_loop().create_future())
        queue = self._waiting.get(env.tag)
        if queue is None:
            self._waiting[env.tag] = []
            return await self._lead(env.tag, [me], state)
        queue.append(me)
        try:
            outcome = await me.future
        except asyncio.CancelledError:
            if me.future.done() and not me.future.cancelled():
                lead = me.future.result()
                if isinstance(lead, _Lead):  # handed the lead, then cancelled: pass it on
                    self._waiting[env.tag] = lead.batch[1:] + self._waiting.get(env.tag, [])
                    self._hand_over(env.tag)
            raise
        if isinstance(outcome, _Lead):
            self.coalesced += len(outcome.batch) - 1
            return await self._lead(env.tag, outcome.batch, None)
        assert isinstance(outcome, Result)
        return outcome

    async def _lead(self, tag: str, batch: list[_Waiting], state: ChainState | None) -> Result:
        """Write ``batch`` (this message first), hand each its result, pass the lead on."""
        try:
            results = await self._write(tag, batch, state)
        except BaseException as exc:
            error = exc if isinstance(exc, Exception) else RuntimeError("the writer was stopped")
            for waiting in batch[1:]:
                if not waiting.future.done():
                    waiting.future.set_exception(error)
            self._hand_over(tag)
            raise
        for waiting, result in zip(batch[1:], results[1:], strict=True):
            if not waiting.future.done():
                waiting.future.set_result(result)
        self._hand_over(tag)
        return results[0]

    def _hand_over(self, tag: str) -> None:
        """The messages that queued meanwhile go in the next write, by the first of them."""
        queue = [w for w in self._waiting.get(tag, []) if not w.future.done()]
        if not queue:
            self._waiting.pop(tag, None)
            return
        self._waiting[tag] = []
        queue[0].future.set_result(_Lead(queue))

    async def _write(
        self, tag: str, batch: list[_Waiting], state: ChainState | None
    ) -> list[Result]:
        """Write every message of ``batch`` that is new, in as few writes as the window allows."""
        results: list[Result | None] = [None] * len(batch)
        if state is None:
            state = await self.ack.get(tag)
        while True:
            todo: list[int] = []
            for i, waiting in enumerate(batch):
                if results[i] is None:
                    checked = await self._classify(waiting.env, state)
                    if isinstance(checked, Result):
                        results[i] = checked
                    else:
                        todo.append(i)
            if not todo:
                return [r for r in results if r is not None]
            assert state is not None
            room = self.window - len(state.tokens)  # tokens a write adds without evicting
            group: list[int] = []
            ids: set[bytes] = set()
            for i in todo:  # two copies of one message wait: the second is then a duplicate
                if batch[i].env.id not in ids and len(group) < max(1, min(room, self.window // 2)):
                    ids.add(batch[i].env.id)
                    group.append(i)
            if room <= 0:
                await self._page_before_eviction(state)
            try:
                stamps = await self.ack.stamp_on_many(
                    state, [(batch[i].value, batch[i].env.id) for i in group]
                )
            except ChainMoved as moved:
                # Another write landed since the check: check again on the chain the
                # refusal returned (no read), and write there what is still new.
                self.conflicts += 1
                state = moved.current
                continue
            except (TagNotFound, ChainFailed):
                # Closed meanwhile; ChainTimedOut (a ChainFailed): it went past its deadline
                # before this write, which failed it ("timeout") instead, or found it so.
                closed = await self.ack.get(tag)
                for i in todo:
                    results[i] = Result(Verdict.CLOSED, closed)
                continue
            for i, stamped in zip(group, stamps, strict=True):
                results[i] = Result(Verdict.APPLIED, state, stamped)
            if len(group) < len(todo):
                state = await self.ack.get(tag)  # the rest go in the next write

    async def _page_before_eviction(self, state: ChainState) -> None:
        """Before a write evicts the first position of a page, make sure the page exists."""
        first = await self._first_position(state)
        page, offset = divmod(first - 1, self.page_size)
        # Pages never change: one this process wrote (or read) need not be written again
        # when a write is retried after a lost race.
        if offset == 0 and not self.markers.has_page(state.tag, state.chain_id, page):
            tokens = b"".join(state.tokens[: self.page_size])
            full_at = state.version if page == 0 else None
            await self.markers.put_page(state.tag, state.chain_id, page, tokens, full_at)
