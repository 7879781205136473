"""Which inputs of a stream were committed, said by chains: state that outlives the checkpoint.

A Structured Streaming checkpoint says which files a query has seen and which
batch it committed; lose it (or one of its metadata files) and the query reads
everything again, or runs a batch again.  Here each input of a stream ``S``
has a mark, one chain ``S/commit/KEY`` in the chains' table, and a micro-batch
(run ``R``, committed to ``OUTPUT/batch=N-R``) goes:

1. before its rounds, per page of its inputs, the marks are read: an **acked**
   mark means committed by an earlier run, so the input is left out; a **live**
   mark is a run ``R'`` that marked it and stopped before saying how it ended:
   committed if ``OUTPUT`` has a folder of ``R'`` (the mark's stamp names the
   run: ``M(R', KEY)``), then the mark is acked now and the input left out;
   otherwise the mark is failed and the input processed; no mark, or a failed
   one: processed.  Each input processed gets its mark ``M(R, KEY)``, created
   (25 per request, a conditional ``INSERT``: two runs never both mark it);
2. after the rounds, before the output is renamed into place: the marks of the
   inputs that failed are failed (they are not in the output);
3. after the rename: the marks of the acked inputs are stamped ``M(R, KEY)``,
   which brings them to zero: committed.

A crash between any two steps leaves marks that step 1 of the next run reads
right: the rename is the commit point, and a live mark's run either has its
folder or not.  Where the rename is not atomic (S3A, GCS copy object by object),
a crash during it leaves a torn folder: step 1 finds it lacking what its manifest
names and stops (``TornBatch``) rather than guess.  A settled mark (acked or
failed) is kept for ``retention`` seconds (its tombstone's TTL): an input seen
again after that is processed again.  A live mark has no end until a run settles
it, so neither a batch longer than ``retention`` nor a stopped run loses what it
committed.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..chain import ChainState
from ..dynamodb._core.validate import MAX_TTL
from ..dynamodb.sync import SyncXorAckDynamoDB
from ..errors import (
    ChainFailed,
    ChainMoved,
    CreateManyFailed,
    InvalidTag,
    TagExists,
    TagNotFound,
)
from .chain_batches import asking
from .errors import InvalidArgument, TornBatch
from .files import Files
from .keyed import Keyed
from .paths import missing_entries
from .tracker import TrackerConfig, create_chains, kept_client

if TYPE_CHECKING:
    from .report import TrackedReport

#: Marks read, created or acked per step (pages of the inputs: O(this) on the driver).
CHUNK = 1_000
#: How long a stream remembers an input it committed (seconds): 30 days.
DEFAULT_RETENTION = 30 * 86_400.0
#: The longest it may: the marks' TTL and their tombstones' (the clients' limit on both).
MAX_RETENTION = MAX_TTL
#: What marks a folder of a micro-batch: ``batch=000003-RUN``.
BATCH_PREFIX = "batch="


def stream_name(output: str) -> str:
    """A stream's default name: its output's, hashed (the same after a restart)."""
    digest = hashlib.sha256(output.rstrip("/").encode("utf-8", "surrogateescape"))
    return "stream-" + digest.hexdigest()[:16]


def _hashed_tag(name: str, key: str) -> str:
    """A mark's tag when ``NAME/commit/KEY`` would be too long: the key hashed."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()
    return f"{name}/commit/sha256:{digest}"


def check_stream_name(name: object) -> str:
    """``track_stream(name=...)``: a non-empty str whose marks' tags fit DynamoDB's key
    (``InvalidArgument`` otherwise, before the query starts)."""
    if not isinstance(name, str) or not name:
        raise InvalidArgument(
            f"name={name!r}: give the stream's name, a non-empty str, the same at every "
            "restart (or leave it out: the output's, hashed)"
        )
    try:
        InvalidTag.check(_hashed_tag(name, ""))  # the longest tag a mark of it may get
    except InvalidTag as exc:
        raise InvalidArgument(
            f"name={name[:40]!r}...: the stream's marks are tagged NAME/commit/KEY, and "
            f"with this name a tag would be too long ({exc}): give a shorter name"
        ) from exc
    return name


def batch_path(output: str, batch_id: int, run_id: str) -> str:
    """Where run ``run_id`` of micro-batch ``batch_id`` commits: a folder of its own."""
    return f"{output.rstrip('/')}/{BATCH_PREFIX}{batch_id:06d}-{run_id}"


def _client(tracker: TrackerConfig, retention: float) -> SyncXorAckDynamoDB:
    """This process's marks client: acked marks stay readable ``retention`` seconds."""

    def make() -> SyncXorAckDynamoDB:
        return SyncXorAckDynamoDB(
            tracker.client(),
            table=tracker.table,
            partition_key=tracker.partition_key,
            token_window=tracker.token_window,
            tombstone_ttl=retention,
            cache_size=CHUNK,
        )

    client: SyncXorAckDynamoDB = kept_client(f"marks/{retention!r}", tracker, make)
    return client


@dataclass
class StreamMarks:
    """The marks of stream ``name`` for run ``run_id`` of a micro-batch into ``output``."""

    spark: Any
    tracker: TrackerConfig
    name: str
    output: str  # the stream's output (the batch folders are under it)
    run_id: str
    retention: float = DEFAULT_RETENTION

    def __post_init__(self) -> None:
        self.keyed = Keyed(self.name)
        self.chains = _client(self.tracker, self.retention)
        self.skipped = 0
        self._committed_runs: dict[str, str] | None = None
        self._whole: set[str] = set()

    def tag(self, key: str) -> str:
        tag = f"{self.name}/commit/{key}"
        if len(tag.encode("utf-8", "surrogateescape")) <= 1024:
            return tag
        return _hashed_tag(self.name, key)

    def stamp(self, key: str, run_id: str) -> bytes:
        """``M(run, KEY)``: a mark created with it and stamped with it is zero: committed."""
        return self.keyed.hash("mark", key, run_id)

    # -- 1. before the rounds ------------------------------------------------------------

    def unmarked(self, keys: Iterator[str]) -> Iterator[str]:
        """The inputs of ``keys`` no earlier run committed, each marked for this run."""
        while chunk := list(itertools.islice(keys, CHUNK)):
            tags = {self.tag(key): key for key in chunk}
            with asking("marks"):
                refused = self._mark(tags)
            yield from (key for tag, key in tags.items() if tag not in refused)

    def _mark(self, tags: dict[str, str]) -> set[str]:
        """Mark for this run the inputs of ``tags`` no earlier run committed; the tags of
        the others (committed, or marked just now by another run), left out."""
        states = self.chains.get_many(list(tags))
        mine: dict[str, bytes] = {}
        refused: set[str] = set()
        for tag, key in tags.items():
            if self._committed(key, states[tag]):
                refused.add(tag)
            else:
                mine[tag] = self.stamp(key, self.run_id)
        self.skipped += len(refused)
        # No end while a mark is live: a batch longer than ``retention`` (or a run that
        # stopped before it said how it ended) would find its marks gone, and what it
        # committed forgotten; ``retention`` counts from the commit (``tombstone_ttl``).
        taken: set[str] = set()
        try:
            create_chains(self.chains, self.tracker, mine, ttl=MAX_TTL)
        except CreateManyFailed as exc:
            for error in exc.errors.values():
                if not isinstance(error, TagExists):
                    raise error from exc
            taken = set(exc.errors)
        refused |= taken  # another run marked them just now: they are that run's
        self.skipped += len(taken)
        return refused

    def _committed(self, key: str, state: ChainState | None) -> bool:
        """Did an earlier run commit ``key``?  A live mark's run is settled here."""
        if state is None or state.failed:
            return False
        if state.acked:
            return True
        for run, folder in self._runs().items():
            if state.stamp == self.stamp(key, run):  # that run committed its folder
                self._check_whole(folder)
                self._ack(state, self.stamp(key, run))
                return True
        with contextlib.suppress(ChainFailed, TagNotFound):  # its run stopped: not committed
            self.chains.fail(state.tag, reason="not committed", chain_id=state.chain_id)
        return False

    def _runs(self) -> dict[str, str]:
        """The runs whose batch folders are in the output, each with its folder's path
        (listed once per micro-batch)."""
        if self._committed_runs is None:
            files = Files(self.spark, self.output)
            listing = files.listing(files.followed(self.output))
            names = listing.names if listing is not None and listing.is_dir else ()
            base = self.output.rstrip("/")
            self._committed_runs = {
                name.split("-", 1)[1]: f"{base}/{name}"
                for name in names
                if name.startswith(BATCH_PREFIX) and "-" in name
            }
        return self._committed_runs

    def _check_whole(self, folder: str) -> None:
        """``TornBatch`` unless ``folder`` holds all its manifest names (once per folder)."""
        if folder in self._whole:
            return
        missing = missing_entries(Files(self.spark, self.output).listing(folder, tree=True))
        if missing != []:
            raise TornBatch(folder, missing)
        self._whole.add(folder)

    def _ack(self, state: ChainState, value: bytes) -> None:
        (outcome,) = self._stamp_on([(state, value, b"commit")])
        if isinstance(outcome, Exception) and not isinstance(outcome, ChainMoved):
            raise outcome

    def _stamp_on(self, writes: list[tuple[ChainState, bytes, bytes]]) -> list[object]:
        """Each stamp on its state: 25 per PartiQL request, or one ``UpdateItem`` each on a
        server without PartiQL (``partiql=False``); per write, its outcome or error."""
        if self.tracker.partiql:
            return list(self.chains.stamp_on_each(writes))
        outcomes: list[object] = []
        for state, value, token in writes:
            try:
                self.chains.stamp_on(state, value, token=token)
                outcomes.append(state)
            except ChainMoved as moved:  # any other error stops the marks, as it would
                outcomes.append(moved)
        return outcomes

    # -- 2. and 3. around the rename -------------------------------------------------------

    def before_commit(self, report: TrackedReport) -> None:
        """The failed inputs' marks are failed: they are not in the output."""
        for entry in report.endings():
            if entry.status == "failed":
                with asking("marks before commit"), contextlib.suppress(ChainFailed, TagNotFound):
                    self.chains.fail(self.tag(entry.key), reason="failed: not committed")

    def after_commit(self, report: TrackedReport) -> None:
        """The acked inputs' marks are stamped to zero: committed."""
        acked = (e.key for e in report.endings() if e.status == "acked")
        with asking("marks after commit"):
            self._stamp_acked(acked)

    def _stamp_acked(self, acked: Iterator[str]) -> None:
        while chunk := list(itertools.islice(acked, CHUNK)):
            tags = {self.tag(key): key for key in chunk}
            states = self.chains.known_many(list(tags))
            writes = [
                (state, self.stamp(tags[tag], self.run_id), b"commit")
                for tag, state in states.items()
                if state is not None and state.live
            ]
            for outcome in self._stamp_on(writes):
                if isinstance(outcome, Exception) and not isinstance(outcome, ChainMoved):
                    raise outcome
