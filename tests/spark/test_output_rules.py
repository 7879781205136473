"""A run never replaces good output with a worse one: a test per rule (classic ``local[2]``).

- every input acked: the output is replaced (overwrite), with ``_SUCCESS`` and a
  manifest saying ``"complete": true``;
- an input failed: the previous output stays byte-identical, unless
  ``Sink(partial=True)``, which replaces it without ``_SUCCESS`` (``"complete": false``);
- the run raised (a failing ``finish``, a function that returns no table for any
  input, workers whose Python lacks the library): byte-identical;
- a table: appended to only when every input acked (or ``partial=True``); a second
  run of the failed inputs adds them, and nothing is there twice.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark import cloudpickle

from xor_ack_dynamodb.spark import (
    Incurable,
    InputEmpty,
    InputRejected,
    OutputDisplaced,
    OutputNotOurs,
    OutputWriteFailed,
    Sink,
    TrackerConfig,
    track,
)
from xor_ack_dynamodb.spark.files import Files
from xor_ack_dynamodb.spark.paths import local_path

from .jobs.broken_workers import KEYS
from .servers import ROOT, server_env

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]
SCHEMA = "key string, j long"


def good(key: str, rows: Any) -> Any:
    import pyarrow as pa

    return pa.table({"key": [key], "j": [int(key[3:])]})


# The workers cannot import this test module (pytest names it from the tests folder):
# its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def rejecting(*bad: str) -> Any:
    def process(key: str, rows: Any) -> Any:
        if key in bad:
            raise InputRejected(f"cannot read {key}")
        return good(key, rows)

    return process


def nothing(key: str, rows: Any) -> Any:
    return None


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too) and its bytes, and what is beside it."""
    found = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    found["<beside>"] = "\n".join(sorted(p.name for p in folder.parent.iterdir())).encode()
    return found


def renames_through(monkeypatch: pytest.MonkeyPatch, hook: Any) -> None:
    """Every rename of the run's files goes through ``hook(rename, source, target)``."""
    real = Files.rename

    def rename(self: Files, source: str, target: str) -> None:
        hook(lambda s, t: real(self, s, t), source, target)

    monkeypatch.setattr(Files, "rename", rename)


def keys_in(out: Path) -> list[str]:
    return sorted(pq.read_table(out, columns=["key"]).column("key").to_pylist())


def manifest(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "_XOR_ACK_MANIFEST.json").read_text())
    return data


def test_a_folder_is_replaced_only_by_a_complete_output_unless_partial_is_asked(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run = {"keys": KEYS, "tracker": tracker}
    first = track(local_spark, good, SCHEMA, Sink(str(out)), **run)
    assert first.ok and first.output_state == "complete"
    assert (out / "_SUCCESS").exists() and manifest(out)["complete"] is True
    assert manifest(out)["package"] == "xor-ack-dynamodb" and "tool" not in manifest(out)
    before = snapshot(out)

    failed = track(local_spark, rejecting("in-2"), SCHEMA, Sink(str(out), overwrite=True), **run)
    assert failed.acked == 5 and failed.output_state == "kept"
    assert snapshot(out) == before

    def broken(rows: Any) -> Any:
        raise RuntimeError("finish failed")

    with pytest.raises(Exception, match="finish failed"):
        track(local_spark, good, SCHEMA, Sink(str(out), overwrite=True, finish=broken), **run)
    assert snapshot(out) == before

    def on_the_data(rows: Any) -> Any:  # planned, and fine on no rows: fails as it writes
        from pyspark.sql import functions as F

        return rows.withColumn("ratio", F.col("j") / (F.col("j") - F.col("j")))

    local_spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        with pytest.raises(OutputWriteFailed, match="DIVIDE_BY_ZERO") as unwritten:
            sink = Sink(str(out), overwrite=True, finish=on_the_data)
            track(local_spark, good, SCHEMA, sink, **run)
    finally:
        local_spark.conf.unset("spark.sql.ansi.enabled")
    assert unwritten.value.report.acked == len(KEYS)  # type: ignore[attr-defined]
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging folder left

    with pytest.raises(Incurable, match="returned NoneType") as stopped:
        track(local_spark, nothing, SCHEMA, Sink(str(out), overwrite=True), **run)
    assert len(stopped.value.report.rounds) == 1  # type: ignore[attr-defined]
    assert snapshot(out) == before

    # no input (an upstream that produced nothing): the output of 6 inputs is not emptied
    empty_source = local_spark.createDataFrame([], "key string")
    for no_input in ({"keys": []}, {"source": empty_source, "key": "key"}):
        with pytest.raises(InputEmpty, match=r"of 6 inputs\).* kept as it was"):
            sink = Sink(str(out), overwrite=True)
            track(local_spark, good, SCHEMA, sink, tracker=tracker, **no_input)
        assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    # ... while an output of no input may be replaced by another (a stream's batch again)
    empty = tmp_path / "empty"
    for _ in range(2):
        sink = Sink(str(empty), overwrite=True)
        again = track(local_spark, good, SCHEMA, sink, keys=[], tracker=tracker)
        assert again.output_state == "complete" and manifest(empty)["inputs"] == 0
    shutil.rmtree(empty)

    partial = Sink(str(out), overwrite=True, partial=True)
    asked = track(local_spark, rejecting("in-2"), SCHEMA, partial, **run)
    assert asked.output_state == "partial"
    assert keys_in(out) == [k for k in KEYS if k != "in-2"]
    assert not (out / "_SUCCESS").exists()
    assert manifest(out)["complete"] is False and manifest(out)["acked"] == 5


def test_an_output_folder_named_with_glob_characters_is_read_as_it_is(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """An output folder named ``counts[2024]``: the run's staged rows beside it were read
    back by Spark as a glob, which matched nothing, and the run ended in a bare
    ``AnalysisException`` (PATH_NOT_FOUND) after every chain was acked.  (The word
    count's ``--work-dir``: tests/pipeline/test_options.py.)"""
    out = tmp_path / "counts[2024]"
    report = track(local_spark, good, SCHEMA, Sink(str(out)), keys=KEYS, tracker=tracker)
    assert report.ok and report.output_state == "complete"
    keys = pq.read_table(out, columns=["key"]).column("key").to_pylist()
    assert sorted(keys) == sorted(KEYS)


def test_overwrite_keeps_an_output_with_a_file_put_inside_one_of_its_partition_folders(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run = {"keys": KEYS, "tracker": tracker}
    first = track(local_spark, good, SCHEMA, Sink(str(out), partition_by=("j",)), **run)
    assert first.ok
    again = Sink(str(out), partition_by=("j",), overwrite=True)
    assert track(local_spark, good, SCHEMA, again, **run).output_state == "complete"
    (out / "j=1" / "my-notes.txt").write_text("the user's own file")
    before = snapshot(out)
    with pytest.raises(OutputNotOurs, match=r"j=1/my-notes\.txt"):
        track(local_spark, good, SCHEMA, again, **run)
    assert snapshot(out) == before


def test_an_output_path_taken_during_the_rename_keeps_the_former_output_where_it_says(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Something puts a folder at the output's path between the two renames: neither the
    new output nor the former one can go there, and the former one, kept in the staging
    folder, is not removed with it (``OutputDisplaced`` says where it is)."""
    out = tmp_path / "out"
    run = {"keys": KEYS, "tracker": tracker}
    assert track(local_spark, good, SCHEMA, Sink(str(out)), **run).ok
    before = snapshot(out)

    def racing(rename: Any, source: str, target: str) -> None:
        if source.endswith("/output"):  # the new output's rename: someone is first
            out.mkdir()
            (out / "theirs.txt").write_text("another writer's")
        rename(source, target)

    renames_through(monkeypatch, racing)
    with pytest.raises(OutputDisplaced, match="move it back") as displaced:
        track(local_spark, good, SCHEMA, Sink(str(out), overwrite=True), **run)
    previous = Path(local_path(displaced.value.previous))
    assert previous.is_dir() and snapshot(previous) == {
        **before,
        "<beside>": snapshot(previous)["<beside>"],
    }
    assert (out / "theirs.txt").read_text() == "another writer's"


@pytest.mark.parametrize("rename", ["previous", "output"])
def test_an_interruption_as_a_commit_rename_returns_keeps_the_former_output(
    local_spark: Any,
    tracker: TrackerConfig,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    rename: str,
) -> None:
    """Ctrl-C (raised by the command's handler as the rename's call returns) just after
    the former output was moved aside: it was outside the commit's ``try``, so the run's
    cleanup deleted it with the staging folder.  Now it goes back to the output's path;
    once the new output is in place, it stays in ``previous`` and the next run says so."""
    base = tmp_path / "w"
    out = base / "out"
    run = {"keys": KEYS, "tracker": tracker}
    assert track(local_spark, good, SCHEMA, Sink(str(out)), **run).ok
    before = snapshot(out)

    def interrupted(real: Any, source: str, target: str) -> None:
        real(source, target)
        if target.endswith("/previous" if rename == "previous" else "/out"):
            raise KeyboardInterrupt

    renames_through(monkeypatch, interrupted)
    with pytest.raises(KeyboardInterrupt):
        track(local_spark, good, SCHEMA, Sink(str(out), overwrite=True), **run)
    monkeypatch.undo()
    if rename == "previous":  # back in place, byte for byte, and nothing left beside it
        assert snapshot(out) == before and [p.name for p in base.iterdir()] == ["out"]
    else:  # the new output landed: the former one is kept, and named by the next run
        with pytest.raises(OutputDisplaced, match="which now holds its output") as kept:
            track(local_spark, good, SCHEMA, Sink(str(out), overwrite=True), **run)
        previous = Path(local_path(kept.value.previous))
        assert snapshot(previous) == {**before, "<beside>": snapshot(previous)["<beside>"]}


def test_a_table_gets_each_input_once_and_only_from_a_complete_run_unless_partial(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    db = f"rules_{uuid.uuid4().hex[:8]}"
    local_spark.sql(f"CREATE DATABASE {db} LOCATION '{tmp_path / 'db'}'")
    table = f"{db}.rows"
    run = {"keys": KEYS, "tracker": tracker}

    def rows() -> list[tuple[str, int]]:
        return sorted((r["key"], r["j"]) for r in local_spark.table(table).collect())

    expected = sorted((k, int(k[3:])) for k in KEYS)
    kept = track(local_spark, rejecting("in-1"), SCHEMA, Sink(table=table), **run)
    assert kept.output_state == "kept" and not local_spark.catalog.tableExists(table)
    partial = track(
        local_spark, rejecting("in-1", "in-4"), SCHEMA, Sink(table=table, partial=True), **run
    )
    assert partial.output_state == "partial"
    assert rows() == [r for r in expected if r[0] not in ("in-1", "in-4")]
    again = track(
        local_spark,
        rejecting("in-4"),
        SCHEMA,
        Sink(table=table),
        keys=["in-1", "in-4"],
        tracker=tracker,
    )
    assert again.output_state == "kept" and len(rows()) == 4  # in-4 failed: nothing added
    rest = track(
        local_spark, good, SCHEMA, Sink(table=table), keys=["in-1", "in-4"], tracker=tracker
    )
    assert rest.ok and rows() == expected  # every input once
    replaced = track(local_spark, good, SCHEMA, Sink(table=table, overwrite=True), **run)
    assert replaced.ok and rows() == expected
    with pytest.raises(InputEmpty, match=re.escape(f"the rows of table {table} with an empty")):
        sink = Sink(table=table, overwrite=True)
        track(local_spark, good, SCHEMA, sink, keys=[], tracker=tracker)
    assert rows() == expected  # an overwrite with no input did not empty the table
    assert not [p for p in (tmp_path / "db").iterdir() if p.name.startswith(".xor-ack-")]


def test_workers_without_the_library_stop_the_run_in_one_round_and_keep_the_output(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """The issue's case: a good run, then the same job with overwrite and workers whose
    Python lacks the library (PYSPARK_PYTHON: the same Python, without site's .pth files,
    so the editable install of this checkout is not found), then with a PYSPARK_PYTHON
    that does not exist."""
    out = tmp_path / "o" / "out"
    assert track(local_spark, good, SCHEMA, Sink(str(out)), keys=KEYS, tracker=tracker).ok
    before = snapshot(out)
    python = tmp_path / "python-without-the-library"
    site = next(p for p in sys.path if p.endswith("site-packages"))
    python.write_text(f'#!/bin/sh\nPYTHONPATH="$PYTHONPATH:{site}" exec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    env = server_env(tmp_path)
    env.pop("PYTHONPATH")  # the driver finds the library through its site-packages
    env.update(PYSPARK_PYTHON=str(python), AWS_REGION="us-east-1")
    argv = [sys.executable, str(ROOT / "tests" / "spark" / "jobs" / "broken_workers.py"), str(out)]
    argv += ["--table", tracker.table, "--endpoint", str(tracker.endpoint_url)]
    run = subprocess.run(
        argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=200, check=False
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    said = json.loads(run.stdout[run.stdout.index("{") :])
    for line in (said["check"], said["track"]):
        assert "\n" not in line and "xor_ack_dynamodb" in line and "pip install" in line
    assert said["track_rounds"] == 1
    assert "cannot start Python '/nonexistent/python9'" in said["no_python"]
    assert said["no_python_rounds"] == 1
    assert snapshot(out) == before


@pytest.mark.parametrize(
    ("run_id", "second_rename"), [(None, False), ("stopped", False), (None, True)]
)
def test_a_former_output_left_by_a_run_stopped_mid_commit_is_named_and_kept(
    local_spark: Any,
    tracker: TrackerConfig,
    tmp_path: Path,
    run_id: str | None,
    second_rename: bool,
) -> None:
    """A run killed between the commit's two renames (or after them, before its cleanup)
    leaves the former output in its staging folder's ``previous``.  The next run refuses
    before it writes anything, naming that folder, whatever its ``run_id``: under the same
    one, its cleanup would once have removed the former output with the staging folder."""
    base = tmp_path / "w"
    out = base / "out"
    run = {"keys": KEYS, "tracker": tracker}
    assert track(local_spark, good, SCHEMA, Sink(str(out)), **run).ok
    staging = base / ".out.xor-ack-stopped"
    staging.mkdir()
    out.rename(staging / "previous")  # the first rename done, and the process gone
    if second_rename:
        assert track(local_spark, good, SCHEMA, Sink(str(base / "new")), **run).ok
        (base / "new").rename(out)
    before = snapshot(base)
    now = "holds its output" if second_rename else "is missing"
    with pytest.raises(OutputDisplaced, match=f"run_id stopped.*which now {now}.*Move it") as no:
        track(local_spark, good, SCHEMA, Sink(str(out), overwrite=True), run_id=run_id, **run)
    assert Path(local_path(no.value.previous)) == staging / "previous"
    assert snapshot(base) == before
    if second_rename:
        shutil.rmtree(staging)  # not needed any more: the user says so
    else:
        (staging / "previous").rename(out)  # moved back, as the message says
        staging.rmdir()
    assert track(local_spark, good, SCHEMA, Sink(str(out), overwrite=True), **run).ok
    assert [p.name for p in base.iterdir()] == ["out"]
