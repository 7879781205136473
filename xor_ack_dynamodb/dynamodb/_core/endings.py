"""How a chain ends: fail it (once, its generation only), delete it, or wait for its end.

Generators of effects like every operation of the core; what a reply means is looked
up in ``landing``'s tables.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ...chain import ChainState
from ...errors import InvalidReason, NotAChain, StaleLocalData, TagNotFound
from .. import item as I
from ..aws import error_code, error_message
from . import landing as D
from . import told as T
from .deadlines import Deadlines
from .effects import Call, Effect, Sleep
from .landing import Status, Step
from .validate import check_reason, check_reason_fits, check_tag, check_wait

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import UpdateItemOutputTypeDef


class Endings(Deadlines):
    """fail, delete and wait: the operations that close a chain or wait for it to close."""

    def fail(
        self, tag: str, reason: str = "failed", chain_id: bytes | None = None
    ) -> Generator[Effect, Any, ChainState]:
        """Close a live chain as failed, so waiters learn it and late stamps are refused.

        ``chain_id``: fail only that generation (``ChainState.chain_id``); another one
        under the tag (re-created since it was read) counts as no chain, before the
        write and in its condition: ``TagNotFound``, nothing written.  Without it, the
        generation this call reads is the one it fails: one created under the tag after
        that read (after a re-sent fail's first send landed, say) is left alone
        (``TagNotFound``).

        A chain that is already acked stays acked (its zero state wins over a late
        fail, as in Storm) and is returned.  One already failed stays as it is, and the
        caller is told so (``told``): ``ChainFailed`` (``ChainTimedOut`` for a chain its
        deadline failed) with ``.requested_reason``, the reason that was not written;
        the same whether the other fail landed long before or raced this one.  Past the
        deadline the chain is failed with reason "timeout" instead (``ChainTimedOut``).
        An item this client cannot read raises ``CorruptItem`` and is not written.
        """
        check_tag(tag)
        check_reason(reason)
        # Read and validate first: a condition can check the attributes' types (and
        # does, below, so an item damaged after the read is refused by DynamoDB
        # itself, atomically), but not every rule of a readable item (a token list
        # whose length is a multiple of 8, a whole-number version).  The read costs
        # one request on a path that is rare, and spares the write on a closed chain.
        state = yield from self._read(tag)
        check_reason_fits(state, reason)  # before the write: DynamoDB would refuse it
        attempt = 0
        while True:
            if chain_id is not None and state is not None and state.chain_id != chain_id:
                # another generation: not the chain to fail, and not "nothing there" either
                raise TagNotFound(tag, T.not_found_why(state, other_generation=True))
            step, kind = D.NOT_LANDED_STEP[("fail", D.status_of(state, self.clock()))]
            if step is Step.TIME_OUT:  # too late even to fail: the chain fails ("timeout")
                assert state is not None
                state = yield from self._refuse_late("fail", tag, state, reason)
                continue
            if step is Step.REFUSE:  # gone, or already failed: told so
                raise T.refusal(kind, tag, state, "fail", reason)
            if step is Step.DONE:  # already acked: acked stays acked
                assert state is not None
                self.forget(tag)
                return state
            if attempt >= 3:
                # Its condition failed each time, yet the item reads as live: give up.
                raise StaleLocalData(tag, attempt, "fail")
            attempt += 1
            self.stats.requests["UpdateItem"] += 1
            self.stats.writes += 1
            at = self._now()
            # The write fails the generation read, and from now on the call means that one:
            # a re-send whose first send landed must not fail a chain created since.
            assert state is not None
            chain_id = state.chain_id
            try:
                response: UpdateItemOutputTypeDef = yield Call(
                    "update_item", self._fail_params(tag, reason, chain_id, at)
                )
            except (ClientError, BotoCoreError) as exc:
                if isinstance(exc, ClientError) and _too_big(exc):  # fell short: said the same
                    raise InvalidReason(
                        f"a reason of {len(reason.encode('utf-8'))} bytes does not fit the "
                        "chain's DynamoDB item (400 KB with its other attributes); nothing was "
                        "written: pass a shorter reason"
                    ) from exc
                reply, sent = D.reply_of(exc)
                if D.REPLY_STEP[("fail", reply, sent)][1] is Step.REFUSE:
                    raise  # not its condition: refused, not landed
                if reply is D.Reply.CONDITION_FAILED:
                    # Closed, gone or expired since the read, or damaged (CorruptItem).
                    assert isinstance(exc, ClientError)
                    state = yield from self._after_failed_condition(tag, exc)
                else:  # a transaction held it, or its answer was lost: the item tells
                    state = yield from self._settle(tag, exc, "fail")
                if sent is D.Sent.MAYBE_TWICE and _proves(state, reason, at):
                    # Its own first send landed (botocore re-sent it): failed by this call.
                    self.stats.resent_writes_recognised += 1
                    self.forget(tag)
                    assert state is not None
                    return state
                same = state is not None and state.chain_id == chain_id
                live = same and D.status_of(state, self.clock()) is Status.LIVE
                if reply is D.Reply.UNKNOWN and live:
                    raise exc  # its answer lost, and it did not land: the error, as a stamp's
                continue  # acked, failed, overdue or gone meanwhile: told as the loop tells
            self.forget(tag)
            return I.decode(response["Attributes"], self.partition_key, tag)

    def delete(self, tag: str) -> Generator[Effect, Any, None]:
        """Remove the chain's item (live or tombstone); TagNotFound when there is none,
        NotAChain (nothing deleted) when the item holds none of a chain's marks.

        One read (which generation the item holds) and one write conditioned on it: a
        re-sent delete never removes a chain created under the tag since, and neither
        does a delete racing that create (it returns: the chain it read is gone).
        """
        check_tag(tag)
        self.forget(tag)
        self.stats.requests["GetItem"] += 1
        read = yield Call("get_item", self._generation_params(tag))
        found = read.get("Item")
        if not found:
            raise TagNotFound(tag)
        if not self._is_chain(found):
            raise NotAChain(tag)
        params = self._delete_params(tag, found.get(I.CHAIN_ID))
        self.stats.requests["DeleteItem"] += 1
        self.stats.writes += 1
        try:
            yield Call("delete_item", params)
        except ClientError as exc:
            _, step, kind = self._reply_step("delete", exc)
            if step is Step.DONE:
                return  # a re-send found it gone: the first send most likely removed it
            if step is not Step.REREAD:
                raise
            # Its condition failed: the item it read is gone.  Another chain under the
            # tag now (created over its tombstone, or after it expired) is left alone, and
            # this delete counts as done before that create; no item at all: TagNotFound.
            assert kind is TagNotFound
            self.stats.requests["GetItem"] += 1
            now = (yield Call("get_item", self._generation_params(tag))).get("Item")
            if now and not self._is_chain(now):
                raise NotAChain(tag) from exc
            if now and now.get(I.CHAIN_ID) != found.get(I.CHAIN_ID):
                return
            raise T.refusal(kind, tag, None) from exc

    def wait(
        self, tag: str, timeout: float, poll_interval: float = 0.2
    ) -> Generator[Effect, Any, ChainState]:
        """Poll until the chain is acked; otherwise what ``told`` says: ``TagNotFound``,
        ``ChainFailed`` (``ChainTimedOut``), or ``WaitTimeout`` when the time is up (the
        chain left as it was: a wait only reads)."""
        check_tag(tag)
        check_wait(timeout, poll_interval)
        deadline = self.monotonic() + timeout
        while True:
            state = yield from self._read(tag)
            remaining = deadline - self.monotonic()
            if T.found_of(state) is T.Found.LIVE and remaining > 0:
                yield Sleep(min(poll_interval, remaining))
                continue
            error = T.tell("wait", tag, state, waited=timeout)
            if error is not None:
                raise error
            assert state is not None
            return state


def _proves(state: ChainState | None, reason: str, at: float) -> bool:
    """Is ``state`` the tombstone of a fail write of ``reason`` sent at ``at`` (its clock)?"""
    return state is not None and state.failed and state.reason == reason and state.failed_at == at


def _too_big(exc: ClientError) -> bool:
    """DynamoDB's refusal of a write that would make the item larger than 400 KB."""
    message = (error_message(exc) or "").lower()
    return error_code(exc) == "ValidationException" and "size" in message and "exceed" in message
