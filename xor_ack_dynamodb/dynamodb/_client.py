"""What the async and the sync client share besides the core: construction and accessors."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypedDict, TypeVar, cast

from ..chain import ChainState
from ..errors import ClientClosed, CreateManyFailed, InvalidArgument, InvalidState
from ..stamps import Stamp, xor
from ._attempts import stop_retries, watch
from ._batches import DEFAULT_WRITE_SLOTS, Batcher
from ._client_kind import check_client
from ._core.client_options import check_count, check_region_name
from ._core.effects import ClientStats, Entry, Op, Outcome
from ._core.many import Chains
from ._core.validate import (
    DEFAULT_TOKEN_WINDOW,
    DEFAULT_TOMBSTONE_TTL,
    Lifetime,
    check_keywords,
    check_rows,
    check_state,
    collect_many,
    create_entries,
    many_entries,
    one_entry,
)
from ._statements import create_each, pieces, stamp_on_each
from .aws import Settings
from .item import DEFAULT_PARTITION_KEY
from .retry import DEFAULT_RETRY, RetryPolicy
from .wrong_key import key_refusal

#: The requests an operation makes that write nothing.
READS = frozenset({"get_item", "batch_get_item", "query"})

if TYPE_CHECKING:
    from botocore.config import Config


class Options(TypedDict, total=False):
    """The constructor's options after ``table`` (each one's meaning: ``ClientBase``)."""

    partition_key: str
    retry: RetryPolicy | None
    token_window: int
    tombstone_ttl: float
    cache_size: int
    coalesce: bool
    batch_writes: bool
    write_slots: int
    clock: Callable[[], float]


class Connection(Options, total=False):
    """``connect``'s options: the constructor's, and how to make the boto client (``aws``)."""

    endpoint_url: str | None
    region_name: str | None
    session: Any  # a boto3 session for the sync client, an aioboto3 one for the async
    config: Config | None


def connection(options: Connection) -> tuple[Any, Settings, Options]:
    """``connect``'s options split: the session, the boto client's settings, the rest;
    ``InvalidArgument`` for a name that is none of them, before the region is looked for."""
    unknown = sorted(set(options) - _CONNECT_KEYS)
    if unknown:
        known = ", ".join(sorted(_CONNECT_KEYS))
        raise InvalidArgument(f"connect() takes no option {unknown[0]!r}: its options are {known}")
    settings = Settings(
        endpoint=options.get("endpoint_url"),
        region_name=check_region_name(options.get("region_name")),
        config=options.get("config"),
    )
    rest = {key: value for key, value in options.items() if key not in _CONNECTION}
    return options.get("session"), settings, cast(Options, rest)


#: The keys of ``Connection`` that are not the constructor's.
_CONNECTION = frozenset(Connection.__annotations__) - frozenset(Options.__annotations__)
#: Every option ``connect`` takes besides ``table`` and ``direct``.
_CONNECT_KEYS = Connection.__required_keys__ | Connection.__optional_keys__


#: How many transactions ``create_many`` and requests ``stamp_many`` have in flight at once.
DEFAULT_CREATE_CONCURRENCY = 4
DEFAULT_STAMP_CONCURRENCY = 16


class CreateMany(Lifetime, total=False):
    """``create_many``'s options: the chains' ``Lifetime``, ``concurrency`` and ``via``.

    ``concurrency``: requests in flight at once (default 4); ``via``: how the chains
    are written, ``"transactions"`` (default: up to 100 per TransactWriteItems, two
    write units each) or ``"partiql"`` (up to 25 ``INSERT`` statements per
    BatchExecuteStatement, one write unit each; needs ``dynamodb:PartiQLInsert``).
    """

    concurrency: int
    via: Literal["transactions", "partiql"]


#: One ``stamp_on_each`` write: the state to write on, the stamp, its token (or None).
OnStateWrite = tuple[ChainState, bytes, bytes | str | None]


class StampMany(TypedDict, total=False):
    """``stamp_many``'s options: ``tokens``, ``concurrency``, ``transact``.

    ``tokens``: ``{tag: token}``, each as ``stamp``'s ``token`` (default none);
    ``concurrency``: requests in flight at once (default 16); ``transact``: up to
    100 chains per TransactWriteItems request (default False).
    """

    tokens: Mapping[str, bytes | str] | None
    concurrency: int
    transact: bool


def check_concurrency(concurrency: int) -> int:
    return check_count("concurrency", concurrency, 1)


def check_flag(name: str, value: object) -> bool:
    """An on/off option (``coalesce``, ``direct``, ...): a bool, not any truthy object
    (``"no"`` would turn it on); ``InvalidArgument`` naming it otherwise."""
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name} must be True or False, not {value!r}")
    return value


#: The injected DynamoDB client: aiobotocore's for the async client, boto3's for the sync one.
ClientT = TypeVar("ClientT")


class ClientBase(Generic[ClientT]):
    """Holds the injected DynamoDB client and the sans-I/O core both clients drive.

    ``retry``: the policy for lost races (``None``: raise ``StaleLocalData`` at once).
    ``token_window``: how many recent write tokens each item keeps (re-send detection
    and idempotency). ``tombstone_ttl``: seconds an acked or failed chain stays
    readable. ``cache_size``: chains whose last state the client remembers (so an
    uncontended stamp is one request). ``coalesce``: merge concurrent stamps on one
    chain into one write. ``batch_writes``: send concurrent stamp writes of different
    chains together, up to 25 per PartiQL ``BatchExecuteStatement``, while earlier
    ones are in flight (see ``_batches``; needs ``dynamodb:PartiQLUpdate``, and a
    server that checks statement conditions: DynamoDB or DynamoDB Local, not moto).
    ``write_slots``: with ``batch_writes``, how many stamp writes go out alone at
    once before the next ones wait (at most one request's time) to go together.
    ``clock``: the wall clock (epoch seconds) every ``:now`` of a write comes from:
    deadlines, TTL, timestamps (DynamoDB conditions have no clock of their own).

    The injected client gets event handlers (``_attempts.watch``) that note which
    of botocore's sends of a request may have landed (one key added to
    ``ResponseMetadata``), and re-send a write whose connection was lost after
    10 ms instead of botocore's backoff; they never change a request, nor which
    errors botocore retries or how often.
    """

    xor = staticmethod(xor)
    #: Does this driver await its client's calls (aiobotocore) or call them (boto3)?
    _asynchronous: ClassVar[bool] = False

    def __init__(
        self,
        client: ClientT,
        *,
        table: str,
        partition_key: str = DEFAULT_PARTITION_KEY,
        retry: RetryPolicy | None = DEFAULT_RETRY,
        token_window: int = DEFAULT_TOKEN_WINDOW,
        tombstone_ttl: float = DEFAULT_TOMBSTONE_TTL,
        cache_size: int = 10_000,
        coalesce: bool = True,
        batch_writes: bool = False,
        write_slots: int = DEFAULT_WRITE_SLOTS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        check_client(client, asynchronous=self._asynchronous)
        check_count("write_slots", write_slots, 1)
        check_flag("coalesce", coalesce)
        check_flag("batch_writes", batch_writes)
        self._client = client
        #: Set when the ``connect()`` block that opened this client ended: what it said.
        self._closed_by: str | None = None
        self._core = Chains(
            table=table,
            partition_key=partition_key,
            retry=retry,
            token_window=token_window,
            tombstone_ttl=tombstone_ttl,
            cache_size=cache_size,
            clock=clock,
        )
        # Per attempt, botocore's events tell a refused send from one that may have
        # landed; the core reads that from each error (``_attempts``).  Once the options
        # are checked: a client refused leaves the boto client as it was.
        watch(client)
        self._coalesce = coalesce
        self._batcher = Batcher(self._core.stats, write_slots) if batch_writes else None
        # The batches of create_many(via="partiql") and stamp_on_each (``_statements``):
        # stops batching for good if this principal or server cannot run them.
        self._statements = Batcher(self._core.stats)
        self._setup()

    def _close(self, opened_by: str) -> None:
        """The ``connect()`` block ``opened_by`` ends, and with it its client's pool: calls
        refused from now on (``ClientClosed``), the requests cut off not sent again."""
        self._closed_by = opened_by
        stop_retries(self._client)

    def _refuse_closed(
        self, op: Any, sent: Collection[str] | None = None, cause: Exception | None = None
    ) -> None:
        """``ClientClosed`` (``op`` closed) once the ``connect()`` block that opened this
        client ended: its connection pool closed with it.  ``sent``: the methods ``op`` has
        sent so far, if it is running (checked before each of its requests, and at the
        error of one the pool's closing cut off: ``cause``)."""
        if self._closed_by is not None:
            op.close()
            wrote = sent is not None and not READS.issuperset(sent)
            closed = ClientClosed(self._closed_by, running=sent is not None, wrote=wrote)
            raise closed from cause

    def _told(self, exc: Exception) -> Exception:
        """A request's error as the operation that sent it gets it: DynamoDB's refusal of a
        key the table does not have is ``TableMismatch`` (the client's ``partition_key``)."""
        return key_refusal(exc, self._core.table, self._core.partition_key) or exc

    def _setup(self) -> None:
        """Set up the driver's own state (its queues of stamps to merge)."""

    # -- the *_many calls' inputs and results, before and after their I/O -------

    def _creates(
        self, stamps: Mapping[str, bytes], options: CreateMany
    ) -> tuple[dict[str, Stamp], Callable[[dict[str, Any]], Op], int]:
        """``create_many``'s validated stamps, the operation each piece of them runs (one
        request: a transaction, or a batch of statements), and how many run at once."""
        concurrency = check_concurrency(options.get("concurrency", DEFAULT_CREATE_CONCURRENCY))
        via = options.get("via", "transactions")
        if via not in ("transactions", "partiql"):
            raise InvalidArgument(f'create_many\'s via is "transactions" or "partiql", not {via!r}')
        lifetime = {k: v for k, v in options.items() if k not in ("concurrency", "via")}
        values, checked = create_entries(stamps, lifetime, self._core.token_window)
        if via == "partiql":  # a transaction's piece: 4 batches of 25, one after the other
            return (
                values,
                lambda p: create_each(self._core, self._statements, p, checked),
                concurrency,
            )
        return values, lambda piece: self._core.create_transact(piece, **checked), concurrency

    def _on_state_ops(
        self, writes: Iterable[OnStateWrite], concurrency: int
    ) -> tuple[list[Op], int]:
        """``stamp_on_each``'s writes, validated (one per chain, each as ``stamp_on``'s), as
        one operation per request of up to 25 (``_statements.stamp_on_each``); concurrency."""
        check_concurrency(concurrency)
        checked: list[tuple[ChainState, Entry]] = []
        for state, stamp, token in check_rows(writes, 3, InvalidArgument, "(state, stamp, token)"):
            checked.append((check_state(state), one_entry(state.tag, stamp, token)))
        seen: set[str] = set()
        for state, _ in checked:
            if state.tag in seen:
                raise InvalidState(
                    f'"{state.tag}" came twice: stamp_on_each writes one stamp per chain; write'
                    " several on one chain with stamp_on_many(state, [(stamp, token), ...])"
                )
            seen.add(state.tag)
        ops = [
            stamp_on_each(self._core, self._statements, [checked[i] for i in part])
            for part in pieces(len(checked))
        ]
        return ops, concurrency

    @staticmethod
    def _created(values: Mapping[str, Stamp], outcomes: Sequence[Outcome]) -> dict[str, Stamp]:
        return collect_many(values, outcomes, CreateManyFailed)

    @staticmethod
    def _stamps(stamps: Mapping[str, bytes], options: StampMany) -> tuple[dict[str, Entry], int]:
        """``stamp_many``'s validated entries, and how many requests go out at once."""
        check_keywords("stamp_many", options, StampMany)
        concurrency = check_concurrency(options.get("concurrency", DEFAULT_STAMP_CONCURRENCY))
        check_flag("stamp_many's transact", options.get("transact", False))
        return many_entries(stamps, options.get("tokens")), concurrency

    @staticmethod
    def _stamped(entries: Mapping[str, Entry], outcomes: Sequence[Outcome]) -> dict[str, Stamp]:
        return collect_many(entries, outcomes)

    @property
    def table(self) -> str:
        return self._core.table

    @property
    def partition_key(self) -> str:
        return self._core.partition_key

    @property
    def token_window(self) -> int:
        """How many recent write tokens each chain item keeps (``ChainState.tokens``)."""
        return self._core.token_window

    @property
    def tombstone_ttl(self) -> float:
        """Seconds an acked or failed chain stays readable after the write that closed it."""
        return self._core.tombstone_ttl

    @property
    def client(self) -> ClientT:
        """The DynamoDB client this wraps (aiobotocore's or boto3's), for requests of your own."""
        return self._client

    @property
    def batching(self) -> bool:
        """Are stamp writes being batched (``batch_writes``, and not stopped by a refusal)?"""
        return self._batcher is not None and self._batcher.enabled

    @property
    def stats(self) -> ClientStats:
        """Requests per operation, writes, stamps applied, lost races, retries."""
        return self._core.stats
