"""A sweeper fit for a scheduled Lambda function: ``xor_ack_dynamodb.dynamodb.sweeper.handler``.

Point an EventBridge rule (``rate(1 minute)``) or an EventBridge Scheduler schedule at a
function whose handler is ``xor_ack_dynamodb.dynamodb.sweeper.handler`` and whose role has the
stack's ``SweeperPolicyArn``.  Each invocation runs one ``sweep()``: every chain past its
deadline is failed with reason ``"timeout"``, exactly once however many sweepers run at
once (each failing write is conditional; there is no leader), and the chain's stream
carries the failure to whoever listens.  The event's content is not needed: any scheduled
event (or ``{}``) does; its ``id`` and ``time`` are echoed in the summary.

Configuration, from the function's environment::

    XOR_ACK_TABLE           the table (required)
    XOR_ACK_PARTITION_KEY   its partition key (default tagID)
    AWS_REGION              set by Lambda; AWS_ENDPOINT_URL_DYNAMODB for a local table

The handler returns a summary (``SweepSummary.as_dict``) and prints it as one JSON line,
which CloudWatch Logs keeps as a structured record.  One client is kept per process, so a
warm function reuses its connections.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..chain import ChainState
from ..errors import SweepIncomplete, SweepStopped, XorAckError
from . import aws
from .item import DEFAULT_PARTITION_KEY
from .loops import code_of, item_failed
from .sync import SyncXorAckDynamoDB
from .table import InvalidTableSpec, TableSpec

__all__ = [
    "ENV_PARTITION_KEY",
    "ENV_TABLE",
    "MAX_TAGS",
    "SweepSummary",
    "SweeperMisconfigured",
    "Swept",
    "handler",
    "settings",
    "sweep_async",
    "sweep_once",
]

ENV_TABLE = "XOR_ACK_TABLE"
ENV_PARTITION_KEY = "XOR_ACK_PARTITION_KEY"
#: At most this many tags are listed in a summary (the count is always exact).
MAX_TAGS = 1000

_clients: dict[tuple[str, str, str | None], SyncXorAckDynamoDB] = {}


class SweeperMisconfigured(XorAckError):
    """The sweeper's environment does not name a usable table."""


@dataclass(frozen=True)
class SweepSummary:
    """What one sweep did: the chains it failed (this sweeper's own writes only)."""

    table: str
    swept: tuple[str, ...]  # the tag of every chain this sweep failed
    seconds: float
    event_id: str | None = None
    scheduled_at: str | None = None
    #: The chains this sweep could not fail (``SweepIncomplete``), with the error's code.
    left: tuple[tuple[str, str], ...] = ()
    #: Why it stopped part way (``SweepStopped``), or None: a key of ``as_dict`` only then.
    stopped: str | None = None

    #: The keys of ``as_dict``, in order: ``failed`` counts the chains, ``tags`` lists
    #: at most ``MAX_TAGS`` of them, ``more`` is how many it leaves out; ``errors`` maps
    #: each chain it could not fail (at most ``MAX_TAGS``) to its error's code.
    KEYS = ("table", "failed", "tags", "more", "errors", "seconds", "event_id", "scheduled_at")

    @classmethod
    def of(
        cls,
        table: str,
        failed: list[ChainState],
        seconds: float,
        event: Any = None,
        errors: dict[str, BaseException] | None = None,
        stopped: SweepStopped | None = None,
    ) -> SweepSummary:
        event = event if isinstance(event, dict) else {}
        return cls(
            table=table,
            swept=tuple(state.tag for state in failed),
            seconds=round(seconds, 3),
            event_id=_text(event.get("id")),
            scheduled_at=_text(event.get("time")),
            left=tuple((tag, code_of(exc)) for tag, exc in (errors or {}).items()),
            stopped=None if stopped is None else str(stopped),
        )

    @property
    def failed(self) -> int:
        return len(self.swept)

    @property
    def tags(self) -> tuple[str, ...]:
        return self.swept[:MAX_TAGS]

    @property
    def more(self) -> int:
        return max(0, len(self.swept) - MAX_TAGS)

    @property
    def errors(self) -> dict[str, str]:
        return dict(self.left[:MAX_TAGS])

    def as_dict(self) -> dict[str, Any]:
        summary = {key: getattr(self, key) for key in self.KEYS}
        summary["tags"] = list(self.tags)
        if self.stopped is not None:
            summary["stopped"] = self.stopped
        return summary


@dataclass(frozen=True)
class Swept:
    """What one ``sweep()`` came to: the tombstones it made, the chains it could not fail,
    and, if a page of the index could not be read, the ``SweepStopped`` that ended it."""

    failed: list[ChainState]
    errors: dict[str, BaseException]
    stopped: SweepStopped | None = None

    @classmethod
    def of(cls, exc: SweepIncomplete | SweepStopped) -> Swept:
        """What a sweep that raised ``exc`` did: its tombstones and the chains it could not
        fail; ``stopped`` is ``exc`` if a page of the index was left unread."""
        return cls(exc.failed, exc.errors, exc if isinstance(exc, SweepStopped) else None)


async def sweep_async(sweep: Awaitable[list[ChainState]]) -> Swept:
    """What an async client's ``sweep()`` came to, raised part way or not (``Swept.of``)."""
    try:
        return Swept(await sweep, {})
    except (SweepIncomplete, SweepStopped) as exc:
        return Swept.of(exc)


def sweep_once(
    client: Any, loop: str, on_failed: Callable[[ChainState], object] | None = None
) -> Swept:
    """One ``sweep()``; the chains it could not fail are each reported (a count of
    ``xor_ack.item_failures``): a chain's error never ends it.  A sweep that stopped part
    way is returned with what it did (for the caller to say, then raise ``.stopped``).
    ``on_failed``: the sweep's, each tombstone as it is made."""
    try:
        return Swept(client.sweep(on_failed=on_failed), {})
    except (SweepIncomplete, SweepStopped) as exc:
        swept = Swept.of(exc)
    for tag, error in swept.errors.items():
        item_failed(loop, error, quiet=True, tag=tag)
    return swept


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def settings(environ: dict[str, str] | None = None) -> TableSpec:
    """The table and key the environment names (``SweeperMisconfigured`` otherwise)."""
    env = os.environ if environ is None else environ
    table = env.get(ENV_TABLE, "")
    if not table:
        raise SweeperMisconfigured(
            f"{ENV_TABLE} is not set: set it to the chains table's name in the function's "
            "environment (the stack's TableName output)"
        )
    try:
        return TableSpec(
            name=table, partition_key=env.get(ENV_PARTITION_KEY) or DEFAULT_PARTITION_KEY
        )
    except InvalidTableSpec as exc:
        raise SweeperMisconfigured(f"the sweeper's environment: {exc}") from exc


def _client(spec: TableSpec) -> SyncXorAckDynamoDB:
    key = (spec.name, spec.partition_key, aws.endpoint_url())
    client = _clients.get(key)
    if client is None:
        client = SyncXorAckDynamoDB(
            aws.sync_client(), table=spec.name, partition_key=spec.partition_key
        )
        _clients[key] = client
    return client


def handler(event: Any, context: Any) -> dict[str, Any]:
    """Lambda entry point: one sweep of the table named by ``XOR_ACK_TABLE``."""
    spec = settings()
    started = time.monotonic()
    swept = sweep_once(_client(spec), "sweeper")
    elapsed = time.monotonic() - started
    summary = SweepSummary.of(
        spec.name, swept.failed, elapsed, event, swept.errors, swept.stopped
    ).as_dict()
    level = "ERROR" if swept.stopped else "WARNING" if swept.errors else "INFO"
    line = {"message": "xor-ack sweep", "level": level, **summary}
    request = getattr(context, "aws_request_id", None)
    if isinstance(request, str):
        line["aws_request_id"] = request
    print(json.dumps(line, separators=(",", ":")), file=sys.stdout, flush=True)
    if swept.stopped is not None:  # said, with the chains it failed: the invocation fails
        raise swept.stopped
    return summary
