"""The Lambda handler helper, called as Lambda calls it, with recorded event fixtures."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

from xor_ack_dynamodb import events
from xor_ack_dynamodb.dynamodb import loops as _loops
from xor_ack_dynamodb.errors import CorruptRecord, InvalidArgument, InvalidEvent, InvalidListener
from xor_ack_dynamodb.fleet.markers import done_key

from . import samples


def batch() -> dict[str, Any]:
    return {"Records": samples.life_of_chains()}


class Recorder:
    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.fail_on = fail_on

    def __call__(self, name: str) -> Any:
        def callback(event: events.ChainEvent) -> None:
            if self.fail_on is not None and (name, event.tag) == tuple(self.fail_on.split(":")):
                raise RuntimeError(f"downstream refused {event.tag}")
            self.calls.append((name, event.kind, event.tag))

        return callback

    def handler(self, **kw: Any) -> events.StreamHandler:
        kinds = ["created", "acked", "failed", "timed_out", "expired", "deleted"]
        return events.StreamHandler(**{f"on_{k}": self(k) for k in kinds}, **kw)


def test_each_event_reaches_its_callback() -> None:
    rec = Recorder()
    assert rec.handler()(batch(), None) == {"batchItemFailures": []}
    assert rec.calls == [
        ("created", "created", "job-1"),
        ("acked", "acked", "job-1"),
        ("created", "created", "job-2"),
        ("failed", "failed", "job-2"),
        ("created", "created", "job-3"),
        ("timed_out", "timed_out", "job-3"),
        ("created", "created", "job-1"),
        ("expired", "expired", "job-5"),
        ("expired", "expired", "job-2"),
        ("created", "created", "job-6"),
        ("deleted", "deleted", "job-6"),
    ]


def test_timed_out_goes_to_on_failed_without_on_timed_out() -> None:
    failures: list[events.Failed] = []
    handler = events.StreamHandler(on_failed=failures.append)
    handler(batch())
    assert [(type(f), f.tag) for f in failures] == [
        (events.Failed, "job-2"),
        (events.TimedOut, "job-3"),
    ]


def test_the_first_failure_is_reported_and_nothing_after_it_runs() -> None:
    rec = Recorder(fail_on="failed:job-2")
    records = batch()["Records"]
    result = rec.handler()({"Records": records})
    assert result == {
        "batchItemFailures": [{"itemIdentifier": records[4]["dynamodb"]["SequenceNumber"]}]
    }
    assert rec.calls == [
        ("created", "created", "job-1"),
        ("acked", "acked", "job-1"),
        ("created", "created", "job-2"),
    ]


def test_lambda_retrying_from_the_failure_with_and_without_dedupe() -> None:
    records = batch()["Records"]
    # A record with two events (a create over an expired live chain) whose second fails.
    old = samples.chain_image("job-8", expires_at="1700000001")
    new = samples.chain_image("job-8", chain_id=b"\x08" * 8)
    records.insert(3, samples.record("MODIFY", old=old, new=new))
    rec = Recorder(fail_on="created:job-8")
    seen = events.RecentIds()
    first = rec.handler(seen=seen)({"Records": records})
    failed_at = next(
        i
        for i, r in enumerate(records)
        if r["dynamodb"]["SequenceNumber"] == first["batchItemFailures"][0]["itemIdentifier"]
    )
    assert failed_at == 3
    assert rec.calls[-1] == ("expired", "expired", "job-8")
    # Lambda retries from the failing record; the downstream works now.
    rec.fail_on = None
    retry = copy.deepcopy(records[failed_at:])
    assert rec.handler(seen=seen)({"Records": retry}) == {"batchItemFailures": []}
    assert rec.calls.count(("expired", "expired", "job-8")) == 1  # deduplicated by id
    assert rec.calls.count(("created", "created", "job-8")) == 1
    # Without a dedupe store, the retry calls the first event of the record again.
    again = Recorder()
    again.handler()({"Records": copy.deepcopy(records[failed_at:])})
    assert again.calls[0] == ("expired", "expired", "job-8")


def test_a_corrupt_or_foreign_record_is_reported_and_skipped_the_batch_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A record that can never decode is never worth a retry: by default it is reported
    (a warning line, a metric) and skipped, and the batch's other records are handled."""
    counted: list[dict[str, Any]] = []
    monkeypatch.setattr(
        _loops, "counter", type("C", (), {"add": lambda s, n, a: counted.append(a)})()
    )
    records = batch()["Records"]
    records[2] = copy.deepcopy(records[2])  # its new image is record 7's old one too
    del records[2]["dynamodb"]["NewImage"]["stamp"]
    foreign = samples.record("INSERT", new={"tagID": {"S": "order-7"}, "total": {"N": "12"}})
    records.insert(5, foreign)  # another item of a shared table
    records.insert(0, {"not": "a stream record"})
    rec = Recorder()
    handler = rec.handler()
    with caplog.at_level(logging.WARNING, logger="xor_ack_dynamodb.events.handler"):
        assert handler({"Records": records}) == {"batchItemFailures": []}
    assert handler.skipped == 3 and len(rec.calls) == 10  # every other event: handled
    assert ("acked", "acked", "job-1") not in rec.calls
    assert [a["loop"] for a in counted] == ["stream_handler"] * 3
    assert {a["error"] for a in counted} == {"CorruptRecord"}
    assert len([r for r in caplog.records if "record-skipped" in r.getMessage()]) == 3
    # on_corrupt hears each of them too ...
    corrupt: list[CorruptRecord] = []
    rec = Recorder()
    assert rec.handler(on_corrupt=corrupt.append)({"Records": records}) == {"batchItemFailures": []}
    assert len(corrupt) == 3 and records[3]["dynamodb"]["SequenceNumber"] in corrupt[1].record

    # ... and only when a function of yours raises does the record fail the batch
    def refuse(error: CorruptRecord) -> None:
        raise RuntimeError("send it to my dead-letter queue instead")

    failed = Recorder().handler(on_corrupt=refuse)({"Records": records[1:]})
    assert failed == {
        "batchItemFailures": [{"itemIdentifier": records[3]["dynamodb"]["SequenceNumber"]}]
    }


def test_a_fleets_marker_items_are_no_corrupt_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fleet keeps marker items in its chains table (pages, done records): each write and
    TTL removal of one was reported as a corrupt record (a warning, a metric, ``skipped``),
    where the fleet's own stream handler passes them by.  They give no event."""
    counted: list[dict[str, Any]] = []
    monkeypatch.setattr(
        _loops, "counter", type("C", (), {"add": lambda s, n, a: counted.append(a)})()
    )
    marker = {
        "tagID": {"S": done_key("job-1", b"\x07" * 8)},
        "chain_id": {"B": samples.b64(b"\x07" * 8)},
        "created_at": {"N": "1700000000"},
        "expires_at": {"N": "1701209600"},
    }
    records = [samples.record("INSERT", new=marker), samples.record("REMOVE", old=marker, ttl=True)]
    assert [events.decode(record) for record in records] == [[], []]
    handler = Recorder().handler()
    assert handler({"Records": records}) == {"batchItemFailures": []}
    assert (handler.skipped, counted) == (0, [])


def test_the_event_kind_is_checked_in_the_handler_too() -> None:
    """Without filter criteria (or with wrong ones) the handler still ignores what is no event."""
    stamp = samples.life_of_chains()[1]  # an intermediate stamp
    rec = Recorder()
    assert rec.handler()({"Records": [stamp]}) == {"batchItemFailures": []}
    assert rec.calls == []
    other = copy.deepcopy(stamp)
    other["eventSource"] = "aws:kinesis"
    handler = rec.handler()
    assert handler({"Records": [other]})["batchItemFailures"] == []  # skipped, reported
    assert handler.skipped == 1 and rec.calls == []
    with pytest.raises(InvalidEvent, match="no Records list"):  # also a TypeError
        rec.handler()({"Records": None})
    with pytest.raises(InvalidEvent):  # a scheduled event, say: no stream event at all
        rec.handler()({"detail-type": "Scheduled Event"})


def test_usable_with_a_powertools_style_event_object(monkeypatch: pytest.MonkeyPatch) -> None:
    class DynamoDBStreamEvent:  # what aws-lambda-powertools' data class exposes
        def __init__(self, raw: dict[str, Any]) -> None:
            self.raw_event = raw

    heard: list[events.ChainEvent] = []
    monkeypatch.setenv("XOR_ACK_PARTITION_KEY", "pk")
    image = samples.chain_image("k")
    image["pk"] = image.pop("tagID")
    handler = events.StreamHandler(on_event=heard.append)
    event = DynamoDBStreamEvent({"Records": [samples.record("INSERT", new=image)]})
    assert handler(event, object()) == {"batchItemFailures": []}
    assert [(e.kind, e.tag) for e in heard] == [("created", "k")]


def test_callbacks_must_be_callable() -> None:
    with pytest.raises(InvalidListener, match="on_acked"):  # also a TypeError
        events.StreamHandler(on_acked="print")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        events.RecentIds(0)


def test_an_async_callback_is_refused_not_dropped() -> None:
    """An ``async def`` callback would be called and never awaited: its events lost while
    the batch reads as handled.  It is refused when the handler is made, as ``Ack.on``
    refuses one; a plain function that returns a coroutine fails its record instead."""
    heard: list[str] = []

    async def on_failed(event: events.ChainEvent) -> None:
        heard.append(event.tag)

    with pytest.raises(InvalidListener, match=r"on_failed .* is async"):
        events.StreamHandler(on_failed=on_failed)
    with pytest.raises(InvalidListener, match="on_event"):
        events.StreamHandler(on_event=on_failed)
    record = samples.record("INSERT", new=samples.chain_image("k"))
    handler = events.StreamHandler(on_created=lambda event: on_failed(event))
    answer = handler({"Records": [record]})
    number = record["dynamodb"]["SequenceNumber"]
    assert answer == {"batchItemFailures": [{"itemIdentifier": number}]}
    assert heard == []


def test_recent_ids_forget_the_oldest() -> None:
    seen = events.RecentIds(2)
    for event_id in ("a", "b", "c"):
        seen.add(event_id)
    assert "a" not in seen and "b" in seen and "c" in seen and len(seen) == 2


@pytest.mark.parametrize("size", [0, -1, "x", 2.5, None, True], ids=repr)
def test_recent_ids_of_a_size_that_is_no_count_is_invalid_argument(size: Any) -> None:
    with pytest.raises(InvalidArgument, match=r"RecentIds\(size\) must be an int >= 1") as caught:
        events.RecentIds(size)
    assert repr(size) in str(caught.value)


@pytest.mark.parametrize("key", [5, b"tagID"], ids=repr)
def test_a_handler_partition_key_that_is_no_name_is_invalid_argument(key: Any) -> None:
    with pytest.raises(InvalidArgument, match=r"partition_key must be a non-empty str"):
        events.StreamHandler(partition_key=key)
