"""What the write found -> what the caller is told: the one table of a chain's failures.

``landing``'s tables decide whether a write landed and what happens next (retry,
re-read, fail an overdue chain once, refuse).  Where they refuse because of the
chain itself (it is gone, acked or failed: the error ``TELL`` in their rows), the
error is this table's, looked up from the **item as the write found it**: the one
a refused write returned (``ALL_OLD``), the timeout write's tombstone, or the
operation's own consistent read.  Never from a client's cache: a stale cached state
only leads to a write (or a timeout write) whose refusal brings back the item, so the
same call on the same table state is told the same thing by a client with cached
state and by a fresh one.  Which write failed the chain is known only to the writer
whose own timeout write landed (``TIMED_OUT_HERE``, ``failed_by_this_call=True``).

Every operation reads this table: ``stamp`` (alone or merged), ``stamp_many`` (per
tag, single writes or transactions), ``stamp_on`` / ``stamp_on_many`` (a refusal
that found the chain live, gone or acked is ``ChainMoved`` instead:
``landing.ON_STATE_NOT_LANDED``), ``touch``, ``fail`` and ``wait``; through them the
fleet, the Spark stages and the CLI.  Walked row by row in ``tests/core/test_told.py``.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal, TypeAlias

from ...chain import ChainState
from ...errors import (
    BufferLengthsUnequal,
    ChainFailed,
    ChainTimedOut,
    TagExists,
    TagNotFound,
    WaitTimeout,
    ZeroBufferNoOp,
)
from ...stamps import Stamp, as_stamp
from .landing import TELL, Refusal


class Found(Enum):
    """The chain as the write (or the operation's read) found it."""

    GONE = "no chain: never created, deleted, or expired"
    ACKED = "acked (a tombstone at zero)"
    FAILED = "failed by fail(), with the caller's reason"
    TIMED_OUT = "failed by its deadline (reason timeout), by a sweep or another late write"
    TIMED_OUT_HERE = "failed by its deadline by this call's own timeout write"
    LIVE = "live (wait: still live when its time was up)"


#: The state is returned: ``fail`` on an acked chain (zero wins: it stays acked; see
#: ``.acked``), ``wait`` on an acked chain.
RETURNED: Literal["the state is returned"] = "the state is returned"
Told: TypeAlias = (
    type[TagNotFound]
    | type[ChainFailed]
    | type[ChainTimedOut]
    | type[WaitTimeout]
    | Literal["the state is returned"]
)

#: The operations of the table ("stamp": ``stamp``, ``stamp_many``, merged stamps).
OPERATIONS = ("stamp", "stamp_on", "touch", "fail", "wait")

_CLOSED: dict[Found, Told] = {
    Found.GONE: TagNotFound,
    Found.ACKED: TagNotFound,  # complete: no stamp belongs to it any more
    Found.FAILED: ChainFailed,
    Found.TIMED_OUT: ChainTimedOut,
    Found.TIMED_OUT_HERE: ChainTimedOut,
}

#: (operation, the chain as found) -> what the caller is told.
TOLD: dict[tuple[str, Found], Told] = {
    **{("stamp", found): told for found, told in _CLOSED.items()},
    **{("stamp_on", found): told for found, told in _CLOSED.items()},
    **{("touch", found): told for found, told in _CLOSED.items()},
    ("fail", Found.GONE): TagNotFound,
    ("fail", Found.ACKED): RETURNED,
    # Already failed: the caller's reason was not written, and it is told so
    # (``requested_reason``), the same after a race as in it.
    ("fail", Found.FAILED): ChainFailed,
    ("fail", Found.TIMED_OUT): ChainTimedOut,
    ("fail", Found.TIMED_OUT_HERE): ChainTimedOut,  # too late even to fail: "timeout"
    ("wait", Found.GONE): TagNotFound,
    ("wait", Found.ACKED): RETURNED,
    ("wait", Found.FAILED): ChainFailed,
    ("wait", Found.TIMED_OUT): ChainTimedOut,  # wait only reads: never this call's write
    ("wait", Found.LIVE): WaitTimeout,  # gave up: the chain was left as it was
}

#: The rows where the caller's own write failed the chain (``failed_by_this_call``).
BY_THIS_CALL = frozenset({Found.TIMED_OUT_HERE})


def found_of(state: ChainState | None, mine: bool = False) -> Found:
    """Classify the chain as found; ``mine``: ``state`` is this call's timeout tombstone."""
    if state is None:
        return Found.GONE
    if state.acked:
        return Found.ACKED
    if state.failed:
        if state.reason == "timeout":
            return Found.TIMED_OUT_HERE if mine else Found.TIMED_OUT
        return Found.FAILED
    return Found.LIVE


#: What an acked chain's ``TagNotFound`` says (its tombstone is readable: get() returns it).
ACKED_WHY = (
    "it acked (complete): no stamp belongs to it any more (get() shows it); new work "
    "under this tag is a new chain (create)"
)


def not_found_why(state: ChainState | None, other_generation: bool = False) -> str | None:
    """What a ``TagNotFound`` says is there instead (None: nothing, the seed's words)."""
    if other_generation:
        return (
            "the tag holds another chain than the one this call was for (created since "
            "under the same tag): get() reads it; the chain this call named is closed"
        )
    if state is not None and state.acked:
        return ACKED_WHY
    return None


def tell(
    op: str,
    tag: str,
    state: ChainState | None,
    *,
    mine: bool = False,
    deadline: float | None = None,
    requested_reason: str | None = None,
    waited: float = 0.0,
) -> Exception | None:
    """The error ``TOLD`` gives ``op`` for the chain as found (None: return the state).

    ``mine``: ``state`` is the tombstone of this call's own timeout write, whose
    ``deadline`` it saw pass.  ``requested_reason``: ``fail``'s reason.  ``waited``:
    how long ``wait`` waited.
    """
    found = found_of(state, mine)
    told = TOLD[(op, found)]
    if told == RETURNED:
        return None
    if told is TagNotFound:
        return TagNotFound(tag, not_found_why(state))
    if told is WaitTimeout:
        return WaitTimeout(tag, waited)
    assert state is not None
    by_this_call = found in BY_THIS_CALL
    if told is ChainTimedOut:
        return ChainTimedOut(
            tag,
            deadline=deadline if by_this_call else None,
            failed_by_this_call=by_this_call,
            state=state,
            requested_reason=requested_reason,
        )
    return ChainFailed(
        tag,
        state.reason or "failed",
        failed_by_this_call=by_this_call,
        state=state,
        requested_reason=requested_reason,
    )


def refusal(
    kind: Refusal,
    tag: str,
    state: ChainState | None,
    op: str = "stamp",
    requested_reason: str | None = None,
) -> Exception:
    """The error a ``landing`` row refuses with (not ``REPLY_ERROR``: the caller raises its
    own): ``TELL``'s is this table's, for ``op`` and ``state`` (the chain as found)."""
    if kind == TELL:
        error = tell(op, tag, state, requested_reason=requested_reason)
        assert error is not None, f"{op} is told to return on {state!r}, not to refuse"
        return error
    if kind is TagExists:
        return TagExists(tag)
    if kind is TagNotFound:
        return TagNotFound(tag, not_found_why(state))
    raise ValueError(f"no error of kind {kind!r} is built from a state")


def chain_stamp(value: object) -> Stamp:
    """``as_stamp``, its all-zeros refusal in a client's words (the seed's are bare)."""
    try:
        return as_stamp(value)
    except ZeroBufferNoOp:
        raise ZeroBufferNoOp(
            "a stamp of all zeros changes no chain: stamp with a non-zero byte "
            "(new_stamp() makes one)"
        ) from None


def unequal(tag: str, given: int, theirs: int) -> BufferLengthsUnequal:
    """A stamp the chain cannot take, said with both lengths (the seed's words are bare)."""
    return BufferLengthsUnequal(
        f'a stamp of {given} bytes on "{tag}", whose chain takes stamps of {theirs} bytes '
        f"(the length it was created with): stamp it with {theirs}-byte stamps"
    )
