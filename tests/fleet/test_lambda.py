"""The Lambda handlers, called with recorded events of AWS's documented formats."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from xor_ack_dynamodb import ChainState, Stamp
from xor_ack_dynamodb.errors import InvalidEvent, InvalidTimeout
from xor_ack_dynamodb.events import Acked
from xor_ack_dynamodb.fleet import Completed, Envelope, Fleet, Message, lambda_entry
from xor_ack_dynamodb.fleet.errors import InvalidEnvelope, SettingMissing
from xor_ack_dynamodb.fleet.lambda_sqs import (
    SqsBatchHandler,
    StreamCompletionHandler,
    SweepHandler,
    from_environment,
)
from xor_ack_dynamodb.table import TableSpec

pytestmark = pytest.mark.ddblocal
FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / name).read_text()))


class Box:
    def __init__(self) -> None:
        self.sent: list[Envelope] = []
        self.done: list[str] = []


def two_children_or_none(message: Message) -> list[int]:
    return [0, 0] if message.payload else []


def opener(
    endpoint: str,
    table: str,
    box: Box,
    continuation: bool = True,
    handler: Callable[[Message], Any] = two_children_or_none,
) -> Callable[..., Any]:
    async def send(envelopes: Any) -> None:
        box.sent.extend(envelopes)

    async def then(done: Completed) -> None:
        box.done.append(done.tag)

    @contextlib.asynccontextmanager
    async def open_fleet() -> AsyncIterator[Fleet]:
        async with Fleet.connect(
            table=table,
            endpoint_url=endpoint,
            region_name="us-east-1",
            handler=handler,
            send=send,
            continuation=then if continuation else None,
        ) as fleet:
            yield fleet

    return open_fleet


def batch(bodies: list[str], fifo: bool = False, counts: list[int] | None = None) -> dict[str, Any]:
    event = fixture("sqs_event.json")
    template = event["Records"][0]
    records = []
    for i, body in enumerate(bodies):
        record = copy.deepcopy(template)
        record["messageId"] = f"m-{i}"
        record["body"] = body
        record["attributes"]["ApproximateReceiveCount"] = str((counts or [1] * len(bodies))[i])
        if fifo:
            record["eventSourceARN"] += ".fifo"
        records.append(record)
    return {"Records": records}


def submit(open_fleet: Callable[..., Any], tag: str, payload: Any) -> None:
    async def go() -> None:
        async with open_fleet() as fleet:
            await fleet.submit(tag, payload)

    asyncio.run(go())


def test_a_batch_reports_only_the_messages_that_failed(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    box = Box()
    open_fleet = opener(ddb_local_endpoint, ddb_table.name, box)
    submit(open_fleet, "lambda-job", 1)
    root = box.sent.pop()
    handler = SqsBatchHandler(open_fleet)
    try:
        assert handler(batch([root.to_json()]), None) == {"batchItemFailures": []}
        children = [e.to_json() for e in box.sent]
        assert len(children) == 2
        response = handler(batch([children[0], "not an envelope", children[1]]), None)
        assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
        assert box.done == ["lambda-job"]
        # Lambda retries the whole batch: every message is a duplicate, nothing fails.
        again = handler(batch([root.to_json(), *children], counts=[2, 2, 2]), None)
        assert again == {"batchItemFailures": []} and box.done == ["lambda-job"]
    finally:
        handler.environment.close()


def test_a_fifo_batch_stops_at_the_first_failure(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    box = Box()
    open_fleet = opener(ddb_local_endpoint, ddb_table.name, box)
    submit(open_fleet, "fifo-job", 0)
    root = box.sent.pop()
    handler = SqsBatchHandler(open_fleet)
    try:
        response = handler(batch(["garbage", root.to_json()], fifo=True), None)
        assert response == {
            "batchItemFailures": [{"itemIdentifier": "m-0"}, {"itemIdentifier": "m-1"}]
        }
        assert box.done == []  # the root, after the failure, was not handled
    finally:
        handler.environment.close()


class Invocation:
    """A Lambda context: the time left until the invocation's end."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return int((self.end - time.monotonic()) * 1000)


async def slow_on_slow_jobs(message: Message) -> list[int]:
    """A handler that takes a minute over a "slow" job and no time over the others."""
    if message.payload == "slow":
        await asyncio.sleep(60)
    return []


@pytest.mark.parametrize("fifo", [False, True])
def test_a_batch_returns_before_the_invocation_ends_naming_what_it_did_not_handle(
    ddb_local_endpoint: str, ddb_table: TableSpec, fifo: bool
) -> None:
    """One slow message no longer costs the whole batch: by ``margin`` before the end the
    handler returns, the done messages deleted and only the others delivered again."""
    box = Box()
    sent = Box()
    submitting = opener(ddb_local_endpoint, ddb_table.name, sent)
    tags = [f"fast-1-{fifo}", f"slow-{fifo}", f"fast-2-{fifo}"]
    for tag in tags:
        submit(submitting, tag, "slow" if tag.startswith("slow") else 0)
    roots = [e.to_json() for e in sent.sent]
    slow = opener(ddb_local_endpoint, ddb_table.name, box, handler=slow_on_slow_jobs)
    # Returns by 7 - 3 = 4 s: the fast messages (0.1-0.4 s here) have 4 s to be done, and
    # cancelling the slow one and returning has 2 s (ms here), a slow machine's too; one
    # that ignored the margin would return at the end, 7 s.
    handler = SqsBatchHandler(slow, margin=3.0)
    try:
        started = time.monotonic()
        response = handler(batch(roots, fifo=fifo), Invocation(7.0))
        took = time.monotonic() - started
        late = ["m-1", "m-2"] if fifo else ["m-1"]  # FIFO: the slow one and every later one
        assert response == {"batchItemFailures": [{"itemIdentifier": m} for m in late]}
        assert 3.5 <= took < 6.0  # by the margin, not the slow handler's minute
        assert sorted(box.done) == ([tags[0]] if fifo else [tags[0], tags[2]])
        # No context (a test, a direct call): no deadline, as before.
        assert handler(batch([roots[0]]), None) == {"batchItemFailures": []}
    finally:
        handler.environment.close()


@pytest.mark.parametrize("margin", [-1, float("nan"), 900, "2", True])
def test_a_margin_that_is_no_time_before_the_end_is_refused(margin: Any) -> None:
    from xor_ack_dynamodb.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match=r"SqsBatchHandler\(margin=\.\.\.\)"):
        SqsBatchHandler(opener("http://127.0.0.1:1", "t", Box()), margin=margin)


def test_record_handler_fits_powertools_and_raises_on_failure(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    box = Box()
    open_fleet = opener(ddb_local_endpoint, ddb_table.name, box)
    submit(open_fleet, "pt-job", 0)
    records = batch([box.sent.pop().to_json(), "garbage"])["Records"]

    class SQSRecord:  # the shape of powertools' record: the raw dict under raw_event
        def __init__(self, raw: dict[str, Any]) -> None:
            self.raw_event = raw

    handler = SqsBatchHandler(open_fleet)
    try:
        handled = handler.record_handler(SQSRecord(records[0]))
        assert handled is not None and handled.acked
        with pytest.raises(InvalidEnvelope):
            handler.record_handler(records[1])
        with pytest.raises(InvalidEvent, match="an SQS record is a dict"):  # also a TypeError
            handler.record_handler("not a record")
    finally:
        handler.environment.close()


def test_the_dead_letter_function_fails_the_chain(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    box = Box()
    open_fleet = opener(ddb_local_endpoint, ddb_table.name, box)
    submit(open_fleet, "dead-job", 1)
    root = box.sent.pop()
    handler = SqsBatchHandler(open_fleet, dead_letter=True)
    try:
        assert handler(batch([root.to_json()]), None) == {"batchItemFailures": []}

        async def state() -> Any:
            async with open_fleet() as fleet:
                return await fleet.ack.get("dead-job")

        chain = asyncio.run(state())
        assert chain is not None and chain.failed and chain.reason == "dead-letter"
    finally:
        handler.environment.close()


def _lambda_image(raw: dict[str, Any]) -> dict[str, Any]:
    """An item as a Lambda stream record carries it: binary values in base64."""
    return {
        name: {"B": base64.b64encode(value["B"]).decode()} if "B" in value else value
        for name, value in raw.items()
    }


def test_the_stream_function_continues_chains_that_just_acked(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    box = Box()
    quiet = opener(ddb_local_endpoint, ddb_table.name, box, continuation=False)
    submit(quiet, "stream-job", 0)
    root = box.sent.pop()
    worker = SqsBatchHandler(quiet)  # acks the chain, with no continuation of its own
    try:
        worker(batch([root.to_json()]), None)
    finally:
        worker.environment.close()
    raw = boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1")
    tombstone = raw.get_item(TableName=ddb_table.name, Key={"tagID": {"S": "stream-job"}})["Item"]
    live = {k: v for k, v in tombstone.items() if k not in ("acked_at", "expires_at")}
    live["stamp"] = {"B": b"\x01" * 16}
    live["version"] = {"N": str(int(tombstone["version"]["N"]) - 1)}
    event = fixture("stream_event.json")
    acked, stamped = event["Records"]  # a transition to acked; a stamp that ended nothing
    acked["dynamodb"]["Keys"] = {"tagID": {"S": "stream-job"}}
    acked["dynamodb"]["NewImage"] = _lambda_image(tombstone)
    acked["dynamodb"]["OldImage"] = _lambda_image(live)
    marker = copy.deepcopy(stamped)  # the done record the fleet writes: no chain
    key = {"S": "stream-job#xor-ack-fleet/done/00"}
    marker["eventName"] = "INSERT"
    marker["dynamodb"] = {
        **marker["dynamodb"],
        "Keys": {"tagID": key},
        "NewImage": {"tagID": key, "chain_id": {"B": "AQ=="}, "created_at": {"N": "1"}},
    }
    del marker["dynamodb"]["OldImage"]
    handler = StreamCompletionHandler(opener(ddb_local_endpoint, ddb_table.name, box))
    try:
        found = handler.events(event | {"Records": [acked, stamped, marker]})
        assert [(e.kind, e.tag) for e in found] == [("acked", "stream-job")]
        assert found[0].chain_id == tombstone["chain_id"]["B"]  # this very generation
        event = {"Records": [acked, stamped, marker]}
        summary = {"acked": 1, "continued": 1, "failed": 0, "timed_out": 0, "skipped": 0}
        assert handler(event, None) == summary
        assert handler(event, None) == summary | {"continued": 0}  # a redelivered batch
        assert box.done == ["stream-job"]
        assert handler.skipped == 0  # the fleet's marker is no chain, and no failure either
    finally:
        handler.environment.close()


def test_the_stream_function_raises_a_failed_continuation_after_the_others_ended() -> None:
    # The first failure was raised at once, while the batch's other continuations were
    # still running: left in the loop that stops with the invocation, mid-effect.
    ended: list[str] = []

    class Continuing:
        async def complete_chain(self, tag: str, chain_id: bytes) -> bool:
            if tag == "bad":
                raise RuntimeError("the continuation failed")
            await asyncio.sleep(0.05)
            ended.append(tag)
            return True

    handler = StreamCompletionHandler(lambda: None)  # type: ignore[arg-type,return-value]
    acked = [Acked(tag, b"\1" * 8, 0.0) for tag in ("bad", "slow")]
    handler.events = lambda event: list(acked)  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="the continuation failed"):
        asyncio.run(handler.process(Continuing(), {}))  # type: ignore[arg-type]
    assert ended == ["slow"]


def test_the_stream_function_skips_a_record_that_is_no_chain_and_handles_the_rest(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    event = fixture("stream_event.json")
    whole = len(StreamCompletionHandler(lambda: None).events(event))  # type: ignore[arg-type,return-value]
    del event["Records"][1]["dynamodb"]["NewImage"]["stamp"]  # damaged: not a chain item
    handler = StreamCompletionHandler(opener(ddb_local_endpoint, ddb_table.name, Box()))
    try:
        summary = handler(event, None)
        assert summary["skipped"] == 1  # reported, never retried
        assert summary["acked"] == whole == 1  # the rest of the batch: handled
    finally:
        handler.environment.close()


class _Template(yaml.SafeLoader):
    """Reads a CloudFormation template: its intrinsic functions (!Sub, !GetAtt) as plain values."""


_Template.add_multi_constructor("!", lambda loader, suffix, node: None)


def _allowed(role: str) -> set[str]:
    template = yaml.load(
        (Path(__file__).parents[2] / "infra" / "fleet.yaml").read_text(), _Template
    )
    actions: set[str] = set()
    for policy in template["Resources"][role]["Properties"]["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            found = statement["Action"]
            actions.update([found] if isinstance(found, str) else found)
    return actions


def test_the_sweeper_fails_a_stalled_job_within_its_roles_actions(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    box = Box()
    open_fleet = opener(ddb_local_endpoint, ddb_table.name, box)

    async def stalled() -> None:
        async with open_fleet() as fleet:
            await fleet.submit("stalled-job", 1, timeout=0.5)
        await asyncio.sleep(0.6)

    asyncio.run(stalled())
    handler = SweepHandler(open_fleet)
    try:
        assert handler({"source": "aws.events"}, None) == {"swept": 1, "errors": 0}
        fleet = handler.environment._fleet
        assert fleet is not None
        sent = {f"dynamodb:{op}" for op in fleet.ack.stats.requests}
        assert sent <= _allowed("SweeperRole"), sent - _allowed("SweeperRole")
        assert handler({"source": "aws.events"}, None) == {"swept": 0, "errors": 0}  # failed once
    finally:
        handler.environment.close()
    assert box.done == []


def test_a_sweep_stopped_part_way_logs_its_timed_out_jobs_then_fails(
    ddb_local_endpoint: str, ddb_table: TableSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """A page of the index throttled after a job was failed: the job's "timed-out" line is
    logged (it was not: the error went up without it), and the invocation fails."""
    from botocore.exceptions import ClientError

    from xor_ack_dynamodb.errors import SweepStopped

    box = Box()
    handler = SweepHandler(opener(ddb_local_endpoint, ddb_table.name, box))
    try:
        assert handler({"source": "aws.events"}, None) == {"swept": 0, "errors": 0}
        fleet = handler.environment._fleet
        assert fleet is not None
        late = ChainState("stalled-job", Stamp(b"\x01" * 16), b"c", 2, (), 1.0, 2.0, 2.0)
        throttled = ClientError({"Error": {"Code": "ThrottlingException"}}, "Query")

        async def stopped() -> Any:
            raise SweepStopped([late], {}, 3, throttled)

        fleet.ack.sweep = stopped  # type: ignore[method-assign]
        with caplog.at_level("INFO"), pytest.raises(SweepStopped):
            handler({"source": "aws.events"}, None)
        assert '"event":"timed-out","tag":"stalled-job"' in caplog.text
    finally:
        handler.environment.close()


def test_the_dead_letter_function_reads_pages_within_its_roles_actions(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    # A dead letter whose token the window no longer holds is looked for in the chain's
    # pages (BatchGetItem): refused by the role, every such letter would be kept, failing
    # again, for ever.
    def ten(message: Message) -> list[None]:
        return [None] * 10 if message.parent_id is None else []

    @contextlib.asynccontextmanager
    async def open_fleet() -> AsyncIterator[Fleet]:
        async def send(envelopes: Any) -> None:
            sent.extend(envelopes)

        async with Fleet.connect(
            table=ddb_table.name,
            endpoint_url=ddb_local_endpoint,
            region_name="us-east-1",
            handler=ten,
            send=send,
            token_window=4,
            page_size=2,
        ) as fleet:
            yield fleet

    sent: list[Envelope] = []

    async def nine_of_ten() -> None:
        async with open_fleet() as fleet:
            await fleet.handle((await fleet.submit("far-dead-job", None)).to_json())
            for child in sent[1:10]:
                await fleet.handle(child.to_json())

    asyncio.run(nine_of_ten())
    first = sent[1]
    operations: set[str] = set()

    async def record(fleet: Fleet) -> None:
        def sent_op(model: Any, **_: Any) -> None:  # what goes through botocore
            operations.add(f"dynamodb:{model.name}")

        fleet.ack.client.meta.events.register("before-call.dynamodb", sent_op)

    handler = SqsBatchHandler(open_fleet, dead_letter=True)
    try:
        handler.environment.run(record)
        assert handler(batch([first.to_json()]), None) == {"batchItemFailures": []}
        fleet = handler.environment._fleet
        assert fleet is not None
        operations.update(f"dynamodb:{op}" for op in fleet.ack.stats.requests)  # its own path
        state = handler.environment.run(lambda fleet: fleet.ack.get("far-dead-job"))
        assert state is not None and state.live  # its stamp landed: found in a page
    finally:
        handler.environment.close()
    assert "dynamodb:BatchGetItem" in operations
    assert operations <= _allowed("DeadLetterRole"), operations - _allowed("DeadLetterRole")


@pytest.mark.parametrize("missing", ["XOR_ACK_TABLE", "XOR_ACK_QUEUE_URL"])
def test_a_fleet_from_an_environment_without_its_table_or_queue_names_the_variable(
    moto_endpoint: str, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", moto_endpoint)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("XOR_ACK_TABLE", "chains")
    monkeypatch.setenv("XOR_ACK_QUEUE_URL", f"{moto_endpoint}/123456789012/work")
    monkeypatch.delenv(missing)

    async def open_it() -> None:
        async with from_environment()():
            raise AssertionError("the fleet opened without " + missing)

    with pytest.raises(SettingMissing, match=f"^{missing} is not set: "):
        asyncio.run(open_it())


def test_an_empty_partition_key_variable_is_the_default_for_every_function(
    moto_endpoint: str, moto_table: TableSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``XOR_ACK_PARTITION_KEY=""``: the work, dead-letter and completion functions refused
    it as a partition key (``InvalidArgument`` naming no variable) where the sweeper and
    the stream handler took ``tagID``."""
    _environment(monkeypatch, moto_endpoint, moto_table, "work-queue-empty-key")
    monkeypatch.setenv("XOR_ACK_PARTITION_KEY", "")

    async def key() -> str:
        async with from_environment()() as fleet:
            return str(fleet.ack.partition_key)

    assert asyncio.run(key()) == "tagID"
    lambda_entry._completions.cache_clear()
    try:
        assert lambda_entry._completions().partition_key == "tagID"
    finally:
        lambda_entry._completions.cache_clear()


def _environment(
    monkeypatch: pytest.MonkeyPatch, moto_endpoint: str, table: TableSpec, queue_name: str
) -> str:
    """A function's environment on moto: its table, and a new queue ``queue_name`` (its URL)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", moto_endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", moto_endpoint)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    queue = boto3.client("sqs", endpoint_url=moto_endpoint, region_name="us-east-1")
    url: str = queue.create_queue(QueueName=queue_name)["QueueUrl"]
    monkeypatch.setenv("XOR_ACK_TABLE", table.name)
    monkeypatch.setenv("XOR_ACK_QUEUE_URL", url)
    return url


def test_the_work_function_with_a_queue_that_does_not_exist_runs_no_handler(
    moto_endpoint: str, moto_table: TableSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The work function found a wrong XOR_ACK_QUEUE_URL only when it sent a handler's
    # children: after the handler's work, again on every delivery of the message until the
    # dead-letter queue took it.
    from xor_ack_dynamodb.fleet import QueueUnavailable

    url = _environment(monkeypatch, moto_endpoint, moto_table, "work-queue-right")
    ran: list[Any] = []

    def handler(message: Message) -> list[int]:
        ran.append(message.payload)
        return [1]

    async def submitted() -> tuple[Envelope, Any]:
        async with from_environment()() as fleet:
            root = await fleet.submit("wrong-queue-job", 0)
            return root, await fleet.ack.get("wrong-queue-job")

    async def chain() -> Any:
        async with from_environment()() as fleet:
            return await fleet.ack.get("wrong-queue-job")

    root, before = asyncio.run(submitted())
    monkeypatch.setenv("XOR_ACK_QUEUE_URL", url.replace("-right", "-wrong"))
    work = SqsBatchHandler(from_environment(handler))
    try:
        with pytest.raises(QueueUnavailable) as refused:
            work(batch([root.to_json()]), None)
    finally:
        work.environment.close()
    says = str(refused.value)
    assert says.startswith("XOR_ACK_QUEUE_URL, where the handler's children go: queue ")
    assert "work-queue-wrong does not exist" in says and says.endswith("no handler ran")
    assert ran == [] and asyncio.run(chain()) == before  # its job as it was


def test_a_fleet_from_the_environment_gives_its_jobs_the_configured_deadline(
    moto_endpoint: str, moto_table: TableSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    _environment(monkeypatch, moto_endpoint, moto_table, "env-deadline")
    monkeypatch.setenv("XOR_ACK_JOB_TIMEOUT", "600")
    monkeypatch.setenv("XOR_ACK_JOB_IDLE_TIMEOUT", "60")

    async def submit() -> tuple[float | None, float | None]:
        async with from_environment()() as fleet:
            await fleet.submit("env-job", 1)
            state = await fleet.ack.get("env-job")
        assert state is not None and state.deadline is not None
        return state.idle_timeout, state.deadline - state.created_at

    idle, first_deadline = asyncio.run(submit())
    assert idle == 60 and 599 <= first_deadline <= 601  # the first deadline is the timeout's

    monkeypatch.setenv("XOR_ACK_JOB_TIMEOUT", "ten minutes")
    with pytest.raises(InvalidTimeout, match="XOR_ACK_JOB_TIMEOUT"):
        from_environment()


@pytest.mark.parametrize("value", ["nan", "inf", "-5", "0", "4e7"])
@pytest.mark.parametrize("name", ["XOR_ACK_JOB_TIMEOUT", "XOR_ACK_JOB_IDLE_TIMEOUT"])
def test_a_deadline_setting_that_is_no_time_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    # float() takes "nan", "inf" and "-5": they passed, to be refused only when a job was
    # submitted, as "timeout must be ..." (a name the function's settings do not use), and
    # never in a function that submits nothing; so did a deadline of over a year (4e7 s).
    monkeypatch.setenv(name, value)
    with pytest.raises(InvalidTimeout, match=f"^{name}={value!r} is (not a number|over a year)"):
        from_environment()
