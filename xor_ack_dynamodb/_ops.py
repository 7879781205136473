"""The sans-I/O core of the DynamoDB clients.

Every operation (create, stamp, fail, delete, get, wait) is a generator that
yields *effects* -- a :class:`Call` to send to DynamoDB or a :class:`Sleep` --
and receives what came back: the response dict for a call (or the exception,
thrown into the generator), ``None`` after a sleep.  Its return value is the
operation's result.  The async client (``dynamodb.py``) and the sync client
(``sync.py``) only run these generators: which request, which condition, what
a response or an error means and when to retry is decided here, once.

How a stamp never lands twice
-----------------------------
botocore re-sends a request whose response was lost (connection reset, 5xx).
If the first send had landed, the re-send's condition fails, and a naive client
would re-read the item and XOR the stamp in a second time.  Here every write
carries a random write token (and the caller's idempotency tokens, if any)
that is kept in the item's ``tokens`` (the last ``token_window`` tokens),
and a failed condition returns the current item
(``ReturnValuesOnConditionCheckFailure=ALL_OLD``, with a consistent read as the
fallback where a server ignores it).  If the item holds the write's token, the
write landed: the stamp is reported applied, not re-applied.  If the token is
absent and the list still reaches back to the state the write was planned on
(the list never overflowed, or its oldest tokens are still the newest two of that
state, so every write since is in it), it did not land, which is proven, and the
stamp is retried.

What counts as ambiguous: only a request one of whose sends has an *unknown*
outcome (``_attempts`` watches botocore's ``needs-retry`` event, which sees
every send): a lost or reset connection, a read timeout, a 5xx, a 2xx that
botocore retried anyway.  A send refused with a 4xx (throttling, validation,
a failed condition) or whose connection could not be opened did not land, so a
write throttled three times and then refused by its condition is a plain lost
race, not a possible double.  When a send of unknown outcome exists, the token
is absent, and more writes landed since the planned state than the token
window holds, the client refuses to guess (``AmbiguousWrite``).  A transport
error that botocore gave up on is settled by a consistent read (unless no send
ever connected: then it is raised as proven not landed).
"""

from __future__ import annotations

import hashlib
import math
import random
import secrets
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from botocore.exceptions import BotoCoreError, ClientError

from . import item as I
from ._core import landing as D
from ._core.landing import (
    CONDITION_FAILED,
    TRANSACTION_CANCELED,
    Reply,
    Status,
    Step,
    Verdict,
)
from .errors import (
    AmbiguousWrite,
    BufferLengthsUnequal,
    ChainFailed,
    ChainTimeout,
    CorruptItem,
    CreateManyFailed,
    GetManyFailed,
    InvalidReason,
    InvalidStamp,
    InvalidTag,
    InvalidToken,
    InvalidTTL,
    InvalidWait,
    StaleLocalData,
    StampManyFailed,
    TagExists,
    TagNotFound,
    TransactionItemRejected,
)
from .item import ChainState
from .retry import DEFAULT_RETRY, RetryPolicy
from .stamps import Stamp, as_stamp

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
MAX_TAG_BYTES = 2048  # DynamoDB's limit for a partition key value
MAX_TOKEN_BYTES = 16
MAX_TTL = 100 * 365 * 86_400.0  # 100 years: far beyond any chain, and a valid DynamoDB number
WRITE_TOKEN_BYTES = 8
DEFAULT_TOKEN_WINDOW = 32
DEFAULT_TOMBSTONE_TTL = 86_400.0


#: Errors of one chain that a client hands to the callers of that chain's write (its
#: entries of a ``*_many`` call, its merged stamps) as their outcome, not to everyone.
ENTRY_ERRORS = (ClientError, BotoCoreError, CorruptItem)


@dataclass(frozen=True)
class Call:
    """Send ``op`` (a low-level DynamoDB client method name) with ``params``.

    ``batch``: a stamp write, which a client with ``batch_writes`` may send in a
    PartiQL batch with other chains' writes (``_batches``); its outcome is the same.
    """

    op: str
    params: dict[str, Any]
    batch: bool = False


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds`` before going on."""

    seconds: float


Effect: TypeAlias = Call | Sleep
Op: TypeAlias = Generator[Effect, Any, Any]
#: After a cancelled transaction: fresh states, items that met another writer, rejected items.
CancelReport: TypeAlias = tuple[dict[str, ChainState | None], set[str], dict[str, Exception]]
#: What each stamp of a batch came to: its new state, or the error that kept it out.
Outcome: TypeAlias = Stamp | Exception


@dataclass
class ClientStats:
    """Counters of one client: requests sent, writes, stamps applied, races lost."""

    requests: Counter[str] = field(default_factory=Counter)
    writes: int = 0
    stamps: int = 0
    conflicts: int = 0
    retries: int = 0
    resent_writes_recognised: int = 0
    cache_refreshes: int = 0  # writes planned on an old remembered state, planned again
    batched_writes: int = 0  # writes sent as statements of a BatchExecuteStatement

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    def snapshot(self) -> dict[str, int]:
        return {
            "requests": self.total_requests,
            "writes": self.writes,
            "stamps": self.stamps,
            "conflicts": self.conflicts,
            "retries": self.retries,
            "resent_writes_recognised": self.resent_writes_recognised,
            "cache_refreshes": self.cache_refreshes,
            "batched_writes": self.batched_writes,
            **{f"requests.{op}": n for op, n in sorted(self.requests.items())},
        }


@dataclass(frozen=True)
class Entry:
    """One caller's stamp inside a (possibly coalesced) write."""

    stamp: Stamp
    token: bytes | None = None


def check_tag(tag: object) -> str:
    """Validate a tag: a non-empty ``str`` of at most 2,048 bytes of (strict) UTF-8."""
    if not isinstance(tag, str) or not tag:
        raise InvalidTag(f"a tag must be a non-empty str, not {tag!r}")
    try:
        size = len(tag.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidTag(
            f"a tag must be encodable as UTF-8 (no lone surrogates), not {tag!r}"
        ) from exc
    if size > MAX_TAG_BYTES:
        raise InvalidTag(f"a tag must be at most {MAX_TAG_BYTES} bytes of UTF-8, not {size}")
    return tag


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
            token = token.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidToken(
                f"a str token must be encodable as UTF-8 (no lone surrogates), not {token!r}"
            ) from exc
    if not isinstance(token, (bytes, bytearray)) or not 1 <= len(token) <= MAX_TOKEN_BYTES:
        raise InvalidToken(
            f"a token must be 1 to {MAX_TOKEN_BYTES} bytes (or a str of as many UTF-8 bytes),"
            f" not {token!r}"
        )
    return hashlib.blake2b(bytes(token), digest_size=WRITE_TOKEN_BYTES, person=b"xor-ack").digest()


def check_ttl(ttl: object) -> float | None:
    """Validate a chain's ``ttl``: None, or a finite number of seconds in (0, MAX_TTL]."""
    if ttl is None:
        return None
    if (
        isinstance(ttl, bool)
        or not isinstance(ttl, (int, float))
        or not math.isfinite(ttl)
        or not 0 < ttl <= MAX_TTL
    ):
        raise InvalidTTL(
            f"ttl must be a number of seconds above 0 and at most {MAX_TTL:.0f}, not {ttl!r}"
        )
    return float(ttl)


def check_wait(timeout: object, poll_interval: object) -> None:
    """Validate ``wait()``'s durations: a timeout >= 0 (inf allowed), a finite interval > 0."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
        raise InvalidWait(f"timeout must be a number of seconds >= 0, not {timeout!r}")
    if (
        isinstance(poll_interval, bool)
        or not isinstance(poll_interval, (int, float))
        or not 0 < poll_interval < math.inf
    ):
        raise InvalidWait(
            f"poll_interval must be a finite number of seconds above 0, not {poll_interval!r}"
        )


def check_reason(reason: object) -> str:
    """Validate ``fail()``'s reason: a non-empty ``str`` that UTF-8 can encode."""
    if not isinstance(reason, str) or not reason:
        raise InvalidReason(f"reason must be a non-empty str, not {reason!r}")
    try:
        reason.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidReason(
            f"reason must be encodable as UTF-8 (no lone surrogates), not {reason!r}"
        ) from exc
    return reason


def one_entry(tag: object, stamp: object, token: object) -> Entry:
    """Validate one ``stamp()`` call before anything is sent."""
    entry = Entry(as_stamp(stamp), check_token(token))
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
    stamps: Mapping[str, bytes], ttl: object, token_window: int = DEFAULT_TOKEN_WINDOW
) -> dict[str, Stamp]:
    """Validate every input of ``create_many`` before anything is sent."""
    check_ttl(ttl)
    values = {check_tag(tag): as_stamp(value) for tag, value in _check_mapping(stamps).items()}
    for tag, value in values.items():
        check_fits(tag, value, token_window)
    return values


def check_fits(tag: str, stamp: Stamp, token_window: int) -> None:
    """Refuse a stamp whose chain could not be one DynamoDB item (400 KB, with its tokens)."""
    if transaction_bytes(tag, stamp, token_window) > MAX_ITEM_BYTES:
        raise InvalidStamp(
            f"a stamp of {len(stamp)} bytes under a tag of {len(tag.encode())} bytes does not"
            f" fit one DynamoDB item ({MAX_ITEM_BYTES} bytes with its tokens); use shorter stamps"
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


_error_code = D.error_code
_reaches_back = D.reaches_back


def _copy_error(error: Exception, cause: BaseException) -> Exception:
    """One error per caller (tracebacks of a shared instance would pile up across tasks)."""
    if isinstance(error, AmbiguousWrite):
        copy: Exception = AmbiguousWrite(error.tag, error.window)
    elif isinstance(error, StaleLocalData):
        copy = StaleLocalData(error.tag, error.attempts)
    else:
        return error
    copy.__cause__ = cause
    return copy


def _moved(before: ChainState | None, now: ChainState | None) -> bool:
    """Is ``now`` a later state of the chain ``before`` was (another write landed since)?"""
    return (
        before is not None
        and now is not None
        and now.chain_id == before.chain_id
        and now.version > before.version
    )


#: The expression placeholder of each attribute; a request names the ones it uses.
_ATTRIBUTES = {
    "#s": I.STAMP,
    "#c": I.CHAIN_ID,
    "#v": I.VERSION,
    "#t": I.TOKENS,
    "#ca": I.CREATED_AT,
    "#u": I.UPDATED_AT,
    "#a": I.ACKED_AT,
    "#f": I.FAILED_AT,
    "#r": I.REASON,
    "#e": I.EXPIRES_AT,
}


def _names(*placeholders: str, key: str | None = None) -> dict[str, str]:
    """``ExpressionAttributeNames`` for ``placeholders`` (and ``#pk``: the key attribute)."""
    names = {p: _ATTRIBUTES[p] for p in placeholders}
    if key is not None:
        names["#pk"] = key
    return names


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


class Chains:
    """Decision logic for one table; both clients drive its generators.

    Holds the configuration, a bounded cache of the last state seen per tag
    (so an uncontended stamp costs one request), and the statistics.
    """

    def __init__(
        self,
        *,
        table: str,
        partition_key: str = I.DEFAULT_PARTITION_KEY,
        retry: RetryPolicy | None = DEFAULT_RETRY,
        token_window: int = DEFAULT_TOKEN_WINDOW,
        tombstone_ttl: float = DEFAULT_TOMBSTONE_TTL,
        cache_size: int = 10_000,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        if not table or not isinstance(table, str):
            raise ValueError("table must be a non-empty string")
        if not partition_key or not isinstance(partition_key, str):
            raise ValueError("partition_key must be a non-empty string")
        if token_window < 2:
            raise ValueError("token_window must be >= 2")
        if tombstone_ttl <= 0:
            raise ValueError("tombstone_ttl must be > 0")
        self.table = table
        self.partition_key = partition_key
        self.retry = retry
        self.token_window = token_window
        self.tombstone_ttl = tombstone_ttl
        self.cache_size = max(0, cache_size)
        self.clock = clock
        self.monotonic = monotonic
        self.rng = rng or random.Random()
        self.stats = ClientStats()
        self._cache: OrderedDict[str, ChainState] = OrderedDict()

    # -- cache -------------------------------------------------------------

    def cached(self, tag: str) -> ChainState | None:
        state = self._cache.get(tag)
        if state is not None:
            self._cache.move_to_end(tag)
        return state

    def remember(self, state: ChainState | None, tag: str) -> None:
        if state is None or not state.live or self.cache_size == 0:
            self._cache.pop(tag, None)
            return
        self._cache[tag] = state
        self._cache.move_to_end(tag)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def forget(self, tag: str) -> None:
        self._cache.pop(tag, None)

    # -- requests ----------------------------------------------------------

    def _key(self, tag: str) -> dict[str, Any]:
        return {self.partition_key: {"S": tag}}

    def _now(self) -> float:
        return round(self.clock(), 3)

    def _expiry(self, now: float, ttl: float) -> dict[str, str]:
        return {"N": str(math.ceil(now + ttl))}

    def _decode(
        self, raw: dict[str, Any] | None, now: float | None = None, tag: str | None = None
    ) -> ChainState | None:
        """The live or closed chain ``raw`` holds; None if absent or expired.

        Raises ``CorruptItem`` for an item this client cannot read (``I.decode``).
        """
        if not raw:
            return None
        state = I.decode(raw, self.partition_key, tag)
        return None if state.expired(now if now is not None else self.clock()) else state

    def transactions(self, items: Mapping[str, Stamp | Entry]) -> list[dict[str, Any]]:
        """``items`` (stamps or entries by tag) in pieces that fit one transaction each.

        At most 100 chains and, by :func:`transaction_bytes`, 4 MiB per piece.
        """
        return chunked(
            items,
            MAX_TRANSACTION_ITEMS,
            lambda tag, value: transaction_bytes(tag, value, self.token_window),
            MAX_TRANSACTION_BYTES,
        )

    def _read(self, tag: str) -> Generator[Effect, Any, ChainState | None]:
        self.stats.requests["GetItem"] += 1
        response = yield Call(
            "get_item", {"TableName": self.table, "Key": self._key(tag), "ConsistentRead": True}
        )
        state = self._decode(response.get("Item"), tag=tag)
        self.remember(state, tag)
        return state

    def _create_params(
        self, tag: str, value: Stamp, ttl: float | None, now: float, token: bytes, chain_id: bytes
    ) -> dict[str, Any]:
        """The conditional write that starts a chain (a free tag, or a closed or expired one)."""
        names = _names(*_ATTRIBUTES, key=self.partition_key)
        values: dict[str, Any] = {
            ":s": {"B": bytes(value)},
            ":c": {"B": chain_id},
            ":v": {"N": "1"},
            ":t": {"B": token},
            ":now": {"N": str(now)},
        }
        update = "SET #s = :s, #c = :c, #v = :v, #t = :t, #ca = :now, #u = :now"
        if ttl is not None:
            update += ", #e = :exp"
            values[":exp"] = self._expiry(now, ttl)
            update += " REMOVE #a, #f, #r"
        else:
            update += " REMOVE #a, #f, #r, #e"
        return {
            "TableName": self.table,
            "Key": self._key(tag),
            "UpdateExpression": update,
            "ConditionExpression": (
                "attribute_not_exists(#pk) OR attribute_exists(#a) OR attribute_exists(#f)"
                " OR #e <= :now"
            ),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    @staticmethod
    def _created_expiry(params: dict[str, Any]) -> float | None:
        exp = params["ExpressionAttributeValues"].get(":exp")
        return None if exp is None else float(exp["N"])

    def _created_state(
        self, tag: str, value: Stamp, params: dict[str, Any], now: float, token: bytes
    ) -> ChainState:
        chain_id = params["ExpressionAttributeValues"][":c"]["B"]
        expires_at = self._created_expiry(params)
        return ChainState(tag, value, chain_id, 1, (token,), now, now, expires_at=expires_at)

    def _stamp_params(
        self, tag: str, state: ChainState, new_state: Stamp, tokens: tuple[bytes, ...], now: float
    ) -> tuple[dict[str, Any], ChainState]:
        """The conditional write of one stamp (or merged stamps), and the state it leads to."""
        names = _names("#s", "#v", "#t", "#u", "#c")
        values: dict[str, Any] = {
            ":s": {"B": bytes(new_state)},
            ":v": {"N": str(state.version + 1)},
            ":old": {"N": str(state.version)},
            ":c": {"B": state.chain_id},
            ":t": {"B": b"".join(tokens)},
            ":now": {"N": str(now)},
        }
        update = "SET #s = :s, #v = :v, #t = :t, #u = :now"
        acked_at = expires_at = None
        if new_state.acked:
            names.update(_names("#a", "#e"))
            values[":exp"] = self._expiry(now, self.tombstone_ttl)
            update += ", #a = :now, #e = :exp"
            acked_at, expires_at = now, float(values[":exp"]["N"])
        params = {
            "TableName": self.table,
            "Key": self._key(tag),
            "UpdateExpression": update,
            "ConditionExpression": "#v = :old AND #c = :c",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        after = ChainState(
            tag,
            new_state,
            state.chain_id,
            state.version + 1,
            tokens,
            state.created_at,
            now,
            acked_at=acked_at,
            expires_at=expires_at,
        )
        return params, after

    def _after_failed_condition(
        self, tag: str, exc: ClientError
    ) -> Generator[Effect, Any, ChainState | None]:
        """The item as it is now: from ALL_OLD, or a consistent read where the server omits it.

        An absent ``Item`` means either that the item does not exist or that the
        server ignores ``ReturnValuesOnConditionCheckFailure``; the read tells.
        """
        raw = exc.response.get("Item")
        if raw:
            state = self._decode(raw, tag=tag)
            self.remember(state, tag)
            return state
        return (yield from self._read(tag))

    @staticmethod
    def _reply_step(op: str, exc: ClientError | BotoCoreError) -> D.Row:
        """``REPLY_STEP``'s row for a single write of ``op`` that failed with ``exc``."""
        return D.REPLY_STEP[(op, *D.reply_of(exc))]

    def _settle(
        self, tag: str, exc: ClientError | BotoCoreError, op: str = "stamp"
    ) -> Generator[Effect, Any, ChainState | None]:
        """After a write failed for another reason than its condition: the item as it is now.

        A client error on the first and only send proves the write did not land,
        so it is raised as it is.  A transport error, or any error after botocore
        re-sent the request, leaves it open: a consistent read settles it.
        """
        if self._reply_step(op, exc)[1] is Step.REFUSE:
            raise exc
        return (yield from self._read(tag))

    def _settle_many(
        self, tags: Sequence[str], exc: ClientError | BotoCoreError
    ) -> Generator[Effect, Any, tuple[dict[str, ChainState | None], dict[str, CorruptItem]]]:
        """:meth:`_settle` for a transaction that failed without a cancellation.

        Returns the states, and the items that cannot be read (``CorruptItem``) apart.
        """
        if self._reply_step("transact", exc)[1] is Step.REFUSE:
            raise exc
        return (yield from self._read_many(tags))

    def _landed(
        self,
        before: ChainState | None,
        now: ChainState | None,
        tokens: Sequence[bytes],
        tag: str,
        maybe_twice: bool,
    ) -> bool:
        """Did a write land, given the item ``now``?  ``tokens``: the write's proof.

        The proof is the write's own random token when it has one, else every caller
        token it carried (a write adds all of its tokens at once).  A write whose
        only send failed its condition did not land, whatever tokens the item holds:
        a caller token found there was applied by someone else (a re-run task), which
        the caller of this method reports as already applied, not as this write.
        True or False only when it is proven; raises AmbiguousWrite otherwise.
        """
        sent = D.Sent.MAYBE_TWICE if maybe_twice else D.Sent.ONCE
        seen = D.seen_of(before, now, tokens, self.token_window)
        verdict = D.WRITE_VERDICT[(sent, seen)]
        if verdict is not Verdict.UNKNOWN:
            return verdict is Verdict.LANDED
        raise AmbiguousWrite(tag, self.token_window)

    # -- operations ----------------------------------------------------------

    def get(self, tag: str) -> Generator[Effect, Any, ChainState | None]:
        """The chain's state (strongly consistent), or None when there is none."""
        check_tag(tag)
        return (yield from self._read(tag))

    def create(
        self, tag: str, stamp: bytes, ttl: float | None = None
    ) -> Generator[Effect, Any, Stamp]:
        """Start a chain: a conditional write that only a free tag lets through."""
        check_tag(tag)
        value = as_stamp(stamp)
        ttl = check_ttl(ttl)
        check_fits(tag, value, self.token_window)
        attempt = 0
        while True:
            attempt += 1
            now = self._now()
            token = secrets.token_bytes(WRITE_TOKEN_BYTES)
            chain_id = secrets.token_bytes(8)
            params = self._create_params(tag, value, ttl, now, token, chain_id)
            self.stats.requests["UpdateItem"] += 1
            self.stats.writes += 1
            try:
                yield Call("update_item", params)
            except (ClientError, BotoCoreError) as exc:
                if not isinstance(exc, ClientError) or _error_code(exc) != CONDITION_FAILED:
                    current = yield from self._settle(tag, exc, "create")
                    if current is not None and token in current.tokens:
                        self.stats.resent_writes_recognised += 1
                        return value
                    raise
                current = yield from self._after_failed_condition(tag, exc)
                if current is not None and token in current.tokens:
                    self.stats.resent_writes_recognised += 1
                    return value  # our own create, re-sent after a lost response
                step, _ = D.NOT_LANDED_STEP[("create", D.status_of(current))]
                if step is Step.REFUSE or attempt >= 3:
                    # A live chain holds the tag; or, at the third write, the tag keeps
                    # being completed, failed or expired between condition and read.
                    raise TagExists(tag) from exc
                continue
            self.remember(self._created_state(tag, value, params, now, token), tag)
            return value

    def stamp_batch(
        self,
        tag: str,
        entries: Sequence[Entry],
        known: ChainState | None = None,
        known_fresh: bool = True,
    ) -> Generator[Effect, Any, list[Outcome]]:
        """XOR ``entries`` (in order) into the chain with one conditional write per attempt.

        Returns, per entry, the state it brought the chain to, or the error that
        kept it out: a typed error, or the botocore error of a write that is
        proven not to have landed (safe to retry).  A read error before the
        first write propagates.

        A write planned on a remembered state (the cache, or ``known`` with
        ``known_fresh=False``) that fails its condition did not lose a race to a
        concurrent writer: the cache was old.  It is planned again once on the
        item the failure returned, as if this call had read it, and not counted
        as a lost race (``StaleLocalData`` with ``retry=None`` means a write landed
        between this call's own read and its write).
        """
        check_tag(tag)
        outcomes: list[Outcome | None] = [None] * len(entries)
        pending = list(range(len(entries)))
        started = self.monotonic()
        # ``known``: a state the caller has (just read, unless ``known_fresh`` is False).
        state = known or self.cached(tag)
        remembered = state is not None and (known is None or not known_fresh)
        if state is not None and state.expired(self.clock()):
            self.forget(tag)
            state = None
        if state is None:
            remembered = False
            state = yield from self._read(tag)
        attempt = 0
        while pending:
            if state is not None:
                # A stamp whose token the chain already holds landed before (a re-sent
                # task, a retried call): report the current state, apply nothing.
                done = [i for i in pending if entries[i].token in state.tokens]
                for i in done:
                    outcomes[i] = state.stamp
                pending = [i for i in pending if outcomes[i] is None]
                if not pending:
                    break
            status = D.status_of(state)
            if status is not Status.LIVE:  # gone, acked or failed: no stamp belongs to it
                _, kind = D.NOT_LANDED_STEP[("stamp", status)]
                for i in pending:
                    outcomes[i] = D.refusal(kind, tag, state)
                break
            assert state is not None
            batch: list[int] = []
            later: list[int] = []
            batch_tokens: set[bytes] = set()
            for i in pending:
                token = entries[i].token
                if len(entries[i].stamp) != len(state.stamp):
                    outcomes[i] = BufferLengthsUnequal()
                elif token is not None and (
                    token in batch_tokens or len(batch_tokens) >= self.token_window // 2
                ):
                    # A repeated token waits for the next write (where it is found
                    # applied); a write never carries more tokens than half the window.
                    later.append(i)
                else:
                    if token is not None:
                        batch_tokens.add(token)
                    batch.append(i)
            if not batch:
                break
            seen, new_state, n = plan_batch(state.stamp, [entries[i] for i in batch])
            included, excluded = batch[:n], batch[n:]
            caller_tokens = [t for i in included if (t := entries[i].token) is not None]
            write_tokens = list(caller_tokens)
            if len(caller_tokens) < len(included):
                write_tokens.append(secrets.token_bytes(WRITE_TOKEN_BYTES))
                proof = write_tokens[-1:]  # a token no other write carries
            else:
                proof = write_tokens  # caller tokens only: all of them must be there
            tokens = (state.tokens + tuple(write_tokens))[-self.token_window :]
            attempt += 1
            now = self._now()
            params, planned = self._stamp_params(tag, state, new_state, tokens, now)
            self.stats.requests["UpdateItem"] += 1
            self.stats.writes += 1
            landed = True
            refused = False  # the write failed its condition (not a transaction's conflict)
            current: ChainState | None = None
            try:
                yield Call("update_item", params, batch=True)
            except (ClientError, BotoCoreError) as exc:
                failure: Exception | None = None
                reply, sent = D.reply_of(exc)
                if reply is Reply.CONDITION_FAILED:
                    assert isinstance(exc, ClientError)
                    refused = True
                    current = yield from self._after_failed_condition(tag, exc)
                    twice = sent is D.Sent.MAYBE_TWICE
                    try:
                        landed = self._landed(state, current, proof, tag, twice)
                    except AmbiguousWrite as ambiguous:
                        failure = ambiguous
                elif reply is Reply.TRANSACTION_CONFLICT:
                    # A transaction held the item (another client's ``stamp_many``
                    # with transact=True): refused before anything was written, a race.
                    current = yield from self._read(tag)
                    landed = False
                else:
                    # Not a lost race: an error of DynamoDB or of the transport. The
                    # stamps did not land if that is proven, and the caller gets the
                    # error (and may retry them); if it is not, AmbiguousWrite.
                    try:
                        current = yield from self._settle(tag, exc)
                        landed = self._landed(state, current, proof, tag, True)
                    except AmbiguousWrite as ambiguous:
                        failure = ambiguous
                    except (ClientError, BotoCoreError) as read_error:
                        failure = read_error
                    if not landed and failure is None:
                        failure = exc
                if failure is not None:
                    for i in batch + later:
                        outcomes[i] = _copy_error(failure, exc)
                    break
                if landed:
                    self.stats.resent_writes_recognised += 1
            if landed:
                for i, value in zip(included, seen, strict=False):
                    outcomes[i] = value
                self.stats.stamps += len(included)
                for i in excluded:
                    outcomes[i] = TagNotFound(tag)  # the batch's own earlier stamps completed it
                if current is None or current.version <= state.version:
                    current = planned
                self.remember(current, tag)
                pending, state, attempt, started = later, current, 0, self.monotonic()
                continue
            if remembered and refused and current is not None:
                # The remembered state was old, not raced: plan again on the item now.
                remembered = False
                self.stats.cache_refreshes += 1
                attempt -= 1
                pending, state = batch + later, current
                continue
            # Lost a race: ``current`` is the fresh state; back off and try again.
            if not (yield from self._back_off(attempt, started)):
                for i in batch + later:
                    outcomes[i] = StaleLocalData(tag, attempt)
                break
            pending, state = batch + later, current
        return [o if o is not None else TagNotFound(tag) for o in outcomes]

    # -- many chains per request ----------------------------------------------

    def get_many(self, tags: Iterable[str]) -> Generator[Effect, Any, dict[str, ChainState | None]]:
        """Strongly consistent states of many chains, 100 per BatchGetItem request.

        Keys DynamoDB leaves unprocessed (throttling) are asked again with backoff;
        after ``MAX_UNPROCESSED_ROUNDS`` they are read one by one.  Raises
        ``GetManyFailed`` (the readable states, and a ``CorruptItem`` per item that
        cannot be read) if any item is not a chain this client can read.
        """
        states, corrupt = yield from self._read_many(check_tags(tags))
        if corrupt:
            raise GetManyFailed(states, corrupt)
        return states

    def _read_many(
        self, tags: Sequence[str]
    ) -> Generator[Effect, Any, tuple[dict[str, ChainState | None], dict[str, CorruptItem]]]:
        """:meth:`get_many`'s reads: the states, and the items that cannot be read apart."""
        unique = list(dict.fromkeys(tags))
        found: dict[str, ChainState | None] = {}
        corrupt: dict[str, CorruptItem] = {}
        for start in range(0, len(unique), MAX_BATCH_GET):
            keys = [self._key(tag) for tag in unique[start : start + MAX_BATCH_GET]]
            rounds = 0
            while keys and rounds < MAX_UNPROCESSED_ROUNDS:
                if rounds:
                    yield Sleep(DEFAULT_RETRY.delay(rounds, self.rng))
                rounds += 1
                self.stats.requests["BatchGetItem"] += 1
                response = yield Call(
                    "batch_get_item",
                    {"RequestItems": {self.table: {"Keys": keys, "ConsistentRead": True}}},
                )
                now = self.clock()
                for raw in response.get("Responses", {}).get(self.table, []):
                    tag = raw[self.partition_key]["S"]  # the key asked for: always a string
                    try:
                        found[tag] = self._decode(raw, now, tag)
                    except CorruptItem as exc:
                        corrupt[tag] = exc
                unprocessed = response.get("UnprocessedKeys", {}).get(self.table, {})
                keys = list(unprocessed.get("Keys", []))
            for key in keys:
                tag = key[self.partition_key]["S"]
                try:
                    found[tag] = yield from self._read(tag)
                except CorruptItem as exc:
                    corrupt[tag] = exc
        result = {tag: found.get(tag) for tag in unique if tag not in corrupt}
        for tag, state in result.items():
            self.remember(state, tag)
        for tag in corrupt:
            self.forget(tag)
        return result, corrupt

    def _transact(
        self, params: Sequence[dict[str, Any]]
    ) -> Generator[Effect, Any, ClientError | BotoCoreError | None]:
        """Send Update actions as one transaction: the error, or None when it went through."""
        self.stats.requests["TransactWriteItems"] += 1
        self.stats.writes += len(params)
        try:
            yield Call("transact_write_items", {"TransactItems": [{"Update": p} for p in params]})
        except (ClientError, BotoCoreError) as exc:
            return exc
        return None

    def _after_cancel(
        self, tags: Sequence[str], cancelled: ClientError
    ) -> Generator[Effect, Any, CancelReport]:
        """What a cancelled transaction tells of each item: its state now, or an error.

        Returns (fresh states of the items whose condition failed, the items that
        met another writer, errors of items that cannot be written at all, caused
        by ``cancelled``).  Items the server gave no ``Item`` for are read
        (BatchGetItem), all of them when it gave no reasons that fit the items.
        """
        reasons = list(cancelled.response.get("CancellationReasons") or [])
        if len(reasons) != len(tags):
            reasons = []
        fresh: dict[str, ChainState | None] = {}
        to_read: list[str] = []
        errors: dict[str, Exception] = {}
        contended: set[str] = set()
        if not reasons:
            to_read = list(tags)
            contended = set(tags)
        for tag, reason in zip(tags, reasons, strict=False):
            code = reason.get("Code") or "None"
            step, _ = D.CANCELLATION.get(code, D.OTHER_CANCELLATION)
            if step is Step.REREAD:  # its condition failed: the item tells the rest
                contended.add(tag)
                raw = reason.get("Item")
                if raw:
                    try:
                        fresh[tag] = self._decode(raw, tag=tag)
                    except CorruptItem as damaged:
                        errors[tag] = damaged
                        continue
                    self.remember(fresh[tag], tag)
                else:
                    to_read.append(tag)
            elif step is Step.RETRY:
                contended.add(tag)
            elif step is Step.REFUSE:
                errors[tag] = TransactionItemRejected(tag, code, str(reason.get("Message", "")))
                errors[tag].__cause__ = cancelled
        if to_read:
            states, corrupt = yield from self._read_many(to_read)
            fresh.update(states)
            errors.update(corrupt)
        return fresh, contended, errors

    def stamp_transact(
        self, entries: Mapping[str, Entry]
    ) -> Generator[Effect, Any, dict[str, Outcome]]:
        """One stamp on each of up to 100 chains, written as one transaction per attempt.

        The same decisions as :meth:`stamp_batch`, per chain: states come from the
        cache or one BatchGetItem, each chain's write is conditioned on the version
        it was planned on, a stamp whose token a chain holds is not applied again.
        A cancelled transaction applied nothing: the items whose condition failed
        come back with their current state (``ALL_OLD``), chains that refuse the
        stamp (failed, complete, gone) leave the batch, and the rest is sent again
        after a backoff.  Once a single chain is left, it goes on as
        :meth:`stamp_batch` (a plain write costs half the write units).
        """
        if len(entries) > MAX_TRANSACTION_ITEMS:
            raise ValueError(f"at most {MAX_TRANSACTION_ITEMS} chains per transaction")
        outcomes: dict[str, Outcome] = {}
        states: dict[str, ChainState | None] = {}
        unknown: list[str] = []
        remembered: set[str] = set()  # planned on the cache, not on this call's own read
        now_wall = self.clock()
        for tag in entries:
            state = self.cached(tag)
            if state is None or state.expired(now_wall):
                unknown.append(tag)
            else:
                states[tag] = state
                remembered.add(tag)
        if unknown:
            found, corrupt = yield from self._read_many(unknown)
            states.update(found)
            outcomes.update(corrupt)  # an item this client cannot read: nothing is written
        pending = [tag for tag in entries if tag not in outcomes]
        attempt = 0
        started = self.monotonic()
        while pending:
            writes: list[tuple[str, bytes, dict[str, Any], ChainState]] = []
            for tag in pending:
                entry, state = entries[tag], states.get(tag)
                status = D.status_of(state)
                if state is not None and entry.token is not None and entry.token in state.tokens:
                    outcomes[tag] = state.stamp  # landed before: apply nothing
                elif state is None or status is not Status.LIVE:
                    outcomes[tag] = D.refusal(D.NOT_LANDED_STEP[("stamp", status)][1], tag, state)
                elif len(entry.stamp) != len(state.stamp):
                    outcomes[tag] = BufferLengthsUnequal()
                else:
                    token = entry.token or secrets.token_bytes(WRITE_TOKEN_BYTES)
                    tokens = (*state.tokens, token)[-self.token_window :]
                    _, new_state, _ = plan_batch(state.stamp, [entry])
                    params, planned = self._stamp_params(tag, state, new_state, tokens, self._now())
                    writes.append((tag, token, params, planned))
            if len(writes) <= 1:
                for tag, _, _, _ in writes:
                    try:
                        (outcomes[tag],) = yield from self.stamp_batch(
                            tag, [entries[tag]], states.get(tag), tag not in remembered
                        )
                    except CorruptItem as damaged:
                        outcomes[tag] = damaged
                break
            attempt += 1
            tags = [tag for tag, _, _, _ in writes]
            error = yield from self._transact([params for _, _, params, _ in writes])
            if error is None:
                for tag, _, _, planned in writes:
                    outcomes[tag] = planned.stamp
                    self.remember(planned, tag)
                self.stats.stamps += len(writes)
                break
            if _error_code(error) != TRANSACTION_CANCELED:
                # Not a cancellation: a transport or server error, settled as one write's.
                try:
                    current, corrupt = yield from self._settle_many(tags, error)
                except (ClientError, BotoCoreError) as failure:
                    outcomes.update(dict.fromkeys(tags, failure))
                    break
                outcomes.update(corrupt)
                self._judge_resent(writes, states, current, outcomes, error)
                for tag in tags:
                    outcomes.setdefault(tag, error)
                break
            assert isinstance(error, ClientError)
            fresh, contended, rejected = yield from self._after_cancel(tags, error)
            outcomes.update(rejected)
            if D.sent_of(error) is D.Sent.MAYBE_TWICE:
                # An earlier send of this very transaction may have landed (all of it).
                current = {tag: fresh.get(tag, states.get(tag)) for tag in tags}
                self._judge_resent(writes, states, current, outcomes, error)
            # Chains whose remembered state was old were not raced: each is planned
            # again once on the item the cancellation returned, without a back-off.
            refreshed = {
                tag for tag in remembered.intersection(fresh) if _moved(states.get(tag), fresh[tag])
            }
            remembered -= refreshed
            self.stats.cache_refreshes += len(refreshed)
            states.update(fresh)
            pending = [tag for tag in tags if tag not in outcomes]
            if not pending:
                break
            raced = contended.intersection(pending) - refreshed
            if refreshed and not raced:
                attempt -= 1
                continue
            if (raced or not rejected) and not (yield from self._back_off(attempt, started)):
                outcomes.update((tag, StaleLocalData(tag, attempt)) for tag in pending)
                break
        return {tag: outcomes.get(tag, TagNotFound(tag)) for tag in entries}

    def _back_off(self, attempt: int, started: float) -> Generator[Effect, Any, bool]:
        """After ``attempt`` writes lost their race: sleep and go on (True), or give up (False).

        Counts the lost race, and the retry if there is one.  Giving up (the retry
        policy is spent, or there is none) is the caller's ``StaleLocalData``.
        """
        self.stats.conflicts += 1
        if self.retry is None or not self.retry.allows(attempt, self.monotonic() - started):
            return False
        self.stats.retries += 1
        yield Sleep(self.retry.delay(attempt, self.rng))
        return True

    def _judge_resent(
        self,
        writes: Sequence[tuple[str, bytes, dict[str, Any], ChainState]],
        before: Mapping[str, ChainState | None],
        current: Mapping[str, ChainState | None],
        outcomes: dict[str, Outcome],
        error: BaseException,
    ) -> None:
        """After a transaction that may have landed: the outcome of each write proven either way.

        Writes proven landed get their planned state; writes proven not landed are
        left out of ``outcomes`` (the caller retries or reports them); a write that
        cannot be told gets ``AmbiguousWrite``.
        """
        for tag, token, _, planned in writes:
            if tag in outcomes:
                continue
            try:
                landed = self._landed(before.get(tag), current.get(tag), [token], tag, True)
            except AmbiguousWrite as ambiguous:
                ambiguous.__cause__ = error
                outcomes[tag] = ambiguous
                continue
            if landed:
                self.stats.resent_writes_recognised += 1
                self.stats.stamps += 1
                outcomes[tag] = planned.stamp

    def create_transact(
        self, stamps: Mapping[str, bytes], ttl: float | None = None
    ) -> Generator[Effect, Any, dict[str, Outcome]]:
        """Start up to 100 chains with one transaction per attempt (see :meth:`create`).

        Each chain's outcome is its stamp, ``TagExists`` (a live chain holds the
        tag), or the error that kept it out.  A cancelled transaction wrote
        nothing: the chains that exist leave it and the rest is sent again.
        """
        if len(stamps) > MAX_TRANSACTION_ITEMS:
            raise ValueError(f"at most {MAX_TRANSACTION_ITEMS} chains per transaction")
        values = create_entries(stamps, ttl, self.token_window)
        ttl = check_ttl(ttl)
        outcomes: dict[str, Outcome] = {}
        pending = list(values)
        attempt = 0
        started = self.monotonic()
        while pending:
            if len(pending) == 1:
                (tag,) = pending
                try:
                    outcomes[tag] = yield from self.create(tag, values[tag], ttl)
                except (TagExists, CorruptItem, ClientError, BotoCoreError) as exc:
                    outcomes[tag] = exc
                break
            attempt += 1
            now = self._now()
            writes = []
            for tag in pending:
                token = secrets.token_bytes(WRITE_TOKEN_BYTES)
                params = self._create_params(
                    tag, values[tag], ttl, now, token, secrets.token_bytes(8)
                )
                writes.append((tag, token, params))
            error = yield from self._transact([params for _, _, params in writes])
            if error is None:
                for tag, token, params in writes:
                    self.remember(self._created_state(tag, values[tag], params, now, token), tag)
                    outcomes[tag] = values[tag]
                break
            tags = [tag for tag, _, _ in writes]
            cancelled = _error_code(error) == TRANSACTION_CANCELED
            contended: set[str] = set(tags)
            if cancelled:
                assert isinstance(error, ClientError)
                current, contended, rejected = yield from self._after_cancel(tags, error)
                outcomes.update(rejected)
            else:
                try:
                    current, corrupt = yield from self._settle_many(tags, error)
                except (ClientError, BotoCoreError) as failure:
                    outcomes.update(dict.fromkeys(tags, failure))
                    break
                outcomes.update(corrupt)
            for tag, token, _ in writes:
                state = current.get(tag)
                if tag in outcomes or state is None:
                    continue
                if token in state.tokens:
                    self.stats.resent_writes_recognised += 1
                    outcomes[tag] = values[tag]  # our own create, sent twice
                elif state.live:
                    exists = TagExists(tag)
                    exists.__cause__ = error
                    outcomes[tag] = exists
            if not cancelled:
                for tag in tags:
                    outcomes.setdefault(tag, error)
                break
            pending = [tag for tag in tags if tag not in outcomes]
            if contended.intersection(pending) and not (
                yield from self._back_off(attempt, started)
            ):
                outcomes.update((tag, StaleLocalData(tag, attempt)) for tag in pending)
                break
        return {tag: outcomes[tag] for tag in values}

    def fail(self, tag: str, reason: str = "failed") -> Generator[Effect, Any, ChainState]:
        """Close a live chain as failed, so waiters learn it and late stamps are refused.

        A chain that is already acked stays acked (its zero state wins over a late
        fail, as in Storm) and one already failed stays as it is: both are returned.
        An item this client cannot read raises ``CorruptItem`` and is not written.
        """
        check_tag(tag)
        check_reason(reason)
        # Read and validate first: a condition can check the attributes' types (and
        # does, below, so an item damaged after the read is refused by DynamoDB
        # itself, atomically), but not every rule of a readable item (a token list
        # whose length is a multiple of 8, a whole-number version).  The read costs
        # one request on a path that is rare, and spares the write on a closed chain.
        state = yield from self._read(tag)
        attempt = 0
        while True:
            step, kind = D.NOT_LANDED_STEP[("fail", D.status_of(state))]
            if step is Step.REFUSE:
                raise D.refusal(kind, tag, state)
            if step is Step.DONE:  # already closed: acked stays acked, failed stays failed
                assert state is not None
                self.forget(tag)
                return state
            if attempt >= 3:
                # Its condition failed each time, yet the item reads as live: give up.
                raise StaleLocalData(tag, attempt)
            attempt += 1
            self.stats.requests["UpdateItem"] += 1
            self.stats.writes += 1
            try:
                response = yield Call("update_item", self._fail_params(tag, reason))
            except ClientError as exc:
                if D.reply_of(exc)[0] is not Reply.CONDITION_FAILED:
                    raise
                # Closed, gone or expired since the read, or damaged (CorruptItem).
                state = yield from self._after_failed_condition(tag, exc)
                continue
            self.forget(tag)
            return I.decode(response["Attributes"], self.partition_key, tag)

    #: The types fail()'s write requires of the attributes it keeps: (placeholder,
    #: type, required).  What ``item.decode`` checks of types, as a condition.
    _FAIL_TYPES = (
        ("#s", "B", True),
        ("#v", "N", True),
        ("#c", "B", False),
        ("#t", "B", False),
        ("#ca", "N", False),
        ("#u", "N", False),
        ("#r", "S", False),
    )

    def _fail_params(self, tag: str, reason: str) -> dict[str, Any]:
        """The write that closes a live chain as failed, refused by a closed or damaged item."""
        now = self._now()
        types = [
            f"attribute_type({p}, :type{kind})"
            if required
            else f"(attribute_not_exists({p}) OR attribute_type({p}, :type{kind}))"
            for p, kind, required in self._FAIL_TYPES
        ]
        return {
            "TableName": self.table,
            "Key": self._key(tag),
            "UpdateExpression": "SET #f = :now, #r = :r, #e = :exp, #u = :now, #v = #v + :one",
            "ConditionExpression": (
                "attribute_exists(#pk) AND attribute_not_exists(#a) AND attribute_not_exists(#f)"
                " AND (attribute_not_exists(#e) OR #e > :now) AND size(#s) > :zero AND "
                + " AND ".join(types)
            ),
            "ExpressionAttributeNames": _names(
                "#s", "#c", "#t", "#ca", "#f", "#r", "#e", "#u", "#v", "#a", key=self.partition_key
            ),
            "ExpressionAttributeValues": {
                ":now": {"N": str(now)},
                ":r": {"S": reason},
                ":one": {"N": "1"},
                ":zero": {"N": "0"},
                ":exp": self._expiry(now, self.tombstone_ttl),
                **{f":type{kind}": {"S": kind} for kind in ("B", "N", "S")},
            },
            "ReturnValues": "ALL_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def delete(self, tag: str) -> Generator[Effect, Any, None]:
        """Remove the chain's item (live or tombstone); TagNotFound when there is none."""
        check_tag(tag)
        self.forget(tag)
        params = {
            "TableName": self.table,
            "Key": self._key(tag),
            # An expires_at that is not a number (a damaged item) does not hide the item:
            # delete() is how a CorruptItem is removed.
            "ConditionExpression": (
                "attribute_exists(#pk) AND (attribute_not_exists(#e)"
                " OR NOT attribute_type(#e, :typeN) OR #e > :now)"
            ),
            "ExpressionAttributeNames": _names("#e", key=self.partition_key),
            "ExpressionAttributeValues": {
                ":now": {"N": str(self._now())},
                ":typeN": {"S": "N"},
            },
        }
        self.stats.requests["DeleteItem"] += 1
        self.stats.writes += 1
        try:
            yield Call("delete_item", params)
        except ClientError as exc:
            _, step, kind = self._reply_step("delete", exc)
            if step is Step.DONE:
                return  # a re-send found it gone: the first send most likely removed it
            if kind == D.REPLY_ERROR:
                raise
            raise D.refusal(kind, tag, None) from exc

    def wait(
        self, tag: str, timeout: float, poll_interval: float = 0.2
    ) -> Generator[Effect, Any, ChainState]:
        """Poll until the chain is acked; ChainFailed, TagNotFound or ChainTimeout otherwise."""
        check_tag(tag)
        check_wait(timeout, poll_interval)
        deadline = self.monotonic() + timeout
        while True:
            state = yield from self._read(tag)
            if state is None:
                raise TagNotFound(tag)
            if state.acked:
                return state
            if state.failed:
                raise ChainFailed(tag, state.reason or "failed")
            remaining = deadline - self.monotonic()
            if remaining <= 0:
                raise ChainTimeout(tag, timeout)
            yield Sleep(min(poll_interval, remaining))
