"""A tracked job's output rows, shaped by the sink and written by Spark.

The rows are the acked rounds' (``ledger.AckedLedger.acked_rows``); the sink's
``finish`` shapes them.  Where they go, and whether they may go there at all, is
``commit``'s.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from typing import Any

from .errors import FinishFailed, OutputUnwritable, PartitionColumnMissing
from .files import Files
from .sink import Sink


def shaped(rows: Any, sink: Sink) -> Any:
    """``rows`` through the sink's ``finish`` and into its number of files."""
    out = sink.finish(rows) if sink.finish is not None else rows
    return out.repartition(sink.files) if sink.files else out


def columns(spark: Any, struct: Any, sink: Sink) -> tuple[str, ...]:
    """The output's columns: no rows of the declared ``struct``, shaped as the commit shapes
    the acked rows (so the sink can be judged before the first chain)."""
    return tuple(field.name for field in schema(spark, struct, sink).fields)


def schema(spark: Any, struct: Any, sink: Sink) -> Any:
    """The output's schema (a ``StructType``), as :func:`columns` finds it."""
    empty = spark.createDataFrame([], struct)
    if sink.finish is None:
        return empty.schema
    try:
        return shaped(empty, sink).schema
    except Exception as exc:  # the user's finish, or the frame it made that Spark refuses
        raise FinishFailed(
            f"Sink(finish=...) fails on rows of the declared schema ({struct.simpleString()}): "
            f"{said(exc)}; make finish take a DataFrame of those columns"
        ) from exc


def folded(spark: Any, names: Iterable[str]) -> list[str]:
    """Column names as Spark matches them (case apart, unless ``spark.sql.caseSensitive``)."""
    sensitive = str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"
    return sorted(names if sensitive else (n.lower() for n in names))


def check_partitions(spark: Any, columns: tuple[str, ...], sink: Sink) -> None:
    """Refuse a ``partition_by`` column that the output (``columns``) does not have."""
    have = set(folded(spark, columns))
    missing = [c for c in sink.partition_by if folded(spark, [c])[0] not in have]
    if missing:
        raise PartitionColumnMissing(
            f"Sink(partition_by={sink.partition_by!r}): the output has no column "
            f"{', '.join(missing)} (its columns: {', '.join(columns)}): partition by "
            "columns of the declared schema (or of what finish returns)"
        )


def check(
    spark: Any, struct: Any, sink: Sink, scratch: str, files: Files, *, probe: bool = True
) -> None:
    """Refuse what the commit could not write: ``partition_by`` columns the output lacks, a
    ``finish`` that fails, a format Spark cannot write (``probe_format``, in ``scratch``; not with
    ``probe=False``: a stream's micro-batches, whose sink the stream probed when it started,
    and whose scratch folder would be inside the stream's output)."""
    check_partitions(spark, columns(spark, struct, sink), sink)
    if probe:
        probe_format(spark, struct, sink, scratch, files)


#: Spark's own file formats that write columns of every type a declared schema can
#: hold: with no options and no ``partition_by`` (which Spark judges only as it writes:
#: every column, one twice, a map), a sink of one of them is not probed (the probe is a
#: Spark job, about 0.2 s, which a run of small inputs would pay in full on every run).
WRITES_EVERY_COLUMN = frozenset({"parquet", "orc", "json"})


def probe_format(spark: Any, struct: Any, sink: Sink, scratch: str, files: Files) -> None:
    """Refuse a sink Spark cannot write: ``write`` (the commit's own) of no rows of the
    declared ``struct`` to ``scratch``, a folder of the run's that is removed after.

    Only a write is honest: a format's reader is not its writer (``noop`` writes only,
    ``hive`` takes tables only), and a writer checks its options and column types (CSV
    takes no array) when it writes.  No rows: one small job, a few empty files at most;
    none for a format of ``WRITES_EVERY_COLUMN`` without options.
    """
    if sink.format.lower() in WRITES_EVERY_COLUMN and not sink.options and not sink.partition_by:
        probe_folder(sink, scratch, files)
        return
    try:
        write(spark.createDataFrame([], struct), sink, scratch)
    except Exception as exc:
        raise OutputUnwritable(
            f"Spark cannot write Sink(format={sink.format!r}, options={sink.options!r}) "
            f"(tried with no rows before the first chain): {said(exc)}; fix the sink's "
            "format or options, or declare columns the format can hold"
        ) from exc
    finally:
        files.delete(scratch)


def probe_folder(sink: Sink, scratch: str, files: Files) -> None:
    """Refuse a sink whose folder cannot be written (permissions, a read-only store): one
    empty file at ``scratch``, beside the output, where the run stages and commits, made
    and removed.  Not found here, every round failed on it and the run burnt its replays."""
    try:
        files.probe_write(scratch)
    except Exception as exc:
        raise OutputUnwritable(
            f"the folder of Sink({sink.path!r}) cannot be written (tried before the first "
            f"chain, beside it): {said(exc)}; give the run write access there, or choose "
            "another output"
        ) from exc


def said(exc: BaseException) -> str:
    """What an error says, in one line: its type and its first line (of a Py4J error, its Java
    exception, not its call); its type alone when it has no text or cannot say it (a Spark
    error's text is asked of its JVM, which may be gone)."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception:
        return name
    lines = [line.strip(_BLANK) for line in text.splitlines() if line.strip(_BLANK)]
    lines = [line for line in lines if not line.startswith("An error occurred while calling")]
    return f"{name}: {lines[0][:300]}" if lines else name


#: What ``said`` trims from each line's ends (py4j puts ": " before the Java exception).
_BLANK = string.whitespace + ":"


def write(rows: Any, sink: Sink, staged: str) -> None:
    """``rows`` through the sink's ``finish``, files, format and partitioning, to ``staged``."""
    out = shaped(rows, sink)
    writer = out.write.format(sink.format).options(**sink.options)
    if sink.partition_by:
        writer = writer.partitionBy(*sink.partition_by)
    writer.save(staged)
