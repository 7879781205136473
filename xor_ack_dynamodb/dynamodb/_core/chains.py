"""The operations that write one chain: create and stamp (merged entries, or on a given state).

How a chain ends (fail, delete, wait) is in ``endings``.

Each is a generator of effects (``effects``); what a reply means is looked up in
``landing``'s tables, through ``Reads``.
"""

from __future__ import annotations

import secrets
from collections.abc import Generator, Sequence
from typing import Any, Unpack

from botocore.exceptions import BotoCoreError, ClientError

from ...chain import WRITE_TOKEN_BYTES, ChainState
from ...errors import (
    AmbiguousWrite,
    ChainMoved,
    ChainTimedOut,
    CorruptItem,
    StaleLocalData,
    TagExists,
    TagNotFound,
)
from ...stamps import Stamp
from . import landing as D
from . import told as T
from .effects import ENTRY_ERRORS, Call, Effect, Entry, Outcome
from .endings import Endings
from .landing import Reply, Status, Step, Verdict
from .merged import copy_error, one_each, plan_batch
from .reads import applied_before, created_here, memory_decides
from .validate import (
    Lifetime,
    check_deadline,
    check_fits,
    check_state,
    check_tag,
    on_state_entries,
)


class SingleChain(Endings):
    """The operations of one table's core on one chain at a time."""

    def create(
        self, tag: str, stamp: bytes, **lifetime: Unpack[Lifetime]
    ) -> Generator[Effect, Any, Stamp]:
        """Start a chain: a conditional write that only a free tag lets through.

        ``lifetime`` (``Lifetime``: the deadline, the TTL) is checked before any I/O.
        """
        check_tag(tag)
        value = T.chain_stamp(stamp)
        checked = check_deadline(lifetime)
        check_fits(tag, value, self.token_window)
        attempt = 0
        while True:
            attempt += 1
            now = self._now()
            token = secrets.token_bytes(WRITE_TOKEN_BYTES)
            chain_id = secrets.token_bytes(8)
            update = self._create_update(tag, value, checked, now, token, chain_id)
            params = update.request()
            self.stats.requests["UpdateItem"] += 1
            self.stats.writes += 1
            try:
                # ``batch``: a caller batching many creates may send it as an INSERT
                # (``_statements``); a client's ``batch_writes`` sends it alone.
                yield Call("update_item", params, batch=update)
            except (ClientError, BotoCoreError) as exc:
                reply, _ = D.reply_of(exc)
                if reply is Reply.CONDITION_FAILED:
                    assert isinstance(exc, ClientError)
                    current = yield from self._after_failed_condition(tag, exc)
                else:  # refused (raised as it is), or unknown: the item tells
                    current = yield from self._settle(tag, exc, "create")
                proof = created_here(current, chain_id, token)
                verdict, step, _ = D.CREATE_SETTLED[(reply, proof)]
                if verdict is Verdict.LANDED:
                    self.stats.resent_writes_recognised += 1
                    return value  # our own create, re-sent after a lost response
                if step is Step.REFUSE:
                    raise  # the reply's error: not landed, and not a failed condition
                step, _ = D.NOT_LANDED_STEP[("create", D.status_of(current, self.clock()))]
                if step is Step.REFUSE or attempt >= 3:
                    # A live chain holds the tag; or, at the third write, the tag keeps
                    # being completed, failed or expired between condition and read.
                    raise TagExists(tag) from exc
                continue
            self.remember(self._created_state(tag, value, params, now, token), tag)
            return value

    def stamp_batch(
        self,
        tag: str,
        entries: Sequence[Entry],
        known: ChainState | None = None,
        known_fresh: bool = True,
        exact: bool = False,
        landed_as: dict[str, ChainState] | None = None,
    ) -> Generator[Effect, Any, list[Outcome]]:
        """XOR ``entries`` (in order) into the chain with one conditional write per attempt.

        Returns, per entry, the state it brought the chain to, or the error that
        kept it out: a typed error, or the botocore error of a write that is
        proven not to have landed (safe to retry).  A read error before the
        first write propagates.

        A write planned on a remembered state (the cache, or ``known`` with
        ``known_fresh=False``) that fails its condition did not lose a race to a
        concurrent writer: the cache was old.  It is planned again once on the
        item the failure returned, as if this call had read it, and not counted
        as a lost race (``StaleLocalData`` with ``retry=None`` means a write landed
        between this call's own read and its write).

        ``exact``: write on ``known`` only (:meth:`stamp_on`): nothing is read or
        planned again; a write that does not land on it is decided by
        ``ON_STATE_NOT_LANDED`` (``ChainMoved`` with the chain as it is now).
        """
        check_tag(tag)
        outcomes: list[Outcome | None] = [None] * len(entries)
        pending = list(range(len(entries)))
        started = self.monotonic()
        # ``known``: a state the caller has (just read, unless ``known_fresh`` is False).
        state = known or self.cached(tag)
        remembered = state is not None and (known is None or not known_fresh)
        if state is not None and state.expired(self.clock()):
            self.forget(tag)
            state = None
        if state is None and not exact:  # exact: an expired ``known`` is no chain
            remembered = False
            state = yield from self._read(tag)
        unproven = state if remembered else None  # not read (or written) by this call
        attempt = 0
        while pending:
            if (
                unproven is not None
                and state is unproven
                and memory_decides(unproven, [entries[i] for i in pending])
            ):
                remembered, unproven = False, None
                state = yield from self._read(tag)
                continue
            if state is not None:
                # A stamp whose token the chain already holds landed before (a re-sent
                # task, a retried call): report the current state, apply nothing.
                for i in pending:
                    if (token := entries[i].token) is not None and token in state.tokens:
                        outcomes[i] = applied_before(state, token)
                pending = [i for i in pending if outcomes[i] is None]
                if not pending:
                    break
            status = D.status_of(state, self.clock())
            if status is Status.OVERDUE:  # too late: the chain fails ("timeout"), once
                assert state is not None
                try:
                    state = yield from self._refuse_late("stamp", tag, state)
                    if not exact:
                        continue  # the chain as the timeout write found it decides
                    # Failed by another writer, or not overdue after all: not the caller's
                    # state either.
                    self._moved(tag, known, state, pending, outcomes)
                except ChainTimedOut as late:  # this call's timeout write failed it
                    for i in pending:
                        outcomes[i] = copy_error(late, late)
                except (ClientError, BotoCoreError, StaleLocalData) as unsent:
                    told = one_each(copy_error(unsent, unsent), len(pending))
                    for i, error in zip(pending, told, strict=True):  # the timeout write
                        outcomes[i] = error  # failed: the stamps did not land
                break
            if status is not Status.LIVE:  # gone, acked or failed: no stamp belongs to it
                _, kind = D.NOT_LANDED_STEP[("stamp", status)]
                for i in pending:
                    outcomes[i] = T.refusal(kind, tag, state, "stamp_on" if exact else "stamp")
                break
            assert state is not None
            batch: list[int] = []
            later: list[int] = []
            batch_tokens: set[bytes] = set()
            for i in pending:
                token = entries[i].token
                if len(entries[i].stamp) != len(state.stamp):
                    outcomes[i] = T.unequal(tag, len(entries[i].stamp), len(state.stamp))
                elif token is not None and (
                    token in batch_tokens or len(batch_tokens) >= self.token_window // 2
                ):
                    # A repeated token waits for the next write (where it is found
                    # applied); a write never carries more tokens than half the window.
                    later.append(i)
                else:
                    if token is not None:
                        batch_tokens.add(token)
                    batch.append(i)
            if not batch:
                break
            seen, new_state, n = plan_batch(state.stamp, [entries[i] for i in batch])
            included, excluded = batch[:n], batch[n:]
            caller_tokens = [t for i in included if (t := entries[i].token) is not None]
            write_tokens = list(caller_tokens)
            if len(caller_tokens) < len(included):
                proof = [secrets.token_bytes(WRITE_TOKEN_BYTES)]  # no other write carries it
                # The last token is the last stamp's, its own or the write's: a stamp
                # sent again after the chain completed is told acked only if it is that
                # stamp (``applied_before``).
                last = len(write_tokens) - (entries[included[-1]].token is not None)
                write_tokens[last:last] = proof
            else:
                proof = write_tokens  # caller tokens only: all of them must be there
            tokens = (state.tokens + tuple(write_tokens))[-self.token_window :]
            attempt += 1
            now = self._now()
            update, planned = self._stamp_update(tag, state, new_state, tokens, now)
            self.stats.requests["UpdateItem"] += 1
            self.stats.writes += 1
            landed = True
            refused = False  # the write failed its condition (not a transaction's conflict)
            current: ChainState | None = None
            try:
                yield Call("update_item", update.request(), batch=update)
            except (ClientError, BotoCoreError) as exc:
                failure: Exception | None = None
                reply, sent = D.reply_of(exc)
                verdict, step, _ = D.REPLY_STEP[("stamp", reply, sent)]
                if reply is Reply.CONDITION_FAILED:
                    assert isinstance(exc, ClientError)
                    refused = True
                    current = yield from self._after_failed_condition(tag, exc)
                    twice = sent is D.Sent.MAYBE_TWICE
                    try:
                        landed = self._landed(state, current, proof, tag, twice)
                    except AmbiguousWrite as ambiguous:
                        failure = ambiguous
                elif verdict is Verdict.NOT_LANDED and step is Step.REREAD:
                    # A transaction held the item (another client's ``stamp_many``
                    # with transact=True): refused before anything was written, a race.
                    current = yield from self._read(tag)
                    landed = False
                else:
                    # Not a lost race: an error of DynamoDB or of the transport. The
                    # stamps did not land if that is proven, and the caller gets the
                    # error (and may retry them); if it is not, AmbiguousWrite (or
                    # UnsettledWrite: the read that would prove it failed).
                    try:
                        current = yield from self._settle(tag, exc)
                        landed = self._landed(state, current, proof, tag, True)
                    except AmbiguousWrite as ambiguous:
                        failure = ambiguous
                    except (ClientError, BotoCoreError) as refused:  # proven not landed
                        failure = refused
                    if not landed and failure is None:
                        failure = exc
                if failure is not None:
                    told = one_each(copy_error(failure, exc), len(batch) + len(later))
                    for i, error in zip(batch + later, told, strict=True):
                        outcomes[i] = error
                    break
                if landed:
                    self.stats.resent_writes_recognised += 1
            if landed:
                for i, value in zip(included, seen, strict=False):
                    outcomes[i] = value
                self.stats.stamps += len(included)
                for i in excluded:
                    outcomes[i] = TagNotFound(tag)  # the batch's own earlier stamps completed it
                if current is None or current.version <= state.version:
                    current = planned
                self.remember(current, tag)
                if landed_as is not None:
                    landed_as[tag] = current
                pending, state, attempt, started = later, current, 0, self.monotonic()
                continue
            if exact:
                if self._moved(tag, known, current, batch + later, outcomes):
                    pending, state = batch + later, current  # overdue: the loop fails it
                    continue
                break
            status = D.status_of(current, self.clock())
            if status in D.CLOSED:  # found gone, acked or failed: no race, told at once
                pending, state = batch + later, current
                continue
            overdue = status is Status.OVERDUE
            assert current is not None  # CLOSED holds a chain gone
            if any(entries[i].token in current.tokens for i in batch + later):
                # Refused because a write of this same work (its token: a re-run, a retried
                # call) landed first: no race lost, nothing to wait for; the loop's top tells
                # those stamps the state and plans the others on it.
                attempt -= 1
                pending, state = batch + later, current
                continue
            again = D.STAMP_AGAIN[(remembered, refused and current is not None, overdue)]
            if again is Step.TIME_OUT:  # refused for being late, not raced: no back-off,
                pending, state = batch + later, current  # the loop's top fails the chain
                continue
            if again is Step.REPLAN:
                # The remembered state was old, not raced: plan again on the item now.
                remembered = False
                self.stats.cache_refreshes += 1
                attempt -= 1
                pending, state = batch + later, current
                continue
            # Lost a race: ``current`` is the fresh state; back off and try again.
            if not (yield from self._back_off(attempt, started)):
                for i in batch + later:
                    outcomes[i] = StaleLocalData(tag, attempt)
                break
            pending, state = batch + later, current
        return [o if o is not None else TagNotFound(tag) for o in outcomes]

    def _moved(
        self,
        tag: str,
        known: ChainState | None,
        current: ChainState | None,
        pending: Sequence[int],
        outcomes: list[Outcome | None],
    ) -> bool:
        """A write on the caller's state did not land: ``ON_STATE_NOT_LANDED`` decides.

        Fills ``outcomes`` with ``ChainMoved``, or with what ``told`` says of a failed
        chain (False: done), or returns True when the chain is overdue and is to be
        failed once by the stamp's loop.
        """
        assert known is not None
        step, kind = D.ON_STATE_NOT_LANDED[D.status_of(current, self.clock())]
        if step is Step.TIME_OUT:
            return True
        if step is Step.REFUSE:  # a failed chain, whichever state the caller gave
            for i in pending:
                outcomes[i] = T.refusal(kind, tag, current, "stamp_on")
            return False
        self.stats.conflicts += 1  # a lost race (or a closed chain), not retried
        for i in pending:
            outcomes[i] = ChainMoved(tag, known, current)
        return False

    def stamp_on(
        self, state: ChainState, stamps: Sequence[tuple[bytes, bytes | str | None]]
    ) -> Generator[Effect, Any, list[Outcome]]:
        """Stamps (each with its token) written on ``state`` in one write, or not at all.

        The write is conditioned on ``state`` as every stamp's is; what differs is
        what follows a refusal: nothing is read or planned again, the outcome is
        ``ChainMoved`` with the chain as the refusal returned it (``ON_STATE_NOT_LANDED``).
        A token ``state`` already holds is reported applied (``state.stamp``), with no
        write; a lost response, a re-send, an overdue or closed ``state``: as :meth:`stamp_one`.
        At most half the token window of stamps, with distinct tokens (``on_state_entries``),
        so that they always go in one write.
        """
        entries = on_state_entries(check_state(state).tag, stamps, self.token_window)
        if any(len(entry.stamp) != len(state.stamp) for entry in entries):
            # one write or none: a stamp the chain cannot take refuses them all, unsent
            return [T.unequal(state.tag, len(e.stamp), len(state.stamp)) for e in entries]
        try:
            return (yield from self.stamp_batch(state.tag, entries, state, exact=True))
        except CorruptItem as exc:
            return list[Outcome](one_each(exc, len(entries)))

    def stamp_one(self, tag: str, entry: Entry) -> Generator[Effect, Any, Outcome]:
        """One stamp written alone (``coalesce=False``): its outcome, its ``CorruptItem`` too."""
        try:
            (outcome,) = yield from self.stamp_batch(tag, [entry])
        except ENTRY_ERRORS as exc:
            # this entry's own error, as a merged write gives it: the
            # others of a stamp_many go on, and its StampManyFailed says which landed
            return exc
        return outcome
