"""The fleet: jobs as root messages, handlers that fan out, a continuation per acked chain.

``Fleet.handle(body)`` is what a worker or a Lambda function calls per message:

1. decode the envelope, read the chain: a duplicate or a message of a closed chain
   (acked, failed, another generation) ends here, before the user's code runs;
2. run the user's handler on the payload; it returns the children's payloads (an
   iterable, or None: ``children.py``; anything else fails the job);
3. send the children (their identities and stamps derived from this message's);
4. write ``own ^ children`` once for this message's identity (``once.py``);
5. if that write (or an earlier copy's) acked the chain, run the continuation.

Children are sent before the write: a message whose process dies in between is
delivered again and announces the same children with the same stamps, so the
chain is never short of a stamp, and re-sent children are duplicates, applied once.
The handler must return the same children's payloads for a payload, in any order
(a child is named by its payload, ``envelope.child_id``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Unpack

from ..chain import ChainState
from ..dynamodb import DEFAULT_TOMBSTONE_TTL, Lifetime, XorAckDynamoDB, check_deadline
from ..dynamodb.item import DEFAULT_PARTITION_KEY
from ..errors import AmbiguousWrite, ChainFailed, TagExists, TagNotFound
from ..stamps import Stamp, xor
from .children import handler_children
from .completion import Completed, Completion, Continuation
from .envelope import Envelope, root_envelope, root_id, stamp_of
from .errors import (
    InvalidChildren,
    MarkerMissing,
    ReplayRefused,
    TombstoneTooShort,
    WindowMismatch,
)
from .markers import DEFAULT_MARKER_TTL, Markers, check_job_tag
from .message import Handled, Handler, Message
from .once import Once, Result, Verdict
from .payloads import check_payload
from .telemetry import Telemetry, log

#: A fleet's items keep 64 tokens: 512 bytes, so a chain item stays within one KiB
#: (one write unit) while near duplicates need no page for 64 writes.
FLEET_TOKEN_WINDOW = 64

Send = Callable[[Sequence[Envelope]], Awaitable[None]]


def _text(body: str | bytes | Envelope) -> str:
    """A message's body as it came (an envelope given as such: its JSON)."""
    if isinstance(body, Envelope):
        return body.to_json()
    return body if isinstance(body, str) else bytes(body).decode("utf-8", "replace")


def _given(value: float | None, default: float | None) -> float | None:
    """A job's own deadline option, or the fleet's when the job gives none."""
    return default if value is None else value


async def _ready(send: Send, root: Envelope) -> None:
    """Ask a sender with a ``check()`` (``SqsSender``) whether it can send, and one with a
    ``fit()`` whether its queue takes the job's root; others can."""
    check = getattr(send, "check", None)
    if check is not None:
        await check()
    fit = getattr(send, "fit", None)
    if fit is not None:
        await fit([root], "no chain was made")


class Fleet:
    """Fan-out / fan-in over queues with XOR chains; see the module docstring.

    ``ack``: an ``XorAckDynamoDB`` (``Fleet.connect`` makes one); the fleet's
    stamps go through its ``stamp_on_many``, so its retry and merging options do not
    matter, but no other writer may stamp the fleet's chains (see ``once.py``).
    ``handler``: the user's function (sync or async).  ``send``: sends child
    envelopes (``SqsSender``).  ``continuation``: run once per acked chain
    (``Completed``).  ``page_size``, ``marker_ttl``: see ``once.py`` and
    ``markers.py``.  ``timeout``, ``idle_timeout``: each job's deadline (the client's
    ``create`` options; ``submit`` may give others): a job still live past it is
    failed with reason "timeout" by the sweeper, or by the first write that meets
    it; its messages are dropped before their handler runs.
    """

    def __init__(
        self,
        ack: XorAckDynamoDB,
        *,
        handler: Handler,
        send: Send,
        continuation: Continuation | None = None,
        page_size: int | None = None,
        marker_ttl: float = DEFAULT_MARKER_TTL,
        telemetry: Telemetry | None = None,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> None:
        if continuation is not None and ack.tombstone_ttl < marker_ttl:
            raise TombstoneTooShort(ack.tombstone_ttl, marker_ttl)
        self.ack = ack
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self.markers = Markers(
            ack.client, table=ack.table, partition_key=ack.partition_key, ttl=marker_ttl
        )
        self.once = Once(ack, self.markers, page_size)
        self.handler = handler
        self.send = send
        self.completion = Completion(self.markers, continuation)
        self.telemetry = telemetry or Telemetry()

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        *,
        table: str,
        partition_key: str = DEFAULT_PARTITION_KEY,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        token_window: int = FLEET_TOKEN_WINDOW,
        **options: Any,
    ) -> AsyncIterator[Fleet]:
        """A fleet over its own DynamoDB client; ``options`` are the constructor's.

        The client keeps an acked chain readable as long as the fleet's markers live
        (``marker_ttl``, 14 days by default): as long as a message of the job may still be
        delivered, and with it a continuation still owed (``TombstoneTooShort``).
        """
        marker_ttl = options.get("marker_ttl", DEFAULT_MARKER_TTL)
        async with XorAckDynamoDB.connect(
            table=table,
            partition_key=partition_key,
            endpoint_url=endpoint_url,
            region_name=region_name,
            token_window=token_window,
            tombstone_ttl=max(DEFAULT_TOMBSTONE_TTL, marker_ttl),
        ) as ack:
            yield cls(ack, **options)

    # -- write requests, for costs ----------------------------------------------

    @property
    def write_requests(self) -> int:
        """DynamoDB writes sent by this fleet: stamps, lost races, creates, fails, markers."""
        return self.ack.stats.writes + self.markers.writes

    # -- jobs ---------------------------------------------------------------------

    async def submit(
        self,
        tag: str,
        payload: Any,
        **lifetime: Unpack[Lifetime],
    ) -> Envelope:
        """Start a job: create the chain with the root's stamp, then send the root message.

        Calling it again for a job whose root has not run yet sends the root again
        (a duplicate, applied once): a submitter that died after the create is safe.
        ``TagExists`` if a live chain has moved on since (before its deadline); a closed
        (acked or failed) or expired chain under the tag is replaced by a new generation,
        as ``create`` does (``replay`` is the call that refuses a live or acked one), and
        so is a live one past its deadline, failed first ("timeout", as its next write would
        fail it).  An acked one whose continuation is not recorded done has it run first
        (its error raised, nothing created).
        ``timeout`` / ``idle_timeout`` (seconds): the job's deadline, as ``create``'s
        (default: the fleet's); ``ttl`` must then be longer.  A payload the root message
        cannot carry (``InvalidPayload``: not JSON data, too deep) creates no chain, nor
        does a job refused for its queue (``QueueUnavailable``: a sender that can say
        whether it can send, as ``SqsSender`` can, is asked first).  ``InvalidTag`` for a
        tag too long for the job's markers (``MAX_JOB_TAG_BYTES``).
        """
        check_job_tag(tag)
        check_payload(tag, payload, self.ack.token_window)
        checked = self._lifetime(lifetime)  # refused before the queue is asked
        # The root as it will be sent: its chain id (8 bytes) is made by the create.
        await _ready(self.send, root_envelope(tag, bytes(8), payload, self.ack.token_window))
        await self._continue_former(tag)
        root_stamp = stamp_of(root_id(tag))
        try:
            await self.ack.create(tag, root_stamp, **checked)
        except TagExists:
            state = await self.ack.get(tag)
            if state is not None and state.overdue():
                # Past its deadline (its root run or not): no write lands on the chain any
                # more and every worker drops its messages.  Failed ("timeout") as its next
                # write would fail it, and made again, with this call's deadline.
                await self._time_out(state)
                await self.ack.create(tag, root_stamp, **checked)
                state = (await self.ack.known_many([tag]))[tag]
            elif state is None or state.version != 1 or state.stamp != root_stamp:
                raise
        else:  # the chain id: the create's own state, held by the client (no read)
            state = (await self.ack.known_many([tag]))[tag]
        if state is None:
            raise TagNotFound(tag)
        root = root_envelope(tag, state.chain_id, payload, self.ack.token_window)
        await self.send([root])
        log("submitted", tag, root.message_id)
        return root

    async def _continue_former(self, tag: str) -> None:
        """An acked run under ``tag`` whose continuation is not recorded done (it failed,
        and its message waits for a later delivery) has it run now, before the create
        replaces that chain: its message would then find another generation and be deleted,
        the continuation never run.  Its error is raised, and nothing is created."""
        if self.completion.continuation is not None:
            state = await self.ack.get(tag)
            if state is not None and state.acked:
                await self.complete_chain(tag, state.chain_id)

    def _lifetime(self, lifetime: Lifetime) -> Lifetime:
        """The job's chain's lifetime (the fleet's deadlines by default), checked."""
        return check_deadline(  # a keyword it does not take (``tll=``): TypeError, as create's
            {
                "ttl": None,
                **lifetime,
                "timeout": _given(lifetime.get("timeout"), self.timeout),
                "idle_timeout": _given(lifetime.get("idle_timeout"), self.idle_timeout),
            },
            "submit",
        )

    async def _time_out(self, state: ChainState) -> None:
        """Fail ``state``'s chain, past its deadline, as any write on it would ("timeout"):
        its generation only, whoever's write it is."""
        # ChainTimedOut (a ChainFailed): failed, by this call or another; TagNotFound: made
        # again by another since
        with contextlib.suppress(ChainFailed, TagNotFound):
            await self.ack.fail(state.tag, chain_id=state.chain_id)

    async def replay(
        self,
        tag: str,
        payload: Any,
        **lifetime: Unpack[Lifetime],
    ) -> Envelope:
        """Run a failed (or expired) job again, from its root, as a new chain generation.

        Messages of the failed generation still in queues carry its ``chain_id``:
        they find another generation and are dropped, so the new chain counts only
        the new run's work.  ``ReplayRefused`` if the chain is live or acked; a live one
        past its deadline is failed ("timeout", as a sweep would) and replayed.
        """
        check_job_tag(tag)
        state = await self.ack.get(tag)
        if state is not None and state.live and not state.overdue():
            raise ReplayRefused(tag, "live")
        if state is not None and state.acked:
            raise ReplayRefused(tag, "acked")
        root = await self.submit(tag, payload, **lifetime)  # refused: nothing made, no line
        reason = None if state is None else "timeout" if state.live else state.reason
        log("replayed", tag, root.message_id, reason=reason)
        return root

    # -- messages -----------------------------------------------------------------

    async def handle(self, body: str | bytes | Envelope, receive_count: int = 1) -> Handled:
        """Handle one delivered message (see the module docstring); raise to have it retried.

        A handler that returns no children's payloads (``InvalidChildren``: a str, bytes, a
        dict, no iterable) fails the job's chain with the error's reason, then raises it.
        """
        env = body if isinstance(body, Envelope) else Envelope.from_json(body)
        if env.window is not None and env.window != self.ack.token_window:
            raise WindowMismatch(env.tag, env.window, self.ack.token_window)
        checked = await self.once.read(env)
        if isinstance(checked, Result):
            return await self._settled(env, checked)
        message = Message(
            env.payload,
            env.tag,
            env.message_id,
            receive_count,
            body=_text(body),
            chain_id=env.chain_id,
            parent_id=None if env.parent is None else env.parent.hex(),
            index=env.index,
        )
        try:
            payloads = await handler_children(self.handler, message, env.tag, env.message_id)
        except InvalidChildren as refused:  # the same on every receive: the job ends here
            await self._fail_job(env, refused.reason)
            raise
        # A child's lower bound is its parent's, not the version read now: this run may
        # be a re-run whose earlier run sent the same children, and they may have landed.
        window = self.ack.token_window
        children = env.children(payloads, env.sent, window)
        if children:
            await self.send(children)
        value = env.stamp if not children else xor(env.stamp, *(c.stamp for c in children))
        before = self.once.conflicts
        try:
            # Read again just before the write: the chain moved while the handler ran
            # (its siblings landed), and a write planned on that old state would be
            # refused, costing a write unit, where a read costs a fifth of one.
            outcome = await self.once.apply(env, Stamp(value))
        except AmbiguousWrite:
            self.telemetry.count("ambiguous_writes")
            raise
        races = self.once.conflicts - before
        self.telemetry.count("conditional_failures", races)
        self.telemetry.count("retries", races)
        self.telemetry.count("writes", races + (outcome.verdict is Verdict.APPLIED))
        return await self._settled(env, outcome, len(children))

    async def _fail_job(self, env: Envelope, reason: str) -> None:
        """Fail the generation of ``env``'s chain; one replayed or closed since stays as is."""
        try:
            state = await self.ack.fail(env.tag, reason, chain_id=env.chain_id)
        except (TagNotFound, ChainFailed):
            return
        if state.failed:
            self.telemetry.count("chains", outcome="failed")
            log("invalid-children", env.tag, env.message_id, reason=reason)

    async def _settled(self, env: Envelope, result: Result, children: int = 0) -> Handled:
        verdict = result.verdict
        self.telemetry.count("messages", outcome=verdict.value)
        if verdict is Verdict.APPLIED:
            self.telemetry.count("stamps")
        log(verdict.value, env.tag, env.message_id, children=children)
        continued = False
        if result.acked and result.state is not None:
            if verdict is Verdict.APPLIED:
                self.telemetry.count("chains", outcome="acked")
                self.telemetry.complete_latency.record(
                    max(0.0, time.time() - result.state.created_at)
                )
                log("acked", env.tag, env.message_id)
            continued = await self.complete_chain(env.tag, env.chain_id)
        return Handled(env, verdict, children, result.acked, continued)

    async def complete_chain(self, tag: str, chain_id: bytes) -> bool:
        """Run the continuation of an acked chain unless it is recorded done."""
        ran = await self.completion.run(Completed(tag, chain_id))
        if ran:
            self.telemetry.count("continuations")
            log("continued", tag, None)
        return ran

    async def complete(self, tag: str) -> bool:
        """For a stream consumer: run ``tag``'s continuation if its chain is acked and not done."""
        state = await self.ack.get(tag)
        if state is None or not state.acked:
            return False
        return await self.complete_chain(tag, state.chain_id)

    async def _landed(self, env: Envelope, state: ChainState) -> bool:
        """Did a copy of a dead letter land?  A page gone proves nothing: taken as not."""
        try:
            return await self.once.landed(env, state)
        except MarkerMissing:
            return False

    async def dead_letter(self, body: str | bytes | Envelope) -> ChainState | None:
        """A message that exhausted its receives: fail its chain with reason ``dead-letter``.

        Only the message's own generation is failed: the write is conditioned on it,
        so a replay landing between the read and the write is left alone.  An acked
        chain stays acked, and its continuation runs here unless recorded done: the
        message may be the one whose write acked the chain and whose continuation then
        failed on every receive, and once it is deleted nothing else delivers it.  A
        continuation that fails again raises, so the dead letter is kept for a later
        try.  A letter whose stamp landed (its token in the chain's window or pages: its
        work was done and only its deletes were lost, e.g. a Lambda batch that timed out
        after its write) leaves a live chain alone: nothing of the job is missing.
        Returns the chain as it is after.
        """
        env = body if isinstance(body, Envelope) else Envelope.from_json(body)
        state = await self.ack.get(env.tag)
        if state is None or state.chain_id != env.chain_id or not state.live:
            if state is not None and state.chain_id == env.chain_id and state.acked:
                await self.complete_chain(env.tag, env.chain_id)
            return state
        if await self._landed(env, state):
            log("duplicate", env.tag, env.message_id, dead_letter=True)
            return state
        try:
            state = await self.ack.fail(env.tag, "dead-letter", chain_id=env.chain_id)
        except TagNotFound:  # gone, or replayed since the read: not this generation
            return await self.ack.get(env.tag)
        except ChainFailed as closed:  # failed since the read (a sweep, another copy): as it is
            return closed.state
        self.telemetry.count("chains", outcome="failed")
        log("dead-letter", env.tag, env.message_id)
        return state
