"""A bad input fails alone, inside a task (no Spark job: the stage function called directly).

An exception from the user's function, a function that returns no table, and, run
isolated, a function that ends its own process: each fails that input's chain with
a reason naming the input, and the task's other inputs are stamped as usual.  Then
the driver's side in plain Python: errors counted per input, the inputs of a failed
round isolated, and the errors that no replay cures said in one line.
"""

from __future__ import annotations

import hashlib
import os
import signal
import zipfile
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from xor_ack_dynamodb.spark.connect_files import JAR, SOURCE
from xor_ack_dynamodb.spark.isolation import Isolation, bad_output, incurable, raised, task_of
from xor_ack_dynamodb.spark.stages import ID, RoundSpec
from xor_ack_dynamodb.spark.tracker import TrackerConfig

from .test_stages import RUN, SCHEMA, chains, lines_of, produce, start

pytestmark = pytest.mark.ddblocal

KEYS = ["file:/a", "file:/b", "file:/c", "file:/d"]
__all__ = ["chains"]  # the fixture, shared with test_stages


def bad(key: str, rows: Any) -> Any:
    """``b`` raises, ``c`` returns None, ``d`` kills its process: ``a`` alone is fine."""
    if key == "file:/b":
        raise ValueError(f"bad input {key}")
    if key == "file:/c":
        return None
    if key == "file:/d":
        os.kill(os.getpid(), signal.SIGKILL)
    return pa.table({"word": ["x", "y"], "n": [1, 2]}, schema=SCHEMA)


def run_task(tracker: TrackerConfig, chains: Any, keys: list[str], isolate: bool) -> Any:
    """One task over ``keys`` (isolated: each in a child process); their chains after it."""
    tags = [start(chains, key)[0] for key in keys]
    tables = [
        lines_of(chains, tag, key, i, [])
        for i, (tag, key) in enumerate(zip(tags, keys, strict=True))
    ]
    ids = frozenset(range(len(keys))) if isolate else frozenset()
    s = RoundSpec(RUN, 1, bad, ("word", "n"), SCHEMA, (), tracker, isolate=ids)
    out = produce(s, *tables)
    return out, [chains.get(tag) for tag in tags]


def test_an_input_that_raises_or_returns_no_table_fails_alone(
    tracker: TrackerConfig, chains: Any
) -> None:
    out, (a, b, c) = run_task(tracker, chains, KEYS[:3], isolate=False)
    assert a.version == 2 and not a.failed  # stamped: its rows go on to the commit check
    assert b.failed and b.reason == "raised: ValueError: bad input file:/b (input file:/b)"
    assert c.failed and c.reason == (
        "bad output: the function returned NoneType, not a table (input file:/c)"
    )
    assert out.num_rows == 2  # a's rows only


def test_isolated_an_input_that_kills_its_process_fails_alone(
    tracker: TrackerConfig, chains: Any
) -> None:
    out, (a, b, c, d) = run_task(tracker, chains, KEYS, isolate=True)
    assert a.version == 2 and not a.failed and out.num_rows == 2
    assert b.reason == "raised: ValueError: bad input file:/b (input file:/b)"
    assert c.reason == "bad output: the function returned NoneType, not a table (input file:/c)"
    assert d.failed and d.reason == (
        "crashed: the function ended its Python process (killed by SIGKILL) (input file:/d)"
    )


def test_errors_count_per_input_and_a_failed_round_isolates_whose_function_never_returned() -> None:
    isolation = Isolation(max_errors=2)
    assert not isolation.spent(0, "incomplete: not zero when its round ended")
    assert not isolation.spent(1, raised("k1", ValueError("x")))
    assert isolation.spent(1, raised("k1", ValueError("x")))  # the second time: failed
    isolation.round_failed([2, 3, 4], returned={3})
    assert isolation.for_round([0, 2, 3, 4]) == {2, 4}
    # Spark's message names the task that failed the job: only its inputs, the first time.
    died = "Job aborted due to stage failure: Task 1 in stage 2.0 failed 1 times, ..."
    narrow = Isolation(max_errors=2)
    narrow.round_failed([5, 6, 7, 8], {8}, died, lambda ids: {i: i % 2 for i in ids})
    assert narrow.for_round([5, 6, 7, 8]) == {5, 7}
    narrow.round_failed([5, 6, 7], set(), died, lambda ids: {i: i % 2 for i in ids})
    assert narrow.for_round([5, 6, 7]) == {5, 6, 7}  # failed again: all of them
    with pytest.raises(ValueError):
        Isolation(max_errors=0)


def test_an_error_no_replay_cures_is_said_in_one_line_naming_what_and_where() -> None:
    where = "the workers"
    job = (
        "An exception was thrown from the Python worker:\nTraceback ...\n"
        "ModuleNotFoundError: No module named 'xor_ack_dynamodb'\n"
    )
    said = incurable(job, ["-"] * 3, 0, where)
    assert said is not None and "\n" not in said
    assert "xor_ack_dynamodb" in said and "the workers" in said and "pip install" in said
    started = 'java.io.IOException: Cannot run program "python9": error=2, No such file'
    assert "'python9'" in (incurable(started, ["-"], 0, where) or "")
    nones = [bad_output(k, "the function returned NoneType, not a table") for k in KEYS]
    assert "returned NoneType" in (incurable(None, nones, 0, where) or "")
    missing = [raised(k, ModuleNotFoundError("No module named 'lxml'")) for k in KEYS]
    assert "install lxml" in (incurable(None, missing, 0, where) or "")
    # Not incurable: one input acked, a mix of errors, or a job that failed otherwise.
    assert incurable(None, nones, 1, where) is None
    assert incurable(None, [nones[0], raised("k", ValueError("v"))], 0, where) is None
    assert incurable("Python worker exited unexpectedly (crashed)", ["-"], 0, where) is None
    denied = 'java.io.IOException: Cannot run program "/opt/py": error=13, Permission denied'
    assert "'/opt/py'" in (incurable(denied, ["-"], 0, where) or "")
    # a function whose module makes a session when imported: replayed max_attempts times
    on_driver = (
        "pyspark.errors.exceptions.base.PySparkRuntimeError: [CONTEXT_ONLY_VALID_ON_DRIVER] It"
        " appears that you are attempting to reference SparkContext from a broadcast ..."
    )
    assert "__main__" in (incurable(on_driver, ["-"], 0, where) or "")


@pytest.mark.parametrize(
    ("code", "stops"),
    [
        ("AccessDeniedException", True),
        ("UnrecognizedClientException", True),
        ("ResourceNotFoundException", True),
        ("ProvisionedThroughputExceededException", False),
        ("ThrottlingException", False),
        ("InternalServerError", False),
    ],
)
def test_dynamodb_refusing_the_tasks_for_good_stops_the_run_and_a_throttle_does_not(
    code: str, stops: bool
) -> None:
    """Every task's stamps refused by IAM (the executors' role lacks the table's policy) or
    sent where the table is not: each round failed every input the same way, and every
    replay was burnt before the inputs failed.  A throttle or a 5xx still replays."""
    job = (
        "Job aborted due to stage failure: Task 0 in stage 3.0 failed 4 times, most recent "
        "failure: org.apache.spark.api.python.PythonException: Traceback ...\n"
        f"botocore.exceptions.ClientError: An error occurred ({code}) when calling the "
        "BatchExecuteStatement operation: User: arn:aws:sts::1:assumed-role/executor is not "
        "authorized to perform: dynamodb:PartiQLUpdate\n\tat org.apache.spark..."
    )
    said = incurable(job, ["spark job failed: x"] * 2, 0, "the workers")
    if not stops:
        assert said is None
        return
    assert said is not None and "\n" not in said
    assert said.startswith(f"DynamoDB refuses the tasks' requests on the workers ({code} on ")
    assert "BatchExecuteStatement" in said and "infra/table.yaml" in said


@pytest.mark.parametrize("errno", ["error=12, Cannot allocate memory", "error=11, Try again"])
def test_a_python_worker_that_could_not_be_forked_for_a_moment_is_replayed(errno: str) -> None:
    """A fork that failed on a busy executor (no memory, too many processes) heals: it was
    taken for a missing interpreter, the run stopped, and it said to set PYSPARK_PYTHON."""
    job = (
        "Job aborted due to stage failure: Task 0 in stage 3.0 failed 4 times, most recent "
        f'failure: java.io.IOException: Cannot run program "/usr/bin/python3": {errno}\n'
        "\tat java.lang.ProcessBuilder.start"
    )
    assert incurable(job, ["spark job failed: x", "spark job failed: x"], 0, "the workers") is None


def test_the_connect_file_helper_jar_is_built_from_its_source() -> None:
    """``make spark-jar`` writes the source's SHA-256 into the jar's manifest."""
    with zipfile.ZipFile(JAR) as jar:
        manifest = jar.read("META-INF/MANIFEST.MF").decode("ascii").replace("\r\n ", "")
        assert "org/xorack/spark/XorAckFiles.class" in jar.namelist()
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    assert f"X-Source-SHA256: {digest}" in manifest, "run make spark-jar: the jar is stale"


def test_task_of_is_where_repartition_puts_each_input(local_spark: Any) -> None:
    from pyspark.sql import functions as F

    ids = [*range(50), 2**31 - 1, 123456789]
    frame = local_spark.createDataFrame([(i,) for i in ids], f"{ID} int").repartition(16, ID)
    placed = frame.select(ID, F.spark_partition_id().alias("task")).collect()
    assert task_of(ids, 16) == {r[ID]: r["task"] for r in placed}


@pytest.mark.parametrize("isolated", [False, True], ids=["in the task", "isolated"])
def test_a_table_with_columns_the_schema_does_not_declare_is_a_bad_output(isolated: bool) -> None:
    """Extra columns were dropped without a word (Spark's applyInPandas refuses them too:
    a column the schema lacks is most often a misnamed one whose values would be lost)."""
    from xor_ack_dynamodb.spark.sandbox import user_rows

    def extra(key: str, rows: Any) -> Any:
        return pa.table({"word": ["x"], "n": [1], "count": [1]})

    def reordered(key: str, rows: Any) -> Any:  # the declared columns, in another order
        return pa.table({"n": [1], "word": ["x"]})

    got = user_rows(extra, "file:/e", None, SCHEMA, isolated=isolated)
    assert got.table is None and got.failure == (
        "bad output: the function returned the column 'count', which the schema does not "
        "declare (word: string, n: int64): drop it, or declare it (input file:/e)"
    )
    fine = user_rows(reordered, "file:/e", None, SCHEMA, isolated=isolated)
    assert fine.failure is None and fine.table.column_names == ["word", "n"]


@pytest.mark.parametrize("isolated", [False, True], ids=["in the task", "isolated"])
def test_a_null_in_a_not_null_column_is_a_bad_output_of_that_input(isolated: bool) -> None:
    """pyarrow refuses it with a plain ValueError, which escaped the sandbox: the task
    failed, and every input in it failed with it, round after round."""
    from xor_ack_dynamodb.spark.sandbox import user_rows

    strict = pa.schema([pa.field("word", pa.string()), pa.field("n", pa.int32(), False)])

    def null_count(key: str, rows: Any) -> Any:
        return pa.table({"word": ["x"], "n": pa.array([None], pa.int32())})

    got = user_rows(null_count, "file:/e", None, strict, isolated=isolated)
    assert got.table is None and got.failure is not None
    assert got.failure.startswith("bad output: the function returned columns ['word', 'n']")
    assert "non-nullable" in got.failure and got.failure.endswith("(input file:/e)")
