"""The refusals of bad input: a call given an argument it cannot take, refused before
anything is written or sent (docs/bad-input.md); import them from ``errors``.

Kept apart from ``errors`` only for size, as ``_failures`` is: ``errors`` re-exports every
name here, and each class says ``xor_ack_dynamodb.errors`` as its module.  Several are also
a ``ValueError`` or ``TypeError``, what earlier versions raised.
"""

from __future__ import annotations

import inspect

from ._failures import _MODULE, XorAckError

#: Digits of an int a refusal's message shows whole (Python refuses the ``repr`` of one of
#: over 4300 digits, by default: the refusal would be a raw ``ValueError`` instead).
_SHOWN_DIGITS = 40


def shown(value: object) -> str:
    """``value`` as a refusal's message names it: its ``repr``, a huge int by its size."""
    if isinstance(value, int) and not isinstance(value, bool):
        digits = len(str(abs(value))) if value.bit_length() < 14_000 else None
        if digits is None or digits > _SHOWN_DIGITS:
            about = f"{digits} digits" if digits is not None else f"{value.bit_length()} bits"
            return f"{'a negative' if value < 0 else 'an'} int of {about}"
    return repr(value)


class BufferLengthsUnequal(XorAckError):
    """Stamps of different lengths were combined.  Probably a programming bug."""

    __module__ = _MODULE

    def __init__(self, message: str = "Buffer lengths are not equal") -> None:
        super().__init__(message)


class LessThanTwoBuffers(XorAckError):
    """``xor()`` was called with fewer than two stamps.  Probably a programming bug."""

    __module__ = _MODULE

    def __init__(self, message: str = "At least two buffers expected") -> None:
        super().__init__(message)


class ZeroBufferNoOp(XorAckError):
    """A chain was created or stamped with an all-zero stamp, which changes nothing."""

    __module__ = _MODULE

    def __init__(self, message: str = "Buffer is all zeros") -> None:
        super().__init__(message)


class InvalidStamp(XorAckError):
    """A stamp is not a bytes-like value, or is empty."""

    __module__ = _MODULE


class InvalidTag(XorAckError):
    """A tag is not a non-empty string that DynamoDB can store as a key.

    A tag must be a ``str`` of 1 to 2,048 bytes once encoded as UTF-8 (a lone
    surrogate such as ``"\\ud800"`` cannot be encoded, so it is refused too).
    :meth:`check` is the rule, for every part that takes a tag (the clients, the
    fleet's envelopes).
    """

    __module__ = _MODULE

    MAX_BYTES = 2048  # DynamoDB's limit for a partition key value

    @classmethod
    def check(cls, tag: object) -> str:
        """``tag``, if it is one; ``InvalidTag`` saying what is wrong otherwise."""
        if not isinstance(tag, str) or not tag:
            raise cls(f"a tag must be a non-empty str, not {tag!r}")
        try:
            size = len(tag.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise cls(
                f"a tag must be encodable as UTF-8 (no lone surrogates), not {tag!r}"
            ) from exc
        if size > cls.MAX_BYTES:
            raise cls(f"a tag must be at most {cls.MAX_BYTES} bytes of UTF-8, not {size}")
        return tag


class InvalidTTL(XorAckError, ValueError):
    """A ``ttl`` is not a finite number of seconds above zero (and at most 100 years), or
    not longer than the chain's first deadline (``timeout``, else ``idle_timeout``).

    TTL is garbage collection only: an item must outlive its deadline, so a ``ttl``
    that would end first is refused rather than silently lengthened.

    Also a ``ValueError``, which is what earlier versions raised for a ``ttl`` <= 0.
    """

    __module__ = _MODULE


class InvalidWait(XorAckError, ValueError):
    """``wait()`` was given a ``timeout`` that is not a number >= 0 (``inf``: no limit)
    or a ``poll_interval`` that is not a number of seconds above 0 and at most a year.

    A NaN timeout would otherwise poll forever.  Also a ``ValueError``.
    """

    __module__ = _MODULE


class InvalidTimeout(XorAckError, ValueError):
    """A ``timeout`` or ``idle_timeout`` is not a finite number of seconds above zero
    and at most a year.  Also a ``ValueError``.
    """

    __module__ = _MODULE


class InvalidState(XorAckError, TypeError):
    """``stamp_on`` was given something other than a ``ChainState`` (as ``get()``
    returns) to write on, or ``fail`` a ``chain_id`` that is not a ``ChainState``'s
    (non-empty bytes).  Also a ``TypeError``.
    """

    __module__ = _MODULE


class InvalidListing(XorAckError, ValueError):
    """``list_chains`` / ``sweep`` got a ``status`` other than "open", "overdue" or
    "failed", a ``limit`` that is not an int >= 0, or a ``page_size`` outside 1..100.
    Also a ``ValueError``.
    """

    __module__ = _MODULE


class InvalidReason(XorAckError, ValueError):
    """``fail()`` was given a reason that is not a non-empty ``str``, or one too long for
    the failed chain to be one DynamoDB item (400 KB with its tag, stamp and tokens).

    Also a ``ValueError``, which is what earlier versions raised.
    """

    __module__ = _MODULE


class InvalidArgument(XorAckError, ValueError):
    """An argument the call cannot take that no narrower error names (an acker's id that is
    not an int64, ``ackers=0``, an event name ``Ack.on`` does not know, a tuple-tree id
    stamp of another length, a DynamoDB client's option or ``RetryPolicy`` field it cannot
    take, a ``concurrency`` below 1; ``spark.InvalidArgument`` is one too): the message names it.
    Raised before anything changes.  Also a ``ValueError``, which is what earlier versions
    raised.
    """

    __module__ = _MODULE


class ClientClosed(XorAckError):
    """A client was used after the ``connect()`` block that opened it ended (its connection
    pool closed with it): nothing was sent.  A call still running when the block ended (in
    a task or thread of its own) stops before its next request: ``wrote`` says whether one
    of its writes went out before, and may have landed."""

    __module__ = _MODULE

    def __init__(self, opened_by: str, *, running: bool = False, wrote: bool = False) -> None:
        self.wrote = wrote
        if not running:
            said = "and nothing was sent"
        elif wrote:
            said = (
                "while this call was running: it sent nothing more, but a write it sent "
                "before may have landed (read the chain again to see)"
            )
        else:
            said = "while this call was running: it sent nothing more, and had written nothing"
        super().__init__(
            f"this client was closed when its `{opened_by}` block ended, {said}: use it "
            "inside that block, or open another"
        )


class InvalidToken(XorAckError):
    """An idempotency token is not 1 to 16 bytes (a ``str`` counts as its UTF-8 encoding)."""

    __module__ = _MODULE


#: What a call of an ``async def`` (or an async generator function) does: it makes an object
#: and runs none of the function's code.
_NEVER_RUN = (inspect.iscoroutinefunction, inspect.isasyncgenfunction)


class InvalidListener(XorAckError, TypeError):
    """A listener or callback that would never run: an in-memory tracker's
    ``on(event, listener)`` or an ``events.StreamHandler``'s ``on_<kind>`` given one that
    is not callable, or is ``async def`` (they are called, not awaited).  Also a
    ``TypeError``, which is what earlier versions raised.
    """

    __module__ = _MODULE

    @classmethod
    def check(cls, listener: object, name: str = "a listener") -> None:
        """Refuse ``listener`` unless a plain call runs it; ``name`` says which argument."""
        if not callable(listener):
            raise cls(
                f"{name} must be callable (a function, or an object with __call__), "
                f"not {listener!r}"
            )
        called = type(listener).__call__  # an object's own ``__call__``: async def too
        if any(f(fn) for f in _NEVER_RUN for fn in (listener, called)):
            raise cls(
                f"{name} ({listener!r}) is async, and it is called, not awaited: it would "
                "never run. Pass a plain function that runs or schedules it, e.g. "
                "lambda *args: loop.create_task(fn(*args))"
            )


class InvalidEvent(XorAckError, TypeError):
    """A Lambda handler was given what it cannot take: an ``events.StreamHandler`` an event
    without a ``Records`` list, an ``SqsBatchHandler.record_handler`` something that is no
    SQS record.  Nothing was handled.  Also a ``TypeError``, which is what earlier versions
    raised.
    """

    __module__ = _MODULE


class InvalidMessage(XorAckError, TypeError):
    """``Acker.handle`` was given something that is not an acker message (``Track``,
    ``Anchor``, ``Ok``, ``Fail``, ``ResetTimeout``).  Also a ``TypeError``, which is what
    earlier versions raised.
    """

    __module__ = _MODULE
