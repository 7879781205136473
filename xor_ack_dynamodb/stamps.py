"""Stamps: random non-zero byte strings whose XOR is a chain's state.

A chain starts with one stamp.  Whoever finishes a piece of work and starts N
children applies ``xor(own, child_1, ..., child_N)``; each child applies its own
stamp when it finishes.  The state is all zeros exactly when every piece of
work that was started has finished, with a false "done" chance of 2**-bits per
check.
"""

from __future__ import annotations

import secrets

from .errors import BufferLengthsUnequal, InvalidStamp, LessThanTwoBuffers, ZeroBufferNoOp

#: Default stamp size.  128 bits: the chance that unrelated stamps XOR to zero
#: by accident is 2**-128 per check (Storm's 64 bits give 2**-64, which at a
#: billion checks a day is a false ack every ~50 million years; 128 bits makes
#: it a non-question).  It costs nothing measurable: a DynamoDB write is billed
#: per started KiB and the item stays far below that.
DEFAULT_NBYTES = 16

#: The smallest stamp :func:`new_stamp` makes (64 bits, as Storm).
MIN_NBYTES = 8
#: The largest: a DynamoDB item's 400 KB (a chain's item holds its stamp).
MAX_NBYTES = 400 * 1024


class Stamp(bytes):
    """An immutable stamp or chain state; ``.acked`` is True iff every byte is zero
    (except :class:`AppliedBefore`'s)."""

    __slots__ = ()

    @property
    def acked(self) -> bool:
        return not any(self)

    def __repr__(self) -> str:
        return f"Stamp({self.hex()!r}{', acked' if self.acked else ''})"

    @classmethod
    def zeros(cls, nbytes: int) -> Stamp:
        """The completed state of a chain whose stamps are ``nbytes`` long."""
        return cls(bytes(nbytes))


class AppliedBefore(Stamp):
    """What a stamp sent again is told once another stamp completed its chain.

    Its token shows it landed before (a lost response, a re-run task); the chain is
    complete, so the bytes are its zero state, but ``.acked`` is False: the caller whose
    stamp completed the chain was told, and exactly one caller is.
    """

    __slots__ = ()

    @property
    def acked(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"AppliedBefore({self.hex()!r}, chain acked by another stamp)"


#: The types whose ``bytes(...)`` is their buffer: a user's subclass (of ``Stamp`` too) may
#: give ``__bytes__`` its own meaning, so it is read by its buffer, as the C core reads it.
_OWN_BYTES = (bytes, Stamp, AppliedBefore)
_OWN_STAMPS = (Stamp, AppliedBefore)


def _as_bytes(value: object) -> bytes:
    """The bytes of a bytes-like stamp: all of a memoryview's bytes, whatever its item size."""
    if type(value) in _OWN_BYTES:  # no copy: the common cases
        return value  # type: ignore[return-value]
    if isinstance(value, bytes):  # another subclass: its buffer, as the C core reads it
        return memoryview(value).tobytes()  # (a ``__bytes__`` of its own is not its bytes)
    if isinstance(value, (bytearray, memoryview)):
        try:
            return bytes(value)  # a memoryview's ``nbytes``, not its ``len()`` of items
        except ValueError as exc:  # a released memoryview
            raise InvalidStamp(f"a stamp cannot be read: {exc}") from exc
    raise InvalidStamp(
        f"a stamp must be bytes, bytearray or memoryview, not {type(value).__name__}"
    )


def as_stamp(value: object, *, allow_zero: bool = False) -> Stamp:
    """Validate ``value`` as a stamp and return it as a :class:`Stamp` (a copy).

    Raises :class:`InvalidStamp` for anything that is not bytes-like or is empty,
    and :class:`ZeroBufferNoOp` for an all-zero stamp unless ``allow_zero``.  A
    memoryview counts by its bytes (``nbytes``), whatever its format.
    """
    # A subclass of the user's is copied: its ``__bytes__`` may not be its buffer.
    if isinstance(value, Stamp) and type(value) in _OWN_STAMPS:
        stamp = value
    else:
        stamp = Stamp(_as_bytes(value))
    if not stamp:
        raise InvalidStamp("a stamp must not be empty")
    if not allow_zero and not any(stamp):  # not ``.acked``: AppliedBefore says False to it
        raise ZeroBufferNoOp()
    return stamp


def xor(*stamps: bytes) -> Stamp:
    """XOR two or more equal-length stamps; the inputs are never modified.

    Raises :class:`LessThanTwoBuffers` for fewer than two inputs,
    :class:`InvalidStamp` for an input that is not bytes-like, and
    :class:`BufferLengthsUnequal` when any length differs from the first.
    Lengths are byte lengths: a memoryview of 2-byte items counts twice its ``len()``.
    """
    if len(stamps) < 2:
        raise LessThanTwoBuffers()
    data = [_as_bytes(s) for s in stamps]
    size = len(data[0])
    if any(len(d) != size for d in data):
        raise BufferLengthsUnequal()
    # One big-int XOR per input is far faster than a per-byte loop.
    acc = 0
    for d in data:
        acc ^= int.from_bytes(d, "big")
    return Stamp(acc.to_bytes(size, "big"))


def new_stamp(nbytes: int = DEFAULT_NBYTES) -> Stamp:
    """A cryptographically random stamp of ``nbytes`` bytes that is never all zeros."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < MIN_NBYTES:
        raise InvalidStamp(f"nbytes must be an int >= {MIN_NBYTES}, got {nbytes!r}")
    if nbytes > MAX_NBYTES:  # a huge int: an OverflowError or MemoryError from os.urandom
        raise InvalidStamp(f"nbytes must be at most {MAX_NBYTES} (400 KB), got {nbytes!r}")
    while True:
        value = secrets.token_bytes(nbytes)
        if any(value):
            return Stamp(value)
