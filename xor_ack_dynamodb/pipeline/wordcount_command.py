"""``xor-ack wordcount``: its options, the checks before Spark, and how its errors end.

PySpark is imported only when it runs.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import click
from botocore.exceptions import BotoCoreError, ClientError

from .._cli.errors import RefusedUsage, UserError, explain
from .._cli.options import check_endpoint, check_key, check_region, check_table
from ..errors import XorAckError
from .chains_table import _maybe_tracker
from .errors import Refused
from .interruption import INTERRUPTED, _interrupted, _signals_interrupt, exit_now
from .paths import (
    check_paths,
    check_report,
    is_remote,
    judge_output,
    list_local,
    local_listing,
    write_atomically,
)


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
@click.option(
    "--remote",
    envvar="SPARK_REMOTE",
    help="Spark Connect server (sc://HOST:PORT) [default: $SPARK_REMOTE]; runs the "
    "DataFrame-API word count of xor_ack_dynamodb.spark there.",
)
@click.option(
    "--endpoint-url",
    metavar="URL",
    callback=check_endpoint,
    help="DynamoDB endpoint (the table must exist).",
)
@click.option(
    "--table",
    callback=check_table,
    help="Chains table (must exist). Without --table or an endpoint, "
    "a local DynamoDB is started and stopped by the command.",
)
@click.option("--region", callback=check_region, help="AWS region [default: the AWS environment].")
@click.option("--partition-key", default="tagID", show_default=True, callback=check_key)
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
    remote: str | None,
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
    from .progress import RichProgress, conclusion, plural

    started = time.monotonic()
    progress = RichProgress(started_at=started)
    try:
        _check_before_spark(input_path, output, report_path, work_dir, overwrite)
    except Refused as exc:
        raise RefusedUsage(explain(exc) or str(exc)) from exc
    faults = FaultConfig.rate(fail_rate, seed)
    spark_master = None if remote else _master(master, faults.enabled)
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
                if remote:
                    if tracker is None or verify_counts or master or work_dir:
                        raise click.UsageError(
                            "--remote runs tracked, without --no-tracking, --verify, "
                            "--master or --work-dir"
                        )
                    from .remote_command import run_remote

                    progress.stop()
                    run_remote(
                        remote, input_path, output, report_path, tracker, faults,
                        partitions, max_attempts, overwrite,
                    )  # fmt: skip
                    return
                # Classic PySpark only from here (a Spark Connect client has no SparkContext).
                from .job import WordCount, WordCountOptions
                from .spark import build_session, stop_session

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
            exit_now(INTERRUPTED)
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
