"""Typed errors: one base class, one subclass per condition.

Every error carries ``.code``, equal to its class name, so callers that log or
serialise errors (Lambda handlers, Spark task results) keep the condition.
Messages follow the seed ``xor-ack-dynamodb``.  Errors raised by DynamoDB that
are not one of these conditions (throttling after botocore's own retries,
validation errors, access denied, ...) are not wrapped: they reach the caller as
the botocore ``ClientError`` (a tracked Spark run's driver says them as
``spark.errors.DynamoDBFailed``, the botocore error its cause).

The errors of the feature packages live beside them, all subclasses of
:class:`XorAckError`: ``fleet.errors``, ``spark.errors``, ``pipeline.errors``.

Layer: the vocabulary, at the bottom: imports nothing of the package (``ChainState``
is named in annotations only). ``_failures.py`` holds the base, the ways a chain
fails (``ChainFailed``, ``ChainTimedOut``, ``WaitTimeout``) and the ``*_many``
failures, ``_refusals.py`` the refusals of bad input (``Invalid*``, the stamps' own),
``_table.py`` what a table, its stream or its indexes lack; every name is imported from here.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ._failures import (
    ChainFailed,
    ChainTimedOut,
    CreateManyFailed,
    GetManyFailed,
    OnFailedRaised,
    StampManyFailed,
    SweepIncomplete,
    SweepStopped,
    WaitTimeout,
    XorAckError,
    _ChainTimeout,
)
from ._failures import _TagError as _TagError  # the base the feature packages' errors share
from ._refusals import (
    BufferLengthsUnequal,
    ClientClosed,
    InvalidArgument,
    InvalidEvent,
    InvalidListener,
    InvalidListing,
    InvalidMessage,
    InvalidReason,
    InvalidStamp,
    InvalidState,
    InvalidTag,
    InvalidTimeout,
    InvalidToken,
    InvalidTTL,
    InvalidWait,
    LessThanTwoBuffers,
    ZeroBufferNoOp,
)
from ._table import (
    CorruptRecord,
    InventoryBuilding,
    InventoryMissing,
    NotDynamoDB,
    RegionMissing,
    StreamNotEnabled,
    StreamReadFailed,
    StreamViewConflict,
    TableMismatch,
    UpgradeTimeout,
)

if TYPE_CHECKING:
    from ..chain import ChainState  # annotations only: chain.py sits above the errors


class TagExists(_TagError):
    """``create()`` found a live chain under the tag."""

    def __init__(self, tag: str) -> None:
        super().__init__(tag, f'"{tag}" already exists')


class TagNotFound(_TagError):
    """The tag has no live chain: never created, deleted, expired, or already acked.

    The message is the seed's (``"t" does not exist``) when nothing is there; ``why`` says
    what is there instead (an acked chain, another generation's chain)."""

    def __init__(self, tag: str, why: str | None = None) -> None:
        said = f'"{tag}" does not exist' if why is None else f'"{tag}" has no live chain: {why}'
        super().__init__(tag, said)


#: What ``StaleLocalData`` says each write was doing, and what to do again.
_STALE_WRITES: dict[str, tuple[str, str]] = {
    "stamp": ("being stamped", "retry the stamp"),
    "create": ("being created in a transaction", "retry the create"),
    "touch": ("being touched", "retry the touch"),
    "fail": ("being failed", "retry the fail"),
    "timeout": ("failed past its deadline", "sweep again (or retry the call that met it)"),
}


class StaleLocalData(_TagError):
    """The stored state changed between the read and the conditional write.

    Transient and part of normal operation: the clients retry it themselves
    (see ``RetryPolicy``); it reaches the caller only with ``retry=None`` or
    once the policy's attempts or time budget are spent.
    """

    def __init__(self, tag: str, attempts: int = 1, write: str = "stamp") -> None:
        doing, again = _STALE_WRITES.get(write, _STALE_WRITES["stamp"])
        super().__init__(
            tag,
            f'"{tag}" changed while it was {doing} ({attempts} attempt'
            f"{'' if attempts == 1 else 's'}); {again}",
        )
        self.attempts = attempts
        #: The write it was: "stamp", "create", "touch", "fail" or "timeout".
        self.write = write


class AmbiguousWrite(_TagError):
    """A write was re-sent after a lost response and its outcome cannot be proven.

    Raised instead of guessing: re-applying could XOR the stamp in twice and
    guessing "not applied" could lose it.  Happens only when more writes than
    the item's token window (the smallest of its writers') landed on the chain
    between the lost response and the re-send, or the chain was deleted or
    created again since.  Inspect the chain (``get``) or fail it and replay the input.
    """

    def __init__(self, tag: str, window: int) -> None:
        super().__init__(
            tag,
            f'"{tag}": a re-sent write cannot be proven applied or not '
            "(its token was pushed out of the item by later writes, or went with a chain deleted "
            "since); fail the chain and replay its input",
        )
        self.window = window


class UnsettledWrite(AmbiguousWrite):
    """A write's response was lost, and the read that would tell whether it landed failed too.

    DynamoDB (or the way to it) went away mid-write: the write may have landed.  The
    read's error is the ``__cause__``.  A stamp with a ``token`` can be sent again with
    the same token once DynamoDB answers (it lands once); without one, it cannot be told
    apart: fail the chain and replay its input.
    """

    def __init__(self, tag: str, window: int) -> None:
        said = (
            f'"{tag}": the write may have landed (its response was lost) and the read that '
            "would tell failed too; once DynamoDB answers, "
        )
        _TagError.__init__(
            self,
            tag,
            f"{said}send a stamp again with the same token (it lands once) or get() the "
            "chain; without a token, fail the chain and replay its input",
        )
        self.cli_message = (
            f"{said}`xor-ack chain show` tells whether it landed (a `chain stamp` sent again "
            "with the same --token lands once); otherwise `chain fail` it and replay its input"
        )
        self.window = window


class InterruptedWrite(AmbiguousWrite):
    """The sync client's thread sending a write that carried this stamp (merged with
    others, or in a batch) was interrupted (``KeyboardInterrupt``) mid-write, or the async
    client's task sending it was cancelled while this stamp's own caller was not.

    The write may have landed.  A stamp with a ``token`` can be sent again with the same
    token (it lands once); without one, fail the chain and replay its input.  In the sync
    client, stamps that were only queued behind it are sent by another thread, not
    refused; in the async one they get this error too.
    """

    def __init__(self, tag: str, window: int) -> None:
        _TagError.__init__(
            self,
            tag,
            f'"{tag}": the thread or task sending the write that carried this stamp was '
            "interrupted, so it may have landed; send it again with the same token (it "
            "lands once), or without a token fail the chain and replay its input",
        )
        self.window = window


class ChainMoved(_TagError):
    """``stamp_on(state, ...)`` found the chain no longer in ``state``: nothing was written.

    Another write landed since ``state`` was read (or the chain was closed, failed,
    deleted, re-created).  ``.expected`` is the state the stamp was planned on,
    ``.current`` the chain as it is now (``None``: no chain under the tag), taken
    from the refused write's answer: decide again on it (it may hold your token:
    then another copy of your stamp landed), no read needed.
    """

    def __init__(self, tag: str, expected: ChainState, current: ChainState | None) -> None:
        now = "gone" if current is None else f"at version {current.version}"
        super().__init__(
            tag,
            f'"{tag}" moved from version {expected.version} (the state the stamp was planned'
            f" on) and is {now}; nothing was written: decide again on .current",
        )
        self.expected = expected
        self.current = current


class TickerRunning(XorAckError, RuntimeError):
    """An ``Ack``'s ticker was started while one of that ``Ack``'s tickers is running.

    Two tickers would tick the tracker twice as often and fail its chains before their
    timeout.  Also a ``RuntimeError``, which is what earlier versions raised for a ticker
    started twice.
    """


class CorruptItem(_TagError):
    """The chain's item was not written by this client or was damaged since.

    An attribute is missing, of the wrong DynamoDB type, or of an impossible
    value (``.attribute`` names it, ``.problem`` says what is wrong).  Every
    operation raises it before writing anything; ``delete(tag)`` removes such an
    item, after which the tag can be created again.  ``.foreign``: the item holds
    none of a chain's binary attributes (``stamp``, ``chain_id``, ``tokens``): another
    program's, which this package neither changes nor deletes (``NotAChain``).
    """

    def __init__(self, tag: str, attribute: str, problem: str, *, foreign: bool = False) -> None:
        found = f'attribute "{attribute}" {problem}; nothing was written.'
        super().__init__(
            tag,
            f'"{tag}": the stored item is not a chain: it holds none of a chain\'s binary '
            f"attributes (stamp, chain_id, tokens), so another program wrote it ({found[:-1]}"
            "). Check the table and the tag: this package does not change or delete it"
            if foreign
            else f'"{tag}": the stored item is not a chain this client can read: {found} '
            "Repair the item, or delete it (delete(tag)) and create the chain again",
        )
        self.attribute = attribute
        self.problem = problem
        self.foreign = foreign


class NotAChain(_TagError):
    """``delete(tag)`` found an item that holds none of a chain's binary attributes.

    The tag names an item this package did not write (a table that is not a chains
    table, or another program's item under the same key), so it is not deleted:
    nothing was written.
    """

    def __init__(self, tag: str) -> None:
        super().__init__(
            tag,
            f'"{tag}": the stored item holds none of a chain\'s binary attributes (stamp, '
            "chain_id, tokens), so it was not written by this package and was not deleted; "
            "check the table and the tag",
        )


class TransactionItemRejected(_TagError):
    """DynamoDB refused one chain's write inside a transaction for a reason other than a race.

    ``.reason`` is DynamoDB's cancellation code (``ValidationError``,
    ``ItemCollectionSizeLimitExceeded``, ...); nothing of the transaction was written.
    """

    def __init__(self, tag: str, reason: str, message: str = "") -> None:
        detail = f": {message}" if message else ""
        super().__init__(
            tag, f'DynamoDB rejected the write of chain "{tag}" in a transaction ({reason}{detail})'
        )
        self.reason = reason


#: Every error; ChainTimeout aside: a deprecated name, looked up by ``__getattr__`` below.
__all__ = [
    "AmbiguousWrite",
    "BufferLengthsUnequal",
    "ChainFailed",
    "ChainMoved",
    "ChainTimedOut",
    "ClientClosed",
    "CorruptItem",
    "CorruptRecord",
    "CreateManyFailed",
    "GetManyFailed",
    "InterruptedWrite",
    "InvalidArgument",
    "InvalidEvent",
    "InvalidListener",
    "InvalidListing",
    "InvalidMessage",
    "InvalidReason",
    "InvalidStamp",
    "InvalidState",
    "InvalidTTL",
    "InvalidTag",
    "InvalidTimeout",
    "InvalidToken",
    "InvalidWait",
    "InventoryBuilding",
    "InventoryMissing",
    "LessThanTwoBuffers",
    "NotAChain",
    "NotDynamoDB",
    "OnFailedRaised",
    "RegionMissing",
    "StaleLocalData",
    "StampManyFailed",
    "StreamNotEnabled",
    "StreamReadFailed",
    "StreamViewConflict",
    "SweepIncomplete",
    "SweepStopped",
    "TableMismatch",
    "TagExists",
    "TagNotFound",
    "TickerRunning",
    "TransactionItemRejected",
    "UnsettledWrite",
    "UpgradeTimeout",
    "WaitTimeout",
    "XorAckError",
    "ZeroBufferNoOp",
]


def __getattr__(name: str) -> type[_ChainTimeout]:
    """``ChainTimeout`` meant two things (a chain failed by its deadline, a ``wait()`` that
    gave up): the class stays as the base of both, so ``except ChainTimeout`` catches what
    it caught, but the name warns where it is looked up."""
    if name == "ChainTimeout":
        warnings.warn(
            "xor_ack_dynamodb.errors.ChainTimeout is deprecated: catch ChainTimedOut (a "
            "ChainFailed: the chain's deadline failed it) or WaitTimeout (wait() gave up; the "
            "chain was left as it was); `except ChainTimeout` still catches both",
            DeprecationWarning,
            stacklevel=2,
        )
        return _ChainTimeout
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
