"""A wrong argument to ``track()`` is one typed error before anything is written: no chain
in the table, nothing beside the output, no report file, no Spark job run for it.

Each case refuses in milliseconds (the session and DynamoDB Local are shared), so they
are many in one parametrized test; the message names the argument as ``track()`` takes it.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from xor_ack_dynamodb.spark import InvalidArgument, Sink, SparkTrackingError, TrackerConfig, track

from .test_refusals import KEYS, SCHEMA, chains, good

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def on_session(spark: Any) -> Any:
    """A function that uses the driver's session: it cannot be shipped to the workers."""
    return lambda key, rows: spark.range(1).toArrow()


#: (case id, track()'s arguments over the defaults, what the message must say)
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("process-not-callable", {"process": "count_words"}, r"process='count_words'.*callable"),
    ("process-none", {"process": None}, r"process=None.*callable"),
    ("process-one-argument", {"process": lambda key: None}, r"process=.*\(key, rows\)"),
    ("process-three-arguments", {"process": lambda k, r, x: None}, r"process=.*\(key, rows\)"),
    ("process-on-the-session", {"process": on_session}, r"process=.*SparkSession"),
    ("keys-a-string", {"keys": "abc"}, r"keys='abc' is one string: .*keys=\['abc'\]"),
    ("keys-ints", {"keys": [1, 2]}, r"keys=.*1 \(an int\).*must be a string"),
    ("keys-none", {"keys": ["a", None]}, r"keys=.*None.*must be a string"),
    ("keys-bytes", {"keys": [b"a"]}, r"keys=.*b'a' \(a bytes\).*must be a string"),
    # each row a Column: the refusal said "convert them, e.g. keys=[str(k) for k in ...]"
    ("keys-a-dataframe", {"keys": "a frame"}, r"keys= is a DataFrame: give it as source="),
    ("schema-none", {"schema": None}, r"schema=None.*DDL"),
    ("schema-int", {"schema": 5}, r"schema=5.*DDL"),
    # the output's write refused it, after every round had run and written its chains
    ("schema-a-column-twice", {"schema": "v long, V string"}, r"declares the column 'v' twice"),
    ("sink-a-path", {"sink": "out"}, r"sink='out'.*Sink\(path="),
    # its staging folder's name is not: an OSError from the first write beside it
    ("sink-name-too-long", {"sink": Sink("o" * 240)}, r"Sink\(path='o+'\) is too long a name"),
    ("max-attempts-str", {"max_attempts": "3"}, r"max_attempts='3'.*whole number"),
    ("max-attempts-float", {"max_attempts": 2.5}, r"max_attempts=2\.5.*whole number"),
    ("max-errors-bool", {"max_errors": True}, r"max_errors=True.*whole number"),
    ("page-size-str", {"page_size": "10"}, r"page_size='10'.*whole number"),
    ("page-size-float", {"page_size": 1.5}, r"page_size=1\.5.*whole number"),
    ("input-tasks-str", {"input_tasks": "4"}, r"input_tasks='4'.*whole number"),
    ("partitions-0", {"partitions": 0}, r"partitions=0.*>= 1"),
    ("partitions-negative", {"partitions": -1}, r"partitions=-1.*>= 1"),
    # over a Java int: each round failed in repartition, after its chains were written
    ("partitions-huge", {"partitions": 2**31}, r"partitions=2147483648.*at most 2,147,483,647"),
    # past what a page is sliced by: a bare ValueError from islice
    ("page-size-huge", {"page_size": 10**30}, r"page_size=10+: give a whole number of at most"),
    ("run-id-int", {"run_id": 5}, r"run_id=5.*letters"),
    ("round-timeout-str", {"round_timeout": "5"}, r"round_timeout='5'.*seconds"),
    ("chain-timeout-bool", {"chain_timeout": True}, r"chain_timeout=True.*seconds"),
    # an int too big for a float raised a bare OverflowError; over a year, the round's
    # thread join overflowed mid-round, and the first create refused "timeout"
    ("round-timeout-huge-int", {"round_timeout": 10**400}, r"round_timeout=an int of 401"),
    ("round-timeout-over-a-year", {"round_timeout": 1e10}, r"round_timeout=.*at most 31622400"),
    ("chain-timeout-over-a-year", {"chain_timeout": 4e7}, r"chain_timeout=.*at most 31622400"),
    ("report-int", {"report": 5}, r"report=5.*path"),
    ("report-unencodable", {"report": "r\ud800.jsonl"}, r"report=.*cannot be a file's name"),
    (
        "report-name-too-long",
        {"report": "r" * 240 + ".jsonl"},
        r"report=.*too long a name: its lines go to \.NAME\.<12 hex digits>\.partial beside",
    ),
    ("tracker-a-name", {"tracker": "chains"}, r"tracker='chains'.*TrackerConfig\(table="),
    ("on-event-str", {"on_event": "log"}, r"on_event='log'.*callable"),
    # truthy: the run went ahead tracked, writing the chains the caller asked not to write
    ("tracking-str", {"tracking": "false"}, r"tracking='false'.*True.*False"),
    ("faults-str", {"faults": "often"}, r"faults='often'.*FaultConfig"),
    ("key-column-int", {"source": "name int"}, r"key='name' is a column of type int.*cast"),
    ("key-column-array", {"source": "name array<string>"}, r"key='name' .*array<string>"),
    # PySpark's worker cannot read Arrow's month intervals: every round failed the same
    # way ("KeyError: 21"), replayed max_attempts times, an empty output made
    (
        "source-month-interval",
        {"source": "name string, m interval year to month"},
        r"column 'm' holds year-month intervals \(interval year to month\).*cast\('string'\)",
    ),
    # a bare AttributeError ('list' object has no attribute 'columns')
    (
        "source-a-list",
        {"source": [("a", 1)], "key": "name", "keys": None},
        r"source=\[\('a', 1\)\] is not a DataFrame",
    ),
]


@pytest.mark.parametrize(("given", "said"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_wrong_argument_is_refused_before_anything_is_written(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, given: dict[str, Any], said: str
) -> None:
    args: dict[str, Any] = {
        "process": good,
        "schema": SCHEMA,
        "sink": Sink(str(tmp_path / "out")),
        "keys": KEYS,
        "tracker": tracker,
        "report": str(tmp_path / "report.jsonl"),
    }
    args.update(given)
    if isinstance(args.get("source"), str):  # a source whose key column is of this type
        args["source"] = local_spark.createDataFrame([], f"{args['source']}, v int")
        args.update(keys=None, key="name")
    if args.get("keys") == "a frame":
        args["keys"] = local_spark.createDataFrame([("k1",)], "name string")
    if args["process"] is on_session:
        args["process"] = on_session(local_spark)
    with pytest.raises(SparkTrackingError, match=said) as refused:
        track(local_spark, **args)
    assert isinstance(refused.value, InvalidArgument) or type(refused.value).__module__.startswith(
        "xor_ack_dynamodb.spark"
    )
    assert chains(tracker) == [] and sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"path": 5}, r"Sink\(path=5\).*string"),
        ({"table": ["db", "t"]}, r"Sink\(table=\['db', 't'\]\).*string"),
        ({"path": "out", "files": 0}, r"Sink\(files=0\).*>= 1"),
        ({"path": "out", "files": -1}, r"Sink\(files=-1\).*>= 1"),
        ({"path": "out", "files": "2"}, r"Sink\(files='2'\).*>= 1"),
        ({"path": "out", "partition_by": "word"}, r"partition_by=\('word',\)"),
        ({"path": "out", "partition_by": ("word", 3)}, r"partition_by=.*column names"),
        ({"path": "out", "partition_by": 3}, r"partition_by=3.*column names"),
        ({"path": "out", "finish": "sum"}, r"Sink\(finish='sum'\).*callable"),
        ({"path": "out", "format": None}, r"Sink\(format=None\).*string"),
        ({"path": "out", "table": "t"}, r"a folder \(path=...\) or a catalog table .*not both"),
        # Spark's ParseException ("Syntax error at or near '`'") at the first catalog call
        ({"table": "`my.t`"}, r"Sink\(table='`my.t`'\): give the table as name or database"),
        ({"table": "db..t"}, r"Sink\(table='db..t'\).*none be empty"),
    ],
    ids=[
        "path-int",
        "table-list",
        "files-0",
        "files-neg",
        "files-str",
        "partition-str",
        "partition-int",
        "partition-not-a-tuple",
        "finish-str",
        "format-none",
        "path-and-table",
        "table-dot-in-backticks",
        "table-empty-part",
    ],
)
def test_a_sink_spark_could_not_write_is_refused_when_it_is_made(
    given: dict[str, Any], said: str
) -> None:
    with pytest.raises(InvalidArgument, match=said):
        Sink(**given)


@pytest.mark.parametrize("where", ["missing-table", "unreachable"])
def test_a_chains_table_that_is_not_there_is_refused_before_any_spark_job(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, where: str
) -> None:
    """Checked before the source's keys are listed (a Spark job) or the sink is tried, and
    in seconds: not after botocore's retries of every chain's create."""
    import time
    from dataclasses import replace

    from xor_ack_dynamodb.spark import ChainsTableMissing, DynamoDBFailed

    from .servers import free_port

    if where == "missing-table":
        config, refusal = replace(tracker, table="no-such-chains"), ChainsTableMissing
        said = "does not exist"
    else:
        nowhere = f"http://127.0.0.1:{free_port()}"
        config, refusal = replace(tracker, endpoint_url=nowhere), DynamoDBFailed
        said = r"none of its chains was made"
    frame = local_spark.createDataFrame([("a", 1)], "name string, v int")
    status = local_spark.sparkContext.statusTracker()
    jobs = len(status.getJobIdsForGroup())
    start = time.monotonic()
    with pytest.raises(refusal, match=said) as refused:
        track(
            local_spark,
            good,
            SCHEMA,
            Sink(str(tmp_path / "out"), format="csv"),
            source=frame,
            key="name",
            tracker=config,
            report=str(tmp_path / "report.jsonl"),
        )
    assert time.monotonic() - start < 30
    if where == "missing-table":
        assert "table='no-such-chains'" in str(refused.value)
        assert "table create" in str(refused.value)
    assert len(status.getJobIdsForGroup()) == jobs
    assert chains(tracker) == [] and sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("checkpoint", [None, "", "  ", 5, "left out"])
def test_a_stream_without_a_checkpoint_folder_is_refused_before_it_starts(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, checkpoint: Any
) -> None:
    from xor_ack_dynamodb.spark import input_file, track_stream

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("x")
    stream = local_spark.readStream.text(str(tmp_path / "in")).withColumn("file", input_file())
    given = {} if checkpoint == "left out" else {"checkpoint": checkpoint}
    with pytest.raises(InvalidArgument, match=r"checkpoint=.*folder"):
        track_stream(
            stream, good, SCHEMA, Sink(str(tmp_path / "out")), key="file", tracker=tracker, **given
        )
    assert chains(tracker) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["in"]
    assert not local_spark.streams.active


def test_an_untracked_stream_told_to_go_on_past_failed_inputs_is_refused_before_it_starts(
    local_spark: Any, tmp_path: Path
) -> None:
    """``stop_on_failure=False`` goes on past a batch's failed inputs, which only their chains
    fail alone: untracked, the query stopped at the first bad file with Spark's
    ``StreamingQueryException`` (a worker's traceback inside), the later files never read."""
    from xor_ack_dynamodb.spark import input_file, track_stream

    (tmp_path / "in").mkdir()
    stream = local_spark.readStream.text(str(tmp_path / "in")).withColumn("file", input_file())
    with pytest.raises(InvalidArgument, match=r"stop_on_failure=False.*tracking=False"):
        track_stream(
            stream,
            good,
            SCHEMA,
            Sink(str(tmp_path / "out")),
            key="file",
            checkpoint=str(tmp_path / "checkpoint"),
            tracking=False,
            stop_on_failure=False,
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]
    assert not local_spark.streams.active


def test_a_stream_report_whose_batch_names_would_be_too_long_is_refused_before_it_starts(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """Each micro-batch's report is named after its folder (``run.batch=000003-RUN.jsonl``):
    a name that fits alone but not with that failed every batch with a raw OSError."""
    from xor_ack_dynamodb.spark import input_file, track_stream

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("x")
    stream = local_spark.readStream.text(str(tmp_path / "in")).withColumn("file", input_file())
    report = tmp_path / ("r" * 200 + ".jsonl")  # 228 bytes as a partial file: fits alone
    with pytest.raises(InvalidArgument, match=r"report=.*too long a name"):
        track_stream(
            stream,
            good,
            SCHEMA,
            Sink(str(tmp_path / "out")),
            key="file",
            tracker=tracker,
            checkpoint=str(tmp_path / "checkpoint"),
            report=str(report),
        )
    assert chains(tracker) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["in"]
    assert not local_spark.streams.active


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"table": ""}, r"TrackerConfig: table must be a non-empty str"),
        ({"table": 5}, r"TrackerConfig: table must be a non-empty str"),
        ({"table": "t", "partition_key": ""}, r"TrackerConfig: partition_key must"),
        ({"table": "t", "token_window": 1}, r"TrackerConfig: token_window must"),
        ({"table": "t", "concurrency": 0}, r"TrackerConfig: concurrency must be an int >= 1"),
        ({"table": "t", "cache_size": -1}, r"TrackerConfig: cache_size must be an int >= 0"),
        ({"table": "t", "endpoint_url": "localhost:8000"}, r"endpoint_url='localhost:8000'.*http"),
        ({"table": "t", "region": ""}, r"TrackerConfig: region="),
    ],
    ids=[
        "table-empty",
        "table-int",
        "key-empty",
        "window-1",
        "concurrency-0",
        "cache-neg",
        "endpoint-no-scheme",
        "region-empty",
    ],
)
def test_a_tracker_config_the_chains_could_not_use_is_refused_when_it_is_made(
    given: dict[str, Any], said: str
) -> None:
    with pytest.raises(InvalidArgument, match=said):
        TrackerConfig(**given)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"drop_rate": "0.1"}, r"drop_rate must be between 0 and 1, got '0.1'"),
        ({"crash_rate": None}, r"crash_rate must be between 0 and 1, got None"),
        ({"crash_rate": math.nan}, r"crash_rate must be between 0 and 1, got nan"),
        ({"seed": "7"}, r"seed must be an int, got '7'"),
        ({"max_attempt": "3"}, r"max_attempt must be None or an int >= 0, got '3'"),
    ],
    ids=["drop-str", "crash-none", "crash-nan", "seed-str", "max-attempt-str"],
)
def test_a_fault_config_of_the_wrong_type_is_refused_when_it_is_made(
    given: dict[str, Any], said: str
) -> None:
    from xor_ack_dynamodb.spark import FaultConfig

    with pytest.raises(InvalidArgument, match=said):
        FaultConfig(**given)


@pytest.mark.parametrize(
    ("report", "said"),
    [
        ("report.jsonl/", "ends in a separator"),
        ("out", "at or inside the output folder"),
        ("out/report.jsonl", "at or inside the output folder"),
        # put in place by a rename, a user's link was replaced by a regular file
        ("link.jsonl", "is a symbolic link: .*latest.jsonl"),
    ],
    ids=["trailing-slash", "the-output-folder", "in-the-output-folder", "a-symbolic-link"],
)
def test_a_report_the_run_could_not_end_with_is_refused_before_anything_is_written(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, report: str, said: str
) -> None:
    # Each passed the checks: the run committed its output, then renaming the report onto
    # a folder raised a bare OSError (no report); or the report's hidden file, in an empty
    # output folder, made the commit refuse the output as not empty after every round.
    (tmp_path / "out").mkdir()  # an empty output folder: a valid sink
    (tmp_path / "latest.jsonl").write_text("former\n")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "latest.jsonl")
    with pytest.raises(InvalidArgument, match=f"report=.*{said}"):
        track(
            local_spark,
            good,
            SCHEMA,
            Sink(str(tmp_path / "out")),
            keys=KEYS,
            tracker=tracker,
            report=f"{tmp_path}/{report}",  # as given: a Path drops a trailing slash
        )
    assert chains(tracker) == [] and list((tmp_path / "out").iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.jsonl", "link.jsonl", "out"]
    assert (tmp_path / "link.jsonl").is_symlink()
    assert (tmp_path / "latest.jsonl").read_text() == "former\n"


@pytest.mark.parametrize("with_keys", [False, True], ids=["key", "key-and-keys"])
def test_a_streaming_source_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, with_keys: bool
) -> None:
    """``track(source=spark.readStream...)``: with ``keys=`` every round's job failed the
    same way (CALL_ON_STREAMING_DATASET_UNSUPPORTED), replayed up to ``max_attempts``, chains
    written and an empty output made; without, PySpark's AnalysisException came out."""
    from xor_ack_dynamodb.spark import input_file

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("x\n", encoding="utf-8")
    stream = local_spark.readStream.text(str(folder)).select("value", input_file().alias("file"))
    keys = {"keys": ["a", "b"]} if with_keys else {}
    out = tmp_path / "out"
    with pytest.raises(InvalidArgument, match=r"streaming DataFrame .*track_stream\(stream"):
        track(
            local_spark,
            good,
            SCHEMA,
            Sink(str(out)),
            source=stream,
            key="file",
            tracker=tracker,
            **keys,
        )
    assert chains(tracker) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["in"]
