"""The stream reader's shard handling, against a scripted ``dynamodbstreams`` double: what
DynamoDB Local (one shard, never split) cannot show -- pages of shards, a split (a child
read only after its parent), an expired iterator, tailing from LATEST, calls that fail."""

from __future__ import annotations

import importlib
import itertools
import threading
import time
from collections import Counter
from typing import Any

import pytest
from botocore.exceptions import ClientError

from xor_ack_dynamodb import events
from xor_ack_dynamodb.dynamodb import loops as _loops
from xor_ack_dynamodb.errors import CorruptRecord, StreamReadFailed

from . import samples

#: The module (``events.follow`` is the function): its ``READ_*`` settings.
follow_module = importlib.import_module("xor_ack_dynamodb.events.follow")


class ExpiredIteratorException(Exception):
    pass


class TrimmedDataAccessException(Exception):
    pass


class FakeStreams:
    """Shards as lists of records; iterators are "shard:position" strings.  The records of
    a shard before ``trimmed_before[shard]`` are gone (older than the 24-hour retention)."""

    class exceptions:
        ExpiredIteratorException = ExpiredIteratorException
        TrimmedDataAccessException = TrimmedDataAccessException

    def __init__(self, shards: list[dict[str, Any]], records: dict[str, list[dict[str, Any]]]):
        self.shards = shards
        self.records = records
        self.trimmed_before: dict[str, int] = {}
        self.expire_once: set[str] = set()
        self.fail_once: set[str] = set()  # iterators whose GetRecords fails once (throttled)
        #: iterators answered empty (a gap), as many times as counted
        self.empty_once: Counter[str] = Counter()
        self.calls: list[tuple[str, str]] = []

    def delete_shard(self, shard_id: str) -> None:
        """The stream deletes a shard (all of its records past the retention)."""
        self.shards = [s for s in self.shards if s["ShardId"] != shard_id]

    def describe_stream(self, StreamArn: str, ExclusiveStartShardId: str | None = None) -> Any:
        ids = [s["ShardId"] for s in self.shards]
        start = ids.index(ExclusiveStartShardId) + 1 if ExclusiveStartShardId else 0
        page = self.shards[start : start + 1]  # one shard per page
        description: dict[str, Any] = {"Shards": page}
        if start + 1 < len(self.shards):
            description["LastEvaluatedShardId"] = page[-1]["ShardId"]
        return {"StreamDescription": description}

    def get_shard_iterator(
        self, StreamArn: str, ShardId: str, ShardIteratorType: str, SequenceNumber: str = ""
    ) -> Any:
        self.calls.append((ShardId, ShardIteratorType))
        if ShardId not in {s["ShardId"] for s in self.shards}:
            error = {"Code": "ResourceNotFoundException", "Message": f"shard {ShardId}: none"}
            raise ClientError({"Error": error}, "GetShardIterator")
        records = self.records[ShardId]
        oldest = self.trimmed_before.get(ShardId, 0)
        if ShardIteratorType == "TRIM_HORIZON":
            position = oldest
        elif ShardIteratorType == "LATEST":
            position = len(records)
        else:  # AFTER_SEQUENCE_NUMBER
            numbers = [r["dynamodb"]["SequenceNumber"] for r in records]
            if numbers.index(SequenceNumber) < oldest:
                raise TrimmedDataAccessException(SequenceNumber)
            position = numbers.index(SequenceNumber) + 1
        return {"ShardIterator": f"{ShardId}:{position}"}

    def get_records(self, ShardIterator: str) -> Any:
        shard_id, position = ShardIterator.rsplit(":", 1)
        if ShardIterator in self.fail_once:
            self.fail_once.discard(ShardIterator)
            raise RuntimeError("LimitExceededException: throttled")
        if ShardIterator in self.expire_once:
            self.expire_once.discard(ShardIterator)
            raise ExpiredIteratorException(ShardIterator)
        if self.empty_once[ShardIterator] > 0:
            self.empty_once[ShardIterator] -= 1
            return {"Records": [], "NextShardIterator": ShardIterator}
        records = self.records[shard_id][int(position) : int(position) + 2]
        end = int(position) + len(records)
        shard = next(s for s in self.shards if s["ShardId"] == shard_id)
        closed = "EndingSequenceNumber" in shard["SequenceNumberRange"]
        answer: dict[str, Any] = {"Records": records}
        if not (closed and end == len(self.records[shard_id])):
            answer["NextShardIterator"] = f"{shard_id}:{end}"
        return answer


class RefusingStreams(FakeStreams):
    """Also refuses calls as AWS does once botocore's retries are spent: each key of
    ``throttled`` once (``LimitExceededException``), each of ``denied`` every time
    (``AccessDeniedException``).  A key is (operation, shard id); "" for DescribeStream."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.throttled: set[tuple[str, str]] = set()
        self.denied: set[tuple[str, str]] = set()

    def _check(self, operation: str, shard: str) -> None:
        key = (operation, shard)
        if key in self.denied:
            code = "AccessDeniedException"
        elif key in self.throttled:
            self.throttled.discard(key)
            code = "LimitExceededException"
        else:
            return
        raise ClientError({"Error": {"Code": code, "Message": code}}, operation)

    def describe_stream(self, StreamArn: str, ExclusiveStartShardId: str | None = None) -> Any:
        self._check("DescribeStream", "")
        return super().describe_stream(StreamArn, ExclusiveStartShardId)

    def get_shard_iterator(self, StreamArn: str, ShardId: str, **kwargs: Any) -> Any:
        self._check("GetShardIterator", ShardId)
        return super().get_shard_iterator(StreamArn, ShardId, **kwargs)

    def get_records(self, ShardIterator: str) -> Any:
        self._check("GetRecords", ShardIterator.rsplit(":", 1)[0])
        return super().get_records(ShardIterator)


def recorded(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The attributes of each ``xor_ack.item_failures`` count, as they are added."""
    counted: list[dict[str, Any]] = []
    recorder = type("C", (), {"add": lambda self, n, a: counted.append(a)})()
    monkeypatch.setattr(_loops, "counter", recorder)
    return counted


def split_stream() -> FakeStreams:
    batch = samples.life_of_chains()
    # The child is listed first: the reader must still read the parent first.
    shards = [
        {"ShardId": "child", "ParentShardId": "parent", "SequenceNumberRange": {}},
        {"ShardId": "parent", "SequenceNumberRange": {"EndingSequenceNumber": "9"}},
    ]
    return FakeStreams(shards, {"parent": batch[:5], "child": batch[5:]})


def followed(fake: FakeStreams, on_ready: Any, count: int) -> list[str]:
    """The tags a follower from now tells, until ``count`` of them (``on_ready``: what is
    written once it has started), or those told in 10 s: a follower that missed one ends."""
    stop = threading.Event()
    give_up = threading.Timer(10, stop.set)
    give_up.start()
    seen: list[str] = []
    try:
        for _record, decoded in events.follow(
            fake, "arn", interval=0.01, stop=stop, on_ready=on_ready
        ):
            assert not isinstance(decoded, Exception)
            seen.extend(e.tag for e in decoded)
            if len(seen) >= count:
                stop.set()
    finally:
        give_up.cancel()
    return seen


def sequence_numbers(records: list[dict[str, Any]]) -> list[str]:
    return [r["dynamodb"]["SequenceNumber"] for r in records]


def test_read_takes_every_page_of_shards_and_the_parent_first() -> None:
    fake = split_stream()
    fake.expire_once.add("parent:2")
    got = [record for record, _ in events.read(fake, "arn")]
    assert sequence_numbers(got) == sequence_numbers(fake.records["parent"] + fake.records["child"])
    assert ("parent", "AFTER_SEQUENCE_NUMBER") in fake.calls  # the expired iterator renewed


def test_read_reads_a_closed_shard_to_its_end_past_empty_answers() -> None:
    # A closed shard answering empty three times in a row was taken as read to its end, as
    # an open one is: the records after the gap, and its child's, were never read.
    fake = split_stream()
    fake.empty_once.update({"parent:2": 4})
    got = [record for record, _ in events.read(fake, "arn")]
    assert sequence_numbers(got) == sequence_numbers(fake.records["parent"] + fake.records["child"])


def test_read_goes_past_empty_answers_of_an_open_shard() -> None:
    fake = split_stream()
    fake.empty_once.update({"child:0", "child:2"})  # the open shard answers empty twice
    got = [record for record, _ in events.read(fake, "arn")]
    assert sequence_numbers(got) == sequence_numbers(fake.records["parent"] + fake.records["child"])


def test_read_of_a_table_written_to_all_the_time_ends_with_what_it_held() -> None:
    """``read`` ("every record the stream holds now": ``xor-ack chain stats``) waited for an
    open shard to answer empty three times in a row: on a table with a write before every
    GetRecords that never came, and the command never ended.  It ends at the first record
    made after the read began, and leaves that one and the later ones out."""

    class Busy(FakeStreams):
        def get_records(self, ShardIterator: str) -> Any:
            if ShardIterator.startswith("s:"):
                image = samples.chain_image(f"busy-{len(self.records['s'])}")
                made = time.time() + 1  # after the read began, as its rounded time says
                self.records["s"].append(samples.record("INSERT", new=image, approximate_time=made))
            return super().get_records(ShardIterator)

    held = [samples.record("INSERT", new=samples.chain_image(f"held-{i}")) for i in range(4)]
    fake = Busy([{"ShardId": "s", "SequenceNumberRange": {}}], {"s": list(held)})
    got = [record for record, _ in itertools.islice(events.read(fake, "arn"), 200)]
    assert sequence_numbers(got) == sequence_numbers(held)


def test_follow_from_latest_sees_only_new_records_and_stops() -> None:
    fake = split_stream()
    new = samples.record("INSERT", new=samples.chain_image("job-new"))
    stop = threading.Event()
    follower = events.follow(
        fake, "arn", interval=0.01, stop=stop, on_ready=lambda: fake.records["child"].append(new)
    )
    seen: list[str] = []
    for _record, decoded in follower:
        assert not isinstance(decoded, Exception)
        seen.extend(e.tag for e in decoded)
        stop.set()
    assert seen == ["job-new"]
    assert ("child", "LATEST") in fake.calls
    assert not any(shard == "parent" for shard, _ in fake.calls)  # closed before: the past


def test_follow_finds_a_split_and_reads_the_child_after_its_parent() -> None:
    batch = samples.life_of_chains()
    fake = FakeStreams([{"ShardId": "parent", "SequenceNumberRange": {}}], {"parent": []})

    def split() -> None:  # once the follower has its position: two writes, then a split
        fake.records["parent"].extend(batch[:2])
        fake.shards[0]["SequenceNumberRange"]["EndingSequenceNumber"] = "9"
        fake.shards.insert(
            0, {"ShardId": "child", "ParentShardId": "parent", "SequenceNumberRange": {}}
        )
        fake.records["child"] = batch[2:4]

    stop = threading.Event()
    got: list[dict[str, Any]] = []
    for record, _ in events.follow(
        fake, "arn", interval=0.01, refresh_every=0.0, stop=stop, on_ready=split
    ):
        got.append(record)
        if len(got) == 4:
            stop.set()
    assert sequence_numbers(got) == sequence_numbers(batch[:4])
    assert ("child", "TRIM_HORIZON") in fake.calls


def test_a_failing_shard_and_a_hostile_record_do_not_stop_the_follower(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A shard whose GetRecords fails is reported and read again from where it was; a record
    that is no chain's transition comes out as its error; the good records all follow."""
    counted: list[dict[str, Any]] = []
    recorder = type("C", (), {"add": lambda self, n, a: counted.append(a)})()
    monkeypatch.setattr(_loops, "counter", recorder)
    good = samples.life_of_chains()[:4]
    hostile = {"eventName": "INSERT", "dynamodb": {"SequenceNumber": "5" + "0" * 19}}
    fake = FakeStreams(
        [{"ShardId": "s", "SequenceNumberRange": {}}], {"s": [good[0], hostile, *good[1:]]}
    )
    fake.fail_once.add("s:2")  # after the first page: throttled once
    stop = threading.Event()
    seen: list[Any] = []
    for _record, decoded in events.follow(fake, "arn", from_start=True, interval=0.01, stop=stop):
        seen.append(decoded)
        if len(seen) == 5:
            stop.set()
    assert isinstance(seen[1], CorruptRecord)
    assert [type(d) for i, d in enumerate(seen) if i != 1] == [list] * 4  # every good record
    assert ("s", "AFTER_SEQUENCE_NUMBER") in fake.calls  # read again from where it was
    assert counted == [{"loop": "follow", "error": "RuntimeError"}]


def test_a_reader_past_the_retention_goes_on_from_the_oldest_record_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    counted: list[dict[str, Any]] = []
    recorder = type("C", (), {"add": lambda self, n, a: counted.append(a)})()
    monkeypatch.setattr(_loops, "counter", recorder)
    batch = samples.life_of_chains()[:8]
    fake = FakeStreams([{"ShardId": "s", "SequenceNumberRange": {}}], {"s": batch})
    reader = events.StreamReader(fake, "arn", from_start=True)
    first, _ = reader.poll()
    assert first == batch[:2]
    # The follower is paused for a day: records 0..3 are trimmed, and its iterator has
    # expired (its next GetRecords fails); the record after its last one is gone.
    fake.trimmed_before["s"] = 4
    fake.fail_once.add("s:2")
    # The first read from the oldest record is throttled once: still one gap (it was told
    # again, from the trimmed sequence number, at every such retry).
    fake.fail_once.add("s:4")
    got: list[dict[str, Any]] = []
    for _ in range(8):
        got.extend(reader.poll()[0])
    assert got == batch[4:]  # read on from the oldest record the stream still holds
    assert reader.trimmed == 1  # the gap, once
    trimmed = [r.message for r in caplog.records if '"shard-trimmed"' in r.message]
    assert len(trimmed) == 1 and '"shard":"s"' in trimmed[0]
    gaps = [c for c in counted if c["error"] == "TrimmedDataAccessException"]
    assert gaps == [{"loop": "follow", "error": "TrimmedDataAccessException"}]


def test_a_reader_behind_a_shard_the_stream_deleted_reads_its_child(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The parent shard was deleted while the reader was in it (a day paused: its records
    # past the retention): each new iterator for it was ResourceNotFoundException, a failed
    # read for ever, and the child, waiting for its parent, was never read.
    recorded(monkeypatch)
    fake = split_stream()
    reader = events.StreamReader(fake, "arn", from_start=True)
    first, _ = reader.poll()
    assert first == fake.records["parent"][:2]
    fake.delete_shard("parent")
    fake.expire_once.add("parent:2")
    got: list[dict[str, Any]] = []
    for _ in range(8):
        got.extend(reader.poll()[0])
    assert got == fake.records["child"]
    assert reader.trimmed == 1 and reader.errors == 0  # a gap, told once; no failed read
    gone = [r.message for r in caplog.records if '"shard-trimmed"' in r.message]
    assert len(gone) == 1 and '"shard":"parent"' in gone[0]


def test_a_follower_from_now_whose_first_read_fails_does_not_replay_the_past(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tailing, a shard's first GetRecords is throttled before any record was read from it:
    the follower reads on from where it started, not from the shard's oldest record (the
    past it was not asked for), and misses nothing written since it said it was ready."""
    monkeypatch.setattr(_loops, "counter", type("C", (), {"add": lambda self, n, a: None})())
    past = samples.life_of_chains()[:4]
    fake = FakeStreams([{"ShardId": "s", "SequenceNumberRange": {}}], {"s": list(past)})
    fake.fail_once.add("s:4")  # the LATEST iterator's first read: throttled once
    new = samples.record("INSERT", new=samples.chain_image("job-new"))
    assert followed(fake, lambda: fake.records["s"].append(new), 1) == ["job-new"]
    assert ("s", "TRIM_HORIZON") not in fake.calls


def test_a_follower_from_now_whose_iterator_expired_before_a_record_skips_the_past(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tailing, the shard's LATEST iterator expires before any record was read from it (no
    read for 15 minutes: a machine asleep): the shard is read again from its oldest
    record, and the records made before the follower started are skipped, not told as
    new; those made since are told, once."""
    import time as _time

    started = 1_800_000_000.0
    monkeypatch.setattr(_time, "time", lambda: started)
    past = [
        samples.record("INSERT", new=samples.chain_image(f"old-{i}"), approximate_time=t)
        for i, t in enumerate([started - 3600, started - 60, started - 2])
    ]
    fake = FakeStreams([{"ShardId": "s", "SequenceNumberRange": {}}], {"s": list(past)})
    fake.expire_once.add("s:3")  # the LATEST iterator: expired at its first read
    fresh = [
        samples.record("INSERT", new=samples.chain_image(f"new-{i}"), approximate_time=t)
        for i, t in enumerate([started, started + 30, started + 31])
    ]
    seen = followed(fake, lambda: fake.records["s"].extend(fresh), len(fresh))
    assert seen == ["new-0", "new-1", "new-2"]
    assert ("s", "TRIM_HORIZON") in fake.calls  # read again from the oldest, the past skipped


def test_a_follower_from_now_skips_no_record_of_its_minute_where_times_are_minutes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DynamoDB Local rounds a record's time down to the minute.  A follower whose LATEST
    iterator expired, started 20 s into a minute, read a record made after it as made 20 s
    before it, and skipped it as the past."""
    import time as _time

    minute = 1_800_000_000.0  # a whole minute
    monkeypatch.setattr(_time, "time", lambda: minute + 20)
    past = [samples.record("INSERT", new=samples.chain_image("old"), approximate_time=minute - 60)]
    fake = FakeStreams([{"ShardId": "s", "SequenceNumberRange": {}}], {"s": list(past)})
    fake.expire_once.add("s:1")  # the LATEST iterator: expired at its first read
    fresh = [samples.record("INSERT", new=samples.chain_image("new"), approximate_time=minute)]
    assert followed(fake, lambda: fake.records["s"].extend(fresh), 1) == ["new"]


@pytest.mark.parametrize(
    ("fail_once", "throttled"),
    [
        ({"parent:0"}, set()),  # the very first GetRecords
        ({"child:2"}, set()),  # a later page
        (set(), {("GetShardIterator", "child")}),  # a shard's first iterator
    ],
    ids=["first-read", "later-page", "iterator"],
)
def test_read_reads_every_record_though_a_read_failed_once(
    monkeypatch: pytest.MonkeyPatch, fail_once: set[str], throttled: set[tuple[str, str]]
) -> None:
    """One GetRecords throttled past botocore's retries used to end ``events.read`` there:
    ``xor-ack chain stats`` printed the counts of what it had read so far (all zeros for
    the first read) with exit 0; a throttled GetShardIterator ended it with the error.  The
    shard is read again from where it was, after a short wait: the same figures."""
    counted = recorded(monkeypatch)
    monkeypatch.setattr(follow_module, "READ_BACKOFF", 0.001)
    batch = samples.life_of_chains()
    fake = RefusingStreams(split_stream().shards, {"parent": batch[:5], "child": batch[5:]})
    fake.fail_once.update(fail_once)
    fake.throttled.update(throttled)
    summary = events.Summary()
    got: list[dict[str, Any]] = []
    for record, decoded in events.read(fake, "arn"):
        assert isinstance(decoded, list)
        got.append(record)
        summary.extend(decoded)
    assert sequence_numbers(got) == sequence_numbers(batch)
    assert (summary.created, summary.acked, summary.failed, summary.deleted) == (5, 1, 1, 1)
    assert len(counted) == 1  # the failure was reported


@pytest.mark.parametrize("operation", ["GetRecords", "GetShardIterator"])
def test_read_gives_up_on_a_shard_it_cannot_read_with_a_typed_error(
    monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    """A shard whose reads always fail (the reader's role may not read it) must neither loop
    for ever nor give figures without its records: after ``READ_ATTEMPTS`` failures in a
    row, ``StreamReadFailed`` names it, the last error its cause."""
    counted = recorded(monkeypatch)
    monkeypatch.setattr(follow_module, "READ_BACKOFF", 0.0)
    batch = samples.life_of_chains()
    fake = RefusingStreams(
        [
            {"ShardId": "ok", "SequenceNumberRange": {}},
            {"ShardId": "denied", "SequenceNumberRange": {}},
        ],
        {"ok": batch[:4], "denied": batch[4:]},
    )
    fake.denied.add((operation, "denied"))
    with pytest.raises(StreamReadFailed) as raised:
        for _ in events.read(fake, "arn"):
            pass
    attempts = follow_module.READ_ATTEMPTS
    assert (raised.value.shard, raised.value.attempts) == ("denied", attempts)
    assert _loops.code_of(raised.value.__cause__ or Exception()) == "AccessDeniedException"
    assert counted == [{"loop": "follow", "error": "AccessDeniedException"}] * attempts


def test_a_split_is_found_while_another_shard_is_busy() -> None:
    """``follow`` looked for new shards only after a round in which no shard had records:
    on a busy table (another shard always giving records) a split's child shard was never
    found, and ``xor-ack events follow`` never told the events of its keys."""

    class BusyStreams(FakeStreams):
        """Shard "busy" gets a new record before each GetRecords on it: a table under load."""

        def get_records(self, ShardIterator: str) -> Any:
            if ShardIterator.startswith("busy:"):
                image = samples.chain_image(f"busy-{len(self.records['busy'])}")
                self.records["busy"].append(samples.record("INSERT", new=image))
            return super().get_records(ShardIterator)

    fake = BusyStreams(
        [
            {"ShardId": "busy", "SequenceNumberRange": {}},
            {"ShardId": "parent", "SequenceNumberRange": {}},
        ],
        {"busy": [], "parent": []},
    )

    def split() -> None:  # once the follower has its position: the parent splits
        fake.shards[1]["SequenceNumberRange"]["EndingSequenceNumber"] = "9"
        fake.shards.append(
            {"ShardId": "child", "ParentShardId": "parent", "SequenceNumberRange": {}}
        )
        fake.records["child"] = [samples.record("INSERT", new=samples.chain_image("in-child"))]

    stop = threading.Event()
    deadline = time.monotonic() + 1.0  # 20 times refresh_every
    tags: list[str] = []
    for _record, decoded in events.follow(
        fake, "arn", interval=0.01, refresh_every=0.05, stop=stop, on_ready=split
    ):
        assert isinstance(decoded, list)
        tags.extend(e.tag for e in decoded)
        if "in-child" in tags or time.monotonic() > deadline:
            stop.set()
    assert "in-child" in tags, f"child never read; {len(tags)} events from the busy shard"


def split_after_ready(fake: RefusingStreams) -> None:
    """What is written once the follower has its position: one record in the parent, then a
    split, the child holding one record."""
    fake.records["parent"].append(samples.record("INSERT", new=samples.chain_image("p")))
    fake.shards[0]["SequenceNumberRange"]["EndingSequenceNumber"] = "9"
    fake.shards.append({"ShardId": "child", "ParentShardId": "parent", "SequenceNumberRange": {}})
    fake.records["child"] = [samples.record("INSERT", new=samples.chain_image("c"))]


@pytest.mark.parametrize(
    "refused",
    [("GetShardIterator", "child"), ("DescribeStream", "")],
    ids=["new-shard-iterator", "describe-stream"],
)
def test_a_failing_look_for_new_shards_does_not_stop_the_follower(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, refused: tuple[str, str]
) -> None:
    """A GetShardIterator throttled for a shard just found (a split's child), or a throttled
    DescribeStream of the periodic look for new shards, used to end ``xor-ack events
    follow`` with the error.  It is reported, and tried again: the child is read from its
    first record at the next round (or found at the next look)."""
    counted = recorded(monkeypatch)
    fake = RefusingStreams([{"ShardId": "parent", "SequenceNumberRange": {}}], {"parent": []})

    def split() -> None:
        split_after_ready(fake)
        fake.throttled.add(refused)

    stop = threading.Event()
    tags: list[str] = []
    for _record, decoded in events.follow(
        fake, "arn", interval=0.01, refresh_every=0.0, stop=stop, on_ready=split
    ):
        assert isinstance(decoded, list)
        tags.extend(e.tag for e in decoded)
        if len(tags) == 2:
            stop.set()
    assert tags == ["p", "c"]
    assert counted == [{"loop": "follow", "error": "LimitExceededException"}]
    event = "shard-failed" if refused[0] == "GetShardIterator" else "refresh-failed"
    assert any(f'"event":"{event}"' in r.message for r in caplog.records)
    assert ("child", "TRIM_HORIZON") in fake.calls


def test_a_follower_from_now_whose_first_iterator_fails_starts_and_skips_the_past(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tailing, a shard's GetShardIterator (LATEST) is throttled as the follower starts: it
    used to end ``xor-ack events follow`` at once.  The follower starts all the same; the
    shard is read at the next round from its oldest record, the records made before the
    follower started skipped (as after an expired iterator), those made since told once."""
    recorded(monkeypatch)
    started = 1_800_000_000.0
    monkeypatch.setattr(time, "time", lambda: started)
    past = [
        samples.record("INSERT", new=samples.chain_image(f"old-{i}"), approximate_time=t)
        for i, t in enumerate([started - 3600, started - 2])
    ]
    fake = RefusingStreams([{"ShardId": "s", "SequenceNumberRange": {}}], {"s": list(past)})
    fake.throttled.add(("GetShardIterator", "s"))
    fresh = [
        samples.record("INSERT", new=samples.chain_image(f"new-{i}"), approximate_time=t)
        for i, t in enumerate([started, started + 30])
    ]
    assert followed(fake, lambda: fake.records["s"].extend(fresh), 2) == ["new-0", "new-1"]
    assert ("s", "TRIM_HORIZON") in fake.calls
