"""``xor-ack table``: create, describe, upgrade or delete the chains table."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ..dynamodb.ownership import check_deletable, create_table, delete_table, wait_deleted
from ..dynamodb.table import (
    INDEXES,
    KEY_TYPE,
    STREAM_VIEW,
    TTL_ATTRIBUTE,
    TableInfo,
    TableSpec,
    ttl_on,
)
from ..dynamodb.table import describe_table as describe_table_info
from ..dynamodb.upgrade import plan_upgrade, upgrade_table
from .errors import UserError
from .options import Verbs, _settings, json_option, seconds_option
from .show import _echo_pairs, argument, shown

_UPGRADE_HINT = "run `xor-ack table upgrade` to add it"


@click.group(cls=Verbs)
def table() -> None:
    """Create, describe, upgrade or delete the chains table."""


@table.command("create")
@click.option(
    "--billing-mode",
    type=click.Choice(["PAY_PER_REQUEST", "PROVISIONED"]),
    default="PAY_PER_REQUEST",
    show_default=True,
    help="On-demand or provisioned capacity.",
)
@click.option("--read-capacity", type=click.IntRange(min=1), default=5, show_default=True)
@click.option("--write-capacity", type=click.IntRange(min=1), default=5, show_default=True)
@click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="Wait until ACTIVE, then turn TTL on (--no-wait: TTL only if ACTIVE at once; "
    "else `table upgrade` turns it on later).",
)
@click.pass_context
def table_create(
    ctx: click.Context, billing_mode: Any, read_capacity: int, write_capacity: int, wait: bool
) -> None:
    """Create the table the clients expect (idempotent; TTL on expires_at).

    The table gets a stream (NEW_AND_OLD_IMAGES) and the two sparse inventory
    indexes.  An existing table is checked, never changed: its key must be the
    partition key (type S), and it must look like a chains table; what it lacks
    (a table made by an earlier release) is named, and `xor-ack table upgrade`
    adds it.  For
    production, prefer the
    CloudFormation template infra/table.yaml (PITR, encryption, deletion
    protection, an IAM policy).

    \b
    Example:
      xor-ack table create --table my-chains --endpoint-url http://127.0.0.1:8000
    """
    settings = _settings(ctx)
    spec = settings.spec(
        billing_mode=billing_mode, read_capacity=read_capacity, write_capacity=write_capacity
    )
    client = settings.client()
    created = create_table(client, spec, wait=wait)
    if created:
        has_ttl = wait or ttl_on(  # --no-wait: TTL only if ACTIVE at once
            client.describe_time_to_live(TableName=spec.name).get("TimeToLiveDescription", {})
        )
        click.echo(
            f"table {spec.name} created: key {shown(spec.partition_key)} (S), "
            + (f"TTL on {TTL_ATTRIBUTE}, " if has_ttl else "")
            + f"{spec.billing_mode}, stream {STREAM_VIEW}, indexes {', '.join(INDEXES)}"
        )
        if not has_ttl:
            click.echo(
                f"warning: table {spec.name} is not ACTIVE yet, so TTL on {TTL_ATTRIBUTE} is not "
                f"on: once it is, run `xor-ack --table {spec.name} table upgrade`",
                err=True,
            )
        return
    table = say_existing(client, spec)
    _say_unapplied(ctx, spec.name, table)


def say_existing(client: Any, spec: TableSpec, *, err: bool = False) -> Any:
    """Check a table ``create_table`` found there already, say so (on stderr if ``err``),
    and warn of each part it lacks (a table made by an earlier release); its description,
    for more checks."""
    table = client.describe_table(TableName=spec.name)["Table"]
    ttl = client.describe_time_to_live(TableName=spec.name).get("TimeToLiveDescription", {})
    changes = plan_upgrade(spec, table, ttl)  # refuses a TTL or stream it cannot use
    click.echo(
        f"table {spec.name} already exists, checked: key {shown(spec.partition_key)} (S)", err=err
    )
    for change in changes:
        click.echo(
            f"warning: table {spec.name} needs: {change} (`xor-ack table upgrade` does it)",
            err=True,
        )
    return table


def _say_unapplied(ctx: click.Context, name: str, table: Any) -> None:
    """Warn of the capacity options given that an existing table was not changed to."""
    mode = table.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED")
    throughput = table.get("ProvisionedThroughput", {})
    has = {
        "billing_mode": mode,
        "read_capacity": throughput.get("ReadCapacityUnits"),
        "write_capacity": throughput.get("WriteCapacityUnits"),
    }
    for option, current in has.items():
        given = ctx.params[option]
        source = ctx.get_parameter_source(option)
        if source is click.core.ParameterSource.COMMANDLINE and given != current:
            flag = "--" + option.replace("_", "-")
            click.echo(
                f"warning: table {name} is left as it is ({mode}"
                + ("" if option == "billing_mode" else f", {option.replace('_', ' ')} {current}")
                + f"): {flag} {given} applies to a new table only; table create changes no "
                "existing table",
                err=True,
            )


@table.command("upgrade")
@seconds_option(
    "--timeout", "Seconds to wait for each new index to be ACTIVE (DynamoDB backfills it).", 3600.0
)
@click.pass_context
def table_upgrade(ctx: click.Context, timeout: float) -> None:
    """Add the stream, the inventory indexes and TTL to a table made before them.

    One change at a time (DynamoDB builds one index at a time), waiting for each
    index to be ACTIVE.  Idempotent: an up-to-date table is left as it is, and an
    interrupted upgrade resumes.  A table whose stream has another view type, or
    that does not look like a chains table, is refused, with nothing changed.
    Chains written before the upgrade are not in the inventory (they carry no
    index keys); they expire by their TTL.

    \b
    Example:
      xor-ack table upgrade --table my-chains
    """
    settings = _settings(ctx)
    spec = settings.spec()

    def progress(line: str) -> None:
        click.echo(f"table {spec.name}: {line}", err=True)

    changes = upgrade_table(settings.client(), spec, timeout=timeout, progress=progress)
    if not changes:
        click.echo(f"table {spec.name} is up to date: nothing changed")
        return
    for change in changes:
        click.echo(f"table {spec.name}: {change}: done")
    click.echo(f"table {spec.name} upgraded: {len(changes)} change(s)")


@table.command("describe")
@json_option()
@click.pass_context
def table_describe(ctx: click.Context, as_json: bool) -> None:
    """Show the table's key, status, capacity, TTL and size.

    \b
    Example:
      xor-ack table describe --table my-chains --json
    """
    settings = _settings(ctx)
    info = describe_table_info(settings.client(), settings.table)
    if as_json:
        click.echo(json.dumps(info.as_dict(), indent=2))
        return
    ttl = f"{info.ttl_status} ({info.ttl_attribute})" if info.ttl_attribute else info.ttl_status
    capacity = info.billing_mode
    if info.billing_mode == "PROVISIONED":
        capacity += f" (read {info.read_capacity}, write {info.write_capacity})"
    _echo_pairs(
        [
            ("table", info.name),
            ("arn", info.arn or "-"),
            ("status", info.status),
            ("key", _key_line(info)),
            ("billing", capacity),
            ("ttl", ttl),
            ("deletion protection", "on" if info.deletion_protection else "off"),
            ("encryption", info.sse_status or "AWS owned key"),
            ("stream", _stream_line(info)),
            ("indexes", _indexes_line(info)),
            ("items", f"{info.item_count} (~{info.size_bytes} bytes, updated every ~6 h on AWS)"),
        ]
    )
    if not info.keyed_as_chains:  # no option nor upgrade makes it a chains table
        click.echo(
            f"warning: the table's key is {_key_line(info)}; a chains table's is a partition"
            f" key of type {KEY_TYPE} alone: this table cannot hold chains (`xor-ack table"
            " create` makes one; name it with --table)",
            err=True,
        )
        return
    if info.partition_key != settings.partition_key:
        click.echo(
            f"warning: the partition key is {shown(info.partition_key)}, not "
            f"{shown(settings.partition_key)}: pass --partition-key {argument(info.partition_key)}",
            err=True,
        )
    # what `table upgrade` adds, in its order (an UNKNOWN TTL status is no sign either way)
    lacks = [f"TTL on {TTL_ATTRIBUTE}"] if info.ttl_status in ("DISABLED", "DISABLING") else []
    lacks += [] if info.stream_view else ["stream"]
    lacks += [f"index {name}" for name in INDEXES if name not in info.indexes]
    if lacks:
        click.echo(f"warning: the table has no {' and no '.join(lacks)}: {_UPGRADE_HINT}", err=True)
    if info.ttl_attribute not in (None, TTL_ATTRIBUTE):
        click.echo(
            f"warning: TTL is on {info.ttl_attribute}, the clients expire chains via "
            f"{TTL_ATTRIBUTE}",
            err=True,
        )


def _key_line(info: TableInfo) -> str:
    """The table's key as `table describe` shows it: the partition key, the sort key."""
    line = f"{shown(info.partition_key)} ({info.partition_key_type})"
    if info.sort_key is not None:
        line += f", sort key {shown(info.sort_key)} ({info.sort_key_type})"
    return line


@table.command("delete")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait until it is gone.")
@click.pass_context
def table_delete(ctx: click.Context, yes: bool, wait: bool) -> None:
    """Delete the chains table and every chain in it.

    Only a table with the key and the inventory indexes `table create` makes
    is deleted; any other table is refused, with nothing deleted.

    \b
    Example:
      xor-ack table delete --table my-chains --yes
    """
    settings = _settings(ctx)
    client = settings.client()
    check_deletable(client.describe_table(TableName=settings.table)["Table"])  # before asking
    if not yes:
        try:
            sure = click.confirm(f"Delete table {settings.table} and every chain in it?")
        except click.Abort:  # no answer to read (stdin closed, e.g. piped from nothing)
            raise UserError(
                f"table delete asks before it deletes {settings.table} and got no answer: "
                "nothing deleted; pass --yes to delete without asking"
            ) from None
        if not sure:
            raise click.Abort()  # "n": nothing deleted
    delete_table(client, settings.table, wait=False)
    if wait:
        try:
            wait_deleted(client, settings.table)
        except KeyboardInterrupt:  # DeleteTable was sent: not "Aborted!", which says nothing
            click.echo(
                f"table {settings.table} is being deleted (DeleteTable was sent; interrupted"
                " while waiting for it to go)",
                err=True,
            )
            sys.exit(130)
        click.echo(f"table {settings.table} deleted")
    else:  # DynamoDB goes on deleting it (DELETING) after the command returns
        click.echo(f"table {settings.table} is being deleted (--no-wait: not waited for)")


def _stream_line(info: TableInfo) -> str:
    if info.stream_view is None:
        return "off"
    return f"{info.stream_view} ({info.stream_arn or '-'})"


def _indexes_line(info: TableInfo) -> str:
    if not info.indexes:
        return "none"
    return ", ".join(f"{name} ({status})" for name, status in sorted(info.indexes.items()))
