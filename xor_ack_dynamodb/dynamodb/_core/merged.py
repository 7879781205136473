"""Several callers' entries in one write: what each caller sees of it.

A write may carry the stamps of several callers on one chain (coalescing), and one
failure may answer several chains' callers; each caller is told its own part.
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Sequence
from typing import TypeVar, cast

from ...errors import AmbiguousWrite, ChainTimedOut, StaleLocalData
from ...stamps import Stamp
from .effects import Entry

E = TypeVar("E", bound=BaseException)


def copy_error(error: Exception, cause: BaseException, tag: str | None = None) -> Exception:
    """One error per caller (tracebacks of a shared instance would pile up across tasks);
    ``tag``: the caller's, where one error stands for several chains."""
    if isinstance(error, AmbiguousWrite):  # or UnsettledWrite, caused by its failed read
        copy: Exception = type(error)(tag or error.tag, error.window)
        cause = error.__cause__ or cause
    elif isinstance(error, StaleLocalData):
        copy = StaleLocalData(error.tag, error.attempts, error.write)
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


def one_each(error: E, count: int) -> list[E]:
    """``error`` as the outcome of ``count`` callers: the first gets it, each other one of
    its own (``for_each_caller``) of the same type."""
    return [error, *(cast(E, for_each_caller(error)) for _ in range(count - 1))]


def for_each_caller(error: BaseException) -> BaseException:
    """A copy of ``error`` for one more caller (one instance raised in many tasks or threads
    gathers all their tracebacks and contexts on itself), caused as ``error`` is, or by it:
    ``copy_error``'s for the package's own, else a faithful copy (botocore's errors copy
    from their response), else ``error`` itself; a cancellation or an interrupt as is."""
    if not isinstance(error, Exception):
        return error
    cause = error.__cause__ or error
    copied = copy_error(error, cause)
    if copied is not error:
        return copied
    try:
        copied = _copy.copy(error)
        if type(copied) is not type(error) and hasattr(error, "operation_name"):
            # botocore's class of an error code (``ResourceNotFoundException``) copies as
            # a plain ``ClientError``: that class again, from the response
            copied = type(error)(getattr(error, "response", None), error.operation_name)
    except Exception:
        return error
    if type(copied) is not type(error) or str(copied) != str(error):
        return error
    vars(copied).update(vars(error))  # what was noted on it (``_attempts``: never sent)
    copied.__traceback__ = None
    copied.__cause__ = cause
    return copied


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
