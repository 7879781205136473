"""The chains table a tracked run uses: a DynamoDB Local started for the run, or the given one."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from botocore.exceptions import ClientError

from ..cli.errors import UserError
from ..dynamodb.ownership import NotAChainsTable, check_chains_table, create_table
from ..dynamodb.table import DEFAULT_TABLE, TTL_ATTRIBUTE, TableSpec

#: The table the command creates in the DynamoDB Local it starts itself.
LOCAL_TABLE = "xor-ack-wordcount"


def single_writes(tracker: Any) -> Any:
    """``--single-writes``: the chains written one request per chain, neither 25 per PartiQL
    batch (the tracker's default, which takes precedence over ``transactions``) nor 100 per
    transaction."""
    return dataclasses.replace(tracker, partiql=False, transactions=False)


def _env_endpoint() -> str | None:
    from ..dynamodb.aws import endpoint_url

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
    from ..dynamodb.local import LocalDynamoDB
    from ..spark.tracker import TrackerConfig
    from .errors import TableMissing

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
                # moto does not check a PartiQL statement's condition: transactions there.
                partiql=db.kind != "moto",
            )
            create_table(config.client(), TableSpec(name=LOCAL_TABLE, partition_key=partition_key))
            progress.step(f"local DynamoDB ({db.kind}) at {db.endpoint_url}, table {LOCAL_TABLE}")
            yield config
        return
    # Credentials: each process's own AWS environment; dummy ones only where it names
    # none and the endpoint is on loopback (``aws.client_options`` decides).
    config = TrackerConfig(
        table=table or DEFAULT_TABLE,
        endpoint_url=endpoint_url,
        region=region,
        partition_key=partition_key,
        token_window=token_window,
    )
    from ..dynamodb.aws import fail_fast_config

    client = config.client(fail_fast_config())  # a DynamoDB that is down: said in seconds
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
    check_holds_chains(client, description)
    yield config


def check_holds_chains(client: Any, description: Any) -> None:
    """Refuse, before the run's first write, a table that does not show it holds chains.

    The proof is the tooling's own (``check_chains_table``: DescribeTimeToLive, and a
    Scan of up to 10 items when the table has no inventory index); said with --table.
    """
    name = description["TableName"]
    try:
        check_chains_table(client, description)
    except NotAChainsTable as exc:
        raise NotAChainsTable(
            f"table {name} does not look like a chains table ({exc.why}); nothing was written "
            "to it: give --table a table `xor-ack --table NAME table create` made (a chains "
            f"table an earlier release made, still empty: turn TTL on for {TTL_ATTRIBUTE} "
            "first), or leave out --endpoint-url and --table to count against a local "
            "DynamoDB the command starts",
            exc.why,
        ) from exc


@contextmanager
def _maybe_tracker(ctx: click.Context, tracking: bool, *args: Any) -> Iterator[Any]:
    if not tracking:
        yield None
        return
    with _tracker(ctx, *args) as config:
        yield config
