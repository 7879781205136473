"""The base of every error, the failure vocabulary of a chain and of the ``*_many`` calls;
import them from ``errors``.

Kept apart from ``errors`` only for size: ``errors`` re-exports every name here, and each
class says ``xor_ack_dynamodb.errors`` as its module.  The hierarchy a caller catches by
meaning::

    XorAckError
      ChainFailed            the chain is failed (.reason, .failed_by_this_call, .state)
        ChainTimedOut        ... by its deadline (reason "timeout"); also a ChainTimeout
      ChainTimeout           deprecated name: the base of ChainTimedOut and WaitTimeout
        WaitTimeout          wait() gave up; the chain was left as it was

Which one a call raises is decided by the item as the write found it (``_core/told.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

if TYPE_CHECKING:
    from ..chain import ChainState  # annotations only: chain.py sits above the errors

_MODULE = "xor_ack_dynamodb.errors"
#: What a ``*_many`` call gives per tag that succeeded.
R = TypeVar("R")


def _rebuilt(cls: type[XorAckError], args: tuple[object, ...], state: dict[str, object]) -> Any:
    """An error as pickled: its message and attributes, without calling its ``__init__``."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class XorAckError(Exception):
    """Base class of every error this package raises on purpose.

    Every one survives pickling (a process pool, Dask, Ray hand it to the caller), though
    most take other arguments than the message they pass to ``Exception``.
    """

    __module__ = _MODULE

    #: The message in the ``xor-ack`` command's words (its options, not the keyword
    #: arguments ``str(self)`` names), where the two differ; None: ``str(self)`` is both.
    #: Written by the raise site, which knows both (``with_cli``); the CLI prints it.
    cli_message: str | None = None

    @property
    def code(self) -> str:
        return type(self).__name__

    def with_cli(self, message: str) -> Self:
        """This error, saying ``message`` when the CLI tells it (``cli_message``)."""
        self.cli_message = message
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuilt, (type(self), self.args, dict(self.__dict__)))


class _TagError(XorAckError):
    __module__ = _MODULE

    def __init__(self, tag: str, message: str) -> None:
        super().__init__(message)
        self.tag = tag


class _ChainTimeout(_TagError):
    """A timeout of either kind: the base of :class:`ChainTimedOut` and :class:`WaitTimeout`.

    Deprecated as a name (importing it warns): it meant two situations, a chain failed by
    its deadline and a ``wait()`` that gave up on a chain left as it was.  Catch
    ``ChainTimedOut`` (a ``ChainFailed``) or ``WaitTimeout`` instead; ``except
    ChainTimeout`` still catches both, as before.
    """

    __module__ = _MODULE

    def __init__(self, tag: str, seconds: float | None = None, *, deadline: float | None = None):
        if deadline is not None:
            message = f'"{tag}" missed its deadline ({deadline:.3f}) and was failed ("timeout")'
        else:
            message = f'"{tag}" was not acked within {seconds or 0:g} s'
        super().__init__(tag, message)
        self.seconds = seconds
        self.deadline = deadline


class ChainFailed(_TagError):
    """The chain is failed: by ``fail()`` (``.reason``: the caller's) or by its deadline
    (:class:`ChainTimedOut`, reason ``"timeout"``).  Nothing of this call was written.

    What the caller is told is decided by the item as the write found it, never by a
    client's cache (the table ``TOLD`` in ``_core/told.py``).  ``.failed_by_this_call``:
    True only when this very call's write failed the chain (a late write's timeout
    write); ``.state``: the failed chain as found (``None`` where not read);
    ``.requested_reason``: a ``fail(tag, reason)`` that found the chain already failed
    gives its own reason here (it was not written).  Replay the input under a new chain.
    """

    __module__ = _MODULE

    def __init__(
        self,
        tag: str,
        reason: str,
        *,
        failed_by_this_call: bool = False,
        state: ChainState | None = None,
        requested_reason: str | None = None,
    ) -> None:
        if requested_reason is not None and not failed_by_this_call:
            message = (
                f'"{tag}" was already failed ({reason}) when fail() came with reason '
                f'"{requested_reason}", which was not written; replay its input under a new chain'
            )
        else:
            message = f'"{tag}" failed ({reason}); replay its input under a new chain'
        _TagError.__init__(self, tag, message)
        self.reason = reason
        self.failed_by_this_call = failed_by_this_call
        self.state = state
        self.requested_reason = requested_reason

    @property
    def failed_at(self) -> float | None:
        """When the chain was failed (epoch seconds), if the item was read."""
        return None if self.state is None else self.state.failed_at


class ChainTimedOut(ChainFailed, _ChainTimeout):
    """The chain was failed by its deadline (reason ``"timeout"``): a ``ChainFailed``.

    Raised by ``stamp``, ``stamp_on``, ``touch``, ``fail`` and the ``*_many`` forms (per
    tag) when the write met the chain past its deadline, and by ``wait``.  Whoever's
    write failed it (a sweep, another late write, this one: ``.failed_by_this_call``),
    every caller on the same table state gets this type.  ``.deadline``: the deadline
    this call saw pass (set when ``.failed_by_this_call``; the tombstone keeps none).
    """

    __module__ = _MODULE

    def __init__(
        self,
        tag: str,
        *,
        deadline: float | None = None,
        failed_by_this_call: bool = False,
        state: ChainState | None = None,
        requested_reason: str | None = None,
    ) -> None:
        ChainFailed.__init__(
            self,
            tag,
            "timeout",
            failed_by_this_call=failed_by_this_call,
            state=state,
            requested_reason=requested_reason,
        )
        if failed_by_this_call:
            due = "" if deadline is None else f" ({deadline:.3f})"
            instead = "" if requested_reason is None else f' instead of "{requested_reason}"'
            self.args = (
                f'"{tag}" missed its deadline{due} and this call failed it with reason '
                f'"timeout"{instead}; nothing else of this call was written: replay its input '
                "under a new chain",
            )
        elif requested_reason is None:
            self.args = (
                f'"{tag}" missed its deadline and was failed with reason "timeout" (by a sweep '
                "or another late write); nothing of this call was written: replay its input "
                "under a new chain",
            )
        self.deadline = deadline
        self.seconds = None


class WaitTimeout(_ChainTimeout):
    """``wait(tag, timeout=...)`` gave up: the chain was left as it was (still live).

    Not a ``ChainFailed``: nothing was written and the chain may still ack.  ``.seconds``:
    how long the call waited.  Wait again, or ``fail()`` the chain if it is stuck.
    """

    __module__ = _MODULE

    def __init__(self, tag: str, seconds: float) -> None:
        _ChainTimeout.__init__(self, tag, seconds)
        self.args = (
            f'"{tag}" was not acked within {seconds:g} s; the chain was left as it was '
            "(wait again, or fail it)",
        )


class _ManyFailed(XorAckError, Generic[R]):
    """Some tags of a ``*_many`` call failed; ``.results`` and ``.errors`` say which."""

    __module__ = _MODULE

    #: What did not happen to the tags in ``.errors`` ("stamps did not land", ...).
    what = "did not succeed"

    def __init__(self, results: Mapping[str, R], errors: Mapping[str, BaseException]) -> None:
        first = next(iter(errors.items()))
        super().__init__(
            f"{len(errors)} of {len(errors) + len(results)} {self.what} "
            f'(first: "{first[0]}": {first[1]})'
        )
        self.results: dict[str, R] = dict(results)
        self.errors: dict[str, BaseException] = dict(errors)


class StampManyFailed(_ManyFailed[bytes]):
    """Some stamps of a ``stamp_many`` call did not land; the rest did.

    ``.results`` maps each tag that landed to its new state, ``.errors`` each tag
    that did not to its error; retry only the tags in ``.errors``.
    """

    __module__ = _MODULE

    what = "stamps did not land"


class CreateManyFailed(_ManyFailed[bytes]):
    """Some chains of a ``create_many`` call were not created; the rest were.

    ``.results`` maps each tag created to its stamp, ``.errors`` each tag that
    was not to its error (``TagExists`` for a live chain under the tag,
    ``CorruptItem`` for an item this client cannot read).
    """

    __module__ = _MODULE

    what = "chains were not created"


class GetManyFailed(_ManyFailed["ChainState | None"]):
    """Some items of a ``get_many`` call could not be read as chains; the rest were.

    ``.results`` maps every readable tag to its state (``None``: no chain), as
    ``get_many`` would have returned it; ``.errors`` maps each other tag to its
    ``CorruptItem``.  ``get_many`` returns normally when every item is readable.
    """

    __module__ = _MODULE

    what = "items could not be read"


class SweepIncomplete(_ManyFailed["ChainState"]):
    """A sweep failed every overdue chain it could, but some chains it could not.

    Raised at the end of the sweep, after every other chain was failed: one chain's
    error (a write refused for another reason than a race, a damaged item, a chain that
    kept moving) never stops a sweep.  ``.results`` maps each tag this sweep failed to
    its tombstone (``.failed``: them as ``sweep()`` returns them), ``.errors`` each tag it
    could not fail to its error.  The next sweep tries those again.
    """

    __module__ = _MODULE
    what = "overdue chains could not be failed"

    @property
    def failed(self) -> list[ChainState]:
        """The tombstones this sweep made, as ``sweep()`` returns them."""
        return list(self.results.values())


class SweepStopped(XorAckError):
    """A sweep stopped part way: a page of the overdue index could not be listed or read,
    after the sweep had failed chains (or met chains it could not fail).

    The chains of the shards before (and of that shard's earlier pages) were failed:
    ``.failed`` holds the tombstones this sweep made, so that they are reported (the
    sweeper's log line is the record of which chains timed out); ``.errors`` the chains
    it could not fail before it stopped, as ``SweepIncomplete``'s; ``.shard`` the index
    shard it stopped at.  DynamoDB's error is the ``__cause__``.  The next sweep goes over
    every shard again.
    """

    __module__ = _MODULE

    def __init__(
        self,
        failed: list[ChainState],
        errors: Mapping[str, BaseException],
        shard: int,
        cause: BaseException,
    ) -> None:
        super().__init__(
            f"the sweep stopped at index shard {shard}: {type(cause).__name__}: {cause} "
            f"({len(failed)} overdue chain(s) failed before it; the next sweep goes on)"
        )
        self.failed = list(failed)
        self.errors: dict[str, BaseException] = dict(errors)
        self.shard = shard


class OnFailedRaised(XorAckError):
    """A sweep's ``on_failed`` raised for some of the chains it failed.

    Each chain on its own: the sweep still failed every overdue chain it could, and called
    ``on_failed`` for each of them.  ``.failed``: the tombstones this sweep made, as
    ``sweep()`` returns them; ``.errors``: each tag whose ``on_failed`` raised, to what it
    raised (the first is the ``__cause__``).
    """

    __module__ = _MODULE

    def __init__(self, failed: list[ChainState], errors: Mapping[str, BaseException]) -> None:
        tag, first = next(iter(errors.items()))
        super().__init__(
            f"on_failed raised for {len(errors)} of the {len(failed)} chain(s) this sweep "
            f'failed (first: "{tag}": {type(first).__name__}: {first}); every overdue chain '
            "was still failed and on_failed called for each: .failed holds them all"
        )
        self.failed = list(failed)
        self.errors: dict[str, BaseException] = dict(errors)


_ChainTimeout.__name__ = _ChainTimeout.__qualname__ = "ChainTimeout"
