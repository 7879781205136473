"""The word count as a tracked job: per file its words' counts, then the sum over files.

Each input is a text file; the function counts the words of one file (lines
lower-cased, ``\\w+`` matches, ``words``) and returns ``(word, n)``
rows; the sink sums them by word over the acked files and writes CSV
``word,count`` (by count, then word, in each file).

Two ways to the files, one function of the words:

- local files (``/x``, ``file:/x``): listed on the driver (``paths``:
  hidden names skipped, links followed, any name a POSIX file system allows), and
  each read by the task that counts it.  A file that cannot be counted (not UTF-8,
  unreadable) is rejected (:class:`~xor_ack_dynamodb.spark.InputRejected`): it
  fails at once with its reason, alone; one that cannot even be opened (a broken
  link, a FIFO) fails before any round.
- Hadoop URIs (``s3a://``, ``hdfs://``): Spark's text reader, the file of each line
  taken from the ``_metadata.file_path`` column, as its path (``input_file``).

Both run on a cluster and over Spark Connect alike (the driver, or the Connect
client, must then see the local files the executors read).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import Sink, TrackedReport
from ..errors import InputRejected
from ..faults import FaultConfig
from ..files import is_connect
from ..input_listing import Unreadable, list_local, read_local
from ..job import TrackedJob
from ..job_spec import EventSink, JobSpec
from ..paths import is_remote, local_path, path_key
from ..report import InputResult, RoundObserver
from ..tracker import TrackerConfig
from .words import count_lines, count_words


@dataclass
class WordCountOptions:
    """Everything a run needs besides the SparkSession."""

    input: str
    output: str
    tracking: bool = True
    tracker: TrackerConfig | None = None
    #: Shuffle partitions of the counted rows before they are staged; None: Spark's setting.
    partitions: int | None = None
    #: Seconds a round may take; its unfinished files are replayed.
    timeout: float = 300.0
    max_attempts: int = 8
    faults: FaultConfig = field(default_factory=FaultConfig)
    run_id: str | None = None
    work_dir: str | None = None
    keep_staging: bool = False
    #: Replace an existing OUTPUT, if it is a folder this tool wrote (see ``paths``).
    overwrite: bool = False
    output_partitions: int = 1

    def __post_init__(self) -> None:
        if self.partitions is not None and self.partitions < 1:
            raise ValueError("partitions must be >= 1")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if self.timeout <= 0:
            raise ValueError("timeout must be > 0 seconds")
        if self.output_partitions < 1:
            raise ValueError("output_partitions must be >= 1")
        if self.tracking and self.tracker is None:
            raise ValueError("tracking needs a tracker (TrackerConfig)")


SCHEMA = "word string, n long"


def _rows(counts: Mapping[str, int]) -> Any:
    import pyarrow as pa  # type: ignore[import-untyped]

    words = list(counts)
    return pa.table(
        {
            "word": pa.array(words, pa.string()),
            "n": pa.array([counts[w] for w in words], pa.int64()),
        }
    )


def count_file(key: str, rows: Any) -> Any:
    """One file's ``(word, n)`` rows, from its lines (column ``value``)."""
    return _rows(count_lines([str(line) for line in rows.column("value").to_pylist()]))


@dataclass(frozen=True)
class CountLocalFile:
    """One local file's ``(word, n)`` rows, read by the task: ``paths`` maps keys to paths."""

    paths: Mapping[str, str]

    def __call__(self, key: str, rows: Any) -> Any:
        data = read_local(self.paths.get(key, key))
        if isinstance(data, Unreadable):
            raise InputRejected(f"unreadable: {data}")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputRejected(f"not-utf8: {exc.reason} at byte {exc.start}") from exc
        return _rows(count_words(text))


def total_by_word(rows: Any, files: int = 1) -> Any:
    """The counts summed over the acked files, in ``files`` files sorted by count, word."""
    from pyspark.sql import functions as F

    totals = rows.groupBy("word").agg(F.sum("n").cast("long").alias("count"))
    return totals.repartition(files).sortWithinPartitions(F.desc("count"), F.asc("word"))


def text_lines(reader: Any, path: str, key: str = "file") -> Any:
    """The lines of the text files under ``path`` (``value``), each with its file (``key``).

    ``reader``: ``spark.read`` or ``spark.readStream``.
    """
    from ..columns import input_file

    lines = reader.option("recursiveFileLookup", "true").text(path)
    return lines.select("value", input_file().alias(key))


def counts_sink(output: str, files: int = 1, overwrite: bool = False) -> Sink:
    """CSV ``word,count``: the rows summed by word, in ``files`` files."""
    return Sink(
        output,
        format="csv",
        options={"header": "true"},
        finish=lambda rows: total_by_word(rows, files),
        overwrite=overwrite,
    )


def on_client(spark: Any, path: str) -> str:
    """A path typed on this machine: over Spark Connect a relative one is made absolute
    here, against this process's working directory (the library refuses relative paths
    there, which the server would resolve in its own)."""
    if is_connect(spark) and not is_remote(path):
        return local_path(path)
    return path


def tracking_options(options: WordCountOptions) -> dict[str, Any]:
    """What :func:`~xor_ack_dynamodb.spark.track` (and ``JobSpec``) take from ``options``."""
    return {
        "tracker": options.tracker if options.tracking else None,
        "partitions": options.partitions,
        "max_attempts": options.max_attempts,
        "faults": options.faults,
        # Past it a round's files are replayed; untracked there is no replay, no limit.
        "round_timeout": options.timeout if options.tracking else None,
    }


def tracked_wordcount(
    spark: Any,
    options: WordCountOptions,
    observer: RoundObserver | None = None,
    on_event: EventSink | None = None,
) -> TrackedJob:
    """The tracked job of ``options`` (its inputs listed): ``.run()`` runs it."""
    source: Any = None
    key: str | None = None
    keys: list[str] | None = None
    process: Any = count_file
    failed_before: list[InputResult] = []
    if is_remote(options.input):
        source, key = text_lines(spark.read, options.input), "file"
    else:
        paths: dict[str, str] = {}
        for entry in list_local(options.input):
            name = path_key(entry.path)
            if entry.problem is not None:
                failed_before.append(InputResult(name, "failed", 0, [entry.problem]))
            else:
                paths[name] = entry.path
        keys = list(paths)
        # Only the names their key changed (bytes that are not UTF-8, a backslash) travel.
        process = CountLocalFile({k: p for k, p in paths.items() if k != p})
    spec = JobSpec(
        process=process,
        schema=SCHEMA,
        sink=counts_sink(
            on_client(spark, options.output), options.output_partitions, options.overwrite
        ),
        source=source,
        key=key,
        keys=keys,
        run_id=options.run_id,
        keep_staging=options.keep_staging,
        work_dir=on_client(spark, options.work_dir) if options.work_dir else None,
        on_event=on_event,
        observer=observer,
        failed_before=failed_before,
        **tracking_options(options),
    )
    return TrackedJob(spark, spec)


def wordcount(spark: Any, input_: str, output: str, **options: Any) -> TrackedReport:
    """Count the words of the text files under ``input_`` into ``output`` (CSV), tracked.

    ``options``: :class:`WordCountOptions`' fields; the
    chains' table, unless ``tracker=`` or ``tracking=False``, as :func:`track` finds it
    (``table=``, ``endpoint_url=``, ``region=``, the session's conf, the environment).
    """
    from .. import chains_config

    where = {name: options.pop(name, None) for name in ("table", "endpoint_url", "region")}
    if options.get("tracking", True) and options.get("tracker") is None:
        options["tracker"] = chains_config(spark, **where)
    return tracked_wordcount(spark, WordCountOptions(input_, output, **options)).run()


def main(argv: list[str] | None = None) -> int:
    """``python -m xor_ack_dynamodb.spark.examples.wordcount INPUT OUTPUT --table T``.

    The session is whatever the environment asks for: ``SPARK_REMOTE=sc://...``
    (Spark Connect), the master ``spark-submit --master ...`` set, or ``local[*]``.
    Prints the report (JSON); exit status 0 when every input was acked.
    """
    import argparse

    from pyspark.sql import SparkSession

    parser = argparse.ArgumentParser(prog="wordcount", description=main.__doc__)
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--table")
    parser.add_argument("--partitions", type=int)
    parser.add_argument("--fail-rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName("xor-ack-wordcount-example").getOrCreate()
    report = wordcount(
        spark,
        args.input,
        args.output,
        table=args.table,
        faults=FaultConfig.rate(args.fail_rate, seed=args.seed),
        partitions=args.partitions,
    )
    print(report.to_json())
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
