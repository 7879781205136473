"""Reads and what they settle: the cache, consistent reads, a write's fate after a failure.

``Reads`` (over ``ClosingWrites``) remembers the last state seen per tag, reads one
chain or many, and asks ``landing``'s tables what a failed write's reply and the
item read back prove (``_settle``, ``_landed``); ``_back_off`` is a lost race's wait.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ...chain import ChainState
from ...errors import AmbiguousWrite, CorruptItem, GetManyFailed, UnsettledWrite
from ...stamps import AppliedBefore, Stamp
from .. import item as I
from ..aws import condition_item
from ..retry import DEFAULT_RETRY
from . import landing as D
from .closing_writes import ClosingWrites
from .effects import Call, Effect, Entry, Sleep
from .landing import Step, Verdict
from .validate import MAX_BATCH_GET, MAX_UNPROCESSED_ROUNDS, check_tag, check_tags

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import BatchGetItemOutputTypeDef, GetItemOutputTypeDef


def memory_decides(state: ChainState, entries: Sequence[Entry]) -> bool:
    """Would a remembered ``state`` decide something for ``entries``: a token it holds (the
    stamp applied, nothing written), a stamp length it refuses?  Only a chain as read (or
    written) by the call proves either: the one remembered may be an earlier generation of
    the tag, failed and created again since.  Then the chain is read first."""
    return any(
        (entry.token is not None and entry.token in state.tokens)
        or len(entry.stamp) != len(state.stamp)
        for entry in entries
    )


def created_here(state: ChainState | None, chain_id: bytes, token: bytes) -> bool:
    """Is ``state`` the chain one create attempt wrote?  Its chain id is that attempt's own
    (random), so it proves the create landed even after more stamps than the token window
    pushed the create's token out; the token proves it where the id is not kept."""
    return state is not None and (state.chain_id == chain_id or token in state.tokens)


def applied_before(state: ChainState, token: bytes) -> Stamp:
    """What a stamp whose ``token`` the chain ``state`` holds is told: it landed before and
    is not applied again.  The chain's state, except that on a complete chain only the
    stamp that completed it is told ``acked``: its write was the last (nothing lands on a
    complete chain), and a write puts the token of its last stamp last (``stamp_batch``).
    """
    if state.acked and state.tokens[-1:] != (token,):
        return AppliedBefore(state.stamp)
    return state.stamp


class Reads(ClosingWrites):
    """The cache and the reads of one table's core, and the settling of failed writes."""

    def cached(self, tag: str) -> ChainState | None:
        state = self._cache.get(tag)
        if state is not None:
            self._cache.move_to_end(tag)
        return state

    def remember(self, state: ChainState | None, tag: str) -> None:
        if state is None or not state.live or self.cache_size == 0:
            self._cache.pop(tag, None)
            return
        self._cache[tag] = state
        self._cache.move_to_end(tag)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def forget(self, tag: str) -> None:
        self._cache.pop(tag, None)

    def _decode(
        self, raw: dict[str, Any] | None, now: float | None = None, tag: str | None = None
    ) -> ChainState | None:
        """The live or closed chain ``raw`` holds; None if absent or expired.

        Raises ``CorruptItem`` for an item this client cannot read (``I.decode``).
        """
        if not raw:
            return None
        state = I.decode(raw, self.partition_key, tag)
        return None if state.expired(now if now is not None else self.clock()) else state

    def _read(self, tag: str) -> Generator[Effect, Any, ChainState | None]:
        self.stats.requests["GetItem"] += 1
        response: GetItemOutputTypeDef = yield Call(
            "get_item", {"TableName": self.table, "Key": self._key(tag), "ConsistentRead": True}
        )
        state = self._decode(response.get("Item"), tag=tag)
        self.remember(state, tag)
        return state

    def get(self, tag: str) -> Generator[Effect, Any, ChainState | None]:
        """The chain's state (strongly consistent), or None when there is none."""
        check_tag(tag)
        return (yield from self._read(tag))

    def get_many(self, tags: Iterable[str]) -> Generator[Effect, Any, dict[str, ChainState | None]]:
        """Strongly consistent states of many chains, 100 per BatchGetItem request.

        Keys DynamoDB leaves unprocessed (throttling) are asked again with backoff;
        after ``MAX_UNPROCESSED_ROUNDS`` they are read one by one.  Raises
        ``GetManyFailed`` (the readable states, and a ``CorruptItem`` per item that
        cannot be read) if any item is not a chain this client can read.
        """
        states, corrupt = yield from self._read_many(check_tags(tags))
        if corrupt:
            raise GetManyFailed(states, corrupt)
        return states

    def known_many(
        self, tags: Iterable[str]
    ) -> Generator[Effect, Any, dict[str, ChainState | None]]:
        """The chains as this client holds them, reading only those it does not hold.

        Held: the live chains it last wrote or read (its cache, bounded by
        ``cache_size``: what it dropped, and every closed chain, is read again,
        strongly consistent, 100 per BatchGetItem).  Another writer may have moved a
        held chain since; a ``stamp_on`` on it then gets ``ChainMoved``.  Raises
        ``GetManyFailed`` as :meth:`get_many` does.
        """
        wanted = list(dict.fromkeys(check_tags(tags)))
        now = self.clock()
        held: dict[str, ChainState | None] = {}
        for tag in wanted:
            state = self.cached(tag)
            if state is not None and not state.expired(now):
                held[tag] = state
        missing = [tag for tag in wanted if tag not in held]
        if missing:
            states, corrupt = yield from self._read_many(missing)
            if corrupt:
                raise GetManyFailed({**held, **states}, corrupt)
            held.update(states)
        return {tag: held[tag] for tag in wanted}

    def _read_many(
        self, tags: Sequence[str]
    ) -> Generator[Effect, Any, tuple[dict[str, ChainState | None], dict[str, CorruptItem]]]:
        """:meth:`get_many`'s reads: the states, and the items that cannot be read apart."""
        unique = list(dict.fromkeys(tags))
        found: dict[str, ChainState | None] = {}
        corrupt: dict[str, CorruptItem] = {}
        for start in range(0, len(unique), MAX_BATCH_GET):
            keys = [self._key(tag) for tag in unique[start : start + MAX_BATCH_GET]]
            rounds = 0
            while keys and rounds < MAX_UNPROCESSED_ROUNDS:
                if rounds:
                    yield Sleep(DEFAULT_RETRY.delay(rounds, self.rng))
                rounds += 1
                self.stats.requests["BatchGetItem"] += 1
                response: BatchGetItemOutputTypeDef = yield Call(
                    "batch_get_item",
                    {"RequestItems": {self.table: {"Keys": keys, "ConsistentRead": True}}},
                )
                now = self.clock()
                for raw in response.get("Responses", {}).get(self.table, []):
                    tag = raw[self.partition_key]["S"]  # the key asked for: always a string
                    try:
                        found[tag] = self._decode(raw, now, tag)
                    except CorruptItem as exc:
                        corrupt[tag] = exc
                unprocessed = response.get("UnprocessedKeys", {}).get(self.table)
                keys = list(unprocessed.get("Keys", [])) if unprocessed else []
            for key in keys:
                tag = key[self.partition_key]["S"]
                try:
                    found[tag] = yield from self._read(tag)
                except CorruptItem as exc:
                    corrupt[tag] = exc
        result = {tag: found.get(tag) for tag in unique if tag not in corrupt}
        for tag, state in result.items():
            self.remember(state, tag)
        for tag in corrupt:
            self.forget(tag)
        return result, corrupt

    def _after_failed_condition(
        self, tag: str, exc: ClientError
    ) -> Generator[Effect, Any, ChainState | None]:
        """The item as it is now: from ALL_OLD, or a consistent read where the server omits it.

        An absent ``Item`` means either that the item does not exist or that the
        server ignores ``ReturnValuesOnConditionCheckFailure``; the read tells.
        """
        raw = condition_item(exc)
        if raw:
            state = self._decode(raw, tag=tag)
            self.remember(state, tag)
            return state
        return (yield from self._read(tag))

    @staticmethod
    def _reply_step(op: str, exc: ClientError | BotoCoreError) -> D.Row:
        """``REPLY_STEP``'s row for a single write of ``op`` that failed with ``exc``."""
        return D.REPLY_STEP[(op, *D.reply_of(exc))]

    def _settle(
        self, tag: str, exc: ClientError | BotoCoreError, op: str = "stamp"
    ) -> Generator[Effect, Any, ChainState | None]:
        """After a write failed for another reason than its condition: the item as it is now.

        A client error on the first and only send proves the write did not land,
        so it is raised as it is.  A transport error, or any error after botocore
        re-sent the request, leaves it open: a consistent read settles it, and if
        that read fails too, ``UnsettledWrite`` (never the read's error alone, which
        would read as "not landed").
        """
        verdict, step, _ = self._reply_step(op, exc)
        if step is Step.REFUSE:
            raise exc
        try:
            return (yield from self._read(tag))
        except (ClientError, BotoCoreError) as failure:
            if verdict is D.Verdict.NOT_LANDED:  # a transaction's conflict: nothing written
                raise exc from failure
            raise UnsettledWrite(tag, self.token_window) from failure

    def _settle_many(
        self, tags: Sequence[str], exc: ClientError | BotoCoreError
    ) -> Generator[Effect, Any, tuple[dict[str, ChainState | None], dict[str, CorruptItem]]]:
        """:meth:`_settle` for a transaction that failed without a cancellation.

        Returns the states, and the items that cannot be read (``CorruptItem``) apart.
        If the read fails, ``UnsettledWrite`` (for the first tag) from its error.
        """
        if self._reply_step("transact", exc)[1] is Step.REFUSE:
            raise exc
        try:
            return (yield from self._read_many(tags))
        except (ClientError, BotoCoreError) as failure:
            raise UnsettledWrite(tags[0], self.token_window) from failure

    def _landed(
        self,
        before: ChainState | None,
        now: ChainState | None,
        tokens: Sequence[bytes],
        tag: str,
        maybe_twice: bool,
    ) -> bool:
        """Did a write land, given the item ``now``?  ``tokens``: the write's proof.

        The proof is the write's own random token when it has one, else every caller
        token it carried (a write adds all of its tokens at once).  A write whose
        only send failed its condition did not land, whatever tokens the item holds:
        a caller token found there was applied by someone else (a re-run task), which
        the caller of this method reports as already applied, not as this write.
        True or False only when it is proven; raises AmbiguousWrite otherwise.
        """
        sent = D.Sent.MAYBE_TWICE if maybe_twice else D.Sent.ONCE
        seen = D.seen_of(before, now, tokens)
        verdict = D.WRITE_VERDICT[(sent, seen)]
        if verdict is not Verdict.UNKNOWN:
            return verdict is Verdict.LANDED
        raise AmbiguousWrite(tag, self.token_window)

    def _back_off(self, attempt: int, started: float) -> Generator[Effect, Any, bool]:
        """After ``attempt`` writes lost their race: sleep and go on (True), or give up (False).

        Counts the lost race, and the retry if there is one.  Giving up (the retry
        policy is spent, or there is none) is the caller's ``StaleLocalData``.
        """
        self.stats.conflicts += 1
        if self.retry is None or not self.retry.allows(attempt, self.monotonic() - started):
            return False
        self.stats.retries += 1
        yield Sleep(self.retry.delay(attempt, self.rng))
        return True
