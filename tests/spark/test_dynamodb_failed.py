"""DynamoDB that stops answering the driver mid-run: one typed error, nothing claimed done.

The chains go through a loopback proxy (``tests/core/lossy_proxy.py``) that, once a test
flips it, refuses every request with DynamoDB's throttling error; the driver's client
makes one attempt per request (``AWS_MAX_ATTEMPTS=1``), so it gives up at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from core.lossy_proxy import THROTTLE_CODES, LossyProxy

from xor_ack_dynamodb.spark import DynamoDBFailed, Sink, SparkTrackingError, track
from xor_ack_dynamodb.spark import job as job_module
from xor_ack_dynamodb.spark.chain_batches import RoundChains
from xor_ack_dynamodb.spark.job import TrackedJob
from xor_ack_dynamodb.spark.plan import file_tag
from xor_ack_dynamodb.spark.stream_marks import StreamMarks, batch_path
from xor_ack_dynamodb.spark.tracker import TrackerConfig
from xor_ack_dynamodb.spark.tracking import tracked_job

from .servers import free_port

KEYS = ["a", "b", "c"]


def one_row() -> Any:
    def row(key: str, rows: Any) -> Any:
        import pyarrow as pa

        return pa.table({"v": [len(key)]})

    return row


def b_fails_once(marker: str) -> Any:
    """One row per input; input ``b`` raises the first time (``marker``: it did)."""

    def row(key: str, rows: Any) -> Any:
        import os

        import pyarrow as pa

        if key == "b" and not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError("b fails its first attempt")
        return pa.table({"v": [len(key)]})

    return row


class Switch:
    """The proxy's rule: refuse every request once ``down`` is set."""

    def __init__(self) -> None:
        self.down = False

    def __call__(self, target: str, body: bytes) -> bool:
        return self.down


@pytest.fixture
def flaky(
    tracker: TrackerConfig, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TrackerConfig, Switch]]:
    """The tracker through the proxy, and the switch that makes DynamoDB stop answering."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # the driver's client gives up at once
    switch = Switch()
    assert tracker.endpoint_url is not None
    with LossyProxy(tracker.endpoint_url, throttle=switch) as proxy:
        yield replace(tracker, endpoint_url=proxy.endpoint_url), switch


def throttled(exc: BaseException | None) -> bool:
    return isinstance(exc, ClientError) and exc.response["Error"]["Code"] in THROTTLE_CODES


def test_dynamodb_that_stops_answering_at_the_commit_check_stops_the_run_with_one_typed_error(
    local_spark: Any,
    tmp_path: Path,
    tracker: TrackerConfig,
    flaky: tuple[TrackerConfig, Switch],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    via, switch = flaky
    check = job_module.committed_sums

    def stops_answering(*args: Any) -> dict[int, int]:
        switch.down = True  # the function ran and its rows are staged; DynamoDB goes quiet
        return check(*args)

    monkeypatch.setattr(job_module, "committed_sums", stops_answering)
    out, report_file = tmp_path / "out", tmp_path / "run.jsonl"
    run = {"keys": KEYS, "tracker": via, "report": report_file}
    with pytest.raises(SparkTrackingError) as stopped:
        track(local_spark, one_row(), "v long", Sink(str(out)), run_id="quiet", **run)
    error = stopped.value
    assert isinstance(error, DynamoDBFailed)
    assert error.phase == "commit check" and error.round == 1 and error.run_id == "quiet"
    assert throttled(error.__cause__)
    said = str(error)
    assert "during the commit check of round 1" in said
    assert "none of its inputs counts as done: the output was not touched" in said
    assert "3 of its chains could not be failed and may stay open" in said
    assert "Run the job again once DynamoDB answers" in said
    tags = [file_tag("quiet", key, 1) for key in KEYS]
    assert sorted(error.left_open) == sorted(tags)
    # No lie about completion: no output, no report, and no chain acked.
    assert not out.exists() and not report_file.exists()
    states = tracker.chains().get_many(tags)
    assert all(s is not None and s.live and not s.acked for s in states.values())
    # Once DynamoDB answers, running the job again replays every input.
    switch.down = False
    monkeypatch.setattr(job_module, "committed_sums", check)
    report = track(local_spark, one_row(), "v long", Sink(str(out)), run_id="again", **run)
    assert report.ok and report.acked == len(KEYS) and report_file.exists()


def test_dynamodb_that_stops_answering_when_a_round_creates_its_chains_claims_no_input_done(
    local_spark: Any,
    tmp_path: Path,
    tracker: TrackerConfig,
    flaky: tuple[TrackerConfig, Switch],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    via, switch = flaky
    created = RoundChains.created

    def stops_answering_in_round_2(chains: RoundChains, key: Any, tags: Any) -> Any:
        switch.down = key[1] == 2  # key: (page, round)
        return created(chains, key, tags)

    monkeypatch.setattr(RoundChains, "created", stops_answering_in_round_2)
    out, report_file = tmp_path / "out", tmp_path / "run.jsonl"
    with pytest.raises(DynamoDBFailed) as stopped:
        track(
            local_spark,
            b_fails_once(str(tmp_path / "b-failed")),
            "v long",
            Sink(str(out)),
            keys=KEYS,
            tracker=via,
            report=report_file,
            run_id="replay",
        )
    error = stopped.value
    assert error.phase == "create" and error.round == 2 and throttled(error.__cause__)
    assert "during the creation of round 2's chains" in str(error)
    assert "the 2 inputs acked before are not in the output either" in str(error)
    assert error.left_open == (file_tag("replay", "b", 2),)
    assert not out.exists() and not report_file.exists()
    states = tracker.chains().get_many(
        [file_tag("replay", "a", 1), file_tag("replay", "b", 1), file_tag("replay", "b", 2)]
    )
    a1, b1, b2 = states.values()
    assert a1 is not None and a1.acked  # its rows were staged and checked, not committed
    assert b1 is not None and b1.failed and b2 is None  # the replay's chain never made


def test_an_unreachable_dynamodb_stops_the_run_at_its_first_chains_with_one_typed_error(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    nowhere = replace(tracker, endpoint_url=f"http://127.0.0.1:{free_port()}")
    out = tmp_path / "out"
    with pytest.raises(DynamoDBFailed) as stopped:
        track(local_spark, one_row(), "v long", Sink(str(out)), keys=KEYS, tracker=nowhere)
    error = stopped.value
    assert error.phase == "create" and error.round == 1
    assert isinstance(error.__cause__, EndpointConnectionError)
    assert "EndpointConnectionError: Could not connect" in str(error)
    assert "check the chains' endpoint_url and region" in str(error)  # it said: wait
    assert not out.exists()


def slow_rows(started: str) -> Any:
    """One row per input, a second each; the first call marks ``started``."""

    def row(key: str, rows: Any) -> Any:
        import time

        import pyarrow as pa

        open(started, "a").close()
        time.sleep(1)
        return pa.table({"v": [len(key)]})

    return row


def test_dynamodb_gone_while_a_round_runs_stops_the_run_soon_and_asks_no_more(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB gone in the middle of a round's job (DynamoDB Local stopped): each task's
    stamp retried about a minute, the task failed and was run again, the judge and the
    failing of each chain retried a minute more: ``DynamoDBFailed`` came after two minutes
    on ``local[2]``, fourteen with task retries.  The driver looks at the endpoint while the
    job runs (here every 0.5 s, stopping after 2 s of refused connections; 3 s and 30 s by
    default), cancels the job, and leaves the chains open without a request each."""
    from xor_ack_dynamodb.spark import endpoint_watch, jobs

    monkeypatch.setattr(endpoint_watch, "UNREACHABLE_AFTER", 2.0)
    monkeypatch.setattr(jobs, "WATCH_EVERY", 0.5)
    started = tmp_path / "started"
    out = tmp_path / "out"
    keys = [f"k{i}" for i in range(12)]
    assert tracker.endpoint_url is not None
    with LossyProxy(tracker.endpoint_url) as proxy:
        cut: list[float] = []

        def cut_once_started() -> None:
            while not started.exists():
                time.sleep(0.05)
            proxy.cut()
            cut.append(time.monotonic())

        threading.Thread(target=cut_once_started, daemon=True).start()
        through = replace(tracker, endpoint_url=proxy.endpoint_url)
        with pytest.raises(DynamoDBFailed) as stopped:
            track(
                local_spark, slow_rows(str(started)), "v long", Sink(str(out)), keys=keys,
                tracker=through, input_tasks=2, run_id="gone",
            )  # fmt: skip
        took = time.monotonic() - cut[0]
    error = stopped.value
    assert error.phase == "produce" and error.round == 1, str(error)
    assert isinstance(error.__cause__, EndpointConnectionError)
    assert took < 30, f"told {took:.0f} s after DynamoDB went"  # a minute and more before
    assert sorted(error.left_open) == sorted(file_tag("gone", key, 1) for key in keys)
    assert not out.exists()
    states = tracker.chains().get_many(list(error.left_open))
    assert all(s is not None and s.live for s in states.values())  # none failed one by one


def test_dynamodb_that_stops_answering_around_a_stream_batchs_marks_says_where_the_output_is(
    local_spark: Any,
    tmp_path: Path,
    flaky: tuple[TrackerConfig, Switch],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tracked stream's batch keeps a commit mark per input (``stream_marks``): DynamoDB
    failing those requests stops the batch with ``DynamoDBFailed`` naming the step, never
    botocore's error; after the rename it says the output is in place, and the next run
    reads the marks left live as committed."""
    via, switch = flaky
    out = tmp_path / "out"

    def b_rejected(key: str, rows: Any) -> Any:
        import pyarrow as pa

        from xor_ack_dynamodb.spark import InputRejected

        if key == "b":
            raise InputRejected("not b")  # a failed input: its mark is failed before commit
        return pa.table({"v": [len(key)]})

    def batch(n: int, run_id: str) -> tuple[TrackedJob, Path]:
        marks = StreamMarks(local_spark, via, "stream-q", str(out), run_id)
        folder = Path(batch_path(str(out), n, run_id))
        job = tracked_job(
            local_spark,
            b_rejected,
            "v long",
            Sink(str(folder)),
            keys=KEYS,
            tracker=via,
            run_id=run_id,
            marks=marks,
        )
        return job, folder

    switch.down = True  # from the start: the marks are read before anything else
    job, folder = batch(0, "r0")
    with pytest.raises(DynamoDBFailed) as stopped:
        job.run()
    assert stopped.value.phase == "marks" and stopped.value.round is None
    assert throttled(stopped.value.__cause__) and not folder.exists()
    assert "during the reading and marking of the stream's inputs" in str(stopped.value)
    switch.down = False
    for n, step in enumerate(("before_commit", "after_commit"), start=1):
        original = getattr(StreamMarks, step)

        def quiet(marks: StreamMarks, report: Any, original: Any = original) -> None:
            switch.down = True
            original(marks, report)

        monkeypatch.setattr(StreamMarks, step, quiet)
        job, folder = batch(n, f"r{n}")
        with pytest.raises(DynamoDBFailed) as stopped:
            job.run()
        switch.down = False
        monkeypatch.setattr(StreamMarks, step, original)
        error = stopped.value
        assert error.phase == f"marks {step.split('_')[0]} commit" and throttled(error.__cause__)
        if step == "before_commit":
            assert not folder.exists()
            assert "the output was not touched" in str(error)
        else:
            assert folder.exists()  # in place: said, and the next run sees it committed
            assert 'Run "r2" put its output in place' in str(error)
            assert "no input is processed twice" in str(error)
            after = StreamMarks(local_spark, via, "stream-q", str(out), "r3")
            assert list(after.unmarked(iter(KEYS))) == ["b"]  # a and c committed by r2
            assert after.skipped == 2


def test_a_server_that_cannot_run_the_chains_statements_is_named_with_the_setting_it_needs(
    local_spark: Any,
    tmp_path: Path,
    moto_endpoint: str,
    moto_table: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """moto's server answers the chains' PartiQL statements with an HTML page (HTTP 500):
    the run stopped, after botocore's retries (40 s), saying `<!doctype html>` and not a
    word of the setting that works there."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    moto = TrackerConfig(
        table=moto_table.name,
        endpoint_url=moto_endpoint,
        region="us-east-1",
        local_credentials=True,
    )
    out = tmp_path / "out"
    with pytest.raises(DynamoDBFailed) as stopped:
        track(local_spark, one_row(), "v long", Sink(str(out)), keys=KEYS, tracker=moto)
    error = stopped.value
    assert error.phase == "create" and isinstance(error.__cause__, ClientError)
    assert "as moto's server does, which cannot run them; with such a server, pass " in str(error)
    assert "tracker=TrackerConfig(..., partiql=False)" in str(error)
    assert not out.exists()
    report = track(
        local_spark,
        one_row(),
        "v long",
        Sink(str(out)),
        keys=KEYS,
        tracker=replace(moto, partiql=False),
    )
    assert report.acked == len(KEYS)
