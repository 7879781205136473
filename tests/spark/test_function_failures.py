"""One bad input failing alone, and errors that cannot heal stopping at once, for the
ways a function fails that the other tests do not take: a message too long for a chain,
``sys.exit()``, an exception that cannot say itself, an import of the wrong version, an
executor without a region, a task error of the library's own, ``max_errors=1``.

Each test asserts what a user of ``track()`` would expect, per ``docs/spark.md``
("A bad input fails alone", "Errors that no replay cures stop the run after one
round") and the ``sandbox`` module's promise: ``user_rows`` returns the function's
rows or why not, "never an exception of the function's".
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark import cloudpickle

from xor_ack_dynamodb.spark import Incurable, Sink, TrackerConfig, UntrackedRunFailed, track
from xor_ack_dynamodb.spark.isolation import incurable, raised
from xor_ack_dynamodb.spark.sandbox import user_rows

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]

# The workers cannot import this test module: its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SCHEMA = "key string, j long"
ARROW = pa.schema([("key", pa.string()), ("j", pa.int64())])


def row(key: str) -> Any:
    import pyarrow as pa

    return pa.table({"key": [key], "j": [len(key)]})


# -- an incurable round with max_errors=1 ------------------------------------------


def imports_a_missing_module(key: str, rows: Any) -> Any:
    import xor_ack_review_module_nobody_installed  # noqa: F401  (missing on the workers)

    return row(key)


def test_a_missing_module_in_every_input_stops_the_run_as_incurable_with_max_errors_1(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """docs/spark.md: a round that fails every input with a module the workers lack stops
    the run with ``Incurable``; nothing acked: the output is not touched.  With
    ``max_errors=1`` (the docs' own example) each input is ``spent`` in that round, the
    ``message`` branch of ``job._round`` is never reached, ``_stopped`` stays None: the
    run goes on to its commit and writes an empty "partial" output instead."""
    out = tmp_path / "out"
    with pytest.raises(Incurable, match="xor_ack_review_module_nobody_installed"):
        track(
            local_spark,
            imports_a_missing_module,
            SCHEMA,
            Sink(str(out)),
            keys=["a", "b", "c"],
            tracker=tracker,
            max_errors=1,
            input_tasks=2,
        )
    assert not out.exists(), "Incurable with nothing acked: the output is not touched"


# -- InputRejected with a long message fails the whole job, every round --------------


def rejects_b_with_its_content(key: str, rows: Any) -> Any:
    from xor_ack_dynamodb.spark import InputRejected

    if key == "b":  # e.g. raise InputRejected(f"not JSON: {text!r}") over a 450 KB file
        raise InputRejected("not JSON: " + "x" * 450_000)
    return row(key)


def test_an_input_rejected_with_a_long_message_fails_alone(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """``InputRejected``'s message goes as it is to ``fail(tag, reason=...)``
    (``stages.chain_reason`` shortens nothing, unlike ``isolation.raised``); past one
    DynamoDB item, ``fail`` raises ``InvalidReason``, which is not suppressed in
    ``stages._produce_input``: the task fails, the job fails, every input of the round
    is lost, and the same happens in every round (the rejected input runs again)."""
    out = tmp_path / "out"
    report = track(
        local_spark,
        rejects_b_with_its_content,
        SCHEMA,
        Sink(str(out), partial=True),
        keys=["a", "b", "c"],
        tracker=tracker,
        max_attempts=2,
        input_tasks=1,
    )
    status = {i.key: i for i in report.inputs}
    assert report.rounds[0].job_error is None, report.rounds[0].job_error
    assert status["a"].status == "acked" and status["c"].status == "acked"
    assert status["b"].status == "failed" and status["b"].attempts == 1
    assert status["b"].history[0].startswith("not JSON: xxx")


# -- untracked: no chain to fail an input alone ---------------------------------------


def raises_on_b(key: str, rows: Any) -> Any:
    if key == "b":
        raise ValueError("b cannot be read")
    return row(key)


def rejects_b(key: str, rows: Any) -> Any:
    from xor_ack_dynamodb.spark import InputRejected

    if key == "b":
        raise InputRejected("not JSON")
    return row(key)


@pytest.mark.parametrize("process", [raises_on_b, rejects_b], ids=["raised", "rejected"])
def test_an_untracked_run_stops_at_an_input_that_fails_with_an_error_naming_it(
    local_spark: Any, tmp_path: Path, process: Any
) -> None:
    """``tracking=False`` has no chain to fail one input alone: the run stops with
    ``UntrackedRunFailed`` naming the input and what its function did, and writes
    nothing.  Before, Spark's own ``PythonException`` reached the caller (a worker's
    traceback), and a rejected input was reported ``counted`` with none of its rows."""
    out = tmp_path / "out"
    with pytest.raises(UntrackedRunFailed) as caught:
        track(
            local_spark,
            process,
            SCHEMA,
            Sink(str(out)),
            keys=["a", "b", "c"],
            tracking=False,
            input_tasks=1,
        )
    message = str(caught.value)
    assert "(input b)" in message, message
    assert ("ValueError: b cannot be read" in message) or ("not JSON" in message), message
    assert "Traceback" not in message and "nothing was written" in message
    assert caught.value.__cause__ is not None
    assert not out.exists()


def sleeps_on_b(key: str, rows: Any) -> Any:
    import time

    if key == "b":
        time.sleep(20)
    return row(key)


def ends_its_worker_on_b(key: str, rows: Any) -> Any:
    import os

    if key == "b":
        os._exit(3)
    return row(key)


@pytest.mark.parametrize(
    ("process", "options", "said"),
    [
        (sleeps_on_b, {"round_timeout": 2}, r"ran past round_timeout \(2 s\): give more"),
        (ends_its_worker_on_b, {}, r"a Python worker died \(task"),
    ],
    ids=["past round_timeout", "a worker that died"],
)
def test_an_untracked_run_stopped_by_its_job_says_so_and_writes_nothing(
    local_spark: Any, tmp_path: Path, process: Any, options: dict[str, Any], said: str
) -> None:
    """Untracked, no replay follows a round's failed job: past ``round_timeout`` the run
    raised the tracked rounds' ``RoundTimedOut`` ("timeout: round not finished within 2
    s", an input's history line, saying neither that the run stopped nor what to do); a
    worker that died is said by its task (docs/spark.md: run tracked to find its input)."""
    out = tmp_path / "out"
    with pytest.raises(UntrackedRunFailed, match=said) as caught:
        track(
            local_spark,
            process,
            SCHEMA,
            Sink(str(out)),
            keys=["a", "b", "c"],
            tracking=False,
            input_tasks=1,
            **options,
        )
    assert "nothing was written to the output" in str(caught.value)
    assert not out.exists()


# -- SystemExit from the function escapes the sandbox (in the task, not isolated) ----


def exits_on_b(key: str, rows: Any) -> Any:
    import sys

    if key == "b":  # argparse's parser.error(), click, a library calling sys.exit()
        sys.exit("bad input b")
    return row(key)


def test_a_function_that_calls_sys_exit_fails_its_input_alone_in_the_same_round(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """``sandbox.user_rows`` catches ``Exception`` only in the task (its isolated child
    catches ``BaseException``): ``SystemExit`` escapes, fails the task (Spark retries it
    8 times) and the round's job, and every other input is replayed in round 2."""
    out = tmp_path / "out"
    report = track(
        local_spark,
        exits_on_b,
        SCHEMA,
        Sink(str(out), partial=True),
        keys=["a", "b", "c", "d"],
        tracker=tracker,
        max_errors=1,
        input_tasks=1,
    )
    first = report.rounds[0]
    assert first.job_error is None, first.job_error
    assert first.acked == 3 and len(report.rounds) == 1
    (failed,) = report.failed
    assert failed.history == ["raised: SystemExit: bad input b (input b)"]


# -- an exception whose str() fails escapes the sandbox --------------------------------


class ParseError(Exception):
    """A user's exception whose message is built in ``__str__`` from attributes its
    ``__init__`` forgot to set in one path."""

    def __str__(self) -> str:
        return f"line {self.line}: {self.msg}"  # type: ignore[attr-defined]


def raises_unprintable(key: str, rows: Any) -> Any:
    raise ParseError()


@pytest.mark.parametrize("isolated", [False, True], ids=["in the task", "isolated"])
def test_an_exception_whose_message_cannot_be_made_is_still_that_inputs_raised_failure(
    isolated: bool,
) -> None:
    """In the task: ``raised(key, exc)`` calls ``str(exc)`` inside the ``except`` block and
    its AttributeError escapes ``user_rows`` (the task, then the job, fails with every
    input of it).  Isolated: the child's ``f"...{exc}"`` raises, it exits 70 and the
    input is said to have ``crashed: the function ended its Python process (exit status
    70)``, which it did not."""
    try:
        got = user_rows(raises_unprintable, "k1", None, ARROW, isolated=isolated)
    except BaseException as exc:
        pytest.fail(f"user_rows let the function's failure escape: {exc!r}")
    assert got.table is None and got.failure is not None
    assert got.failure.startswith("raised: ParseError"), got.failure
    assert got.failure.endswith("(input k1)")


# -- an ImportError that is not "No module named" is not recognised as incurable ------


def test_every_input_failing_to_import_a_name_from_the_workers_module_is_incurable() -> None:
    """A worker's library of another version (``cannot import name 'X' from 'lib'``) fails
    every input the same way in every round, like a missing module; the job-level path
    already says so ("install matching versions", ``_IMPORT``), but ``incurable`` for
    the function's own errors knows ``No module named`` only: each input is replayed
    until ``max_errors``."""
    error = ImportError(
        "cannot import name 'parse_v2' from 'reviewlib' (/usr/lib/python3/reviewlib/__init__.py)"
    )
    outcomes = [raised(k, error) for k in ("a", "b", "c")]
    said = incurable(None, outcomes, 0, "the workers")
    assert said is not None and "reviewlib" in said


# -- a failed job's error whose class name does not end in Error is said as nothing ---


def cut_off_from_dynamodb(batches: Any) -> Any:
    from xor_ack_dynamodb.errors import UnsettledWrite

    for _ in batches:
        raise UnsettledWrite("run/k#1", 32)
    yield from ()


def test_a_round_failed_by_an_unsettled_write_names_it_in_the_report(local_spark: Any) -> None:
    """``jobs.first_line`` keeps the last line matching ``...(Error|Exception|Exit)``; the
    library's own task errors (``UnsettledWrite``, ``InterruptedWrite`` -- docs/spark.md: they
    "fail the task" -- ``InvalidReason``, ``CorruptItem``...) do not match, so every input's
    history and the round's ``job_error`` say only ``spark job failed: An exception was
    thrown from the Python worker:``, naming no cause."""
    from xor_ack_dynamodb.spark.jobs import first_line

    frame = local_spark.range(1).mapInArrow(cut_off_from_dynamodb, "id long")
    with pytest.raises(Exception) as failed:
        frame.collect()
    said = first_line(failed.value)
    assert "UnsettledWrite" in said, said


# -- executors with no region for DynamoDB: replayed max_attempts rounds -------------


def test_executors_without_a_region_for_dynamodb_stop_the_run_after_one_round() -> None:
    """``chains_config`` leaves ``region=None`` when the driver finds its region in its own
    ``~/.aws/config`` (not the session's conf or the environment); executors without one
    fail every task building their client (botocore's ``NoRegionError``), every round.
    docs/spark.md: DynamoDB refusing the tasks "for good (... the executors' credentials or
    region, not the driver's ...)" stops the run after one round; ``_setup_problem`` knows
    only DynamoDB's error codes, so this is replayed ``max_attempts`` times."""
    job = (
        "Job aborted due to stage failure: Task 0 in stage 3.0 failed 4 times, most recent "
        "failure: Lost task 0.3 in stage 3.0 (TID 12) (10.0.0.7 executor 1): "
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/botocore/regions.py", line 230, in '
        "_endpoint_for_partition\n"
        "    raise NoRegionError()\n"
        "botocore.exceptions.NoRegionError: You must specify a region.\n"
        "\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException"
    )
    outcomes = ["spark job failed: NoRegionError: You must specify a region."] * 3
    said = incurable(job, outcomes, 0, "the workers")
    assert said is not None and "region" in said
