"""Every input checked before anything is sent, and DynamoDB's limits the checks enforce.

Also how ``*_many`` calls are cut into requests (``chunked``, ``transaction_bytes``)
and how their outcomes come back to the caller (``collect_many``, ``unwrap``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypedDict

from ...chain import WRITE_TOKEN_BYTES, ChainState, check_token
from ...errors import (
    CreateManyFailed,
    InvalidArgument,
    InvalidReason,
    InvalidStamp,
    InvalidState,
    InvalidTag,
    InvalidTimeout,
    InvalidToken,
    InvalidTTL,
    InvalidWait,
    StampManyFailed,
)
from ...errors._refusals import shown
from ...lifecycle import TIMEOUT_REASON
from ...stamps import Stamp
from .effects import Entry, Outcome
from .told import chain_stamp

MAX_TRANSACTION_ITEMS = 100  # DynamoDB's limit of actions per TransactWriteItems
#: DynamoDB's limit of the aggregate size of a transaction's items (4 MiB); a
#: transaction over it is refused whole (``ValidationException``), every time.
MAX_TRANSACTION_BYTES = 4 * 1024 * 1024
MAX_ITEM_BYTES = 400 * 1024  # DynamoDB's limit of one item
#: What a chain's item holds besides its tag, stamp and token list, at most:
#: attribute names, chain id, version and timestamps (an estimate on the safe side).
ITEM_OVERHEAD_BYTES = 512
MAX_BATCH_GET = 100  # DynamoDB's limit of keys per BatchGetItem
MAX_UNPROCESSED_ROUNDS = 8
MAX_TAG_BYTES = InvalidTag.MAX_BYTES  # DynamoDB's limit for a partition key value
MAX_TTL = 100 * 365 * 86_400.0  # 100 years: far beyond any chain, and a valid DynamoDB number
#: The longest ``timeout`` / ``idle_timeout``: a year (a deadline is for work, not archives).
MAX_TIMEOUT = 366 * 86_400.0
DEFAULT_TOKEN_WINDOW = 32
#: The largest ``token_window`` any chain fits with (``check_fits``): the smallest chain,
#: a 1-byte tag and stamp, with that many 8-byte tokens in one 400 KB item.
MAX_TOKEN_WINDOW = (MAX_ITEM_BYTES - ITEM_OVERHEAD_BYTES - 2 - 1) // WRITE_TOKEN_BYTES
DEFAULT_TOMBSTONE_TTL = 86_400.0


def check_tag(tag: object) -> str:
    """Validate a tag: a non-empty ``str`` of at most 2,048 bytes of (strict) UTF-8."""
    return InvalidTag.check(tag)


def _check_seconds(
    name: str,
    value: object,
    most: float,
    error: type[InvalidTTL | InvalidTimeout | InvalidArgument],
    span: str,
    least: float = 0.0,
) -> float | None:
    """None, or a finite number of seconds in (0, ``most``] (``least`` and more, if given);
    ``error`` otherwise."""
    if value is None:
        return None
    # The range first: it refuses nan and the infinities too, and compares an int too big
    # for a float (where math.isfinite would raise a bare OverflowError).
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (value >= least if least else value > 0)
        or not value <= most
    ):
        lowest = f"at least {least:g}" if least else "above 0"
        raise error(
            f"{name} must be a number of seconds {lowest} and at most {most:.0f}{span},"
            f" not {shown(value)}"
        )
    return float(value)


def check_ttl(ttl: object) -> float | None:
    """Validate a chain's ``ttl``: None, or a finite number of seconds in (0, MAX_TTL]."""
    return _check_seconds("ttl", ttl, MAX_TTL, InvalidTTL, "")


#: The shortest timeout: a deadline is kept to the millisecond, and an ``idle_timeout`` is
#: stored as it is given (DynamoDB refuses a number under 1e-130).
MIN_TIMEOUT = 0.001


def check_timeout(name: str, value: object) -> float | None:
    """Validate a ``timeout`` / ``idle_timeout``: None, or seconds in [MIN_TIMEOUT,
    MAX_TIMEOUT]."""
    return _check_seconds(name, value, MAX_TIMEOUT, InvalidTimeout, " (a year)", MIN_TIMEOUT)


class Lifetime(TypedDict, total=False):
    """A chain's deadline and expiry, as ``create`` and ``create_many`` take them (seconds).

    ``timeout``: the chain must ack by now + ``timeout``; ``idle_timeout``: each
    landed stamp moves the deadline to now + ``idle_timeout`` (also the first
    deadline without a ``timeout``); ``ttl``: garbage collection only, longer than
    the first deadline.  Each is None (the default) or a number of seconds.
    """

    ttl: float | None
    timeout: float | None
    idle_timeout: float | None


def check_deadline(lifetime: Mapping[str, object], call: str = "create") -> Lifetime:
    """Validate ``create``'s ``ttl``, ``timeout`` and ``idle_timeout`` together.

    The first deadline is ``timeout`` (else ``idle_timeout``) from now; a ``ttl``
    must end after it (TTL is garbage collection, never the deadline).  Another
    keyword is a ``TypeError``, as for any function.
    """
    check_keywords(call, lifetime, Lifetime)
    checked = Lifetime(
        ttl=check_ttl(lifetime.get("ttl")),
        timeout=check_timeout("timeout", lifetime.get("timeout")),
        idle_timeout=check_timeout("idle_timeout", lifetime.get("idle_timeout")),
    )
    ttl, span = checked["ttl"], first_deadline(checked)
    if ttl is not None and span is not None and ttl <= span:
        raise InvalidTTL(
            f"ttl ({ttl:g} s) must be longer than the first deadline ({span:g} s):"
            " TTL only collects garbage after the deadline; pass a longer ttl, or none"
        )
    return checked


def check_keywords(call: str, given: Mapping[str, object], accepted: type) -> None:
    """A ``TypeError`` for a keyword that the TypedDict ``accepted`` (``**options``) lacks."""
    unknown = sorted(set(given) - set(accepted.__annotations__))
    if unknown:
        raise TypeError(f"{call}() got an unexpected keyword argument {unknown[0]!r}")


def first_deadline(lifetime: Lifetime) -> float | None:
    """Seconds from the create to the chain's first deadline: ``timeout``, else ``idle_timeout``."""
    timeout = lifetime.get("timeout")
    return timeout if timeout is not None else lifetime.get("idle_timeout")


#: The longest pause between two reads of ``wait()``: a year (a clock's sleep takes no more
#: than some 292 years; nothing waits that long between reads on purpose).
MAX_POLL_INTERVAL = 366 * 86_400.0


def check_wait(timeout: object, poll_interval: object) -> None:
    """Validate ``wait()``'s durations: a timeout >= 0 (inf allowed), a finite interval > 0."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
        raise InvalidWait(f"timeout must be a number of seconds >= 0, not {shown(timeout)}")
    if isinstance(timeout, int) and timeout > sys.float_info.max:
        raise InvalidWait(
            f"timeout must be a number of seconds a float can hold, not {shown(timeout)}: "
            "pass math.inf to wait without end"
        )
    if (
        isinstance(poll_interval, bool)
        or not isinstance(poll_interval, (int, float))
        or not 0 < poll_interval <= MAX_POLL_INTERVAL
    ):
        raise InvalidWait(
            f"poll_interval must be a number of seconds above 0 and at most"
            f" {MAX_POLL_INTERVAL:.0f} (a year), not {shown(poll_interval)}"
        )


def check_reason(reason: object) -> str:
    """Validate ``fail()``'s reason: a non-empty ``str`` that UTF-8 can encode, not the
    deadline's own ``"timeout"``."""
    if not isinstance(reason, str) or not reason:
        raise InvalidReason(f"reason must be a non-empty str, not {reason!r}")
    if reason == TIMEOUT_REASON:  # what tells a chain its deadline failed from the rest
        raise InvalidReason(
            f'reason "{TIMEOUT_REASON}" is the one a chain\'s deadline fails it with (told as '
            "ChainTimedOut, a timed_out event): pass a reason of your own, e.g. "
            '"timed out calling the API"'
        )
    try:
        reason.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidReason(
            f"reason must be encodable as UTF-8 (no lone surrogates), not {reason!r}"
        ) from exc
    return reason


def check_reason_fits(state: ChainState | None, reason: str) -> None:
    """``fail()``'s reason on the chain it read: ``InvalidReason`` if the failed chain could
    not be one DynamoDB item (DynamoDB would refuse the write with a ``ValidationException``).

    A lower bound of the item's size (its tag, stamp and tokens, the reason and its name):
    what it refuses DynamoDB would refuse too.
    """
    if state is None:
        return
    size = len(reason.encode("utf-8")) + len("reason")
    size += len(state.tag.encode("utf-8")) + len(state.stamp) + sum(map(len, state.tokens))
    if size > MAX_ITEM_BYTES:
        raise InvalidReason(
            f"a reason of {len(reason.encode('utf-8'))} bytes does not fit the chain's DynamoDB"
            f" item ({MAX_ITEM_BYTES} bytes with its tag, stamp and tokens); pass a shorter reason"
        )


def check_state(state: object) -> ChainState:
    """``stamp_on``'s state: a ``ChainState`` (as ``get()`` returns it) of a valid tag."""
    if not isinstance(state, ChainState):
        raise InvalidState(
            f"stamp_on writes on a ChainState (what get() returns), not {type(state).__name__}"
        )
    check_tag(state.tag)
    return state


def check_chain_id(chain_id: object) -> bytes | None:
    """``fail``'s ``chain_id``: None, or the non-empty bytes of a ``ChainState.chain_id``."""
    if chain_id is None:
        return None
    if not isinstance(chain_id, (bytes, bytearray)) or not chain_id:
        raise InvalidState(f"chain_id is a ChainState's chain_id (bytes), not {chain_id!r}")
    return bytes(chain_id)


def check_rows(
    rows: object, size: int, error: type[InvalidStamp | InvalidArgument], shape: str
) -> list[tuple[Any, ...]]:
    """``rows`` as a list of ``size``-tuples (each ``shape``), else ``error`` saying so."""
    if isinstance(rows, (str, bytes, bytearray, memoryview, Mapping)) or not isinstance(
        rows, Iterable
    ):
        raise error(f"pass a list of {shape} tuples, not a {type(rows).__name__}")
    checked = list(rows)
    for row in checked:
        if not isinstance(row, (tuple, list)) or len(row) != size:
            got = f"{len(row)}-tuple" if isinstance(row, (tuple, list)) else type(row).__name__
            raise error(f"pass a list of {shape} tuples (token None for none), not of a {got}")
    return [tuple(row) for row in checked]


def on_state_entries(
    tag: str, stamps: Sequence[tuple[bytes, bytes | str | None]], window: int
) -> list[Entry]:
    """``stamp_on``'s stamps and tokens: 1 to ``window // 2`` of them, tokens distinct.

    So they always go out in one write (a write carries at most half the window of
    tokens, and a repeated token would wait for the next).
    """
    pairs = check_rows(stamps, 2, InvalidStamp, "(stamp, token)")
    entries = [one_entry(tag, stamp, token) for stamp, token in pairs]
    if not 1 <= len(entries) <= max(1, window // 2):
        raise InvalidStamp(
            f"stamp_on_many writes 1 to {max(1, window // 2)} stamps (half the token window)"
            f" in one write, not {len(entries)}; split them"
        )
    tokens = [entry.token for entry in entries if entry.token is not None]
    if len(set(tokens)) != len(tokens):
        raise InvalidToken("stamp_on_many got one token twice: each stamp's token is its own")
    return entries


def one_entry(tag: object, stamp: object, token: object) -> Entry:
    """Validate one ``stamp()`` call before anything is sent."""
    entry = Entry(chain_stamp(stamp), check_token(token))
    check_tag(tag)
    return entry


def unwrap(outcome: Outcome) -> Stamp:
    """A caller's outcome: its new state, or its error raised."""
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def _check_mapping(stamps: object) -> Mapping[Any, Any]:
    if not isinstance(stamps, Mapping):
        raise InvalidStamp(f"stamps must be a mapping {{tag: stamp}}, not {type(stamps).__name__}")
    return stamps


def many_entries(stamps: Mapping[str, bytes], tokens: object) -> dict[str, Entry]:
    """Validate every input of ``stamp_many`` before anything is sent."""
    stamps = _check_mapping(stamps)
    if tokens is None:
        tokens = {}
    if not isinstance(tokens, Mapping):
        raise InvalidToken(f"tokens must be a mapping {{tag: token}}, not {type(tokens).__name__}")
    unknown = set(tokens) - set(stamps)
    if unknown:
        raise InvalidToken(f"tokens given for tags that have no stamp: {sorted(unknown)!r}")
    return {tag: one_entry(tag, value, tokens.get(tag)) for tag, value in stamps.items()}


def create_entries(
    stamps: Mapping[str, bytes],
    lifetime: Mapping[str, object],
    token_window: int = DEFAULT_TOKEN_WINDOW,
) -> tuple[dict[str, Stamp], Lifetime]:
    """Validate every input of ``create_many`` before anything is sent."""
    checked = check_deadline(lifetime, "create_many")
    values = {check_tag(tag): chain_stamp(value) for tag, value in _check_mapping(stamps).items()}
    for tag, value in values.items():
        check_fits(tag, value, token_window)
    return values, checked


def check_fits(tag: str, stamp: Stamp, token_window: int) -> None:
    """Refuse a stamp whose chain could not be one DynamoDB item (400 KB, with its tokens)."""
    if transaction_bytes(tag, stamp, token_window) > MAX_ITEM_BYTES:
        raise InvalidStamp(
            f"a stamp of {len(stamp)} bytes under a tag of {len(tag.encode())} bytes does not"
            f" fit one DynamoDB item ({MAX_ITEM_BYTES} bytes with its token_window={token_window}"
            " tokens); use shorter stamps or tags, or a smaller token_window"
        )


def check_tags(tags: object) -> list[str]:
    """Validate the tags of ``get_many``: an iterable of tags (a lone str is refused)."""
    if isinstance(tags, (str, bytes)) or not isinstance(tags, Iterable):
        raise InvalidTag(f"tags must be an iterable of str, not {type(tags).__name__}")
    return [check_tag(tag) for tag in tags]


def collect_many(
    entries: Mapping[str, Any],
    outcomes: Sequence[Outcome],
    failed: type[StampManyFailed | CreateManyFailed] = StampManyFailed,
) -> dict[str, Stamp]:
    """The result of a ``*_many`` call, or ``failed`` (results and errors) if any tag failed."""
    results: dict[str, Stamp] = {}
    errors: dict[str, BaseException] = {}
    for tag, outcome in zip(entries, outcomes, strict=True):
        if isinstance(outcome, Exception):
            errors[tag] = outcome
        else:
            results[tag] = outcome
    if errors:
        raise failed(dict(results), errors)
    return results


def chunked(
    items: Mapping[str, Any],
    size: int,
    weigh: Callable[[str, Any], int] | None = None,
    budget: int = 0,
) -> list[dict[str, Any]]:
    """``items`` in consecutive pieces of at most ``size`` (one transaction or batch each).

    With ``weigh``, a piece also closes before its weights would sum to more than
    ``budget`` (an item heavier than ``budget`` goes alone).
    """
    pieces: list[dict[str, Any]] = []
    piece: dict[str, Any] = {}
    load = 0
    for key, value in items.items():
        weight = weigh(key, value) if weigh is not None else 0
        if piece and (len(piece) >= size or (weigh is not None and load + weight > budget)):
            pieces.append(piece)
            piece, load = {}, 0
        piece[key] = value
        load += weight
    if piece:
        pieces.append(piece)
    return pieces


def transaction_bytes(tag: str, value: Stamp | Entry, token_window: int) -> int:
    """An upper estimate of what one chain's write adds to a transaction's 4 MiB.

    The tag counts twice (the key, and the item it names), then the stamp, the
    token list and the rest of the item.  On the safe side: a piece closed early
    costs one more request, a piece over the limit is refused every time.
    """
    stamp = value.stamp if isinstance(value, Entry) else value
    tag_bytes = len(tag.encode("utf-8"))
    return 2 * tag_bytes + len(stamp) + WRITE_TOKEN_BYTES * token_window + ITEM_OVERHEAD_BYTES
