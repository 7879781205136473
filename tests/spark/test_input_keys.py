"""The input keys of ``track()`` as a data engineer's look: a Column passed for the key's
name, an S3 path over 1,024 bytes, a key column named as the library's own."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from xor_ack_dynamodb.spark import InvalidArgument, ReservedColumn, Sink, input_file, track
from xor_ack_dynamodb.spark.tracker import TrackerConfig

from .test_column_names import chains_of

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]


def rows_of() -> Any:
    """Each input's key and its number of rows (a closure: pickled by value)."""

    def key_and_rows(key: str, rows: Any) -> Any:
        import pyarrow as pa

        return pa.table({"k": [key], "n": [rows.num_rows]})

    return key_and_rows


def test_a_key_given_as_a_column_is_refused_with_a_typed_error(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """``key=input_file()`` (the README's column, passed where its name goes) or
    ``key=F.col("file")``: a wrong argument is refused "naming it as track() takes it"
    (docs/spark.md).  ``bool()`` of the Column raised PySpark's ``PySparkValueError:
    [CANNOT_CONVERT_COLUMN_INTO_BOOL] ... use '&' for 'and'``, which says nothing of
    ``key=``."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text("to be\n")
    lines = local_spark.read.text(str(src))
    run_id = "colkey" + uuid.uuid4().hex[:6]
    with pytest.raises(InvalidArgument, match="key= takes the name of a column"):
        track(
            local_spark,
            rows_of(),
            "k string, n long",
            Sink(str(tmp_path / "out")),
            source=lines,
            key=input_file(),
            tracker=tracker,
            run_id=run_id,
        )
    assert not chains_of(tracker, run_id)


def test_an_s3_path_key_keeps_its_name_in_its_chain_and_events(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """An S3 object key may be 1,024 bytes, so ``s3a://bucket/<key>`` up to ~1,100: DynamoDB takes
    a 2,048-byte tag, and the docs say an event's ``tag`` is ``RUN/KEY#ROUND``.  Every tag
    over 1,024 bytes became ``RUN/sha256:<hex>#1``: the ``Acked``/``Failed`` events (and
    ``xor-ack chain list --status failed``) no longer said which input they were about."""
    name = "part-00000-3f2a9c1e-5b7d-4e8a-9f10-c000.snappy.parquet"
    key = "s3a://my-data-bucket/" + "year=2026/month=11/day=30/" * 37 + name
    assert 1024 < len(key.encode()) <= 21 + 1024  # a legal S3 object key under its bucket
    told: list[str] = []
    report = track(
        local_spark,
        rows_of(),
        "k string, n long",
        Sink(str(tmp_path / "out")),
        keys=[key],
        tracker=tracker,
        on_event=lambda event: told.append(event.tag),
    )
    assert report.ok and [e.key for e in report.inputs] == [key]
    assert told == [f"{report.run_id}/{key}#1"], told


def test_a_key_column_named_as_the_librarys_own_is_refused_before_any_chain(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """A source keyed by ``_xa_input`` (the name the rounds give each row's key): the
    rounds dropped the key column they had just made, and every input failed with
    ``[UNRESOLVED_USING_COLUMN_FOR_JOIN]`` after its chains were written."""
    source = local_spark.createDataFrame([("a", 1), ("b", 3)], "_xa_input string, v long")
    run_id = "xainput" + uuid.uuid4().hex[:6]
    with pytest.raises(ReservedColumn, match="key='_xa_input'"):
        track(local_spark, rows_of(), "k string, n long", Sink(str(tmp_path / "out")),
              source=source, key="_xa_input", tracker=tracker, run_id=run_id)  # fmt: skip
    assert not chains_of(tracker, run_id)
