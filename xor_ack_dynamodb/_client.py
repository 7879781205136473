"""What the async and the sync client share besides the core: construction and accessors."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ._attempts import watch
from ._batches import DEFAULT_WRITE_SLOTS, Batcher
from ._ops import DEFAULT_TOKEN_WINDOW, DEFAULT_TOMBSTONE_TTL, Chains, ClientStats
from .item import DEFAULT_PARTITION_KEY
from .retry import DEFAULT_RETRY, RetryPolicy
from .stamps import xor


class ClientBase:
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

    def __init__(
        self,
        client: Any,
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
        if write_slots < 1:
            raise ValueError(f"write_slots must be >= 1 (got {write_slots})")
        self._client = client
        # Per attempt, botocore's events tell a refused send from one that may have
        # landed; the core reads that from each error (``_attempts``).
        watch(client)
        self._core = Chains(
            table=table,
            partition_key=partition_key,
            retry=retry,
            token_window=token_window,
            tombstone_ttl=tombstone_ttl,
            cache_size=cache_size,
            clock=clock,
        )
        self._coalesce = coalesce
        self._batcher = Batcher(self._core.stats, write_slots) if batch_writes else None
        self._setup()

    def _setup(self) -> None:
        """Set up the driver's own state (its queues of stamps to merge)."""

    @property
    def table(self) -> str:
        return self._core.table

    @property
    def partition_key(self) -> str:
        return self._core.partition_key

    @property
    def batching(self) -> bool:
        """Are stamp writes being batched (``batch_writes``, and not stopped by a refusal)?"""
        return self._batcher is not None and self._batcher.enabled

    @property
    def stats(self) -> ClientStats:
        """Requests per operation, writes, stamps applied, lost races, retries."""
        return self._core.stats
