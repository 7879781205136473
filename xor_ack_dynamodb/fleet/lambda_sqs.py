"""Lambda handlers: SQS batches with partial batch responses, dead letters, stream completions.

``SqsBatchHandler`` is an SQS-triggered handler for an event source mapping with
``FunctionResponseTypes: [ReportBatchItemFailures]``: it handles the batch's
messages concurrently and returns ``{"batchItemFailures": [{"itemIdentifier":
messageId}, ...]}`` naming only the ones that failed, so SQS deletes the rest and
delivers the failed ones again (until the queue's redrive policy moves them to
the dead-letter queue).  For a FIFO queue it stops at the first failure and
reports that message and every later one, as AWS requires to keep the order.
It watches the invocation's remaining time (``context.get_remaining_time_in_millis``):
``margin`` seconds before the end, the messages not handled yet are reported as
failures and the handler returns, so SQS delivers only those again instead of the
whole batch after a timeout.

With aws-lambda-powertools' batch utility, pass ``handler.record_handler`` as
its ``record_handler`` (it takes a powertools ``SQSRecord`` or the raw dict and
raises on failure); this module does not import powertools.

The fleet (its DynamoDB and SQS clients) is opened once per execution environment,
on an event loop the handler keeps, and reused by warm invocations.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from ..dynamodb import MAX_TIMEOUT
from ..dynamodb.item import DEFAULT_PARTITION_KEY, is_marker
from ..dynamodb.loops import item_failed
from ..dynamodb.sweeper import sweep_async
from ..errors import CorruptRecord, InvalidArgument, InvalidEvent, InvalidTimeout
from ..events import Acked, ChainEvent, Failed, TimedOut, decode, parse
from .app import Fleet
from .completion import Continuation
from .dead_letters import LOGGER, settle_dead_letter
from .envelope import named
from .errors import InvalidEnvelope, SettingMissing, WindowMismatch
from .message import Handled, Handler
from .telemetry import log

OpenFleet = Callable[[], AbstractAsyncContextManager[Fleet]]


class _Environment:
    """One event loop and one open fleet per Lambda execution environment."""

    def __init__(self, open_fleet: OpenFleet) -> None:
        self._open_fleet = open_fleet
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._fleet: Fleet | None = None

    def run(self, work: Callable[[Fleet], Any]) -> Any:
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(self._with_fleet(work))

    async def _with_fleet(self, work: Callable[[Fleet], Any]) -> Any:
        if self._fleet is None:
            self._stack = contextlib.AsyncExitStack()
            self._fleet = await self._stack.enter_async_context(self._open_fleet())
        return await work(self._fleet)

    def close(self) -> None:
        """Close the fleet and the loop (tests; Lambda just freezes the environment)."""
        if self._loop is not None and self._stack is not None:
            self._loop.run_until_complete(self._stack.aclose())
        if self._loop is not None:
            self._loop.close()
        self._loop, self._stack, self._fleet = None, None, None


def _raw(record: Any) -> Mapping[str, Any]:
    """The record as AWS sends it: a dict, or powertools' ``SQSRecord`` (its ``raw_event``)."""
    raw = getattr(record, "raw_event", record)
    if not isinstance(raw, Mapping):
        raise InvalidEvent(f"an SQS record is a dict (or a powertools SQSRecord), not {record!r}")
    return raw


def _receive_count(record: Mapping[str, Any]) -> int:
    return int(record.get("attributes", {}).get("ApproximateReceiveCount", "1"))


#: Seconds before the invocation's end at which a batch handler returns what it has.
TIME_MARGIN = 2.0


def _deadline(context: Any, margin: float) -> float | None:
    """The monotonic moment to return by: ``margin`` before the invocation's end (None:
    no context that tells its remaining time)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if not callable(remaining):
        return None
    return time.monotonic() + float(remaining()) / 1000.0 - margin


class SqsBatchHandler:
    """``handler(event, context)`` for SQS batches; ``dead_letter=True`` for the DLQ's function.

    ``margin``: seconds before the invocation's end at which the messages not handled
    yet are reported as failures and the handler returns (see the module)."""

    def __init__(
        self, open_fleet: OpenFleet, *, dead_letter: bool = False, margin: float = TIME_MARGIN
    ) -> None:
        if isinstance(margin, bool) or not (isinstance(margin, int | float) and 0 <= margin < 900):
            raise InvalidArgument(
                f"SqsBatchHandler(margin=...) is the seconds before the invocation's end at "
                f"which it returns, 0 up to Lambda's 900 s limit, not {margin!r}"
            )
        self.environment = _Environment(open_fleet)
        self.dead_letter = dead_letter
        self.margin = float(margin)

    def __call__(self, event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        deadline = _deadline(context, self.margin)
        result: dict[str, Any] = self.environment.run(
            lambda fleet: self.process(fleet, event, deadline)
        )
        return result

    async def process(
        self, fleet: Fleet, event: Mapping[str, Any], deadline: float | None = None
    ) -> dict[str, Any]:
        records = list(event.get("Records", []))
        failures: list[str] = []
        fifo = any(str(r.get("eventSourceARN", "")).endswith(".fifo") for r in records)
        if fifo:
            for position, record in enumerate(records):
                (ok,) = await self._in_time(fleet, [record], deadline)
                if not ok:
                    failures = [r["messageId"] for r in records[position:]]
                    break
        else:
            results = await self._in_time(fleet, records, deadline)
            failures = [r["messageId"] for r, ok in zip(records, results, strict=True) if not ok]
        return {"batchItemFailures": [{"itemIdentifier": m} for m in failures]}

    async def _in_time(
        self, fleet: Fleet, records: list[Mapping[str, Any]], deadline: float | None
    ) -> list[bool]:
        """Each record handled, concurrently, until ``deadline``: those not done by then
        are cancelled and count as failed (SQS delivers them again)."""
        tasks = [asyncio.ensure_future(self._one(fleet, record)) for record in records]
        if not tasks:
            return []
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        _, late = await asyncio.wait(tasks, timeout=timeout)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        for record, task in zip(records, tasks, strict=True):
            if task in late:
                item_failed(
                    "lambda",
                    TimeoutError("not handled before the invocation's end: delivered again"),
                    logger=LOGGER,
                    event="out-of-time",
                    message_id=record.get("messageId"),
                )
        return [task not in late and task.result() for task in tasks]

    async def _one(self, fleet: Fleet, record: Mapping[str, Any]) -> bool:
        """One record, on its own, as the worker handles one message: True when done."""
        message_id = record.get("messageId")
        if self.dead_letter:  # the worker's dead-letter drain's very rules
            body = record.get("body")
            return await settle_dead_letter(fleet, body, "lambda.dead_letters", message_id) is None
        try:
            await self._handle(fleet, record)
        except WindowMismatch as exc:  # refused before the handler: sent by another fleet
            item_failed(
                "lambda", exc, logger=LOGGER, event="window-mismatch", message_id=message_id
            )
            return False
        except InvalidEnvelope as exc:  # checked before anything ran: left to the redrive
            item_failed(
                "lambda", exc, logger=LOGGER, event="invalid-envelope", message_id=message_id
            )
            return False
        except Exception as exc:
            said = named(record.get("body"), message_id)
            item_failed("lambda", exc, logger=LOGGER, event="handler-failed", **said)
            return False
        return True

    async def _handle(self, fleet: Fleet, record: Mapping[str, Any]) -> Handled:
        return await fleet.handle(record["body"], _receive_count(record))

    def close(self) -> None:
        """Close the fleet and the event loop this handler keeps."""
        self.environment.close()

    def record_handler(self, record: Any) -> Handled | None:
        """One record, raising on failure: powertools' ``record_handler``."""
        raw = _raw(record)
        if self.dead_letter:  # as in a batch: a body that is no envelope is dropped, reported
            kept = self.environment.run(
                lambda fleet: settle_dead_letter(
                    fleet, raw.get("body"), "lambda.dead_letters", raw.get("messageId")
                )
            )
            if kept is not None:
                raise kept
            return None
        result: Handled | None = self.environment.run(lambda fleet: self._handle(fleet, raw))
        return result


class StreamCompletionHandler:
    """``handler(event, context)`` on the table's stream: continue each chain that just acked.

    Each record is decoded by ``xor_ack_dynamodb.events`` (its transition tables), so
    the handler is right with or without the mapping's filter criteria: an ``Acked``
    event runs the continuation of that very generation (``event.chain_id``), unless
    it is recorded done; ``Failed`` and ``TimedOut`` events are logged and counted in
    the summary; a stamp that did not end its chain is no event.  The fleet's own
    marker items are skipped, and so is a record that is no chain's transition (another
    item of a shared table, a damaged image): reported (a log line, a metric, the
    summary's ``skipped``), never retried, since it can never decode.  A continuation
    that fails raises, so the mapping retries the batch (with its retry limit and
    on-failure destination).
    """

    def __init__(self, open_fleet: OpenFleet, partition_key: str = DEFAULT_PARTITION_KEY) -> None:
        self.environment = _Environment(open_fleet)
        self.partition_key = partition_key
        #: Records skipped since this handler was made: not a chain's transition.
        self.skipped = 0

    def __call__(self, event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        result: dict[str, Any] = self.environment.run(lambda fleet: self.process(fleet, event))
        return result

    def events(self, event: Mapping[str, Any]) -> list[ChainEvent]:
        """The chain events of a batch's records, in order (``events.decode``); a record
        that is no chain's transition is reported and skipped (``.skipped``)."""
        found: list[ChainEvent] = []
        for record in event.get("Records", []):
            try:
                found.extend(decode(record, self.partition_key))
            except CorruptRecord as exc:
                if not self._is_marker(record):  # a page or a done record of the fleet: no chain
                    self.skipped += 1
                    item_failed("stream_completion", exc, logger=LOGGER, event="record-skipped")
        return found

    def _is_marker(self, record: object) -> bool:
        try:
            parsed = parse(record)
        except CorruptRecord:
            return False
        key = parsed.keys.get(self.partition_key, {}).get("S")
        return is_marker(key, parsed.old_image, parsed.new_image)

    async def process(self, fleet: Fleet, event: Mapping[str, Any]) -> dict[str, Any]:
        skipped = self.skipped
        found = self.events(event)
        acked = [e for e in found if isinstance(e, Acked)]
        ended = [e for e in found if isinstance(e, Failed)]  # TimedOut is a Failed
        for failed in ended:
            log(failed.kind.replace("_", "-"), failed.tag, None, reason=failed.reason)
        # Every continuation runs to its end before a failed one is raised: left running in
        # a loop that stops with the invocation, the others would be frozen mid-effect.
        outcomes = await asyncio.gather(
            *(fleet.complete_chain(e.tag, e.chain_id) for e in acked), return_exceptions=True
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        ran = [outcome is True for outcome in outcomes]
        timed_out = sum(isinstance(e, TimedOut) for e in ended)
        return {
            "acked": len(acked),
            "continued": sum(ran),
            "failed": len(ended) - timed_out,
            "timed_out": timed_out,
            "skipped": self.skipped - skipped,
        }


class SweepHandler:
    """``handler(event, context)`` for a schedule: fail the jobs past their deadline.

    One ``sweep()`` of the client: each overdue chain is failed with reason
    "timeout" once, whatever the number of sweepers; counted as timed-out chains.
    """

    def __init__(self, open_fleet: OpenFleet) -> None:
        self.environment = _Environment(open_fleet)

    def __call__(self, event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        async def sweep(fleet: Fleet) -> dict[str, Any]:
            # each chain on its own: the rest were swept; a page unread stops the sweep, and
            # what it did is logged before that is raised
            swept = await sweep_async(fleet.ack.sweep())
            fleet.telemetry.count("chains", len(swept.failed), outcome="timed_out")
            for chain in swept.failed:
                log("timed-out", chain.tag, None)
            for tag, error in swept.errors.items():
                item_failed("sweep", error, logger=LOGGER, event="sweep-failed", tag=tag)
            if swept.stopped is not None:
                raise swept.stopped
            return {"swept": len(swept.failed), "errors": len(swept.errors)}

        result: dict[str, Any] = self.environment.run(sweep)
        return result


def _seconds_from_env(name: str) -> float | None:
    """An optional number of seconds from the environment; ``InvalidTimeout``, naming the
    variable, if it is not one above 0 (``float`` alone takes "nan", "inf", "-5")."""
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError as exc:
        raise InvalidTimeout(f"{name}={text!r} is not a number of seconds") from exc
    if not (math.isfinite(seconds) and seconds > 0):
        raise InvalidTimeout(f"{name}={text!r} is not a number of seconds above 0")
    if seconds > MAX_TIMEOUT:  # else refused at every submit, naming no variable
        raise InvalidTimeout(f"{name}={text!r} is over a year ({MAX_TIMEOUT:.0f} seconds)")
    return seconds


def partition_key_setting() -> str:
    """``XOR_ACK_PARTITION_KEY``, ``tagID`` when unset or empty (as every function reads it)."""
    return os.environ.get("XOR_ACK_PARTITION_KEY") or DEFAULT_PARTITION_KEY


def _setting(name: str, what: str) -> str:
    """The environment's ``name``; ``SettingMissing`` if it is not set or empty."""
    value = os.environ.get(name, "")
    if not value:
        raise SettingMissing(name, what)
    return value


def from_environment(
    handler: Handler | None = None, continuation: Continuation | None = None
) -> OpenFleet:
    """A fleet made from the function's environment (the template in ``infra/fleet.yaml``):

    ``XOR_ACK_TABLE`` (the chains table), ``XOR_ACK_QUEUE_URL`` (where children go),
    ``XOR_ACK_PARTITION_KEY`` (default ``tagID``), ``XOR_ACK_CONTINUATION_QUEUE_URL``
    (optional: a ``QueueContinuation`` when no ``continuation`` is given),
    ``XOR_ACK_JOB_TIMEOUT`` / ``XOR_ACK_JOB_IDLE_TIMEOUT`` (optional, seconds: the
    deadline of the jobs this fleet submits; ``InvalidTimeout``, naming the variable, if
    not a number of seconds above 0, as the function is made).
    ``SettingMissing`` names a required one that is not set, as the fleet is opened.
    With a ``handler`` (the work queue's function) the queue is asked first, once per
    execution environment: one that does not exist, or an SQS that cannot be reached, is
    ``QueueUnavailable`` before any handler runs (it found it only at its first
    children's send, after the handler's work, on every delivery until the dead-letter
    queue took the message).
    """
    timeout = _seconds_from_env("XOR_ACK_JOB_TIMEOUT")
    idle_timeout = _seconds_from_env("XOR_ACK_JOB_IDLE_TIMEOUT")

    @contextlib.asynccontextmanager
    async def open_fleet() -> Any:
        from .completion import QueueContinuation
        from .sqs import QueueUnavailable, SqsSender, sqs_client

        async with sqs_client() as sqs:
            then = continuation
            target = os.environ.get("XOR_ACK_CONTINUATION_QUEUE_URL")
            if then is None and target:
                then = QueueContinuation(sqs, target)
            table = _setting("XOR_ACK_TABLE", "the chains table")
            send = SqsSender(sqs, _setting("XOR_ACK_QUEUE_URL", "the work queue's URL"))
            if handler is not None:
                try:
                    await send.check()
                except QueueUnavailable as exc:
                    raise QueueUnavailable(
                        f"XOR_ACK_QUEUE_URL, where the handler's children go: {exc}; no handler ran"
                    ) from exc
            async with Fleet.connect(
                table=table,
                partition_key=partition_key_setting(),
                handler=handler or (lambda message: []),
                send=send,
                continuation=then,
                timeout=timeout,
                idle_timeout=idle_timeout,
            ) as fleet:
                yield fleet

    return open_fleet
