"""``xor-ack wordcount``: its options, the checks before Spark, and how its errors end.

PySpark is imported only when it runs.
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import click

from ..cli.errors import UserError
from ..cli.options import (
    DEADLINE,
    Finite,
    check_key,
    check_region,
    check_table,
    url_option,
)
from ..spark.arguments import MAX_PARTITIONS
from ..spark.errors import InvalidArgument
from ..spark.input_listing import list_local
from ..spark.paths import is_remote, judge_output, local_listing, local_path
from .chains_table import _maybe_tracker
from .chains_table import single_writes as one_request_each
from .errors import ReportExists
from .interruption import _interrupted, ending, in_one_line, session_name
from .options import shown
from .paths import check_folders, check_paths, check_report, write_atomically

#: The forms of a Spark master: local[N] and its kin, yarn, or a cluster manager's URL
#: (spark://, k8s://, a plugin's own scheme)
MASTER = re.compile(
    r"local(\[(\d+|\*)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|yarn|[A-Za-z][\w+.-]*://\S+"
)


def check_master(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A master Spark could not start with ended in a Java gateway error naming nothing."""
    if value is not None and not MASTER.fullmatch(value.strip()):
        raise click.BadParameter(
            f"{value!r} is no Spark master: give local[N], spark://HOST:PORT, yarn or "
            "k8s://HOST:PORT (or leave it out: local[*])"
        )
    return value


def check_report_path(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """The report is written on this machine: ``file:/x`` is ``/x`` (as a relative
    ``./file:/x`` it was written under the working directory, the input's, say)."""
    if value is None:
        return None
    text = str(value)
    if is_remote(text):
        raise click.BadParameter(f"{text!r}: the report is a file of this machine; give its path")
    try:
        return Path(local_path(text))
    except InvalidArgument as exc:
        raise click.BadParameter(str(exc)) from exc


@click.command("wordcount")
@click.argument("input_path", metavar="INPUT")
@click.option(
    "--output", "-o", required=True, help="Where the counts go (CSV with header word,count)."
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),  # a str: a Path would fold "s3a://b" to "s3a:/b"
    callback=check_report_path,
    help="Write the JSON report here.",
)
@click.option(
    "--master",
    callback=check_master,
    help="Spark master [default: local[*], or spark-submit's].",
)
@click.option(
    "--remote",
    envvar="SPARK_REMOTE",
    help="Spark Connect server (sc://HOST:PORT) [default: $SPARK_REMOTE]: the same word "
    "count, run there (the server must see INPUT and OUTPUT).",
)
@url_option("--endpoint-url", "DynamoDB endpoint (the table must exist).")
@click.option(
    "--table",
    callback=check_table,
    help="Chains table (must exist). Without --table or an endpoint, "
    "a local DynamoDB is started and stopped by the command.",
)
@click.option("--region", callback=check_region, help="AWS region [default: the AWS environment].")
@click.option("--partition-key", default="tagID", show_default=True, callback=check_key)
@shown(
    "--timeout",
    DEADLINE,  # track()'s round_timeout: at most a year
    300.0,
    "Seconds a round may take; its unfinished files are replayed.",
)
@shown("--max-attempts", click.IntRange(min=1), 8, "Attempts per file before it is failed.")
@click.option(
    "--partitions",
    type=click.IntRange(min=1, max=MAX_PARTITIONS),
    default=None,
    help="Shuffle the counted rows into this many partitions before they are staged "
    "[default: no shuffle: the counting tasks stage them]; the writes per file do not "
    "depend on it.",
)
@shown(
    "--fail-rate",
    Finite(0, 1),
    0.0,
    "Inject faults: this share of task attempts crash, and this share lose records.",
)
@shown("--seed", int, 0, "Seed of the injected faults.")
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
@shown(
    "--output-partitions", click.IntRange(min=1, max=MAX_PARTITIONS), 1, "CSV files of the counts."
)
@click.option(
    "--single-writes",
    is_flag=True,
    help="One request per chain instead of 25 chains per PartiQL batch (the default; "
    "1 write unit each) or 100 per transaction (2 write units each on AWS).",
)
@click.option(
    "--watch",
    is_flag=True,
    help="Keep counting the files that arrive in INPUT (Structured Streaming), each batch "
    "into OUTPUT/batch=N-RUN, until Ctrl-C; the same command again resumes.",
)
@click.option(
    "--available-now",
    is_flag=True,
    help="With --watch: count the files there now, in batches, then stop.",
)
@shown("--local-backend", click.Choice(["auto", "dynamodb-local", "moto"]), "auto")
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
    watch: bool,
    available_now: bool,
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
    from ..spark.faults import FaultConfig
    from .progress import RichProgress, conclusion, plural

    started = time.monotonic()
    progress = RichProgress(started_at=started)
    if remote and master:
        raise click.UsageError("give --master or --remote (Spark Connect), not both")
    if available_now and not watch:
        raise click.UsageError("--available-now goes with --watch")
    faults = FaultConfig.rate(fail_rate, seed)
    if watch:
        if no_tracking or verify_counts or report_path or work_dir or overwrite or keep_staging:
            raise click.UsageError(
                "--watch runs tracked, without --no-tracking, --verify, --report, "
                "--work-dir, --overwrite or --keep-staging (each batch has a folder of its own)"
            )
        from .watch import run_watch

        run_watch(
            ctx, input_path, output, master, remote, faults,
            (partitions, max_attempts, timeout, output_partitions, single_writes),
            available_now, verbose, progress,
            (endpoint_url, table, region, partition_key, local_backend),
        )  # fmt: skip
        return
    job: WordCount | None = None

    def interrupted(exc: KeyboardInterrupt) -> str:
        return _interrupted(exc, job, output)

    with ending(verbose, interrupted):  # listing a large INPUT takes a while: Ctrl-C is 130
        _check_before_spark(input_path, output, report_path, work_dir, overwrite)
    with (
        ending(verbose, interrupted) as reinstall,
        _maybe_tracker(
            ctx,
            not no_tracking,
            endpoint_url,
            table,
            region,
            partition_key,
            32,
            local_backend,
            progress,
        ) as tracker,
    ):
        from .job import WordCount, WordCountOptions
        from .spark import start_session, stop_session

        if tracker is not None and single_writes:
            tracker = one_request_each(tracker)
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
        progress.step(f"starting Spark ({session_name(master, remote)})")
        spark = None
        try:
            with in_one_line(verbose):  # said while the JVM that knows Spark's errors runs
                spark = start_session(master, remote, faults.enabled, verbose)
                reinstall()  # SparkContext puts a SIGINT handler of its own in place
                job = WordCount(spark, options, progress)
                report = job.run()
        finally:
            progress.stop()
            stop_session(spark)
        progress.finished(report)
    check = None
    with ending(verbose, interrupted):  # Spark is gone: a Ctrl-C here still ends with 130
        if verify_counts:
            from .verify import verify

            progress.step("verifying the counts against an independent count")
            check = verify(report, input_path, output)
            report.totals["verification"] = dataclasses.asdict(check)
        not_written: ReportExists | None = None
        if report_path is not None:
            try:  # again: a file that appeared there during the run is not replaced
                check_report(report_path, overwrite)
            except ReportExists as exc:
                not_written = exc
            else:
                write_atomically(report_path, report.to_json())
                progress.step(f"report: {report_path}")
    kept = " (the former ones, kept: this run wrote none)" if report.output_state == "kept" else ""
    progress.step(f"counts: {output}{kept}")
    for line in conclusion(report, check):
        click.echo(line, err=True)
    if not_written is not None:
        raise UserError(f"the report was not written: {not_written}")
    if check is not None and not check.ok:
        raise UserError(f"the counts in {output} do not match an independent count: {check.detail}")
    if not report.ok:
        raise UserError(
            f"{report.failed_count} of {plural(report.listed, 'file')} failed (see the report)"
        )


def _check_before_spark(
    input_path: str, output: str, report: Path | None, work_dir: str | None, overwrite: bool
) -> None:
    """The checks that need no Spark, on local paths: a refusal comes at once."""
    check_paths(input_path, output, report, work_dir)
    if report is not None:
        check_report(report, overwrite)
    if not is_remote(output):
        judge_output(output, local_listing(output, tree=True), overwrite)
    check_folders(output, work_dir)
    if not is_remote(input_path):
        list_local(input_path)
