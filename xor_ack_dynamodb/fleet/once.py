"""A message's write lands once, however late a duplicate of it comes.

Every fleet write is one stamp with one token, the digest of the message's
identity, written on the exact state the fleet read (condition: that version of
that chain).  The item keeps its last ``W`` tokens (the client's
``token_window``); since each write adds exactly one token, the token at
position ``j`` of a state at version ``V`` holding ``L`` tokens was written at
version ``V - L + 1 + j``.  Three facts make "applied once" provable:

1. **Near duplicates.**  A copy whose token is in the window was applied: skip.
2. **Pages.**  The write that lands at version ``e + W`` evicts the token of
   version ``e``.  Before sending a write that evicts the first version of a page
   (versions ``kP+1 .. kP+P``, ``P <= W``), the writer puts the page: those
   ``P`` tokens, all still in its window.  The write is conditioned on the state
   the writer read, so the eviction happens only after the page exists; the other
   versions of the page are evicted by later writes.  Hence every evicted token is
   in a page: one extra write per ``P`` messages, only for chains longer than ``W``.
3. **Far duplicates.**  A message is written after it was sent, and its envelope's
   ``sent`` is at most the chain's version then.  A copy whose token is not in the
   window was applied iff its token is in a page covering versions
   ``sent+1 .. V-L``; none to look at when the window reaches back to ``sent``.

A copy found new is written on the state it was checked on (the client's
``stamp_on``): if another copy landed in between, the write is refused
(``ChainMoved``) and the check runs again on the chain the refusal returned.
So check and write are one atomic step.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..dynamodb import XorAckDynamoDB
from ..errors import (
    ChainFailed,
    ChainMoved,
    ChainTimeout,
    MarkerMissing,
    TagNotFound,
    UnsuitableClient,
)
from ..item import ChainState, token_digest
from ..stamps import Stamp
from .envelope import Envelope
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


class Once:
    """Applies each message's stamp once per chain, with the client's ``stamp_on``.

    Every write is ``stamp_on`` the state checked, with the message's identity as
    its one token; a refusal (``ChainMoved``) comes back here to be checked again
    on the chain it returned, never planned again unchecked.  ``page_size``: tokens
    per page (at most the client's token window; default half of it).
    """

    def __init__(self, ack: XorAckDynamoDB, markers: Markers, page_size: int | None = None) -> None:
        self.ack = ack
        self.markers = markers
        self.window = ack.token_window
        self.page_size = page_size or max(1, self.window // 2)
        if not 1 <= self.page_size <= self.window:
            raise UnsuitableClient(f"page_size must be 1..{self.window}, not {self.page_size}")
        self.conflicts = 0

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

    async def _in_pages(self, env: Envelope, state: ChainState, token: bytes) -> bool:
        oldest = state.version - len(state.tokens) + 1  # version of the window's first token
        if env.sent + 1 >= oldest:
            return False  # every write since the message was sent is in the window
        p = self.page_size
        pages = range(env.sent // p, (oldest - 2) // p + 1)  # versions sent+1 .. oldest-1
        found = await self.markers.pages(env.tag, env.chain_id, pages)
        for page, tokens in found.items():
            if tokens is None:
                raise MarkerMissing(env.tag, page)
            if any(tokens[i : i + len(token)] == token for i in range(0, len(tokens), len(token))):
                return True
        return False

    async def apply(self, env: Envelope, value: Stamp, state: ChainState | None = None) -> Result:
        """Write ``value`` (the message's ``own ^ children``) once for ``env``'s identity.

        ``state``: the chain as just read and classified, to spare a read.
        """
        checked: Result | ChainState
        if state is not None:
            checked = state
        else:
            checked = await self._classify(env, await self.ack.get(env.tag))
        while True:
            if isinstance(checked, Result):
                return checked
            state = checked
            await self._page_before_eviction(env, state)
            try:
                stamped = await self.ack.stamp_on(state, value, token=env.id)
            except ChainMoved as moved:
                # Another write landed since the check: check again on the chain the
                # refusal returned (no read), and write on it if this copy is still new.
                self.conflicts += 1
                checked = await self._classify(env, moved.current)
                continue
            except (TagNotFound, ChainFailed, ChainTimeout):
                # Closed meanwhile; ChainTimeout: it went past its deadline before this
                # write, which failed it ("timeout") instead, or found it so failed.
                return Result(Verdict.CLOSED, await self.ack.get(env.tag))
            return Result(Verdict.APPLIED, state, stamped)

    async def _page_before_eviction(self, env: Envelope, state: ChainState) -> None:
        if len(state.tokens) < self.window:
            return  # this write evicts nothing
        evicted = state.version - len(state.tokens) + 1
        page, first = divmod(evicted - 1, self.page_size)
        # Pages never change: one this process wrote (or read) need not be written again
        # when a write is retried after a lost race.
        if first == 0 and not self.markers.has_page(env.tag, env.chain_id, page):
            tokens = b"".join(state.tokens[: self.page_size])
            await self.markers.put_page(env.tag, env.chain_id, page, tokens)
