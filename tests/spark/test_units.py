"""The library's plain-Python parts: where the chains live, and the row digests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from botocore.exceptions import ClientError

from xor_ack_dynamodb import ChainState, Stamp
from xor_ack_dynamodb.errors import (
    AmbiguousWrite,
    ChainFailed,
    ChainMoved,
    CorruptItem,
    InterruptedWrite,
    StaleLocalData,
    StampManyFailed,
    TagNotFound,
    UnsettledWrite,
    XorAckError,
)
from xor_ack_dynamodb.spark import (
    ConnectCheckFailed,
    FaultConfig,
    Incurable,
    InputResult,
    InvalidArgument,
    RelativePath,
    Sink,
    TrackerConfig,
    TrackingNotConfigured,
    chains_config,
    task_stamps,
    track,
    track_stream,
)
from xor_ack_dynamodb.spark import tracking as tracking_module
from xor_ack_dynamodb.spark.chain_batches import RoundChains, Unanswered, dynamodb_error, said_of
from xor_ack_dynamodb.spark.digest import MOD, row_sum, rows_stamp
from xor_ack_dynamodb.spark.isolation import Isolation
from xor_ack_dynamodb.spark.keyed import Keyed
from xor_ack_dynamodb.spark.paging import pages
from xor_ack_dynamodb.spark.paths import server_path
from xor_ack_dynamodb.spark.tracker import chain_answer


class FakeConf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


class FakeSession:
    def __init__(self, values: dict[str, str]) -> None:
        self.conf = FakeConf(values)


def test_argument_beats_session_conf_beats_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XOR_ACK_TABLE", "from-env")
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    session = FakeSession({"spark.xorack.table": "from-conf", "spark.xorack.region": "us-east-2"})
    config = chains_config(session)
    assert (config.table, config.region, config.endpoint_url) == (
        "from-conf",
        "us-east-2",
        "http://127.0.0.1:1",
    )
    assert chains_config(session, table="from-arg").table == "from-arg"
    assert chains_config(FakeSession({})).table == "from-env"
    assert config.transactions is False  # one write unit per stamp on AWS


def test_no_table_anywhere_is_an_error_that_says_where_to_name_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("XOR_ACK_TABLE", raising=False)
    with pytest.raises(TrackingNotConfigured, match=r"spark\.xorack\.table") as info:
        chains_config(FakeSession({}))
    assert info.value.code == "TrackingNotConfigured"


def test_track_takes_the_partition_key_of_the_chains_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Any] = []

    class Job:
        def __init__(self, spark: Any, spec: Any) -> None:
            seen.append(spec)

        def run(self) -> str:
            return "ran"

    monkeypatch.setattr(tracking_module, "TrackedJob", Job)
    got = tracking_module.track(
        FakeSession({}),
        lambda key, rows: rows,
        "k string",
        Sink("/o"),
        keys=["a"],
        table="t-1",
        partition_key="pk",
    )
    assert got == "ran" and seen[0].tracker.partition_key == "pk"
    assert seen[0].max_errors == 2


def test_a_path_sent_to_a_connect_server_is_absolute_or_refused() -> None:
    assert server_path("/data/out/", "the sink's folder") == "file:/data/out"
    assert server_path("file:///data/out", "x") == "file:/data/out"
    assert server_path("s3a://bucket/out", "x") == "s3a://bucket/out"
    for relative in ("out", "./out", "file:out"):
        with pytest.raises(RelativePath, match="its own working directory"):
            server_path(relative, "the sink's folder")


def test_a_sink_is_a_folder_or_a_table() -> None:
    assert Sink(table="db.t").target == "table:db.t" and Sink("/o").target == "/o"
    for wrong in ({}, {"path": "/o", "table": "db.t"}):
        with pytest.raises(ValueError, match="a folder"):
            Sink(**wrong)  # type: ignore[arg-type]


NO_STREAM: Any = None  # each call is refused before it would touch a session or a stream


REFUSED_ARGUMENTS: dict[str, tuple[Callable[[], object], str]] = {
    "Sink()": (lambda: Sink(), "a folder"),
    "Sink(path=' ')": (lambda: Sink(path=" "), "must not be empty"),
    "max_attempts=0": (lambda: run(max_attempts=0), "max_attempts"),
    "max_errors=0": (lambda: run(max_errors=0), "max_errors"),
    "page_size=0": (lambda: run(page_size=0), "page_size"),
    "input_tasks=0": (lambda: run(input_tasks=0), "input_tasks"),
    "round_timeout=0": (lambda: run(round_timeout=0), "round_timeout"),
    "round_timeout=nan": (lambda: run(round_timeout=float("nan")), "round_timeout"),
    "chain_timeout=0": (lambda: run(chain_timeout=0), "chain_timeout"),
    "chain_timeout=inf": (lambda: run(chain_timeout=float("inf")), "chain_timeout"),
    "no inputs": (lambda: run(keys=None), "give the inputs"),
    "run_id='x/../..'": (lambda: run(run_id="x/../.."), "run_id"),
    "run_id='..'": (lambda: run(run_id=".."), "run_id"),
    "run_id=''": (lambda: run(run_id=""), "run_id"),
    "FaultConfig.rate(2)": (lambda: FaultConfig.rate(2.0), "crash_rate"),
    "FaultConfig(drop_rate=-1)": (lambda: FaultConfig(drop_rate=-1), "drop_rate"),
    "Isolation(0)": (lambda: Isolation(0), "max_errors"),
    "Keyed('')": (lambda: Keyed(""), "run_id"),
    "pages(size=0)": (lambda: list(pages(iter(["a"]), 0)), "page_size"),
    "track_stream(table sink)": (
        lambda: track_stream(
            NO_STREAM, len, "k string", Sink(table="db.t"), key="k", checkpoint="/c"
        ),
        r"give Sink\(path=...\)",
    ),
}


@pytest.mark.parametrize(
    ("call", "said"), list(REFUSED_ARGUMENTS.values()), ids=list(REFUSED_ARGUMENTS)
)
def test_an_argument_the_call_cannot_take_is_the_packages_error_and_a_value_error(
    call: Callable[[], object], said: str
) -> None:
    with pytest.raises(InvalidArgument, match=said) as refused:
        call()
    assert isinstance(refused.value, XorAckError) and isinstance(refused.value, ValueError)
    assert refused.value.code == "InvalidArgument"


def run(**options: Any) -> object:
    """``track`` with a tracker given: no session needed up to its spec's checks."""
    given: dict[str, Any] = {"keys": ["a"], "tracker": TrackerConfig(table="t"), **options}
    return track(NO_STREAM, len, "k string", Sink("/o"), **given)


def test_row_sum_ignores_order_and_splits_but_counts_duplicates() -> None:
    rows = pa.table({"word": ["a", "b", "c", "a"], "n": [1, 2, 3, 1]})
    whole = row_sum("run", rows, ["word", "n"])
    reordered = row_sum("run", rows.take([3, 2, 1, 0]), ["word", "n"])
    parts = (
        row_sum("run", rows.slice(0, 1), ["word", "n"])
        + row_sum("run", rows.slice(1), ["word", "n"])
    ) % MOD
    assert whole == reordered == parts
    once = row_sum("run", rows.slice(0, 3), ["word", "n"])
    assert once != whole  # the duplicate row counts (an XOR of hashes would cancel it)
    keyed = Keyed("run")
    assert rows_stamp(keyed, "t#1", whole) != rows_stamp(keyed, "t#1", once)
    assert rows_stamp(keyed, "t#1", whole) != rows_stamp(keyed, "t#2", whole)


class FakeContext:
    def __init__(self, cores: int) -> None:
        self.defaultParallelism = cores


class FakeClassicSession(FakeSession):
    def __init__(self, cores: int, conf: dict[str, str] | None = None) -> None:
        super().__init__(conf or {})
        self.sparkContext = FakeContext(cores)


class FakeSharedSession(FakeSession):
    """A classic session that keeps its SparkContext from Python (a shared cluster's)."""

    @property
    def sparkContext(self) -> Any:
        raise RuntimeError("sparkContext is not available on this cluster")


class FakeConnectSession(FakeSession):
    """What ``files.is_connect`` takes for a Spark Connect session (its module's name)."""


FakeConnectSession.__module__ = "pyspark.sql.connect.session"


@pytest.mark.parametrize(
    ("session", "tasks"),
    [
        (FakeClassicSession(2), 16),  # local[2]: at least 16
        (FakeClassicSession(8), 24),
        (FakeClassicSession(200), 600),  # a cluster: three per core
        (FakeClassicSession(2, {"spark.default.parallelism": "40"}), 120),  # the conf's word
        (FakeSharedSession({}), 16),
        (FakeConnectSession({}), 16),  # the client sees no cores
        (FakeConnectSession({"spark.default.parallelism": "64"}), 192),
    ],
)
def test_the_function_runs_in_three_tasks_per_core_and_at_least_16(
    session: Any, tasks: int
) -> None:
    from xor_ack_dynamodb.spark.input_tasks import default_input_tasks

    assert default_input_tasks(session) == tasks


def test_a_report_file_is_on_disk_whole_before_it_is_renamed_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Renamed before its lines reach the disk, a machine lost just after would leave an
    empty or torn report where the former one was."""
    import os

    from xor_ack_dynamodb.spark.report_stream import Endings, read_report

    synced: list[int] = []  # the size of each file synced, in order
    renamed: list[list[int]] = []  # what was synced when each rename happened
    fsync, rename = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_size), fsync(fd)))
    monkeypatch.setattr(os, "replace", lambda a, b: (renamed.append(list(synced)), rename(a, b)))
    endings = Endings(tmp_path / "run.jsonl")
    endings.add(InputResult("a", "acked", 1, ["acked"]))
    endings.close({"ok": True})
    assert renamed == [[(tmp_path / "run.jsonl").stat().st_size]]  # the summary included
    assert read_report(tmp_path / "run.jsonl") == (
        [{"key": "a", "status": "acked", "attempts": 1, "history": ["acked"]}],
        {"ok": True},
    )


_LIVE = ChainState("t", Stamp(b"\x01" * 16), b"c" * 8, 1, (), 0.0, 0.0)
_ZERO = ChainState("t", Stamp(bytes(16)), b"c" * 8, 3, (), 0.0, 0.0, acked_at=1.0)
#: A stamp's outcomes, and whether each is the chain's answer (the driver judges the chain)
#: or fails what sent it (the task, whose retry sends the same tokens; the driver's round).
_OUTCOMES = [
    (ChainMoved("t", _LIVE, _ZERO), True),  # the chain as it is now: no read
    (ChainFailed("t", "gone"), True),
    (TagNotFound("t"), True),
    (StaleLocalData("t", 8), True),
    (AmbiguousWrite("t", 32), True),  # landed or not, the chain tells: the driver reads it
    (UnsettledWrite("t", 32), False),  # cut off from DynamoDB: the same token again
    (InterruptedWrite("t", 32), False),
    (CorruptItem("t", "stamp", "missing"), False),
    (RuntimeError("a defect"), False),
]


@pytest.mark.parametrize(("outcome", "answer"), _OUTCOMES)
def test_a_task_stamps_outcome_is_the_chains_answer_or_fails_the_task(
    monkeypatch: pytest.MonkeyPatch, outcome: Exception, answer: bool
) -> None:
    """One rule (``tracker.chain_answer``) for the tasks' stamps, on both ways of writing
    them: the chain's answer is the driver's to judge and the task goes on; a write cut off
    from DynamoDB fails the task, whose retry sends the same tokens (it lands once)."""

    class Chains:
        def stamp_on_each(self, writes: Any, concurrency: int) -> list[object]:
            return [outcome]

        def stamp_on(self, *args: Any, **kwargs: Any) -> None:
            raise outcome

        def stamp(self, *args: Any, **kwargs: Any) -> None:
            raise outcome

    monkeypatch.setattr(task_stamps, "chains_for", lambda tracker: Chains())
    batch: Any = [("t", b"\x01" * 16, b"token", _LIVE)]
    for partiql in (True, False):
        spec: Any = SimpleNamespace(tracker=SimpleNamespace(partiql=partiql))
        if answer:
            task_stamps._write(spec, batch)
        else:
            with pytest.raises(type(outcome)):
                task_stamps._write(spec, batch)
    assert chain_answer(outcome) is answer
    assert (dynamodb_error(StampManyFailed({}, {"t": outcome})) is outcome) is isinstance(
        outcome, UnsettledWrite
    )


@pytest.mark.parametrize(("outcome", "answer"), _OUTCOMES)
def test_the_drivers_commit_stamp_reads_a_chain_that_answered_and_stops_on_anything_else(
    outcome: Exception, answer: bool
) -> None:
    """A commit stamp whose landing cannot be told any more (``AmbiguousWrite``) may have
    completed the chain: the driver reads it and judges it as found, where it once judged
    the state read before the stamp (and replayed an input whose chain was complete).
    DynamoDB's error stops the round (``Unanswered``: ``DynamoDBFailed``); a defect is
    raised as it is."""
    reads: list[list[str]] = []

    class Chains:
        def get_many(self, tags: list[str]) -> dict[str, ChainState | None]:
            reads.append(list(tags))
            return {tag: _LIVE if len(reads) == 1 else _ZERO for tag in tags}

        def stamp_on_each(self, writes: Any, concurrency: int) -> list[object]:
            return [outcome for _ in writes]

        def stamp(self, *args: Any, **kwargs: Any) -> None:  # a moved chain's stamp, again
            pass

    tracker = TrackerConfig(table="chains", partiql=True)
    chains = RoundChains(tracker, Chains(), Keyed("run"))  # type: ignore[arg-type]
    if answer:
        states = chains.commit("run", {"t": 7})
        moved = isinstance(outcome, ChainMoved)
        assert reads == [["t"]] if moved else [["t"], ["t"]]  # the chain judged as it is
        assert states["t"] == _ZERO
    elif isinstance(outcome, UnsettledWrite):
        with pytest.raises(Unanswered) as stopped:
            chains.commit("run", {"t": 7})
        assert stopped.value.cause is outcome
    else:
        with pytest.raises(type(outcome)):
            chains.commit("run", {"t": 7})


def test_a_report_file_a_killed_run_left_is_removed_by_the_next_run_and_a_live_one_is_not(
    tmp_path: Path,
) -> None:
    """A driver killed mid-run left its hidden ``.NAME.<hex>.partial`` beside the report,
    and every such run added one."""
    import os
    import subprocess
    import sys

    from xor_ack_dynamodb.spark.report_stream import ABANDONED_AFTER, Endings

    report = tmp_path / "run.jsonl"
    killed = (
        "import os, sys\n"
        "from xor_ack_dynamodb.spark.report_stream import Endings\n"
        "from xor_ack_dynamodb.spark.report import InputResult\n"
        "e = Endings(sys.argv[1])\n"
        "e.add(InputResult('a', 'acked', 1, ['acked']))\n"
        "e._file.flush()\n"
        "os._exit(9)  # no close, no abandon: as a SIGKILL leaves it\n"
    )
    done = subprocess.run([sys.executable, "-c", killed, str(report)], check=False)
    assert done.returncode == 9
    [left] = [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    live = Endings(tmp_path / "run.jsonl")  # another run writing the same report, alive
    live.add(InputResult("b", "acked", 1, ["acked"]))
    old = os.stat(left).st_mtime - ABANDONED_AFTER - 1
    [mine] = [p for p in tmp_path.iterdir() if p.name.endswith(".partial") and p != left]
    for path in (left, mine):
        os.utime(path, (old, old))  # both old enough; only the killed run's is unlocked
    user = tmp_path / ".run.jsonl.mine.partial"  # not the library's name pattern
    user.write_text("the user's\n")
    nxt = Endings(report)
    nxt.add(InputResult("c", "acked", 1, ["acked"]))
    assert not left.exists() and mine.exists() and user.read_text() == "the user's\n"
    nxt.close({"ok": True})
    live.close({"ok": True})
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == [user.name]


def test_a_dynamodb_error_on_the_statements_gets_no_word_of_moto() -> None:
    """Only a bare HTTP status (no DynamoDB error name) is said to be another server's page."""
    named = ClientError(
        {"Error": {"Code": "InternalServerError", "Message": "Internal server error"}},
        "BatchExecuteStatement",
    )
    assert said_of(named) == (
        "ClientError: An error occurred (InternalServerError) when calling the "
        "BatchExecuteStatement operation: Internal server error"
    )
    page = ClientError(
        {"Error": {"Code": "500", "Message": "<!doctype html>"}}, "BatchExecuteStatement"
    )
    assert "an HTTP 500 page, as moto's server does" in said_of(page)
    elsewhere = ClientError({"Error": {"Code": "500", "Message": "x"}}, "BatchGetItem")
    assert "moto" not in said_of(elsewhere)


class _ProbedServer:
    """A Spark Connect session whose check job fails with ``errors`` in turn, then answers."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def range(self, *args: Any) -> _ProbedServer:
        return self

    def mapInArrow(self, function: Any, ddl: str) -> _ProbedServer:
        return self

    def collect(self) -> list[dict[str, str]]:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        names = ("python", "python_version", "host", "missing", "version")
        return [dict.fromkeys(names, "x") | {"missing": ""}]


UNAVAILABLE = (
    "<_MultiThreadedRendezvous of RPC that terminated with:\n\tstatus = StatusCode.UNAVAILABLE"
    '\n\tdetails = "failed to connect to all addresses; Connection refused"\n>'
)


def test_a_connect_check_that_fails_for_a_moment_is_run_again_not_incurable() -> None:
    """The check job over Spark Connect failed once (the server unreachable a moment, an
    executor lost): that was Incurable, telling the user to fix the server's Python."""
    from xor_ack_dynamodb.spark import connect_check

    waits: list[float] = []
    server = _ProbedServer(RuntimeError(UNAVAILABLE), RuntimeError("ExecutorLostFailure (lost)"))
    found = connect_check.probe(server, sleep=waits.append)
    assert found.host == "x" and server.calls == 3 and waits == [1.0, 2.0]
    always = _ProbedServer(*[RuntimeError(UNAVAILABLE)] * 5)
    with pytest.raises(ConnectCheckFailed, match=r"3 times .*StatusCode\.UNAVAILABLE") as failed:
        connect_check.probe(always, sleep=waits.append)
    assert always.calls == 3 and isinstance(failed.value.__cause__, RuntimeError)
    missing = _ProbedServer(RuntimeError("ModuleNotFoundError: No module named 'pyarrow'"))
    with pytest.raises(Incurable, match="pyarrow"):  # names what to install: at once
        connect_check.probe(missing, sleep=waits.append)
    assert missing.calls == 1


def test_a_spark_errors_logger_leaves_pytests_log_capture_as_it_was() -> None:
    """tests/conftest.py's guard: a PySpark error's query-context logger (non-propagating)
    is handed pytest's capture handler at every test, and set its JSON formatter on it:
    every later ``caplog`` test in that worker read JSON (order-dependent failures)."""
    import logging

    from _pytest.logging import LogCaptureHandler
    from pyspark.logger import PySparkLogger

    handler = LogCaptureHandler()
    plain = logging.Formatter("%(message)s")
    handler.setFormatter(plain)
    logger = PySparkLogger.getLogger("DataFrameQueryContextLogger")
    logger.addHandler(handler)
    try:
        assert handler.formatter is plain
    finally:
        logger.removeHandler(handler)
