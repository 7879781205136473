"""What runs on the executors: the user's function per input, the checks, the stamps.

Every function here is shipped by value inside a :class:`RoundSpec` (a few
strings, the tracker's config, the user's function) and runs in a Python
worker on the executors, on classic Spark and over Spark Connect alike (only
``mapInArrow``; no RDD, no ``SparkContext``).  Each worker
builds its own DynamoDB client once (``tracker.chains_for``).

Writes per input and round, whatever the number of shuffle partitions: the
driver's ``create`` (``F``), the produce stamp ``F ^ D`` (``D`` the stamp of the
rows the user's function returned for the input), the commit check's stamp
``C`` (the stamp of the rows of that input that Spark committed to staging,
summed over all staging files, then written once by the driver), and a ``fail``
only when the chain did not reach zero.  ``D == C`` exactly when the committed
rows are the produced rows: nothing lost, nothing duplicated.

Each row is hashed once, where it is produced, and carries its hash (two long
columns) into staging: the commit check reads those two columns of the committed
files (and the input id), not the rows, and adds them up per input.
"""

from __future__ import annotations

import contextlib
import itertools
import pickle
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..chain import ChainState
from ..errors import ChainFailed, TagNotFound
from ..lifecycle import TIMEOUT_REASON
from .digest import lanes_sum, row_lanes, rows_stamp, stage_token
from .errors import InputsInterleaved, SparkTrackingError
from .faults import FaultConfig, TaskFaults
from .isolation import retryable
from .keyed import Keyed
from .sandbox import user_rows
from .task_stamps import TaskStamps as _Stamps
from .tracker import TrackerConfig, chains_for, stamp_once

#: Internal columns, never in the user's rows or output.
INPUT = "_xa_input"
ID = "_xa_id"
TAG = "_xa_tag"
MARKER = "_xa_marker"
#: On each input's marker row: its chain as the driver created it (pickled ``ChainState``).
CREATED = "_xa_created"
#: On each input's marker row: its key exactly as the driver has it (``key_bytes``); the
#: JVM's strings cannot hold a lone surrogate (``os.listdir``'s escaped bytes), which
#: ``INPUT`` (the join with the source's rows) turns into U+FFFD.
KEY = "_xa_key"
#: The two 64-bit lanes of each staged row's hash, computed where the row was produced.
HASH_HIGH = "_xa_hash_high"
HASH_LOW = "_xa_hash_low"
#: What the staged rows carry besides the user's columns.
STAGED_DDL = f"{ID} int, {HASH_HIGH} long, {HASH_LOW} long"
#: Parquet options of the staged rows: the hash lanes are random 64-bit values, which no
#: dictionary encodes smaller, so none is tried (the writer would build one per column
#: chunk, then fall back: 0.43 against 0.36 s per 400,000 rows, bench_staged_parquet.py).
STAGED_PARQUET = {f"parquet.enable.dictionary#{lane}": "false" for lane in (HASH_HIGH, HASH_LOW)}
#: Fault-injection stage numbers (``FaultConfig.for_task``).
PRODUCE, TRANSIT = 1, 2

Process = Callable[[str, Any], Any]


@dataclass(frozen=True)
class RoundSpec:
    """Round ``round`` of run ``run_id``, as every task of it sees it."""

    run_id: str
    round: int
    process: Process
    columns: tuple[str, ...]  # the output rows' columns, in the declared order
    schema: Any  # pyarrow.Schema of the output rows
    source_columns: tuple[str, ...]
    tracker: TrackerConfig | None
    faults: FaultConfig = field(default_factory=FaultConfig)
    transit_tasks: int = 1
    #: Inputs (ids) whose function runs in a child process each (``sandbox``).
    isolate: frozenset[int] = frozenset()

    def task_faults(self, stage: int, spread: int = 1) -> TaskFaults:
        """This task attempt's faults; ``spread``: an input's rows go to that many tasks.

        Dropping is then ``drop_rate / spread`` per task, so that an input loses rows
        with about the same chance whatever the number of shuffle partitions.
        """
        if not self.faults.enabled:
            return TaskFaults.none()
        faults = self.faults
        if spread > 1:
            faults = replace(faults, drop_rate=faults.drop_rate / spread)
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition, attempt = (ctx.partitionId(), ctx.attemptNumber()) if ctx else (0, 0)
        return faults.for_task(self.round, stage, partition, attempt)


def _stamp(
    spec: RoundSpec, tag: str, value: bytes, token: bytes, known: ChainState | None = None
) -> None:
    """One stamp of this round's stage (``tracker.stamp_once``); untracked: none."""
    if spec.tracker is None:
        return
    stamp_once(chains_for(spec.tracker), tag, value, token, known)


def produce(spec: RoundSpec, batches: Iterable[Any]) -> Iterator[Any]:
    """``mapInArrow`` over one task's inputs: the user's output rows of each, hashed.

    The task's rows come sorted by input, each input with its marker row (the one
    row an input without source rows has).  Per input: the user's function, the
    rows' hashes, and the stamp ``F ^ D`` (``D`` the stamp of the rows returned),
    sent while the next input is processed; the task ends once every stamp is
    written.  Then it may lose a few rows (fault injection: the loss the commit
    check must catch).
    """
    import pyarrow as pa  # type: ignore[import-untyped]

    faults = spec.task_faults(PRODUCE)
    faults.crash_now(stamped=False)
    with _Stamps(spec) as stamps:
        for table in _inputs(batches):
            out = _produce_input(spec, table, stamps)
            keep, _ = faults.lose(list(range(out.num_rows)))
            if len(keep) != out.num_rows:
                out = out.take(pa.array(keep, type=pa.int64()))
            yield from out.to_batches()
    faults.crash_now(stamped=True)


def _inputs(batches: Iterable[Any]) -> Iterator[Any]:
    """The rows of each input in turn (an Arrow table each), from batches sorted by input.

    Raises :class:`InputsInterleaved` rather than process an input's rows twice in
    parts, should they ever come unsorted.
    """
    import pyarrow as pa

    parts: list[Any] = []
    current = -1
    done: set[int] = set()
    for batch in batches:
        if not batch.num_rows:
            continue
        ids = np.asarray(batch.column(ID).to_numpy(zero_copy_only=False))
        cuts = [0, *(np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist(), len(ids)]
        for begin, end in itertools.pairwise(cuts):
            input_id = int(ids[begin])
            if parts and input_id != current:
                yield pa.Table.from_batches(parts)
                done.add(current)
                parts = []
            if not parts:
                if input_id in done:
                    raise InputsInterleaved(
                        f"the rows of input {input_id} came in two runs: Spark did not keep "
                        "the task's rows sorted by input"
                    )
                current = input_id
            parts.append(batch.slice(begin, end - begin))
    if parts:
        yield pa.Table.from_batches(parts)


def _produce_input(spec: RoundSpec, table: Any, stamps: _Stamps) -> Any:
    """One input's rows through the user's function, with their hashes; its stamp sent."""
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    input_id = table.column(ID)[0].as_py()
    tag = table.column(TAG)[0].as_py()
    marker = table.column(MARKER)
    marked = table.filter(marker)
    key = key_of_bytes(marked.column(KEY)[0].as_py())
    created = marked.column(CREATED)[0].as_py()
    rows = table.filter(pc.invert(marker)).select(list(spec.source_columns))
    result = user_rows(
        spec.process,
        key,
        rows,
        spec.schema,
        isolated=input_id in spec.isolate,
        before_fork=stamps.drain,
    )
    out = result.table
    if result.failure is not None:
        if spec.tracker is None:  # no chain to fail it alone: the job fails, as plain Spark
            said = f"rejected: {result.failure} (input {key})" if result.final else result.failure
            raise SparkTrackingError(said)
        # This input's attempt failed alone: its chain closes with the reason, no rows.
        with contextlib.suppress(ChainFailed, TagNotFound):
            reason = chain_reason(result.failure, result.final)
            chains_for(spec.tracker).fail(tag, reason=reason)
        out = spec.schema.empty_table()
    if spec.tracker is not None and result.failure is None:
        lanes = row_lanes(spec.run_id, out, spec.columns)
        keyed = Keyed(spec.run_id)
        value = _xor(keyed.file_stamp(tag), rows_stamp(keyed, tag, lanes_sum(lanes)))
        known = None if created is None else pickle.loads(created)
        stamps.send(tag, value, stage_token(keyed, "produce", tag, value), known)
    else:
        lanes = [np.zeros(out.num_rows, dtype=np.uint64)] * 2
    out = out.append_column(ID, pa.array(np.full(out.num_rows, input_id, dtype=np.int32)))
    out = out.append_column(HASH_HIGH, pa.array(lanes[0].view(np.int64)))
    return out.append_column(HASH_LOW, pa.array(lanes[1].view(np.int64)))


def key_bytes(key: str) -> bytes:
    """An input's key as its marker row carries it: every ``str`` exactly (``key_of_bytes``)."""
    return key.encode("utf-8", "surrogatepass")


def key_of_bytes(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def transit(spec: RoundSpec, batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` after the shuffle: passes rows on; may crash or lose rows (faults)."""
    import pyarrow as pa

    faults = spec.task_faults(TRANSIT, spread=spec.transit_tasks)
    faults.crash_now(stamped=False)
    for batch in batches:
        keep, _ = faults.lose(list(range(batch.num_rows)))
        if len(keep) != batch.num_rows:
            batch = batch.take(pa.array(keep, type=pa.int64()))
            faults = TaskFaults.none()  # one loss per task attempt
        yield batch


def stamp_committed(spec: RoundSpec, tag: str, total: int, known: ChainState | None) -> None:
    """The commit check's stamp ``C`` of an input: the stamp of the rows committed for it.

    ``total``: the sum of the hashes of its rows over every staging file (0: none);
    ``known``: its chain as the driver read it after the round's job.  Its token is
    made of it: a check run again over the same committed files writes the same
    token, recognised and not applied twice.
    """
    if spec.tracker is None:
        return
    keyed = Keyed(spec.run_id)
    value = rows_stamp(keyed, tag, total)
    _stamp(spec, tag, value, stage_token(keyed, "commit", tag, value), known)


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


#: The most characters of a failure a chain keeps as its reason: a chain is one DynamoDB
#: item (400 KB), and the function's text (an ``InputRejected`` quoting its input) may not
#: fit it.
MAX_REASON_CHARS = 4000


def chain_reason(failure: str, final: bool = False) -> str:
    """The reason an input's chain is failed with: its failure as said (an
    ``InputRejected``'s message, say), unless ``fail()`` could not take it as it is: an
    empty one, the deadline's own ``"timeout"``, text UTF-8 cannot hold, or more than
    ``MAX_REASON_CHARS`` (cut, saying how much more there was).  A ``final`` one (a
    rejection) that begins as the reasons the driver replays (``raised: ``, ...) is said
    as a rejection, so that it is not replayed."""
    text = failure.encode("utf-8", "replace").decode("utf-8")
    if not text or text == TIMEOUT_REASON or (final and retryable(text)):
        text = f"rejected: {text or 'no reason given'}"
    if len(text) > MAX_REASON_CHARS:
        return f"{text[:MAX_REASON_CHARS]}... ({len(text) - MAX_REASON_CHARS} more characters)"
    return text
