"""The chains as seen from Spark tasks: a picklable config and one client per Python worker.

Executors never get a client object: they get a :class:`TrackerConfig` (a few
strings) and build a :class:`~xor_ack_dynamodb.SyncXorAckDynamoDB` once per
Python worker process (Spark reuses workers across tasks), cached by config.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from typing_extensions import Unpack

from .. import errors
from ..chain import ChainState
from ..dynamodb import Lifetime
from ..dynamodb._core.client_options import check_count, check_name, check_token_window
from ..dynamodb.aws import is_endpoint_url
from ..dynamodb.item import DEFAULT_PARTITION_KEY
from ..dynamodb.sync import SyncXorAckDynamoDB
from ..errors import (
    AmbiguousWrite,
    ChainFailed,
    ChainMoved,
    CreateManyFailed,
    InterruptedWrite,
    StaleLocalData,
    TagNotFound,
    UnsettledWrite,
)
from .errors import InvalidArgument


@dataclass(frozen=True)
class TrackerConfig:
    """Where the chains live, and how tasks write them.

    ``local_credentials``: sign with dummy credentials (a loopback DynamoDB Local
    accepts any); otherwise the worker's default AWS credential chain is used.
    ``token_window`` must cover every write a chain sees in its life: 1 create,
    the produce and commit stamps, 1 fail, plus room for a few writes of faulty
    attempts (``docs/spark.md``).
    """

    table: str
    endpoint_url: str | None = None
    region: str | None = None
    partition_key: str = DEFAULT_PARTITION_KEY
    token_window: int = 32
    concurrency: int = 16
    local_credentials: bool = False
    #: Tasks of different workers write the same chains in turn, so a cached state is
    #: almost always stale: re-reading (a read unit) beats a conditional write that fails
    #: (a write unit).  0 turns the client's cache off.
    cache_size: int = 0
    #: Write up to 100 chains per request (TransactWriteItems; states read 100 per
    #: BatchGetItem) instead of one request per chain: a small fraction of the requests
    #: and of the CPU on both ends, at twice the write units per chain on AWS.
    transactions: bool = True
    #: Write the chains 25 per request as PartiQL statements (creates as INSERTs, stamps
    #: as conditional UPDATEs: one write unit each, ``docs/spark.md``), taking precedence
    #: over ``transactions``.  Needs ``dynamodb:PartiQLInsert`` / ``PartiQLUpdate`` and a
    #: server that checks statement conditions (DynamoDB, DynamoDB Local; not moto).
    partiql: bool = True

    def __post_init__(self) -> None:
        """Refuse, when it is made, a config no chains client could be built from (the
        driver builds its own only at the first round's creates, after Spark jobs ran)."""
        try:
            check_name("table", self.table)
            check_name("partition_key", self.partition_key)
            check_token_window(self.token_window)
            check_count("concurrency", self.concurrency, 1)
            check_count("cache_size", self.cache_size, 0)
        except errors.InvalidArgument as exc:
            raise InvalidArgument(f"TrackerConfig: {exc}") from exc
        url = self.endpoint_url
        if url is not None and not is_endpoint_url(url):
            raise InvalidArgument(
                f"TrackerConfig(endpoint_url={url!r}): give a URL such as "
                "http://127.0.0.1:8000, or None for AWS's endpoint"
            )
        if self.region is not None and (not isinstance(self.region, str) or not self.region):
            raise InvalidArgument(
                f"TrackerConfig: region={self.region!r}: give an AWS region such as "
                "'us-east-1', or None for the environment's"
            )

    @property
    def write_concurrency(self) -> int:
        """Requests in flight per task: one transaction at a time when they carry 100 chains.

        Counting tasks write the same chains, each starting at its own offset: one
        transaction at a time per task keeps the tasks on different chains, where
        several in flight would make them meet (a conflict cancels a transaction).
        """
        return 1 if self.transactions else self.concurrency

    def client(self, config: Any = None) -> Any:
        """A new boto3 DynamoDB client for this config (``config``: a botocore ``Config``
        instead of the clients' own, whose pool fits ``concurrency``)."""
        from ..dynamodb.aws import botocore_config, sync_client

        return sync_client(
            endpoint=self.endpoint_url,
            region_name=self.region,
            config=config or botocore_config(max_pool_connections=max(10, self.concurrency + 2)),
            local_credentials=self.local_credentials or None,
        )

    def chains(self) -> SyncXorAckDynamoDB:
        """A new chains client for this config (the driver's; tasks use :func:`chains_for`)."""
        return SyncXorAckDynamoDB(
            self.client(),
            table=self.table,
            partition_key=self.partition_key,
            token_window=self.token_window,
            cache_size=self.cache_size,
        )


_LOCK = threading.Lock()
#: This process's clients, by what they are for and their config: made on first use.
_CLIENTS: dict[tuple[str, TrackerConfig], Any] = {}


def kept_client(kind: str, config: TrackerConfig, make: Callable[[], Any]) -> Any:
    """The ``kind`` client of ``config`` in this process, made by ``make`` on first use and
    kept: a new botocore client costs tens of milliseconds (a task, a run)."""
    with _LOCK:
        client = _CLIENTS.get((kind, config))
        if client is None:
            client = _CLIENTS[(kind, config)] = make()
        return client


def chains_for(config: TrackerConfig) -> SyncXorAckDynamoDB:
    """This worker's client for ``config`` (made on first use, then reused by every task)."""
    client: SyncXorAckDynamoDB = kept_client("chains", config, config.chains)
    return client


def create_chains(
    chains: SyncXorAckDynamoDB,
    config: TrackerConfig,
    stamps: Mapping[str, bytes],
    **life: Unpack[Lifetime],
) -> None:
    """Create ``stamps``' chains as ``config`` writes chains: 25 per PartiQL request or
    transactions of 100 (``create_many``'s requests in flight), or one request each,
    ``config.concurrency`` at a time (a server with neither, as moto is).

    Every way raises :class:`CreateManyFailed` for the tags not created, each with its
    error (``TagExists``: a live chain holds the tag; DynamoDB's own), the others created.
    """
    if config.partiql:
        chains.create_many(stamps, via="partiql", **life)
        return
    if config.transactions:
        chains.create_many(stamps, **life)
        return
    refused: dict[str, BaseException] = {}

    def one(tag: str) -> None:
        try:
            chains.create(tag, stamps[tag], **life)
        except Exception as exc:  # each tag's own: a TagExists is kept beside DynamoDB's
            refused[tag] = exc

    with ThreadPoolExecutor(max_workers=max(1, min(config.concurrency, len(stamps)))) as pool:
        list(pool.map(one, stamps))
    if refused:
        created = {tag: stamp for tag, stamp in stamps.items() if tag not in refused}
        raise CreateManyFailed(created, refused)


def stamp_once(
    chains: SyncXorAckDynamoDB, tag: str, value: bytes, token: bytes, known: ChainState | None
) -> None:
    """One stamp of a stage: on the chain as ``known`` (one conditional write, no read),
    or, if it moved on or is not known, as any stamp (a read, and a token the chain holds
    already is not applied again).  The chain's answer (:func:`chain_answer`: closed,
    gone, ...) is all: the driver reads the chain when it judges the round."""
    try:
        if known is not None:
            with contextlib.suppress(ChainMoved):
                chains.stamp_on(known, value, token=token)
                return
        chains.stamp(tag, value, token=token)
    except Exception as outcome:
        if not chain_answer(outcome):
            raise


#: A stamp's outcome that the chain itself gives: moved on by another write, closed,
#: gone, changed past the retries, or landed or not with no way left to tell.
_ANSWERS = (ChainMoved, ChainFailed, TagNotFound, StaleLocalData, AmbiguousWrite)
#: A write cut off from DynamoDB (its answer and the settling read lost, its thread
#: interrupted): sent again with the same token, it lands once.
_CUT_OFF = (UnsettledWrite, InterruptedWrite)


def chain_answer(outcome: BaseException) -> bool:
    """Whether a stamp's error is the chain's answer, for the driver to judge from the
    chain as it reads it (a task goes on, the commit check goes on).

    Anything else fails what sent it: DynamoDB's errors (botocore's) and a write cut off
    from it (``UnsettledWrite``, ``InterruptedWrite``) fail the task, whose retry sends
    the same tokens, or stop the driver's round (``DynamoDBFailed``); any other error is
    a defect, raised as it is.  The one rule for every stage's stamps (``task_stamps``,
    ``chain_batches``, :func:`stamp_once`).
    """
    return isinstance(outcome, _ANSWERS) and not isinstance(outcome, _CUT_OFF)
