"""The operations on many chains per request: transactions of stamps and of creates.

``Chains`` is the whole core of one table: ``SingleChain``'s operations and these.
How a transaction is sent and read after a failure is ``transactions``'; what goes out
after a cancellation is ``cancellation.AFTER_CANCEL``'s.
"""

from __future__ import annotations

import secrets
from collections.abc import Generator, Mapping, Sequence
from typing import Any, Unpack

from botocore.exceptions import BotoCoreError, ClientError

from ...chain import WRITE_TOKEN_BYTES, ChainState
from ...errors import (
    AmbiguousWrite,
    ChainTimedOut,
    CorruptItem,
    StaleLocalData,
    TagExists,
    TagNotFound,
)
from ..aws import error_code
from . import cancellation as C
from . import landing as D
from . import told as T
from .effects import Effect, Entry, Outcome
from .landing import TRANSACTION_CANCELED, Status, Step
from .merged import plan_batch
from .reads import applied_before, created_here, memory_decides
from .transactions import Transactions
from .validate import (
    MAX_TRANSACTION_ITEMS,
    Lifetime,
    create_entries,
)


def _moved(before: ChainState | None, now: ChainState | None) -> bool:
    """Is ``now`` a later state of the tag ``before`` was: another write landed since, or
    the tag holds a new generation (replayed), as the single write plans again on either?"""
    return (
        before is not None
        and now is not None
        and (now.chain_id != before.chain_id or now.version > before.version)
    )


class Chains(Transactions):
    """Decision logic for one table; both clients drive its generators.

    Holds the configuration, a bounded cache of the last state seen per tag
    (so an uncontended stamp costs one request), and the statistics.
    """

    def stamp_transact(
        self, entries: Mapping[str, Entry]
    ) -> Generator[Effect, Any, dict[str, Outcome]]:
        """One stamp on each of up to 100 chains, written as one transaction per attempt.

        The same decisions as :meth:`stamp_batch`, per chain: states come from the
        cache or one BatchGetItem, each chain's write is conditioned on the version
        it was planned on, a stamp whose token a chain holds is not applied again.
        A cancelled transaction applied nothing: the items whose condition failed
        come back with their current state (``ALL_OLD``), chains that refuse the
        stamp (failed, complete, gone) leave the batch, and the rest is sent again
        after a backoff.  Once a single chain is left, it goes on as
        :meth:`stamp_batch` (a plain write costs half the write units).
        """
        if len(entries) > MAX_TRANSACTION_ITEMS:
            raise ValueError(f"at most {MAX_TRANSACTION_ITEMS} chains per transaction")
        outcomes: dict[str, Outcome] = {}
        states: dict[str, ChainState | None] = {}
        unknown: list[str] = []
        remembered: set[str] = set()  # planned on the cache, not on this call's own read
        now_wall = self.clock()
        for tag in entries:
            state = self.cached(tag)
            if state is None or state.expired(now_wall) or memory_decides(state, [entries[tag]]):
                unknown.append(tag)
            else:
                states[tag] = state
                remembered.add(tag)
        if unknown:
            found, corrupt = yield from self._read_many(unknown)
            states.update(found)
            outcomes.update(corrupt)  # an item this client cannot read: nothing is written
        pending = [tag for tag in entries if tag not in outcomes]
        attempt = 0
        started = self.monotonic()
        while pending:
            writes: list[tuple[str, bytes, dict[str, Any], ChainState]] = []
            for tag in pending:
                entry, state = entries[tag], states.get(tag)
                status = D.status_of(state, self.clock())
                if state is not None and entry.token is not None and entry.token in state.tokens:
                    outcomes[tag] = applied_before(state, entry.token)  # apply nothing
                elif state is not None and status is Status.OVERDUE:
                    outcomes[tag] = yield from self._late(tag, entry, state)
                elif state is None or status is not Status.LIVE:
                    outcomes[tag] = T.refusal(D.NOT_LANDED_STEP[("stamp", status)][1], tag, state)
                elif len(entry.stamp) != len(state.stamp):
                    outcomes[tag] = T.unequal(tag, len(entry.stamp), len(state.stamp))
                else:
                    token = entry.token or secrets.token_bytes(WRITE_TOKEN_BYTES)
                    tokens = (*state.tokens, token)[-self.token_window :]
                    _, new_state, _ = plan_batch(state.stamp, [entry])
                    params, planned = self._stamp_params(tag, state, new_state, tokens, self._now())
                    writes.append((tag, token, params, planned))
            if len(writes) <= 1:
                for tag, _, _, _ in writes:
                    try:
                        (outcomes[tag],) = yield from self.stamp_batch(
                            tag, [entries[tag]], states.get(tag), tag not in remembered
                        )
                    except CorruptItem as damaged:
                        outcomes[tag] = damaged
                break
            attempt += 1
            tags = [tag for tag, _, _, _ in writes]
            error = yield from self._transact([params for _, _, params, _ in writes])
            if error is None:
                for tag, _, _, planned in writes:
                    outcomes[tag] = planned.stamp
                    self.remember(planned, tag)
                self.stats.stamps += len(writes)
                break
            if error_code(error) != TRANSACTION_CANCELED:
                # Not a cancellation: a transport or server error, settled as one write's.
                current = yield from self._read_back(tags, error, outcomes)
                if current is not None:
                    self._judge_resent(writes, states, current, outcomes, error)
                    for tag in tags:
                        outcomes.setdefault(tag, error)
                break
            assert isinstance(error, ClientError)
            fresh, contended, rejected = yield from self._after_cancel(tags, error)
            outcomes.update(rejected)
            if D.sent_of(error) is D.Sent.MAYBE_TWICE:
                # An earlier send of this very transaction may have landed (all of it).
                current = {tag: fresh.get(tag, states.get(tag)) for tag in tags}
                self._judge_resent(writes, states, current, outcomes, error)
            # Chains whose remembered state was old were not raced: each is planned
            # again once on the item the cancellation returned, without a back-off.
            refreshed = {
                tag for tag in remembered.intersection(fresh) if _moved(states.get(tag), fresh[tag])
            }
            remembered -= refreshed
            self.stats.cache_refreshes += len(refreshed)
            states.update(fresh)
            for tag in tags:  # holding its token, gone, acked or failed: told, never a race
                if tag in outcomes:
                    continue
                state = states.get(tag)
                held = entries[tag].token
                if state is not None and held is not None and held in state.tokens:
                    outcomes[tag] = applied_before(state, held)  # another writer's copy
                    continue
                status = D.status_of(state, self.clock())
                if status in D.CLOSED:
                    kind = D.NOT_LANDED_STEP[("stamp", status)][1]
                    outcomes[tag] = T.refusal(kind, tag, state)
            pending = [tag for tag in tags if tag not in outcomes]
            if not pending:
                break
            lost = contended.intersection(pending) - refreshed
            left = len(pending) < len(tags)  # refused, applied before, landed: told above
            step = C.AFTER_CANCEL[("stamp", bool(lost), bool(refreshed), left)]
            if step is Step.REPLAN:
                attempt -= 1
            elif step is Step.RETRY and not (yield from self._back_off(attempt, started)):
                # Out of attempts: the chains that lost their race are told so; the others
                # were cancelled only for them, and are sent again without them.
                outcomes.update((tag, StaleLocalData(tag, attempt)) for tag in lost or pending)
                pending = [tag for tag in pending if tag not in outcomes]
        return {tag: outcomes.get(tag, TagNotFound(tag)) for tag in entries}

    def _late(self, tag: str, entry: Entry, state: ChainState) -> Generator[Effect, Any, Outcome]:
        """A chain of the transaction is overdue: fail it ("timeout"), its outcome the error.

        A chain the timeout write found otherwise (failed by another writer, or not
        overdue after all: an old cached state) goes on alone as a stamp on that item.
        An item the timeout write found that this client cannot read is this chain's
        ``CorruptItem``, never the whole call's: the other chains are still written.
        """
        try:
            current = yield from self._refuse_late("stamp", tag, state)
        except (ChainTimedOut, StaleLocalData, CorruptItem, ClientError, BotoCoreError) as late:
            return late
        status = D.status_of(current, self.clock())
        if status in D.CLOSED:  # failed by another writer, acked, gone: told, nothing sent
            return T.refusal(D.NOT_LANDED_STEP[("stamp", status)][1], tag, current)
        try:
            (outcome,) = yield from self.stamp_batch(tag, [entry], current)
        except CorruptItem as damaged:
            return damaged
        return outcome

    def _judge_resent(
        self,
        writes: Sequence[tuple[str, bytes, dict[str, Any], ChainState]],
        before: Mapping[str, ChainState | None],
        current: Mapping[str, ChainState | None],
        outcomes: dict[str, Outcome],
        error: BaseException,
    ) -> None:
        """After a transaction that may have landed: the outcome of each write proven either way.

        Writes proven landed get their planned state; writes proven not landed are
        left out of ``outcomes`` (the caller retries or reports them); a write that
        cannot be told gets ``AmbiguousWrite``.
        """
        for tag, token, _, planned in writes:
            if tag in outcomes:
                continue
            try:
                landed = self._landed(before.get(tag), current.get(tag), [token], tag, True)
            except AmbiguousWrite as ambiguous:
                ambiguous.__cause__ = error
                outcomes[tag] = ambiguous
                continue
            if landed:
                self.stats.resent_writes_recognised += 1
                self.stats.stamps += 1
                outcomes[tag] = planned.stamp

    def create_transact(
        self, stamps: Mapping[str, bytes], **lifetime: Unpack[Lifetime]
    ) -> Generator[Effect, Any, dict[str, Outcome]]:
        """Start up to 100 chains with one transaction per attempt (see :meth:`create`).

        Each chain's outcome is its stamp, ``TagExists`` (a live chain holds the
        tag), or the error that kept it out.  A cancelled transaction wrote
        nothing: the chains that exist leave it and the rest is sent again.
        """
        if len(stamps) > MAX_TRANSACTION_ITEMS:
            raise ValueError(f"at most {MAX_TRANSACTION_ITEMS} chains per transaction")
        values, checked = create_entries(stamps, lifetime, self.token_window)
        outcomes: dict[str, Outcome] = {}
        pending = list(values)
        attempt = 0
        started = self.monotonic()
        while pending:
            if len(pending) == 1:
                (tag,) = pending
                try:
                    outcomes[tag] = yield from self.create(tag, values[tag], **checked)
                except (TagExists, CorruptItem, AmbiguousWrite, ClientError, BotoCoreError) as exc:
                    outcomes[tag] = exc  # this chain's: the others' outcomes are kept
                break
            attempt += 1
            now = self._now()
            writes = []
            for tag in pending:
                token = secrets.token_bytes(WRITE_TOKEN_BYTES)
                chain_id = secrets.token_bytes(8)
                update = self._create_update(tag, values[tag], checked, now, token, chain_id)
                writes.append((tag, token, chain_id, update.request()))
            error = yield from self._transact([params for _, _, _, params in writes])
            if error is None:
                for tag, token, _, params in writes:
                    self.remember(self._created_state(tag, values[tag], params, now, token), tag)
                    outcomes[tag] = values[tag]
                break
            tags = [tag for tag, _, _, _ in writes]
            cancelled = error_code(error) == TRANSACTION_CANCELED
            contended: set[str] = set(tags)
            if cancelled:
                assert isinstance(error, ClientError)
                current, contended, rejected = yield from self._after_cancel(tags, error)
                outcomes.update(rejected)
            else:
                read = yield from self._read_back(tags, error, outcomes)
                if read is None:
                    break
                current = read
            # A cancellation refused each item on its condition; any other error left
            # the transaction's fate unknown (settled by reading every item).
            reply = D.Reply.CONDITION_FAILED if cancelled else D.Reply.UNKNOWN
            refused = 0  # items that left it: a live chain holds the tag, or rejected
            for tag, token, chain_id, _ in writes:
                state = current.get(tag)
                if tag in outcomes or state is None:
                    refused += tag in outcomes
                    continue
                proof = created_here(state, chain_id, token)
                verdict, _, _ = D.CREATE_SETTLED[(reply, proof)]
                if verdict is D.Verdict.LANDED:
                    self.stats.resent_writes_recognised += 1
                    outcomes[tag] = values[tag]  # our own create, sent twice
                elif D.NOT_LANDED_STEP[("create", D.status_of(state))][0] is Step.REFUSE:
                    exists = TagExists(tag)  # a live chain holds the tag
                    exists.__cause__ = error
                    outcomes[tag] = exists
                    refused += 1
            if not cancelled:
                for tag in tags:
                    outcomes.setdefault(tag, error)
                break
            pending = [tag for tag in tags if tag not in outcomes]
            raced = bool(contended.intersection(pending))
            step = C.AFTER_CANCEL[("create", raced, False, refused > 0)]
            if step is Step.RETRY and not (yield from self._back_off(attempt, started)):
                outcomes.update((tag, StaleLocalData(tag, attempt, "create")) for tag in pending)
                break
        return {tag: outcomes[tag] for tag in values}
