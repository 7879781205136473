"""Did a write land, and what next?  The decision as tables, checked row by row.

A write's fate is decided from three things: how it was sent (:class:`Sent`: its
only send, or a request an earlier send of which has an unknown outcome, as
``_attempts`` tells), what came back (:class:`Reply`, or a transaction's
cancellation reason per item), and the item as read back afterwards
(:class:`Seen`, against the state the write was planned on, and
:class:`Status`).  Each table maps a situation to a verdict
(:class:`Verdict`: landed, not landed, unknown) and the next step
(:class:`Step`), with the error to refuse with where the step is ``REFUSE``.

The operations (``reads``, ``chains``, ``many``) look their decisions up here:
``WRITE_VERDICT`` in ``Reads._landed`` (``stamp``, and a transaction that may have
landed), ``REPLY_STEP`` in ``_settle`` / ``_settle_many``, ``stamp``'s and
``fail``'s and ``delete``'s replies, ``NOT_LANDED_STEP`` wherever a chain read back
decides (``stamp``, ``stamp_many``, ``create``, ``create_many``, ``fail``),
``STAMP_AGAIN`` in ``stamp``, ``ON_STATE_NOT_LANDED`` in ``stamp_on``,
``CREATE_SETTLED`` in ``create`` and ``create_transact``; a cancelled transaction's
tables are ``cancellation``'s.  The rules that do not fit a table are written below
it, with why.  A corrupt item is not a row: the item is decoded before any verdict,
and ``CorruptItem`` is raised (before any write on the paths that read first:
``stamp``, ``fail``, ``stamp_many``).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Literal, TypeAlias

from botocore.exceptions import BotoCoreError, ClientError

from ...chain import ChainState
from ...errors import (
    ChainMoved,
    TagExists,
    TagNotFound,
    TransactionItemRejected,
)
from .._attempts import earlier_send_may_have_landed, may_have_landed
from ..aws import error_code

CONDITION_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELED = "TransactionCanceledException"
TRANSACTION_CONFLICT = "TransactionConflictException"


class Sent(Enum):
    """How often the request may have reached DynamoDB."""

    ONCE = "once"  # no send may have landed but (for a 2xx) the one that answered
    #: A send has an unknown outcome (an earlier one, or the one that answered: a 5xx,
    #: a lost connection), so a refusal may be the answer to a re-send of a landed write.
    MAYBE_TWICE = "maybe twice"


class Reply(Enum):
    """What came back for a single write (a transaction's is :data:`CANCELLATION`)."""

    OK = "ok"
    CONDITION_FAILED = "condition failed"  # with the item (ALL_OLD), or without: read it
    TRANSACTION_CONFLICT = "transaction conflict"  # a transaction held the item
    REFUSED = "refused"  # any other error proven not landed: a 4xx, a connection never opened
    UNKNOWN = "unknown"  # a 5xx, a lost connection, a timeout: may have landed


class Seen(Enum):
    """The item read back after the reply, against the state the write was planned on."""

    PROOF = "holds every token of the write's proof"
    ABSENT = "absent, as it was when the write was planned"
    GONE = "absent, though a chain was there when the write was planned"
    UNCHANGED = "same chain, same version"
    #: Judged by the tokens alone, never by a window: the chain's writers may keep
    #: windows of other sizes than this client's, so a list shorter than this
    #: client's window may still have been cut (by a writer of a smaller one).
    INTACT = "same chain, token list still opening with the planned state's"
    REACHES_BACK = "same chain, token list opening within the planned state's last tokens"
    BEYOND = "same chain, token list not reaching back to the planned state"
    OTHER = "another chain (re-created tag)"


class Status(Enum):
    """The chain the item read back holds."""

    ABSENT = "absent or expired"
    LIVE = "live"
    OVERDUE = "live, past its deadline"
    ACKED = "acked (tombstone)"
    FAILED = "failed (tombstone)"


#: The statuses of a chain no write lands on any more: refused by ``told``, never a race.
CLOSED = frozenset({Status.ABSENT, Status.ACKED, Status.FAILED})


class Verdict(Enum):
    LANDED = "landed"
    NOT_LANDED = "not landed"
    UNKNOWN = "unknown"  # AmbiguousWrite where a proof was needed


class Step(Enum):
    DONE = "done"  # report the result
    RETRY = "retry after a back-off"  # a lost race: RetryPolicy decides, then StaleLocalData
    RESEND = "send again"  # nothing wrong with this item: it goes with the next attempt
    REREAD = "re-read"  # the item decides: from ALL_OLD, or a consistent read
    REFUSE = "refuse"  # raise (or report) the row's error
    BY_STATUS = "the chain read back decides"  # NOT_LANDED_STEP
    REPLAN = "plan again at once"  # on the items a cancellation returned; not an attempt
    #: The chain is live past its deadline: fail it with reason "timeout" (a conditional
    #: write that only one of any number of late callers and sweepers lands), then
    #: refuse with what ``told`` gives the chain as found, or report the tombstone (sweep).
    TIME_OUT = "fail it with reason timeout, once"
    #: A stamp planned on its caller's state (``stamp_on``): report ``ChainMoved`` with the
    #: chain as it is now, and plan nothing again (the caller decides on it).
    MOVED = "report the chain as it is now"


#: The reply's own botocore error, raised as it is.
REPLY_ERROR: Literal["the reply's error"] = "the reply's error"
#: The chain is gone, acked, failed or timed out: the error is ``told.TOLD``'s, by the
#: operation and the chain as the write found it (never a cached state).
TELL: Literal["told: the chain as found decides"] = "told: the chain as found decides"
Refusal: TypeAlias = (
    type[TagNotFound]
    | type[TagExists]
    | type[TransactionItemRejected]
    | type[ChainMoved]
    | Literal["the reply's error"]
    | Literal["told: the chain as found decides"]
    | None
)
Row: TypeAlias = tuple[Verdict | None, Step, Refusal]

L, N, U = Verdict.LANDED, Verdict.NOT_LANDED, Verdict.UNKNOWN
ONCE, TWICE = Sent.ONCE, Sent.MAYBE_TWICE

#: A stamp write whose reply did not say (a failed condition, an unknown outcome):
#: (how it was sent, the item read back) -> landed or not.
WRITE_VERDICT: dict[tuple[Sent, Seen], Verdict] = {
    # Its only send failed its condition: nothing of it landed, whatever the item
    # holds (a caller token found there was applied by someone else: see below).
    **{(ONCE, seen): N for seen in Seen},
    (TWICE, Seen.PROOF): L,
    (TWICE, Seen.ABSENT): N,  # never there: the write could not have landed
    (TWICE, Seen.GONE): U,  # deleted or expired since: the proof is gone with it
    (TWICE, Seen.UNCHANGED): N,  # nothing at all landed since the planned state
    (TWICE, Seen.INTACT): N,  # no token dropped since the plan: the proof would be there
    (TWICE, Seen.REACHES_BACK): N,  # every write since is in the list, and this one is not
    (TWICE, Seen.BEYOND): U,  # the proof may have been pushed out
    # The write may have landed on the planned chain, which went (with its proof)
    # before the tag was created again: nothing in the new chain can tell.
    (TWICE, Seen.OTHER): U,
}

#: The operations whose writes REPLY_STEP covers ("transact": a TransactWriteItems;
#: "touch": a later deadline; "timeout": the write that fails an overdue chain).
OPERATIONS = ("stamp", "create", "fail", "delete", "transact", "touch", "timeout")

#: The operations whose failed or unknown write the item read back decides: a stamp,
#: a touch (a stamp that moves the deadline), and the timeout write (its token proves
#: it landed).
ITEM_DECIDES = ("stamp", "touch", "timeout")

#: Their replies: (reply, how it was sent) -> (verdict or None: the item decides, step, error).
_ITEM_DECIDES_ROWS: dict[tuple[Reply, Sent], Row] = {
    # A transaction held the item (another client's stamp_many with transact=True):
    # refused before anything was written, a lost race: re-read, then RETRY.
    (Reply.TRANSACTION_CONFLICT, ONCE): (N, Step.REREAD, None),
    (Reply.CONDITION_FAILED, ONCE): (N, Step.REREAD, None),  # NOT_LANDED_STEP
    (Reply.CONDITION_FAILED, TWICE): (None, Step.REREAD, None),  # WRITE_VERDICT
    (Reply.UNKNOWN, TWICE): (None, Step.REREAD, None),  # landed: done; not: the error
}

#: What a single write's reply tells, per operation, before the item is looked at:
#: (operation, reply, how it was sent) -> (verdict or None: the item decides, step, error).
REPLY_STEP: dict[tuple[str, Reply, Sent], Row] = {
    **{(op, Reply.OK, ONCE): (L, Step.DONE, None) for op in OPERATIONS},
    # A 4xx (a throttle, a validation error) or a connection never opened: not landed.
    **{(op, Reply.REFUSED, ONCE): (N, Step.REFUSE, REPLY_ERROR) for op in OPERATIONS},
    # A transaction held the item (another client's stamp_many with transact=True):
    # refused before anything was written; a create or a fail meets the chain as it is
    # now, as after a failed condition (a lost race, not an error).
    **{
        (op, Reply.TRANSACTION_CONFLICT, ONCE): (N, Step.REFUSE, REPLY_ERROR)
        for op in OPERATIONS
        if op not in ITEM_DECIDES and op not in ("create", "fail")
    },
    ("create", Reply.TRANSACTION_CONFLICT, ONCE): (N, Step.REREAD, None),
    ("fail", Reply.TRANSACTION_CONFLICT, ONCE): (N, Step.REREAD, None),
    **{
        (op, reply, sent): row
        for op in ITEM_DECIDES
        for (reply, sent), row in _ITEM_DECIDES_ROWS.items()
    },
    ("create", Reply.CONDITION_FAILED, ONCE): (None, Step.REREAD, None),  # token, NOT_LANDED
    ("create", Reply.CONDITION_FAILED, TWICE): (None, Step.REREAD, None),
    ("create", Reply.UNKNOWN, TWICE): (None, Step.REREAD, None),  # its token, or the error
    ("fail", Reply.CONDITION_FAILED, ONCE): (N, Step.REREAD, None),  # NOT_LANDED_STEP
    # Re-sent: its first send may have landed; its reason and failed_at in the item prove it.
    ("fail", Reply.CONDITION_FAILED, TWICE): (None, Step.REREAD, None),
    ("fail", Reply.UNKNOWN, TWICE): (None, Step.REREAD, None),  # its reason and failed_at
    # The item it read is gone: read again, another chain there is left alone (done), an
    # empty tag is TagNotFound.
    ("delete", Reply.CONDITION_FAILED, ONCE): (N, Step.REREAD, TagNotFound),
    ("delete", Reply.CONDITION_FAILED, TWICE): (L, Step.DONE, None),
    ("delete", Reply.UNKNOWN, TWICE): (U, Step.REFUSE, REPLY_ERROR),
    # A transaction that failed without a cancellation: settled by reading every item.
    ("transact", Reply.CONDITION_FAILED, ONCE): (N, Step.REFUSE, REPLY_ERROR),
    ("transact", Reply.CONDITION_FAILED, TWICE): (None, Step.REREAD, None),
    ("transact", Reply.UNKNOWN, TWICE): (None, Step.REREAD, None),
}

#: A write proven not landed, by the chain read back: (operation, status) -> (step, error).
NOT_LANDED_STEP: dict[tuple[str, Status], tuple[Step, Refusal]] = {
    ("stamp", Status.LIVE): (Step.RETRY, None),  # a lost race
    ("stamp", Status.ABSENT): (Step.REFUSE, TELL),  # TagNotFound
    ("stamp", Status.ACKED): (Step.REFUSE, TELL),  # complete: no stamp belongs to it
    ("stamp", Status.FAILED): (Step.REFUSE, TELL),  # ChainFailed, or ChainTimedOut
    ("create", Status.LIVE): (Step.REFUSE, TagExists),
    ("create", Status.ABSENT): (Step.RESEND, None),  # closed or expired since the condition
    ("create", Status.ACKED): (Step.RESEND, None),
    ("create", Status.FAILED): (Step.RESEND, None),
    ("fail", Status.LIVE): (Step.RESEND, None),  # at most 3 writes, then StaleLocalData
    ("fail", Status.ABSENT): (Step.REFUSE, TELL),
    ("fail", Status.ACKED): (Step.DONE, None),  # an acked chain stays acked: its state
    # Already failed: told so (ChainFailed / ChainTimedOut with the reason not written).
    ("fail", Status.FAILED): (Step.REFUSE, TELL),
    # A chain past its deadline takes no write but the one that fails it, once; the
    # caller is then told by the chain as found (ChainTimedOut: by this call or another).
    ("stamp", Status.OVERDUE): (Step.TIME_OUT, TELL),
    ("create", Status.OVERDUE): (Step.REFUSE, TagExists),  # live until it is failed
    ("fail", Status.OVERDUE): (Step.TIME_OUT, TELL),
    ("touch", Status.LIVE): (Step.RETRY, None),  # a lost race
    ("touch", Status.OVERDUE): (Step.TIME_OUT, TELL),
    ("touch", Status.ABSENT): (Step.REFUSE, TELL),
    ("touch", Status.ACKED): (Step.REFUSE, TELL),
    ("touch", Status.FAILED): (Step.REFUSE, TELL),
    # The timeout write (a sweep's, a late caller's) met another state than it read.
    ("timeout", Status.OVERDUE): (Step.RESEND, None),  # moved, still overdue: at most 3
    ("timeout", Status.LIVE): (Step.DONE, None),  # not overdue any more (touched in time)
    ("timeout", Status.ABSENT): (Step.DONE, None),  # deleted or expired: nothing to fail
    ("timeout", Status.ACKED): (Step.DONE, None),  # acked in time: zero wins
    ("timeout", Status.FAILED): (Step.DONE, None),  # failed by another: once
}

#: A stamp write proven not landed on a chain it found live, by what it was planned on
#: and what refused it: (planned on a remembered state, not this call's own read; its
#: condition failed and the item is in hand; the item read back is overdue by this
#: client's clock) -> REPLAN (the cache was old, nobody raced: plan again on the item,
#: not counted as a lost race), TIME_OUT (refused for being late, nobody raced: fail
#: the chain once, no back-off) or RETRY (a lost race: back off, then look again).
STAMP_AGAIN: dict[tuple[bool, bool, bool], Step] = {
    (True, True, False): Step.REPLAN,
    (True, False, False): Step.RETRY,  # a transaction held the item, or it is gone: a race
    (False, True, False): Step.RETRY,
    (False, False, False): Step.RETRY,
    # The deadline passed between plan and write: DynamoDB refused the write by its
    # ``deadline > :now`` term.  Whatever the plan was made on, the chain is failed.
    (True, True, True): Step.TIME_OUT,
    (False, True, True): Step.TIME_OUT,
    # A transaction held the item (read back overdue): a race; after the back-off the
    # chain, still overdue, is failed (NOT_LANDED_STEP), or the policy is spent.
    (True, False, True): Step.RETRY,
    (False, False, True): Step.RETRY,
}

#: A stamp planned on the exact state its caller gave (``stamp_on``), proven not landed
#: or found not to fit that state, by the chain as it is now: (status) -> (step, error).
#: The state is the caller's condition, so nothing is planned again here: the caller
#: gets ``ChainMoved`` with the chain as it is (a refusal's ALL_OLD, or a read) and
#: decides.  A failed chain is a failed chain whichever state the caller gave: ``told``
#: (``ChainFailed``, ``ChainTimedOut``).  Past its deadline the chain is failed
#: ("timeout") once, as by every late write, and the caller told by the chain as found.
ON_STATE_NOT_LANDED: dict[Status, tuple[Step, Refusal]] = {
    Status.LIVE: (Step.MOVED, ChainMoved),  # another write landed first: not retried
    Status.ABSENT: (Step.MOVED, ChainMoved),  # deleted, expired since
    Status.ACKED: (Step.MOVED, ChainMoved),  # .current tells whether it holds the token
    Status.FAILED: (Step.REFUSE, TELL),
    Status.OVERDUE: (Step.TIME_OUT, TELL),
}

#: A ``create`` whose reply did not say, by the item read back: (reply, its write token
#: in the item) -> (verdict, step, error).  The token is random and a create is the
#: first write of its chain, so the token proves the create landed whatever the Sent.
CREATE_SETTLED: dict[tuple[Reply, bool], Row] = {
    (Reply.CONDITION_FAILED, True): (L, Step.DONE, None),  # re-sent after a lost response
    (Reply.CONDITION_FAILED, False): (N, Step.BY_STATUS, None),  # NOT_LANDED_STEP
    (Reply.UNKNOWN, True): (L, Step.DONE, None),
    (Reply.UNKNOWN, False): (N, Step.REFUSE, REPLY_ERROR),  # not ambiguous: the error
    (Reply.TRANSACTION_CONFLICT, False): (N, Step.BY_STATUS, None),  # a lost race
}

# Rules that do not fit a row, and why:
# - A caller token the item holds, after a send refused once, is not this write: it is
#   an earlier call with that token (a re-run task).  ``stamp`` reports the chain's
#   state as already applied, before any verdict (tokens are checked at plan time).
# - ``create`` RESENDs at most 3 times, then TagExists; ``fail`` writes at most 3
#   times, then StaleLocalData.  A stamp REPLANs once per write (``STAMP_AGAIN``): the
#   state it plans on next is the item read back, not a remembered one.
# - A stamp whose write was refused by a chain found CLOSED (gone, acked, failed: the
#   item the refusal returned, or read) is told at once, by ``told``, before any
#   back-off and also with ``retry=None``: a closed chain is no lost race, and a
#   client with a cached state must be told what a fresh client reading it is.
# - OVERDUE is judged by this client's clock (``status_of(state, now)``), and every
#   write to a chain with a deadline carries ``deadline > :now`` by the same clock, so
#   DynamoDB itself refuses a write that a stale read let through.  TIME_OUT writes
#   once per read state (``Deadlines._time_out``: at most 3 writes, each conditioned on
#   the version read); a late caller gets ``ChainTimedOut`` whoever's write failed it
#   (``told``: ``failed_by_this_call`` says whose), from the chain the write found.
# - A re-sent ``fail`` whose condition failed is taken as landed when the item holds its
#   reason and its ``failed_at`` (this call's clock, to the millisecond): its proof.
# - A re-sent ``delete`` whose condition failed is taken as landed: it carries no token
#   to prove it, but its condition names the generation it read (``chain_id``), so the
#   item it meant is gone, most likely removed by its first send; a chain created
#   under the tag since is not touched.


def sent_of(exc: ClientError) -> Sent:
    """How often a request answered with ``exc`` may have been sent (``_attempts``)."""
    return TWICE if earlier_send_may_have_landed(exc.response) else ONCE


def reply_of(exc: ClientError | BotoCoreError | None) -> tuple[Reply, Sent]:
    """Classify a single write's outcome: the reply, and how it was sent."""
    if exc is None:
        return Reply.OK, ONCE
    code = error_code(exc)
    if isinstance(exc, ClientError) and code == CONDITION_FAILED:
        return Reply.CONDITION_FAILED, sent_of(exc)
    if isinstance(exc, ClientError) and code == TRANSACTION_CONFLICT and sent_of(exc) is ONCE:
        return Reply.TRANSACTION_CONFLICT, ONCE
    if may_have_landed(exc):
        return Reply.UNKNOWN, TWICE
    return Reply.REFUSED, ONCE


def reaches_back(before: Sequence[bytes], now: Sequence[bytes]) -> bool:
    """Does the token list ``now`` still hold the newest tokens of ``before`` (same chain)?

    Writes append their tokens and the list drops the oldest, so if the last two
    tokens of the state a write was planned on are still there, in order and at
    the head of what follows, every token written since is there too: had the
    write landed (it would be the next write), its tokens would be.
    """
    if len(before) < 2 or now.count(before[-1]) != 1:
        return False
    i = now.index(before[-1])
    return i >= 1 and list(now[: i + 1]) == list(before[-(i + 1) :])


def intact(before: Sequence[bytes], now: Sequence[bytes]) -> bool:
    """Does the token list ``now`` still open with all of ``before`` (same chain)?

    Writes append their tokens and drop the oldest, and tokens are unique, so
    while the first token of the planned state is still first, no write since
    dropped one: had the write landed, its tokens would follow ``before``.
    Nothing here asks how long a list may grow: writers with another window cut
    it elsewhere.
    """
    return len(before) >= 1 and list(now[: len(before)]) == list(before)


def seen_of(before: ChainState | None, now: ChainState | None, proof: Sequence[bytes]) -> Seen:
    """Classify the item read back (``now``) against the planned state (``before``)."""
    if now is None:
        return Seen.ABSENT if before is None else Seen.GONE
    if all(token in now.tokens for token in proof):
        return Seen.PROOF
    if before is None or now.chain_id != before.chain_id:
        return Seen.OTHER
    if now.version == before.version:
        return Seen.UNCHANGED
    if intact(before.tokens, now.tokens):
        return Seen.INTACT
    return Seen.REACHES_BACK if reaches_back(before.tokens, now.tokens) else Seen.BEYOND


def status_of(state: ChainState | None, now: float | None = None) -> Status:
    """The chain's status; ``OVERDUE`` only when ``now`` (this client's clock) is given."""
    if state is None:
        return Status.ABSENT
    if state.acked:
        return Status.ACKED
    if state.failed:
        return Status.FAILED
    return Status.OVERDUE if now is not None and state.overdue(now) else Status.LIVE
