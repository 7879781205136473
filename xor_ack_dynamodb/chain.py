"""The chain's vocabulary: what a chain is as its readers see it, and the token rule.

:class:`ChainState` is one chain's snapshot (``get()`` returns it; errors carry it);
``check_token`` / ``token_digest`` are the rule every idempotency token follows.
Both trackers' layers and every integration read these; this module imports only
the rest of the vocabulary (``errors``, ``stamps``).
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from numbers import Real

from .errors import InvalidArgument, InvalidToken
from .errors._refusals import shown
from .stamps import Stamp

MAX_TOKEN_BYTES = 16
WRITE_TOKEN_BYTES = 8


def moment_of(call: str, now: object) -> float:
    """The moment ``call`` (``overdue(now)``, ...) is asked about: ``now`` (epoch seconds,
    a finite number) or, for None, the clock's; ``InvalidArgument`` for anything else."""
    if now is None:
        return write_moment(time.time())
    try:  # an int too big for a float: OverflowError, as nan and the infinities are refused
        finite = not isinstance(now, bool) and isinstance(now, Real) and math.isfinite(now)
    except OverflowError:
        finite = False
    if not finite:
        raise InvalidArgument(
            f"{call} takes epoch seconds (a finite number) or None, not {shown(now)}"
        )
    return write_moment(float(now))  # type: ignore[arg-type]


def write_moment(now: float) -> float:
    """The moment a write at clock time ``now`` is made at: to the millisecond.

    Every write's ``:now`` (its conditions, the times it stores) is this, so a chain is
    overdue or expired for a reader exactly when it is for a write made at the same time.
    """
    return round(now, 3)


def check_token(token: object) -> bytes | None:
    """Validate an idempotency token and return its 8-byte digest, as the item keeps it.

    Items keep fixed-size digests (BLAKE2b, 64 bits) so the recent tokens are one
    small binary attribute; two different tokens of one chain collide with a chance
    of about window**2 / 2**65.
    """
    if token is None:
        return None
    if isinstance(token, str):
        try:
            data = token.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidToken(
                f"a str token must be encodable as UTF-8 (no lone surrogates), not {token!r}"
            ) from exc
        size = f"{len(data)} bytes of UTF-8"
    elif isinstance(token, (bytes, bytearray)):
        data, size = bytes(token), f"{len(token)} bytes"
    else:  # named by its type: a memoryview's repr is its address
        raise InvalidToken(
            f"a token must be bytes or a str (1 to {MAX_TOKEN_BYTES} bytes),"
            f" not a{'n' if type(token).__name__[0] in 'aeiou' else ''} {type(token).__name__}"
        )
    if not 1 <= len(data) <= MAX_TOKEN_BYTES:
        shown = repr(token) if len(repr(token)) <= 80 else f"{repr(token)[:60]}..."
        raise InvalidToken(
            f"a token must be 1 to {MAX_TOKEN_BYTES} bytes (or a str of as many UTF-8 bytes),"
            f" not {shown} ({size})"
        )
    return hashlib.blake2b(data, digest_size=WRITE_TOKEN_BYTES, person=b"xor-ack").digest()


@dataclass(frozen=True)
class ChainState:
    """What ``get()`` returns: a snapshot of one chain."""

    tag: str
    stamp: Stamp
    chain_id: bytes
    version: int
    tokens: tuple[bytes, ...]
    created_at: float
    updated_at: float
    acked_at: float | None = None
    failed_at: float | None = None
    reason: str | None = None
    expires_at: float | None = None
    #: Epoch seconds by which the chain must ack (None: no deadline); live chains only.
    deadline: float | None = None
    #: Seconds each landed stamp moves the deadline ahead to (None: a fixed deadline).
    idle_timeout: float | None = None

    @property
    def acked(self) -> bool:
        """Every stamp of the chain landed: the state is all zeros."""
        return self.stamp.acked

    @property
    def failed(self) -> bool:
        return self.failed_at is not None

    @property
    def live(self) -> bool:
        """Neither acked nor failed: stamps may still land."""
        return not self.acked and not self.failed

    def overdue(self, now: float | None = None) -> bool:
        """Live past its deadline: no write lands on it any more, a sweep fails it ("timeout")."""
        moment = moment_of("overdue(now)", now)
        return self.live and self.deadline is not None and self.deadline <= moment

    def holds(self, token: bytes | str) -> bool:
        """Is a stamp with this idempotency ``token`` among the chain's last writes?

        The chain keeps the digests of its last ``token_window`` writes' tokens
        (``token_digest``): True means that stamp landed; False, that it did not land
        within that window.
        """
        return token_digest(token) in self.tokens

    def expired(self, now: float | None = None) -> bool:
        """Past its TTL (``expires_at``): as good as deleted, whatever TTL has done yet."""
        moment = moment_of("expired(now)", now)
        return self.expires_at is not None and self.expires_at <= moment


def token_digest(token: bytes | str) -> bytes:
    """The 8 bytes a chain keeps in ``tokens`` for a stamp's idempotency ``token``.

    ``InvalidToken`` for a token a stamp would refuse (1 to 16 bytes, or a str of as
    many UTF-8 bytes), and for None: a stamp sent without a token leaves nothing to find.
    """
    digest = check_token(token)
    if digest is None:
        raise InvalidToken(
            "a token is needed to find a stamp: pass the token= the stamp was sent with "
            "(a stamp sent without one leaves no trace in the chain)"
        )
    return digest
