"""``xor-ack wordcount`` and ``xor-ack wordcount-sample``.

Also ``python -m xor_ack_dynamodb.pipeline wordcount ...``.

PySpark is imported only when ``wordcount`` runs.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from botocore.exceptions import BotoCoreError, ClientError

from ..cli import UserError, explain, is_loopback
from ..errors import XorAckError
from ..table import DEFAULT_TABLE, TableSpec, create_table
from .corpus import generate

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
            click.echo(
                f"local DynamoDB ({db.kind}) at {db.endpoint_url}, table {LOCAL_TABLE}", err=True
            )
            yield config
        return
    loopback = is_loopback(endpoint_url)
    config = TrackerConfig(
        table=table or DEFAULT_TABLE,
        endpoint_url=endpoint_url,
        region=region,
        partition_key=partition_key,
        token_window=token_window,
        local_credentials=loopback
        and not os.environ.get("AWS_ACCESS_KEY_ID")
        and not os.environ.get("AWS_PROFILE"),
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
@click.option("--work-dir", help="Staging rows of the rounds [default: OUTPUT.staging].")
@click.option("--keep-staging", is_flag=True, help="Keep the staging rows after the run.")
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
) -> None:
    """Count the words of every file under INPUT with PySpark, each file tracked by an XOR chain.

    Files whose chains do not reach zero are replayed, up to --max-attempts;
    the report lists every file as acked or failed.  Exits 1 if any failed.
    """
    from .faults import FaultConfig
    from .job import WordCountOptions, run_wordcount
    from .progress import RichProgress
    from .spark import build_session

    faults = FaultConfig.rate(fail_rate, seed)
    spark_master = _master(master, faults.enabled)
    token_window = max(32, (partitions or 8) + 8)
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
            )
            spark = build_session(
                spark_master,
                shuffle_partitions=max(partitions or 2, 2),
                log_level="FATAL" if faults.enabled else "ERROR",
            )
            try:
                report = run_wordcount(spark, options, RichProgress())
            finally:
                spark.stop()
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from exc
    except (XorAckError, ClientError, BotoCoreError) as exc:
        raise UserError(explain(exc) or str(exc)) from exc
    if report_path is not None:
        report_path.parent.mkdir(parents=True, exist_ok=True)
        report_path.write_text(report.to_json(), encoding="utf-8")
        click.echo(f"report: {report_path}", err=True)
    click.echo(f"counts: {output}", err=True)
    if not report.ok:
        raise UserError(f"{report.failed} of {len(report.files)} files failed (see the report)")


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
    """Write a deterministic sample corpus for `xor-ack wordcount` under DIRECTORY."""
    info = generate(
        directory,
        files=files,
        lines=lines,
        words_per_line=words_per_line,
        seed=seed,
        invalid=invalid,
    )
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
