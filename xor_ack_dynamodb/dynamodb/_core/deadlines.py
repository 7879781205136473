"""Deadlines: the write that fails an overdue chain once, ``touch``, sweeps, the inventory.

A chain created with ``timeout`` / ``idle_timeout`` has a ``deadline``; every write
to it carries ``deadline > :now`` (this client's clock), so a late one is refused
by DynamoDB itself.  What follows a refusal is ``landing``'s ``TIME_OUT`` step:
:meth:`Deadlines._time_out` fails the chain with reason ``"timeout"`` by a write
conditioned on the state read (chain, version) and on the deadline having passed,
so of any number of late callers and sweepers exactly one write lands.

``sweep`` and ``list_chains`` read the sparse indexes of ``item``: keys only, one
Query per shard and page, then the items themselves (consistent ``BatchGetItem``),
so what they report is checked against the item, not the eventually consistent index.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from botocore.exceptions import BotoCoreError, ClientError

from ...chain import WRITE_TOKEN_BYTES, ChainState
from ...errors import (
    AmbiguousWrite,
    CorruptItem,
    InvalidListing,
    InvalidTimeout,
    StaleLocalData,
    SweepIncomplete,
    SweepStopped,
    TagNotFound,
    XorAckError,
)
from .. import item as I
from ..aws import inventory_refusal
from ..table import INDEXES, TableMismatch
from . import landing as D
from . import told as T
from .effects import Call, Effect, Op
from .expressions import Compare, Query, Value
from .landing import Reply, Status, Step
from .on_failed import Telling, check_on_failed
from .reads import Reads
from .requests import _n
from .validate import check_tag, check_timeout

ListStatus: TypeAlias = Literal["open", "overdue", "failed"]
LIST_STATUSES: tuple[ListStatus, ...] = ("open", "overdue", "failed")
#: Index keys asked per Query (and items per BatchGetItem: at most 100).
DEFAULT_PAGE_SIZE = 100
#: Writes of one ``_time_out`` before it gives up (the chain keeps moving while overdue).
MAX_TIMEOUT_WRITES = 3


def check_listing(status: object, limit: object, page_size: object) -> ListStatus:
    """Validate ``list_chains``' arguments before anything is sent."""
    if status not in LIST_STATUSES:
        raise InvalidListing(f"status must be one of {', '.join(LIST_STATUSES)}, not {status!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidListing(f"limit must be None or an int >= 0, not {limit!r}")
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= 100:
        raise InvalidListing(f"page_size must be an int from 1 to 100, not {page_size!r}")
    return status


class Deadlines(Reads):
    """The deadline operations of one table's core (under ``SingleChain``)."""

    def _time_out(self, tag: str, state: ChainState) -> Generator[Effect, Any, ChainState | None]:
        """Fail ``state``'s chain, overdue by this client's clock, with reason "timeout".

        Returns the tombstone when this call's write failed it; None when the chain
        was closed (by another late caller, a sweep, an ack in time), deleted, or is
        no longer overdue (touched in time) before it landed.
        """
        mine, _ = yield from self._time_out_seen(tag, state)
        return mine

    def _time_out_seen(
        self, tag: str, state: ChainState
    ) -> Generator[Effect, Any, tuple[ChainState | None, ChainState | None]]:
        """:meth:`_time_out`, and the chain as it was last seen (the tombstone, if it is mine)."""
        current: ChainState | None = state
        attempt = 0
        while True:
            step, _ = D.NOT_LANDED_STEP[("timeout", D.status_of(current, self.clock()))]
            if step is Step.DONE:
                return None, current
            assert current is not None and step is Step.RESEND
            if attempt >= MAX_TIMEOUT_WRITES:
                raise StaleLocalData(tag, attempt, "timeout")
            attempt += 1
            token = secrets.token_bytes(WRITE_TOKEN_BYTES)
            tokens = (*current.tokens, token)[-self.token_window :]
            update = self._timeout_update(tag, current, tokens, self._now())
            self.stats.requests["UpdateItem"] += 1
            self.stats.writes += 1
            try:
                response = yield Call("update_item", update.request())
            except (ClientError, BotoCoreError) as exc:
                if self._reply_step("timeout", exc)[1] is Step.REFUSE:
                    raise
                if isinstance(exc, ClientError) and D.reply_of(exc)[0] is Reply.CONDITION_FAILED:
                    current = yield from self._after_failed_condition(tag, exc)
                else:
                    current = yield from self._read(tag)
                if current is not None and token in current.tokens:
                    self.stats.resent_writes_recognised += 1
                    self.forget(tag)
                    return current, current  # this write, re-sent after a lost response
                continue
            self.forget(tag)
            tombstone = I.decode(response["Attributes"], self.partition_key, tag)
            return tombstone, tombstone

    def _refuse_late(
        self, op: str, tag: str, state: ChainState, requested_reason: str | None = None
    ) -> Generator[Effect, Any, ChainState | None]:
        """A write of ``op`` met ``state`` overdue: fail the chain with reason "timeout", once.

        If this call's own timeout write failed it, raise what ``told`` tells ``op``
        (``ChainTimedOut``, ``failed_by_this_call``).  Otherwise return the chain as the
        timeout write found it (failed by a sweep or another late write; or, ``state``
        being an old cached one, touched in time, acked, deleted): the operation goes on
        with it, and a closed chain is refused by what ``told`` gives *that* item, so a
        client with a cached state is told what a fresh one is.
        """
        step, kind = D.NOT_LANDED_STEP[(op, Status.OVERDUE)]
        assert step is Step.TIME_OUT and kind == D.TELL
        mine, current = yield from self._time_out_seen(tag, state)
        if mine is not None:
            error = T.tell(
                op, tag, mine, mine=True, deadline=state.deadline, requested_reason=requested_reason
            )
            assert error is not None
            raise error
        return current

    def touch(
        self, tag: str, timeout: float | None = None, chain_id: bytes | None = None
    ) -> Generator[Effect, Any, ChainState]:
        """Move a live chain's deadline to now + ``timeout`` (default: its ``idle_timeout``).

        Storm's ``resetTimeout``.  A touch only extends: a deadline already later, or
        a chain without one, is left as it is (and returned).  A chain with neither an
        ``idle_timeout`` nor a ``timeout`` given raises ``InvalidTimeout`` (nothing is
        written); one past its deadline is failed ("timeout") and ``ChainTimedOut`` raised.
        ``chain_id``: touch only that generation, as ``fail``'s: another one under the tag
        is no chain (``TagNotFound``, nothing written; the write is conditioned on it).
        """
        check_tag(tag)
        extension = check_timeout("timeout", timeout)
        state = self.cached(tag)
        remembered = state is not None and not state.expired(self.clock())
        if not remembered:
            state = yield from self._read(tag)
        attempt = 0
        started = self.monotonic()
        while True:
            if chain_id is not None and state is not None and state.chain_id != chain_id:
                if remembered:  # the cache may hold an earlier generation: the item decides
                    remembered = False
                    state = yield from self._read(tag)
                    continue
                # another generation: not the chain to touch, and not "nothing there" either
                raise TagNotFound(tag, T.not_found_why(state, other_generation=True))
            status = D.status_of(state, self.clock())
            if status in (Status.LIVE, Status.OVERDUE):
                assert state is not None
                span = extension if extension is not None else state.idle_timeout
                if (span is None or state.deadline is None) and remembered:
                    remembered = False  # the cache's chain may be an earlier generation
                    state = yield from self._read(tag)
                    continue
                if state.deadline is None:
                    return state  # no deadline: nothing to extend
                if span is None:  # before the timeout write: a refusal writes nothing
                    raise InvalidTimeout(
                        f'"{tag}" has no idle_timeout: pass touch(tag, timeout=SECONDS) to say'
                        " how far from now its deadline moves"
                    )
            if status is Status.OVERDUE:
                assert state is not None
                state = yield from self._refuse_late("touch", tag, state)
                continue
            if status is not Status.LIVE:
                raise T.refusal(D.NOT_LANDED_STEP[("touch", status)][1], tag, state, "touch")
            assert state is not None and span is not None and state.deadline is not None
            now = self._now()
            deadline = round(now + span, 3)
            if deadline <= state.deadline:
                if remembered:  # a cached state says so: the item decides, not the cache
                    remembered = False
                    state = yield from self._read(tag)
                    continue
                return state  # nothing to extend
            token = secrets.token_bytes(WRITE_TOKEN_BYTES)
            tokens = (*state.tokens, token)[-self.token_window :]
            update, planned = self._touch_update(tag, state, deadline, tokens, now)
            attempt += 1
            self.stats.requests["UpdateItem"] += 1
            self.stats.writes += 1
            try:
                yield Call("update_item", update.request())
            except (ClientError, BotoCoreError) as exc:
                reply, sent = D.reply_of(exc)
                if D.REPLY_STEP[("touch", reply, sent)][1] is Step.REFUSE:
                    raise
                if reply is D.Reply.CONDITION_FAILED:
                    assert isinstance(exc, ClientError)
                    current = yield from self._after_failed_condition(tag, exc)
                else:
                    current = yield from self._read(tag)
                planned_on_cache, remembered = remembered, False
                try:
                    landed = self._landed(state, current, [token], tag, sent is D.Sent.MAYBE_TWICE)
                except AmbiguousWrite as ambiguous:
                    raise ambiguous from exc  # as stamp's: the reply that left it open
                if landed:
                    self.stats.resent_writes_recognised += 1
                    assert current is not None
                    return current
                if reply is D.Reply.UNKNOWN:
                    raise  # proven not landed: the caller may touch again
                now_status = D.status_of(current, self.clock())
                refused = reply is D.Reply.CONDITION_FAILED and current is not None
                again = D.STAMP_AGAIN[(planned_on_cache, refused, now_status is Status.OVERDUE)]
                if again is Step.REPLAN:  # the cached state was old, not raced: no back-off
                    self.stats.cache_refreshes += 1
                    attempt -= 1
                    state = current
                    continue
                if now_status is Status.LIVE and not (yield from self._back_off(attempt, started)):
                    raise StaleLocalData(tag, attempt, "touch") from exc
                state = current
                continue
            self.remember(planned, tag)
            return planned

    def _index_page(
        self, status: ListStatus, shard: int, start: dict[str, Any] | None, page_size: int
    ) -> Generator[Effect, Any, tuple[list[str], dict[str, Any] | None]]:
        """One page of tags of one shard of an inventory index, and where the next starts."""
        if status == "failed":
            index, key = I.FAILED_INDEX, [Compare(I.FAILED_SHARD, "=", Value(":shard", _n(shard)))]
        else:
            index, key = I.OPEN_INDEX, [Compare(I.OPEN_SHARD, "=", Value(":shard", _n(shard)))]
            if status == "overdue":
                key.append(Compare(I.DUE_AT, "<=", Value(":now", _n(self._now()))))
        query = Query(self.table, index, tuple(key), page_size, start)
        self.stats.requests["Query"] += 1
        try:
            response = yield Call("query", query.request(self.partition_key))
        except ClientError as exc:
            refusal = inventory_refusal(exc, self.table, index)
            if refusal is not None:
                raise refusal from exc
            raise
        tags = [self._tag_of(raw, index) for raw in response.get("Items", [])]
        return tags, response.get("LastEvaluatedKey")

    def _tag_of(self, raw: dict[str, Any], index: str) -> str:
        """The tag of one index entry; ``TableMismatch`` if the table has another key."""
        if self.partition_key in raw:
            return str(raw[self.partition_key]["S"])
        keys = ", ".join(sorted(set(raw) - set(INDEXES[index]))) or "?"
        said = f"table {self.table}'s partition key is {keys}, not {self.partition_key}: pass"
        raise TableMismatch(f"{said} partition_key={keys!r}; nothing was written").with_cli(
            f"{said} --partition-key {keys} (or XOR_ACK_PARTITION_KEY={keys}); nothing was written"
        )

    def list_page(
        self, status: ListStatus, shard: int, start: dict[str, Any] | None, page_size: int
    ) -> Generator[Effect, Any, tuple[list[ChainState], dict[str, Any] | None]]:
        """The chains of one index page that are, read consistently, what ``status`` asks.

        The index is eventually consistent: a chain closed or deleted since it was
        indexed is left out; an item this client cannot read is left out too.
        """
        found, _, after = yield from self._checked_page(status, shard, start, page_size)
        return found, after

    def _checked_page(
        self, status: ListStatus, shard: int, start: dict[str, Any] | None, page_size: int
    ) -> Generator[
        Effect, Any, tuple[list[ChainState], dict[str, CorruptItem], dict[str, Any] | None]
    ]:
        """:meth:`list_page`, and the items of the page this client cannot read."""
        tags, after = yield from self._index_page(status, shard, start, page_size)
        states, corrupt = yield from self._read_many(tags)
        now = self.clock()
        found = [s for tag in tags if (s := states.get(tag)) is not None and _is(status, s, now)]
        return found, corrupt, after

    def sweep(
        self,
        page_size: int = DEFAULT_PAGE_SIZE,
        on_failed: Callable[[ChainState], object] | None = None,
    ) -> Generator[Effect, Any, list[ChainState]]:
        """Fail every chain overdue by this client's clock with reason "timeout".

        Every shard of the open index, ``due_at <= now``, a page at a time: each chain
        read (consistently) and failed by :meth:`_time_out`'s conditional write, so
        any number of sweepers (and late callers) fail each chain once, with no
        leader.  Returns the tombstones this sweep's own writes made.

        Each chain on its own: one whose write fails (refused for another reason than
        a race, a damaged item, a chain that keeps moving) is left for the next sweep
        and the sweep goes on; at the end, ``SweepIncomplete`` names them (with the
        tombstones made), and so every item of the overdue index this client cannot
        read (``CorruptItem``; left as it is).  A page that cannot be listed or read
        stops it: DynamoDB's error, or ``SweepStopped`` with it once the sweep made
        tombstones (or met chains it could not fail) that the caller must hear of.
        ``on_failed`` is called with each tombstone as it is made (what a sweep cut short
        by Ctrl-C did is known that way); what it raises does not stop the sweep
        (``OnFailedRaised`` at the end, see ``on_failed``).
        """
        check_listing("overdue", None, page_size)
        check_on_failed(on_failed)
        told = None if on_failed is None else Telling(on_failed)
        failed: dict[str, ChainState] = {}
        errors: dict[str, BaseException] = {}
        for shard in range(I.INVENTORY_SHARDS):
            start: dict[str, Any] | None = None
            while True:
                try:
                    overdue, corrupt, start = yield from self._checked_page(
                        "overdue", shard, start, page_size
                    )
                except (ClientError, BotoCoreError) as exc:
                    if not failed and not errors:  # nothing done to tell: DynamoDB's error
                        raise
                    stopped = SweepStopped(list(failed.values()), errors, shard, exc)
                    raise (told.noted(stopped) if told else stopped) from exc
                errors.update(corrupt)
                for state in overdue:
                    try:
                        tombstone = yield from self._time_out(state.tag, state)
                    except (ClientError, BotoCoreError, XorAckError) as exc:
                        errors[state.tag] = exc
                        continue
                    if tombstone is not None:
                        failed[tombstone.tag] = tombstone
                        if told is not None:
                            told(tombstone)
                if start is None:
                    break
        if errors:
            incomplete = SweepIncomplete(failed, errors)
            raise told.noted(incomplete) if told else incomplete
        return told.end(list(failed.values())) if told else list(failed.values())


def _is(status: ListStatus, state: ChainState, now: float) -> bool:
    """Is ``state`` (read consistently) what ``list_chains(status)`` lists?"""
    if status == "failed":
        return state.failed
    return state.overdue(now) if status == "overdue" else state.live


@dataclass
class Listing:
    """The plan of one ``list_chains`` call: which shard and page comes next, and the limit.

    Both clients drive it the same way: ``while (op := listing.next_page()) is not
    None``, run ``op`` and yield what it returns; only one page is held at a time.
    """

    core: Deadlines
    status: ListStatus
    limit: int | None
    page_size: int
    shard: int = 0  # the shard of the next page
    start: dict[str, Any] | None = None  # the key it starts after (None: the first page)
    listed: int = 0  # the states returned so far

    def next_page(self) -> Op | None:
        if self.shard >= I.INVENTORY_SHARDS or self.listed == self.limit:
            return None
        return self._page()

    def _page(self) -> Generator[Effect, Any, list[ChainState]]:
        states, self.start = yield from self.core.list_page(
            self.status, self.shard, self.start, self.page_size
        )
        if self.start is None:
            self.shard += 1
        if self.limit is not None:
            states = states[: self.limit - self.listed]
        self.listed += len(states)
        return states
