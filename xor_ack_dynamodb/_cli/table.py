"""``xor-ack table``: create, describe or delete the chains table."""

from __future__ import annotations

import json
from typing import Any

import click

from ..table import TTL_ATTRIBUTE, create_table, delete_table
from ..table import describe_table as describe_table_info
from .options import Verbs, _settings
from .show import _echo_pairs


@click.group(cls=Verbs)
def table() -> None:
    """Create, describe or delete the chains table."""


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
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait until ACTIVE.")
@click.pass_context
def table_create(
    ctx: click.Context, billing_mode: Any, read_capacity: int, write_capacity: int, wait: bool
) -> None:
    """Create the table the clients expect (idempotent; TTL on expires_at).

    An existing table is checked: its key must be the partition key (type S),
    and TTL is turned on if it is off.  For production, prefer the
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
    created = create_table(settings.client(), spec, wait=wait)
    verb = "created" if created else "already exists, checked"
    click.echo(
        f"table {spec.name} {verb}: key {spec.partition_key} (S), TTL on {TTL_ATTRIBUTE}, "
        f"{spec.billing_mode}"
    )


@table.command("describe")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
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
            ("key", f"{info.partition_key} ({info.partition_key_type})"),
            ("billing", capacity),
            ("ttl", ttl),
            ("deletion protection", "on" if info.deletion_protection else "off"),
            ("encryption", info.sse_status or "AWS owned key"),
            ("items", f"{info.item_count} (~{info.size_bytes} bytes, updated every ~6 h on AWS)"),
        ]
    )
    if info.partition_key != settings.partition_key:
        click.echo(
            f"warning: the partition key is {info.partition_key}, not {settings.partition_key}: "
            f"pass --partition-key {info.partition_key}",
            err=True,
        )
    if info.ttl_attribute not in (None, TTL_ATTRIBUTE):
        click.echo(
            f"warning: TTL is on {info.ttl_attribute}, the clients expire chains via "
            f"{TTL_ATTRIBUTE}",
            err=True,
        )


@table.command("delete")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait until it is gone.")
@click.pass_context
def table_delete(ctx: click.Context, yes: bool, wait: bool) -> None:
    """Delete the table and every chain in it.

    \b
    Example:
      xor-ack table delete --table my-chains --yes
    """
    settings = _settings(ctx)
    if not yes:
        click.confirm(f"Delete table {settings.table} and every chain in it?", abort=True)
    delete_table(settings.client(), settings.table, wait=wait)
    click.echo(f"table {settings.table} deleted")
