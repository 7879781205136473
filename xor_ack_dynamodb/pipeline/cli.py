"""``xor-ack wordcount`` and ``xor-ack wordcount-sample``.

Also ``python -m xor_ack_dynamodb.pipeline wordcount ...``.

PySpark is imported only when ``wordcount`` runs.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from botocore.exceptions import BotoCoreError, ClientError

from .._cli.errors import UserError, explain
from ..errors import XorAckError
from ..table import DEFAULT_TABLE, TableSpec, create_table
from .corpus import generate
from .errors import Refused
from .paths import (
    check_paths,
    check_report,
    is_remote,
    judge_output,
    list_local,
    local_listing,
    write_atomically,
)

#: The table the command creates in the DynamoDB Local it starts itself.
LOCAL_TABLE = "xor-ack-wordcount"


def _env_endpoint() -> str | None:
    from .._aws import endpoint_url

    return endpoint_url()


@contextmanager
def _tracker(
    ctx: click.Context,
    endpoint_url: str | None,
    table: str | None,
    region: str | None,
    partition_key: str,
    token_window: int,
    backend: str,
    progress: Any,
) -> Iterator[Any]:
    """The TrackerConfig to use: a DynamoDB Local started here, or the given table."""
    from ..local import LocalDynamoDB
    from .errors import TableMissing
    from .tracker import TrackerConfig

    # Run as `xor-ack [--endpoint-url URL] [--table T] wordcount ...`: the root group's
    # options count too (its --table only when it was given, not its default).
    parent = ctx.parent.obj if ctx.parent is not None else None
    endpoint_url = endpoint_url or getattr(parent, "endpoint_url", None) or _env_endpoint()
    region = region or getattr(parent, "region", None)
    if table is None and ctx.parent is not None and parent is not None:
        source = ctx.parent.get_parameter_source("table")
        if source is not None and source != click.core.ParameterSource.DEFAULT:
            table = getattr(parent, "table", None)
    if endpoint_url is None and table is None:
        progress.step("starting a local DynamoDB")
        with LocalDynamoDB(backend=backend) as db:  # type: ignore[arg-type]
            config = TrackerConfig(
                table=LOCAL_TABLE,
                endpoint_url=db.endpoint_url,
                region=region or "us-east-1",
                partition_key=partition_key,
                token_window=token_window,
                local_credentials=True,
            )
            create_table(config.client(), TableSpec(name=LOCAL_TABLE, partition_key=partition_key))
            progress.step(f"local DynamoDB ({db.kind}) at {db.endpoint_url}, table {LOCAL_TABLE}")
            yield config
        return
    # Credentials: each process's own AWS environment; dummy ones only where it names
    # none and the endpoint is on loopback (``_aws.client_options`` decides).
    config = TrackerConfig(
        table=table or DEFAULT_TABLE,
        endpoint_url=endpoint_url,
        region=region,
        partition_key=partition_key,
        token_window=token_window,
    )
    client = config.client()
    try:
        description = client.describe_table(TableName=config.table)["Table"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            where = endpoint_url or f"AWS ({client.meta.region_name})"
            raise TableMissing(config.table, where) from exc
        raise
    keys = [k["AttributeName"] for k in description["KeySchema"] if k["KeyType"] == "HASH"]
    if keys != [partition_key]:
        raise UserError(
            f"table {config.table!r} has partition key {keys[0] if keys else '?'!r}, "
            f"not {partition_key!r}: pass --partition-key"
        )
    yield config


def _master(master: str | None, faults_on: bool) -> str | None:
    from .spark import master_with_retries

    if master is None:
        # Under spark-submit the master is spark-submit's to set.
        if os.environ.get("PYSPARK_GATEWAY_PORT"):
            return None
        master = "local[*]"
    return master_with_retries(master) if faults_on else master


@click.command("wordcount")
@click.argument("input_path", metavar="INPUT")
@click.option(
    "--output", "-o", required=True, help="Where the counts go (CSV with header word,count)."
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the JSON report here.",
)
@click.option("--master", help="Spark master [default: local[*], or spark-submit's].")
@click.option("--endpoint-url", metavar="URL", help="DynamoDB endpoint (the table must exist).")
@click.option(
    "--table",
    help="Chains table (must exist). Without --table or an endpoint, "
    "a local DynamoDB is started and stopped by the command.",
)
@click.option("--region", help="AWS region [default: the AWS environment].")
@click.option("--partition-key", default="tagID", show_default=True)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=300.0,
    show_default=True,
    help="Seconds a round may take; its unfinished files are replayed.",
)
@click.option(
    "--max-attempts",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Attempts per file before it is reported failed.",
)
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=None,
    help="Counting tasks (stage-2 partitions) [default: Spark's default parallelism, 2 to 8].",
)
@click.option(
    "--fail-rate",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Inject faults: this share of task attempts crash, and this share lose records.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the injected faults.")
@click.option("--no-tracking", is_flag=True, help="Run the same stages without chains.")
@click.option(
    "--work-dir",
    help="Where the rounds' staging rows go, in a hidden folder of the run "
    "[default: the run's staging folder beside OUTPUT].",
)
@click.option("--keep-staging", is_flag=True, help="Keep the staging folder after the run.")
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace OUTPUT and --report if this command wrote them before (never other files).",
)
@click.option("--verbose", "-v", is_flag=True, help="Show Spark's and the JVM's own output.")
@click.option(
    "--verify",
    "verify_counts",
    is_flag=True,
    help="After the run, count the finished files again in plain Python (no Spark, no "
    "chains) and check OUTPUT against that count; exit 1 if they differ.",
)
@click.option("--output-partitions", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--single-writes",
    is_flag=True,
    help="One request per chain instead of 100 chains per transaction "
    "(transactions cost twice the write units on AWS).",
)
@click.option(
    "--local-backend",
    type=click.Choice(["auto", "dynamodb-local", "moto"]),
    default="auto",
    show_default=True,
    help="Which local DynamoDB to start.",
)
@click.pass_context
def wordcount(
    ctx: click.Context,
    input_path: str,
    output: str,
    report_path: Path | None,
    master: str | None,
    endpoint_url: str | None,
    table: str | None,
    region: str | None,
    partition_key: str,
    timeout: float,
    max_attempts: int,
    partitions: int | None,
    fail_rate: float,
    seed: int,
    no_tracking: bool,
    work_dir: str | None,
    keep_staging: bool,
    output_partitions: int,
    single_writes: bool,
    local_backend: str,
    overwrite: bool,
    verbose: bool,
    verify_counts: bool,
) -> None:
    """Count the words of every file under INPUT with PySpark, each file tracked by an XOR chain.

    Files whose chains do not reach zero are replayed, up to --max-attempts;
    the report lists every file as acked or failed.  Exits 0 when every file
    was acked, 1 if any failed (or on a runtime error), 2 when the run is refused
    before anything is touched (missing INPUT, OUTPUT that exists, paths that
    overlap), 130 when interrupted.  See docs/pipeline.md.
    """
    from .faults import FaultConfig
    from .job import WordCount, WordCountOptions
    from .progress import RichProgress, conclusion, plural
    from .spark import build_session, stop_session

    started = time.monotonic()
    progress = RichProgress(started_at=started)
    try:
        _check_before_spark(input_path, output, report_path, work_dir, overwrite)
    except Refused as exc:
        raise RefusedUsage(explain(exc) or str(exc)) from exc
    faults = FaultConfig.rate(fail_rate, seed)
    spark_master = _master(master, faults.enabled)
    token_window = max(32, (partitions or 8) + 8)
    job: WordCount | None = None
    with _signals_interrupt() as reinstall:
        try:
            with _maybe_tracker(
                ctx,
                not no_tracking,
                endpoint_url,
                table,
                region,
                partition_key,
                token_window,
                local_backend,
                progress,
            ) as tracker:
                if tracker is not None and single_writes:
                    tracker = dataclasses.replace(tracker, transactions=False)
                options = WordCountOptions(
                    input=input_path,
                    output=output,
                    tracking=not no_tracking,
                    tracker=tracker,
                    partitions=partitions,
                    timeout=timeout,
                    max_attempts=max_attempts,
                    faults=faults,
                    work_dir=work_dir,
                    keep_staging=keep_staging,
                    output_partitions=output_partitions,
                    overwrite=overwrite,
                )
                progress.step(f"starting Spark ({spark_master or 'spark-submit'})")
                spark = None
                try:
                    quiet_level = "FATAL" if faults.enabled else "ERROR"
                    spark = build_session(
                        spark_master,
                        shuffle_partitions=max(partitions or 2, 2),
                        log_level="WARN" if verbose else quiet_level,
                        quiet=not verbose,
                    )
                    reinstall()  # SparkContext puts a SIGINT handler of its own in place
                    job = WordCount(spark, options, progress)
                    report = job.run()
                finally:
                    progress.stop()
                    stop_session(spark)
        except KeyboardInterrupt as exc:
            click.echo(_interrupted(exc, job, output), err=True)
            ctx.exit(INTERRUPTED)
        except Refused as exc:
            raise RefusedUsage(explain(exc) or str(exc)) from exc
        except FileNotFoundError as exc:
            raise UserError(str(exc)) from exc
        except (XorAckError, ClientError, BotoCoreError) as exc:
            raise UserError(explain(exc) or str(exc)) from exc
        except Exception as exc:
            hint = "" if verbose else " (run again with --verbose to see Spark's own output)"
            raise UserError(f"{type(exc).__name__}: {_first_line(exc)}{hint}") from exc
    check = None
    if verify_counts:
        from .verify import verify

        progress.step("verifying the counts against an independent count")
        check = verify(report, output)
        report.totals["verification"] = dataclasses.asdict(check)
    if report_path is not None:
        write_atomically(report_path, report.to_json())
        progress.step(f"report: {report_path}")
    progress.step(f"counts: {output}")
    for line in conclusion(report, check):
        click.echo(line, err=True)
    if check is not None and not check.ok:
        raise UserError(f"the counts in {output} do not match an independent count: {check.detail}")
    if not report.ok:
        raise UserError(
            f"{report.failed} of {plural(len(report.files), 'file')} failed (see the report)"
        )


#: Exit status of an interrupted run (128 + SIGINT, as shells report it).
INTERRUPTED = 130


class RefusedUsage(UserError):
    """A run refused before anything was touched: one ``error:`` line, exit 2."""

    exit_code = 2


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: the run unwinds (cancel jobs, stop Spark, clean up)."""


@contextmanager
def _signals_interrupt() -> Iterator[Callable[[], None]]:
    """SIGINT and SIGTERM raise :class:`Interrupted` in the main thread, once.

    The first signal starts a clean stop; later ones are ignored so that the
    clean-up (cancel the jobs, remove the staging folder, stop the JVM and a
    local DynamoDB) is not cut short.  Yields a function that puts the handlers
    back in place (SparkContext installs its own SIGINT handler).
    """
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.getsignal(sig) for sig in signals}

    def handler(signum: int, _frame: Any) -> None:
        for sig in signals:
            signal.signal(sig, signal.SIG_IGN)
        raise Interrupted(signal.Signals(signum).name)

    def install() -> None:
        for sig in signals:
            signal.signal(sig, handler)

    install()
    try:
        yield install
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _interrupted(exc: KeyboardInterrupt, job: Any, output: str) -> str:
    """The one line an interruption ends with: what state the tracked files are in."""
    from .progress import plural

    name = exc.args[0] if isinstance(exc, Interrupted) and exc.args else "SIGINT"
    report = job.report if job is not None else None
    if report is None or not report.files:
        state = "no file was tracked yet"
    else:
        files = len(report.files)
        done = report.acked + report.failed
        state = f"{report.acked:,} of {plural(files, 'file')} acked, {files - done:,} not finished"
        if report.failed:
            state += f", {report.failed:,} failed"
    if job is not None and job.committed:
        written = f"the counts had been written to {output}"
    else:
        written = f"nothing was written to {output}"
    return f"interrupted ({name}): {state}; {written}; re-run the same command"


def _check_before_spark(
    input_path: str, output: str, report: Path | None, work_dir: str | None, overwrite: bool
) -> None:
    """The checks that need no Spark, on local paths: a refusal comes at once."""
    check_paths(input_path, output, report, work_dir)
    if report is not None:
        check_report(report, overwrite)
    if not is_remote(output):
        judge_output(output, local_listing(output), overwrite)
    if not is_remote(input_path):
        list_local(input_path)


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__


@contextmanager
def _maybe_tracker(ctx: click.Context, tracking: bool, *args: Any) -> Iterator[Any]:
    if not tracking:
        yield None
        return
    with _tracker(ctx, *args) as config:
        yield config


@click.command("wordcount-sample")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--files", type=click.IntRange(min=0), default=100, show_default=True)
@click.option("--lines", type=click.IntRange(min=0), default=40, show_default=True)
@click.option("--words-per-line", type=click.IntRange(min=1), default=12, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--invalid",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Also write this many files that are not UTF-8 (they end failed).",
)
def wordcount_sample(
    directory: Path, files: int, lines: int, words_per_line: int, seed: int, invalid: int
) -> None:
    """Write a deterministic sample corpus for `xor-ack wordcount` under DIRECTORY.

    DIRECTORY must be new or empty; if it holds the very sample these options make
    (written before), it is used as it is.  Anything else is refused (exit 2) and
    nothing is written.
    """
    try:
        info = generate(
            directory,
            files=files,
            lines=lines,
            words_per_line=words_per_line,
            seed=seed,
            invalid=invalid,
        )
    except Refused as exc:
        raise RefusedUsage(explain(exc) or str(exc)) from exc
    click.echo(
        f"{info.files} files ({info.words:,} words) under {info.root}"
        + (f", plus {info.invalid} non-UTF-8 files" if info.invalid else "")
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """The tracked word count on PySpark (``python -m xor_ack_dynamodb.pipeline``)."""


main.add_command(wordcount)
main.add_command(wordcount_sample)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
