"""Stamp writes of different chains sent together: PartiQL batches, as a group commit.

``batch_writes=True`` on a client: a stamp write goes out at once, as the core's
``UpdateItem``, while fewer than ``slots`` stamp writes of this client are in
flight; one that arrives when they are all taken waits for the first to finish
and then goes out with the others that waited, up to 25 per
``BatchExecuteStatement``.  Each statement of a batch is the same conditional
write as the ``UpdateItem`` it replaces (``UPDATE ... SET ... WHERE key AND
version AND chain``), applied or refused on its own: no transaction, the same
write units, and a refused condition returns the item (``ALL_OLD``).  So the
core's decisions (lost race, re-send, proof by tokens) are unchanged: each
statement's outcome is handed back to it as the response or the error its
``UpdateItem`` would have had.

This module is sans-I/O: the translation, the reading of a batch's answer, and
the plan of what goes out when.  The async and the sync client do the waiting.

Why PartiQL and not ``TransactWriteItems`` (which the core also speaks): a
transaction costs twice the write units and fails as a whole; a batch costs
what the single writes cost and one statement's lost race does not hold back
the others.  Why opt-in: a batch needs ``dynamodb:PartiQLUpdate`` in IAM, and
moto, the usual test double, reports a batched statement whose condition fails
as applied without applying it, which would turn a lost race into a false ack.
DynamoDB and DynamoDB Local check the conditions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from ._attempts import (
    earlier_send_may_have_landed,
    mark_sent_before,
    may_have_landed,
    unmark_never_sent,
)
from ._core.effects import Call, ClientStats, Effect
from ._core.expressions import Update
from ._core.merged import one_each
from .aws import error_code

logger = logging.getLogger(__name__)

#: DynamoDB's limit of statements per BatchExecuteStatement.
MAX_BATCH_STATEMENTS = 25
#: Stamp writes of one client in flight on their own before the next ones wait and batch.
DEFAULT_WRITE_SLOTS = 2

#: A statement's error code (BatchStatementError) -> the code its UpdateItem would have got.
_SINGLE_CODE = {
    "ConditionalCheckFailed": "ConditionalCheckFailedException",
    "TransactionConflict": "TransactionConflictException",
    "ResourceNotFound": "ResourceNotFoundException",
    "ItemCollectionSizeLimitExceeded": "ItemCollectionSizeLimitExceededException",
    # An INSERT (a create, ``_statements``) met an item under its key: what the create's
    # UpdateItem reports as its condition failing, without the item (it reads it).
    "DuplicateItem": "ConditionalCheckFailedException",
}
#: Statement errors after which the write did not land, so it is sent again alone (as an
#: UpdateItem, where botocore's retry mode handles throttling as for any single write).
_SEND_ALONE = {
    "ProvisionedThroughputExceeded",
    "ThrottlingError",
    "RequestLimitExceeded",
    "AccessDenied",
    "ValidationError",
}
#: Errors of the whole batch that say this endpoint or principal cannot run batches at all.
_UNSUPPORTED = {
    "AccessDeniedException",
    "UnknownOperationException",
    "ValidationException",
    "UnrecognizedClientException",
}


def item_key(update: Update) -> tuple[tuple[str, str], ...]:
    """The item a write is for (two writes of one item never share a batch)."""
    return tuple(sorted((name, repr(value)) for name, value in update.key.items()))


@dataclass(frozen=True)
class Applied:
    """The statement was applied: ``response`` stands for its UpdateItem's."""

    response: dict[str, Any]


@dataclass(frozen=True)
class Refused:
    """The statement was not applied: ``error`` is what its UpdateItem would have raised."""

    error: ClientError


@dataclass(frozen=True)
class SendAlone:
    """Send this write again as an UpdateItem; ``sent_before``: an earlier send may have landed."""

    sent_before: bool
    cause: str


Verdict = Applied | Refused | SendAlone


def _metadata(response: dict[str, Any]) -> dict[str, Any]:
    return dict(response.get("ResponseMetadata", {}))


def read_batch(response: dict[str, Any], count: int) -> list[Verdict]:
    """What each of ``count`` statements of a batch came to, in order."""
    answers = response.get("Responses", [])
    if len(answers) != count:
        # Not the answer of this batch: nothing can be told of any statement.
        return [SendAlone(sent_before=True, cause="malformed batch response")] * count
    meta = _metadata(response)
    verdicts: list[Verdict] = []
    for answer in answers:
        error = answer.get("Error")
        if not error:
            verdicts.append(Applied({"ResponseMetadata": meta}))
            continue
        code = str(error.get("Code", ""))
        if code in _SINGLE_CODE:
            body: dict[str, Any] = {
                "Error": {"Code": _SINGLE_CODE[code], "Message": error.get("Message", code)},
                "ResponseMetadata": meta,
            }
            if error.get("Item"):
                body["Item"] = error["Item"]
            verdicts.append(Refused(ClientError(body, "UpdateItem")))
        elif code in _SEND_ALONE:
            sent_before = earlier_send_may_have_landed(response)
            verdicts.append(SendAlone(sent_before=sent_before, cause=code))
        else:  # InternalServerError or a code this client does not know: it may have landed
            verdicts.append(SendAlone(sent_before=True, cause=code or "unknown error"))
    return verdicts


def batch_unsupported(exc: ClientError) -> bool:
    """Does a whole batch's error say this client should not batch any more?"""
    return error_code(exc) in _UNSUPPORTED


def stops_batching(verdict: Verdict) -> bool:
    """A statement refused for want of permission: the principal may not run PartiQL."""
    return isinstance(verdict, SendAlone) and verdict.cause == "AccessDenied"


def batch_refused_whole(exc: ClientError) -> bool:
    """Did DynamoDB refuse the whole batch on every send (so no statement landed)?"""
    return not may_have_landed(exc)


T = TypeVar("T")


@dataclass
class BatchPlan(Generic[T]):
    """Which stamp writes of one client go out now, alone or together (a group commit).

    :meth:`offer` a write when it is ready; :meth:`finished` when a request of
    this plan is answered.  Each returns what to send now: lists of writes, a
    list of one being a plain UpdateItem.  A write waits at most for one request
    to finish, and never when a slot is free; a full batch goes out at once.
    """

    slots: int = DEFAULT_WRITE_SLOTS
    size: int = MAX_BATCH_STATEMENTS
    in_flight: int = 0
    waiting: list[tuple[Any, T]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.slots < 1 or not 1 <= self.size <= MAX_BATCH_STATEMENTS:
            raise ValueError(f"slots must be >= 1 and size 1..{MAX_BATCH_STATEMENTS}")

    def offer(self, key: Any, write: T) -> list[list[T]]:
        if self.in_flight < self.slots:
            self.in_flight += 1
            return [[write]]
        self.waiting.append((key, write))
        if len({k for k, _ in self.waiting}) >= self.size:
            return [self._take()]
        return []

    def withdraw(self, write: T) -> bool:
        """Take ``write`` out if it still waits (its caller is gone); False if it was taken."""
        kept = [(key, waiting) for key, waiting in self.waiting if waiting is not write]
        withdrawn = len(kept) != len(self.waiting)
        self.waiting = kept
        return withdrawn

    def finished(self) -> list[list[T]]:
        self.in_flight -= 1
        ready: list[list[T]] = []
        while self.waiting and self.in_flight < self.slots:
            ready.append(self._take())
        return ready

    def _take(self) -> list[T]:
        """The oldest waiting writes, one per item, up to ``size``; the request counts in flight."""
        taken: list[T] = []
        keys: set[Any] = set()
        rest: list[tuple[Any, T]] = []
        for key, write in self.waiting:
            if key in keys or len(taken) >= self.size:
                rest.append((key, write))
            else:
                keys.add(key)
                taken.append(write)
        self.waiting = rest
        self.in_flight += 1
        return taken


@dataclass
class Write:
    """A stamp write on its way: the core's UpdateItem, its statement, and who waits for it."""

    params: dict[str, Any]
    statement: dict[str, Any]
    waiter: Any

    def tag(self, partition_key: str) -> str:
        """The chain this write stamps (its item's key)."""
        return str(self.params["Key"][partition_key]["S"])


#: What a write came to: its UpdateItem's response, or the error its UpdateItem would raise.
Result = dict[str, Any] | Exception


@dataclass
class Batcher:
    """One client's batching: the plan, whether batching is still on, and the sending.

    :meth:`send` is a sans-I/O operation (the clients run it like the core's):
    one write is an ``UpdateItem``; more are one ``BatchExecuteStatement``, then
    an ``UpdateItem`` for each statement that must go alone.
    """

    stats: ClientStats
    slots: int = DEFAULT_WRITE_SLOTS
    enabled: bool = True
    stopped_by: str | None = None
    plan: BatchPlan[Write] = field(init=False)

    def __post_init__(self) -> None:
        self.plan = BatchPlan(slots=self.slots)

    def prepare(self, params: dict[str, Any], update: Update, waiter: Any) -> Write | None:
        """The write to offer to the plan, or None: send it as an UpdateItem, unplanned.

        ``params`` is ``update.request()``; the statement is rendered from the same
        structured write (``Update.statement``), never parsed back from ``params``.
        """
        if not self.enabled:
            return None
        statement = update.statement()
        return None if statement is None else Write(params, statement, waiter)

    def _stop(self, why: str) -> None:
        if self.enabled:
            self.enabled = False
            self.stopped_by = why
            logger.warning(
                "stamp writes are no longer batched (BatchExecuteStatement refused: %s); "
                "each goes as an UpdateItem. Batches need dynamodb:PartiQLUpdate on the table.",
                why,
            )

    def send(self, writes: list[Write]) -> Generator[Effect, Any, list[Result]]:
        if len(writes) == 1 or not self.enabled:  # alone, or waited in the plan when it stopped
            results: list[Result] = []
            for write in writes:
                results.append((yield from self._alone(write.params, sent_before=False)))
            return results
        self.stats.requests["BatchExecuteStatement"] += 1
        self.stats.requests["UpdateItem"] -= len(writes)
        self.stats.batched_writes += len(writes)
        try:
            response = yield Call(
                "batch_execute_statement", {"Statements": [w.statement for w in writes]}
            )
        except ClientError as exc:
            if not batch_refused_whole(exc):
                return one_each(exc, len(writes))  # re-sent by botocore: the core reads and judges
            if batch_unsupported(exc):
                self._stop(error_code(exc) or "unknown error")
            results = []
            for write in writes:
                self.stats.requests["UpdateItem"] += 1
                results.append((yield from self._alone(write.params, sent_before=False)))
            return results
        except BotoCoreError as exc:
            return one_each(exc, len(writes))
        results = []
        for write, verdict in zip(writes, read_batch(response, len(writes)), strict=True):
            if isinstance(verdict, Applied):
                results.append(verdict.response)
            elif isinstance(verdict, Refused):
                results.append(verdict.error)
            else:
                if stops_batching(verdict):
                    self._stop(verdict.cause)
                self.stats.requests["UpdateItem"] += 1
                results.append((yield from self._alone(write.params, verdict.sent_before)))
        return results

    @staticmethod
    def _alone(params: dict[str, Any], sent_before: bool) -> Generator[Effect, Any, Result]:
        try:
            response: dict[str, Any] = yield Call("update_item", params)
        except ClientError as exc:
            error: Exception = mark_sent_before(exc) if sent_before else exc
            return error
        except BotoCoreError as exc:
            if sent_before:  # the batch may have applied it: not proven unsent any more
                unmark_never_sent(exc)
            failure: Exception = exc
            return failure
        return response


def drain(inbox: Any, flush: Callable[[Any], None]) -> None:
    """The inbox of a write whose caller was interrupted once it was in a batch: a batch it
    is handed is sent (``flush``: the other writes wait for it, and its request holds a
    slot); its own result, which nobody waits for, ends it."""
    while True:
        kind, value = inbox.get()
        if kind != "lead":
            return
        flush(value)
