"""Several callers' entries in one write: what each caller sees of it.

A write may carry the stamps of several callers on one chain (coalescing), and one
failure may answer several chains' callers; each caller is told its own part.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import AmbiguousWrite, ChainTimedOut, StaleLocalData
from ...stamps import Stamp
from .effects import Entry


def copy_error(error: Exception, cause: BaseException, tag: str | None = None) -> Exception:
    """One error per caller (tracebacks of a shared instance would pile up across tasks);
    ``tag``: the caller's, where one error stands for several chains."""
    if isinstance(error, AmbiguousWrite):  # or UnsettledWrite, caused by its failed read
        copy: Exception = type(error)(tag or error.tag, error.window)
        cause = error.__cause__ or cause
    elif isinstance(error, StaleLocalData):
        copy = StaleLocalData(error.tag, error.attempts)
    elif isinstance(error, ChainTimedOut):
        copy = ChainTimedOut(
            error.tag,
            deadline=error.deadline,
            failed_by_this_call=error.failed_by_this_call,
            state=error.state,
        )
    else:
        return error
    copy.__cause__ = cause
    return copy


def plan_batch(state: Stamp, entries: Sequence[Entry]) -> tuple[list[Stamp], Stamp, int]:
    """Apply ``entries`` in order to ``state`` as one write would.

    Returns the state each entry would have seen had it been applied alone and
    in order, the state to write, and how many entries go into the write: the
    first prefix that reaches zero completes the chain, so the entries after it
    are left out (they would have stamped a completed chain).
    """
    size = len(state)
    acc = int.from_bytes(state, "big")
    seen: list[Stamp] = []
    for entry in entries:
        acc ^= int.from_bytes(entry.stamp, "big")
        seen.append(Stamp(acc.to_bytes(size, "big")))
        if acc == 0:
            break
    return seen, seen[-1] if seen else state, len(seen)
