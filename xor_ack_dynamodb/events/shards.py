"""The shards of one stream, and the reader that polls them in order.

A stream keeps records for 24 hours.  Within a shard records come in order; a child
shard (after a split) is read only once its parent is finished, so the records of one
tag stay in order.  A shard whose ``GetRecords`` or ``GetShardIterator`` fails
(throttled, trimmed, a network error, also for a shard just found) is reported (a
``shard-failed`` log line, ``xor_ack.item_failures{loop="follow"}``,
``StreamReader.errors``) and read again from where it was at the next round, while the
other shards go on.  If where a shard was is past the 24-hour retention
(``TrimmedDataAccessException``), it is read on from its oldest record: the gap is a
``shard-trimmed`` log line, a count (``error="TrimmedDataAccessException"``) and
``StreamReader.trimmed``.
"""

from __future__ import annotations

import datetime
import math
import time
from dataclasses import dataclass, field
from typing import Any

from ..dynamodb.loops import code_of, item_failed
from .records import RECORD_TIME_STEP

#: The logger of the reader's lines: the follower's, as docs/events.md names it.
_LOGGER = "xor_ack_dynamodb.events.follow"


def shards(streams: Any, arn: str) -> list[dict[str, Any]]:
    """Every shard of the stream (``DescribeStream``, all pages), parents first."""
    found: list[dict[str, Any]] = []
    start: str | None = None
    while True:
        kwargs: dict[str, Any] = {"StreamArn": arn}
        if start:
            kwargs["ExclusiveStartShardId"] = start
        description = streams.describe_stream(**kwargs)["StreamDescription"]
        found.extend(description.get("Shards", []))
        start = description.get("LastEvaluatedShardId")
        if not start:
            break
    known = {shard["ShardId"] for shard in found}
    ordered: list[dict[str, Any]] = []
    placed: set[str] = set()
    while len(ordered) < len(found):
        progress = False
        for shard in found:
            parent = shard.get("ParentShardId")
            if shard["ShardId"] in placed or (parent in known and parent not in placed):
                continue
            ordered.append(shard)
            placed.add(shard["ShardId"])
            progress = True
        if not progress:  # a cycle cannot happen; never loop forever on a bad answer
            ordered.extend(s for s in found if s["ShardId"] not in placed)
            break
    return ordered


@dataclass
class _Shard:
    shard_id: str
    parent: str | None
    #: Closed (it has an ending sequence number): read to its end, the iterator running out,
    #: however many empty answers come first.
    closed: bool = False
    iterator: str | None = None
    last_sequence: str | None = None
    done: bool = False
    empty: int = 0  #: empty answers in a row
    broken: bool = False  #: its last GetRecords failed: a new iterator before the next
    #: Opened at LATEST (tailing): until a record is read from it, its iterator is the only
    #: mark of where "now" was, so a failed read is tried again with it, not a new one.
    from_now: bool = False
    #: When it was opened at LATEST (epoch seconds): if that iterator expired before a
    #: record was read, the shard is read again from its oldest record, and the records
    #: created before this moment are skipped (they are the past, not new).
    since: float | None = None
    #: Read again from its oldest record for a follower from now: skipping the past.
    skipping: bool = False
    #: Its reads (GetRecords, GetShardIterator) that failed in a row, and the last's error.
    failures: int = 0
    error: BaseException | None = None


@dataclass
class StreamReader:
    """Polls every shard of one stream; :meth:`poll` returns the records that came."""

    streams: Any
    arn: str
    #: Where shards open at the start are read from: the oldest record, or new ones only.
    from_start: bool = False
    #: Empty answers in a row after which an open shard counts as read to its end for now:
    #: GetRecords may answer empty before a later part of a shard that holds records.  A
    #: closed shard is read until its iterator runs out.
    empty_at_end: int = 1
    #: Read "what the stream holds now" (epoch seconds): a shard is read to its end once it
    #: gives a record made after this moment (left out); a table written to all the time
    #: never answers empty three times in a row.  None: no end (a follower).
    until: float | None = None
    _shards: dict[str, _Shard] = field(default_factory=dict)
    _started: bool = False
    #: GetRecords (or GetShardIterator) calls that failed, each reported; the reader went on.
    #: (A failed ``DescribeStream`` of :func:`follow`'s look for new shards counts too.)
    errors: int = 0
    #: Shards re-opened at their oldest record because the reader had fallen past the
    #: stream's 24-hour retention: the records in between are lost; each gap reported.
    trimmed: int = 0

    def refresh(self) -> None:
        """Learn the stream's shards: new ones are read from their first record.

        ``DescribeStream`` failing raises.  A new shard whose ``GetShardIterator`` fails is
        reported (:meth:`_failed`) and kept with no iterator: :meth:`poll` asks for one
        again, from the same position (its oldest record; a shard opened from now at the
        start skips the records made before, as after an expired iterator)."""
        for shard in shards(self.streams, self.arn):
            shard_id = shard["ShardId"]
            if shard_id in self._shards:
                continue
            closed = "EndingSequenceNumber" in shard.get("SequenceNumberRange", {})
            state = _Shard(shard_id, shard.get("ParentShardId"), closed)
            if self._started or self.from_start:
                position = "TRIM_HORIZON"
            elif closed:  # tailing: a shard closed before we came holds only the past
                state.done = True
                position = ""
            else:
                position = "LATEST"
                state.from_now = True
                state.since = time.time()
            self._shards[shard_id] = state
            if position:
                try:
                    state.iterator = self._iterator(shard_id, position)
                except Exception as exc:  # this shard: the others go on, it is tried again
                    state.broken = True
                    self._failed(state, exc)
        self._started = True

    def _failed(self, shard: _Shard, exc: BaseException) -> None:
        """Report one failed read of ``shard`` (a log line, a count, ``errors``)."""
        self.errors += 1
        shard.failures += 1
        shard.error = exc
        item_failed("follow", exc, logger=_LOGGER, event="shard-failed", shard=shard.shard_id)

    def failing(self) -> list[tuple[str, int, BaseException]]:
        """The shards to read whose last read failed: (shard id, failures in a row, the last
        error).  A child whose parent is not read yet waits for it, failed or not."""
        return [
            (s.shard_id, s.failures, s.error)
            for s in self._shards.values()
            if s.failures and s.error is not None and self._ready(s)
        ]

    def _iterator(self, shard_id: str, position: str, after: str | None = None) -> str | None:
        kwargs: dict[str, Any] = {
            "StreamArn": self.arn,
            "ShardId": shard_id,
            "ShardIteratorType": position,
        }
        if after is not None:
            kwargs["SequenceNumber"] = after
        iterator = self.streams.get_shard_iterator(**kwargs).get("ShardIterator")
        return str(iterator) if iterator else None

    def _again(self, shard: _Shard) -> str | None:
        """A new iterator for ``shard``, just after the last record read from it; from its
        oldest record if that one is past the stream's retention (the gap is reported)."""
        if not shard.last_sequence:
            shard.skipping = shard.since is not None  # a follower from now: not the past
            return self._iterator(shard.shard_id, "TRIM_HORIZON")
        try:
            return self._iterator(shard.shard_id, "AFTER_SEQUENCE_NUMBER", shard.last_sequence)
        except Exception as exc:
            if code_of(exc) != "TrimmedDataAccessException":
                raise
            self._gap(shard, exc)
            shard.last_sequence = None  # the gap told once: from the oldest record kept
            return self._iterator(shard.shard_id, "TRIM_HORIZON")

    @staticmethod
    def _before(batch: list[dict[str, Any]], until: float) -> list[dict[str, Any]]:
        """``batch`` up to its first record made after ``until`` (record times are rounded
        down, so a record that says it was made after it was)."""
        for i, record in enumerate(batch):
            created = _created(record)
            if created is not None and created > until:
                return batch[:i]
        return batch

    @staticmethod
    def _new(shard: _Shard, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``batch`` without the records made before a from-now shard was opened, while it
        is read again from its oldest record (``_Shard.skipping``)."""
        if not shard.skipping or shard.since is None:
            return batch
        # Record times are rounded down: to the second on AWS, to the minute on DynamoDB
        # Local.  A record of the minute the shard was opened in may be new: it is told
        # (a record made up to a minute before is told too; none made after is skipped).
        since = math.floor(shard.since / RECORD_TIME_STEP) * RECORD_TIME_STEP
        for i, record in enumerate(batch):
            created = _created(record)
            if created is None or created >= since:
                shard.skipping = False  # the records after the first new one are new too
                return batch[i:]
        return []

    def _gone(self, shard: _Shard, exc: Exception) -> bool:
        """Is ``shard`` gone from the stream (``ResourceNotFoundException``, and no longer
        listed: the stream deleted it, all of its records past the 24-hour retention)?  Then
        what was not read of it is lost: the gap is reported as a trimmed one is, and the
        shard is done, so that its children are read.  A stream gone as a whole is not."""
        if code_of(exc) != "ResourceNotFoundException":
            return False
        try:
            listed = {s["ShardId"] for s in shards(self.streams, self.arn)}
        except Exception:  # the stream itself cannot be read: a failure of this shard's read
            return False
        if shard.shard_id in listed:
            return False
        self._gap(shard, exc)
        shard.done, shard.broken, shard.iterator = True, False, None
        shard.failures, shard.error = 0, None
        return True

    def _gap(self, shard: _Shard, exc: Exception) -> None:
        """Report records of ``shard`` lost past the retention, after its last one read."""
        self.trimmed += 1
        item_failed(
            "follow",
            exc,
            logger=_LOGGER,
            event="shard-trimmed",
            shard=shard.shard_id,
            lost_after=shard.last_sequence,
        )

    def _ready(self, shard: _Shard) -> bool:
        parent = self._shards.get(shard.parent) if shard.parent else None
        return not shard.done and (parent is None or parent.done)

    def poll(self) -> tuple[list[dict[str, Any]], bool]:
        """One GetRecords per readable shard: (records in shard order, whether any shard
        still had records to give: an empty answer says a shard is at its end for now)."""
        if not self._started:
            self.refresh()
        records: list[dict[str, Any]] = []
        more = False
        for shard in list(self._shards.values()):
            if not self._ready(shard):
                continue
            try:
                if shard.broken:  # read again from where it was, after the failed round
                    shard.iterator = self._again(shard)
                    shard.broken = False
                if shard.iterator is None:
                    shard.done = True
                    shard.failures, shard.error = 0, None
                    continue
                answer = self.streams.get_records(ShardIterator=shard.iterator)
            except self.streams.exceptions.ExpiredIteratorException:
                shard.broken = True
                more = True
                continue
            except Exception as exc:  # this shard, this round: the others go on
                if self._gone(shard, exc):
                    continue
                # A new iterator from TRIM_HORIZON would replay the past to a follower from now.
                shard.broken = shard.broken or not (shard.from_now and not shard.last_sequence)
                self._failed(shard, exc)
                continue
            shard.failures, shard.error = 0, None
            batch = answer.get("Records", [])
            shard.empty = 0 if batch else shard.empty + 1
            if self.until is not None:
                now = self._before(batch, self.until)
                if len(now) < len(batch):  # past the moment read: this shard is read
                    records.extend(now)
                    shard.done = True
                    continue
            if batch:
                shard.last_sequence = batch[-1].get("dynamodb", {}).get("SequenceNumber")
                records.extend(self._new(shard, batch))
            if shard.closed or shard.empty < self.empty_at_end:
                more = True
            shard.iterator = answer.get("NextShardIterator")
            if shard.iterator is None:
                shard.done = True
                more = True  # its children may be readable now
        return records, more


def _created(record: dict[str, Any]) -> float | None:
    """A record's ``ApproximateCreationDateTime`` in epoch seconds (boto3 gives a datetime,
    a Lambda event a number); None if it has none."""
    value = record.get("dynamodb", {}).get("ApproximateCreationDateTime")
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None
