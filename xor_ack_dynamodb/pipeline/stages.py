"""The two stages of the word count, as plain functions over iterators.

Spark calls them once per task (``mapPartitions``); tests call them directly.

Stage 1, ``split_files``: file -> words.  For each file of its partition it
counts the words, groups them by counting task (bucket), emits one record per
non-empty bucket ``(p, (position, [(word, n), ...]))`` and stamps the file's
chain **once**: the file stamp (this file is done) XOR one stamp per bucket
(this work has started), with a token derived from that value.

Stage 2, ``count_buckets``: counting task ``p`` receives every file's bucket
``p``, stamps **every chain of the round** once with the stamp of what it
received for that file (an empty bucket has a stamp too), and emits the
staging rows (see ``StagingRow``) while those stamps are written; it ends
(and Spark commits its rows) only once every stamp landed.
Stamping every chain, not only the ones it saw, is what lets the tracker
notice a task attempt that lost *all* of a file's records for its bucket.

A chain is zero exactly when each bucket was stamped, by every attempt whose
stamp landed, with precisely the records stage 1 declared (see ``keyed``).
"""

from __future__ import annotations

import contextlib
import pickle
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from .._ops import MAX_TRANSACTION_ITEMS, chunked
from ..errors import ChainFailed, StampManyFailed, TagNotFound, XorAckError
from ..sync import SyncXorAckDynamoDB
from .buckets import split_into_buckets
from .faults import TaskFaults
from .keyed import Keyed, to_stamp, xor_into
from .paths import Unreadable
from .plan import RoundPlan, TaskInfo
from .words import count_words

Entries = list[tuple[str, int]]
#: Stage 1's output: (counting task, (file position in the round, that bucket's words)).
BucketRecord = tuple[int, tuple[int, Entries]]
#: Stage 2's output when tracking: ``(file id, None, None, pickled [(word, n), ...])`` for
#: each file it received, and one ``(TASK_TOTALS, words, counts, None)`` row of the task's
#: totals over all of them.  A round whose files were all acked is summed from the totals
#: rows alone; the per-file rows are read only for a round where some file was not acked.
#: Pickled lists, not one row per word: the Python -> JVM hand-over stays small.
StagingRow = tuple[int, list[str] | None, list[int] | None, bytes | None]
TASK_TOTALS = -1

#: Stage 1 stamps its files in groups of this many (one concurrent stamp_many each) ...
STAMP_GROUP = 256
#: ... or of this many with transactions: smaller groups go out while the task reads its
#: next files, so that only the last group's round trips are left when it ends.
TRANSACT_GROUP = 32


class CommitRefused(XorAckError):
    """A counting task's stamp did not land, so its output must not be committed."""


def _stamp_all(
    chains: SyncXorAckDynamoDB,
    stamps: dict[str, bytes],
    tokens: dict[str, bytes],
    concurrency: int,
    transact: bool,
    metrics: Counter[str],
    stage: str,
) -> dict[str, str]:
    """``stamp_many``; returns the tags whose chains refused the stamp, with the error's name.

    A failed chain (``ChainFailed``) or one that is complete or gone
    (``TagNotFound``) refuses; any other error propagates, so the task fails and
    Spark retries it.
    """
    if not stamps:
        return {}
    results: dict[str, bytes]
    refused: dict[str, str] = {}
    try:
        results = dict(
            chains.stamp_many(stamps, tokens=tokens, concurrency=concurrency, transact=transact)
        )
    except StampManyFailed as exc:
        results = dict(exc.results)
        for tag, error in exc.errors.items():
            if not isinstance(error, (ChainFailed, TagNotFound)):
                raise error from exc
            refused[tag] = type(error).__name__
    metrics[f"{stage}.stamps"] += len(results)
    metrics["chains_acked"] += sum(1 for state in results.values() if not any(state))
    return refused


class _Stamper:
    """Stamps in a background thread while the task goes on with its records.

    Rows and records are only committed when the task ends, and the task ends
    after :meth:`finish`, which re-raises any error of a stamp: stamping while
    records flow is as safe as stamping first, and hides the requests' latency.
    """

    def __init__(
        self, chains: SyncXorAckDynamoDB, concurrency: int, transact: bool, stage: str
    ) -> None:
        self._chains = chains
        self._concurrency = concurrency
        self._transact = transact
        self._stage = stage
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"xor-ack-{stage}")
        self._pending: list[Future[dict[str, str]]] = []
        #: Touched only by the one background thread until ``finish`` returns.
        self.metrics: Counter[str] = Counter()
        self.submitted = False

    def submit(self, stamps: dict[str, bytes], tokens: dict[str, bytes]) -> None:
        self.submitted = True
        self._pending.append(
            self._pool.submit(
                _stamp_all,
                self._chains,
                dict(stamps),
                dict(tokens),
                self._concurrency,
                self._transact,
                self.metrics,
                self._stage,
            )
        )

    def finish(self) -> dict[str, str]:
        """Wait for every stamp; the refused tags (raises the first error).

        How long the task waited here, after its own work was done, is counted
        in ``<stage>.stamp_wait_ms``: the latency tracking added to the task.
        """
        started = time.perf_counter()
        refused: dict[str, str] = {}
        try:
            for future in self._pending:
                refused.update(future.result())
        finally:
            self._pending.clear()
            waited = int((time.perf_counter() - started) * 1000)
            self.metrics[f"{self._stage}.stamp_wait_ms"] += waited
        return refused

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _stamper(plan: RoundPlan, chains: SyncXorAckDynamoDB, stage: str) -> _Stamper:
    tracker = plan.tracker
    if tracker is None:
        return _Stamper(chains, 1, False, stage)
    return _Stamper(chains, tracker.write_concurrency, tracker.transactions, stage)


def split_files(
    plan: RoundPlan,
    task: TaskInfo,
    files: Iterable[tuple[str, bytes | Unreadable]],
    chains: SyncXorAckDynamoDB | None,
    metrics: Counter[str],
) -> Iterator[BucketRecord]:
    """Stage 1 over one partition of ``(path, content)`` pairs."""
    faults = plan.faults.for_task(plan.round, 1, task.partition, task.attempt)
    positions = plan.positions()
    keyed = Keyed(plan.run_id)
    stamps: dict[str, bytes] = {}
    tokens: dict[str, bytes] = {}
    stamper = _stamper(plan, chains, "stage1") if chains is not None else None
    group = TRANSACT_GROUP if plan.tracker and plan.tracker.transactions else STAMP_GROUP

    def flush() -> None:
        if stamper is None or not stamps:
            return
        if not stamper.submitted:
            faults.crash_now(stamped=False)
        stamper.submit(stamps, tokens)
        stamps.clear()
        tokens.clear()

    try:
        for path, content in files:
            position = positions.get(path)
            if position is None:
                metrics["stage1.unexpected_files"] += 1
                continue
            tag = plan.tags[position] if plan.tracking else ""
            if isinstance(content, Unreadable):
                metrics["files_unreadable"] += 1
                _fail_file(chains, tag, f"unreadable: {content}")
                continue
            try:
                text = bytes(content).decode("utf-8")
            except UnicodeDecodeError as exc:
                metrics["files_undecodable"] += 1
                _fail_file(chains, tag, f"not-utf8: {exc.reason} at byte {exc.start}")
                continue
            buckets = split_into_buckets(count_words(text).items(), plan.partitions)
            if chains is not None:
                acc = int.from_bytes(keyed.file_stamp(tag), "big")
                for p, entries in enumerate(buckets):
                    acc = xor_into(acc, keyed.bucket_stamp(tag, p, entries))
                value = to_stamp(acc, keyed.nbytes)
                stamps[tag] = value
                tokens[tag] = keyed.split_token(tag, value)
            records: list[BucketRecord] = [
                (p, (position, entries)) for p, entries in enumerate(buckets) if entries
            ]
            if faults.drop:
                records = _lose_words(records, faults, metrics)
            metrics["files_split"] += 1
            metrics["records"] += sum(len(entries) for _, (_, entries) in records)
            yield from records
            if len(stamps) >= group:
                flush()
        flush()
        if stamper is None or not stamper.submitted:
            faults.crash_now(stamped=False)
        if stamper is not None:
            refused = stamper.finish()
            metrics.update(stamper.metrics)
            metrics["stage1.refused"] += len(refused)
        faults.crash_now(stamped=True)
    finally:
        if stamper is not None:
            stamper.close()


def _fail_file(chains: SyncXorAckDynamoDB | None, tag: str, reason: str) -> None:
    """Close a file's chain at once: the same bytes would fail every replay (``PERMANENT``)."""
    if chains is not None:
        with contextlib.suppress(TagNotFound):
            chains.fail(tag, reason=reason)


def _lose_words(
    records: list[BucketRecord], faults: TaskFaults, metrics: Counter[str]
) -> list[BucketRecord]:
    """Drop up to three (word, n) entries of one file's records, declared but never emitted."""
    flat = [(p, position, entry) for p, (position, entries) in records for entry in entries]
    kept, lost = faults.lose(flat)
    if not lost:
        return records
    faults.drop = False  # one loss per attempt
    metrics["records_lost"] += lost
    metrics["lossy_attempts"] += 1
    regrouped: dict[tuple[int, int], Entries] = defaultdict(list)
    for p, position, entry in kept:
        regrouped[(p, position)].append(entry)
    return [(p, (position, entries)) for (p, position), entries in regrouped.items()]


def count_buckets(
    plan: RoundPlan,
    task: TaskInfo,
    records: Iterable[BucketRecord],
    chains: SyncXorAckDynamoDB,
    metrics: Counter[str],
) -> Iterator[StagingRow]:
    """Stage 2 (tracked) over counting task ``task.partition``'s records."""
    p = task.partition
    faults = plan.faults.for_task(plan.round, 2, p, task.attempt)
    received: dict[int, Entries] = defaultdict(list)
    for key, (position, entries) in records:
        if key != p:
            metrics["stage2.misrouted"] += 1
        received[position].extend(entries)
    if faults.drop:
        flat = [(position, e) for position, entries in received.items() for e in entries]
        kept, lost = faults.lose(flat)
        metrics["records_lost"] += lost
        metrics["lossy_attempts"] += 1 if lost else 0
        received = defaultdict(list)
        for position, entry in kept:
            received[position].append(entry)
    keyed = Keyed(plan.run_id)
    stamps: dict[str, bytes] = {}
    tokens: dict[str, bytes] = {}
    n = len(plan.tags)
    # Start each task at a different chain: P tasks that stamp the same chains in the same
    # order would all race for the same items.
    start = (p * n) // plan.partitions if n else 0
    for i in range(n):
        position = (start + i) % n
        tag = plan.tags[position]
        value = keyed.bucket_stamp(tag, p, received.get(position, ()))
        stamps[tag] = value
        tokens[tag] = keyed.count_token(tag, p, value)
    faults.crash_now(stamped=False)
    stamper = _stamper(plan, chains, "stage2")
    try:
        # In slices of n / P chains (at most one transaction each), written one after the
        # other: task p writes slice k while task p + 1 writes slice k + 1, so the tasks
        # never hold the same chains at the same time, even when a round has few files.
        size = max(1, min(MAX_TRANSACTION_ITEMS, -(-n // plan.partitions)))
        for piece in chunked(stamps, size):
            stamper.submit(piece, {t: tokens[t] for t in piece})
        totals: dict[str, int] = {}
        for position, entries in received.items():
            if entries:
                blob = pickle.dumps(entries, protocol=pickle.HIGHEST_PROTOCOL)
                yield (plan.file_ids[position], None, None, blob)
                for word, count in entries:
                    totals[word] = totals.get(word, 0) + count
        if totals:
            yield (TASK_TOTALS, list(totals), list(totals.values()), None)
        refused = stamper.finish()
    finally:
        stamper.close()
    metrics.update(stamper.metrics)
    for tag, why in refused.items():
        if why == "TagNotFound":
            raise CommitRefused(
                f'chain "{tag}" is complete or gone and does not hold this attempt\'s stamp '
                f"for counting task {p}: its records differ from the ones that completed it, "
                "so its output must not be committed"
            )
    metrics["stage2.refused"] += len(refused)
    faults.crash_now(stamped=True)
    metrics["rows"] += sum(len(entries) for entries in received.values())


def sum_buckets(
    plan: RoundPlan,
    task: TaskInfo,
    records: Iterable[BucketRecord],
    metrics: Counter[str],
) -> Iterator[tuple[str, int]]:
    """Stage 2 without tracking: the total count of each word of this task."""
    faults = plan.faults.for_task(plan.round, 2, task.partition, task.attempt)
    totals: Counter[str] = Counter()
    flat = [entry for _, (_, entries) in records for entry in entries]
    if faults.drop:
        flat, lost = faults.lose(flat)
        metrics["records_lost"] += lost
        metrics["lossy_attempts"] += 1 if lost else 0
    for word, n in flat:
        totals[word] += n
    faults.crash_now(stamped=False)
    faults.crash_now(stamped=True)
    yield from totals.items()
