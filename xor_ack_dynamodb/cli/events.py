"""``xor-ack events follow``: tail a table's stream and print its chains' events."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from ..events.follow import arn_of, streams_client
from ..events.follow import follow as follow_stream
from ..lifecycle import ChainEvent
from .errors import _one_line
from .options import Finite, Settings, Verbs, _settings, json_option, typed_option
from .show import shown
from .signals import stop_on_signals


def _stamp_time(seconds: float) -> str:
    """UTC to the millisecond; the number as it is for a time no date is (an item's
    ``acked_at`` another tool wrote in nanoseconds ended the follower with a bare OSError)."""
    try:
        moment = time.gmtime(seconds)
    except (OverflowError, OSError, ValueError):
        return f"{seconds:g}"
    millis = int(seconds * 1000) % 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", moment) + f".{millis:03d}Z"


def event_line(event: ChainEvent) -> str:
    """One line per event: time, kind, tag, what the kind adds, the chain id (``shown``)."""
    fields = event.as_dict()
    extra = [
        f"{name}={_field(name, value)}"
        for name, value in fields.items()
        if name not in ("kind", "id", "tag", "time", "chain_id")
    ]
    chain = [f"chain={fields['chain_id']}"] if fields["chain_id"] else []
    return " ".join([_stamp_time(event.time), f"{event.kind:<9}", shown(event.tag), *extra, *chain])


def _field(name: str, value: object) -> str:
    if name == "latency" and value is not None:
        return f"{value:.3f}s"
    return shown(value) if isinstance(value, str) else str(value)


def streams(settings: Settings) -> tuple[Any, str]:
    """The streams client for these settings and the table's stream ARN.

    ``TableMismatch`` first if the table's key is not the partition key given: its records
    would each read as a corrupt one."""
    description = settings.client().describe_table(TableName=settings.table)["Table"]
    settings.spec().check(description)
    arn = arn_of(description)
    config = settings.client().meta.config
    return streams_client(settings.endpoint_url, settings.region, config), arn


@click.group(cls=Verbs)
def events() -> None:
    """Follow the chain events of a table's stream (created, acked, failed, ...)."""


@events.command("follow")
@click.option("--from-start", is_flag=True, help="Start at the oldest record (24 h), not now.")
@json_option("Print one JSON object per line.")
@typed_option(
    "--interval",
    Finite(min=0.05, max=60),
    "Seconds between polls when the stream is idle.",
    1.0,
)
@typed_option(
    "--count",
    click.IntRange(min=1),
    "Exit after printing this many events (default: until Ctrl-C or SIGTERM).",
)
@click.pass_context
def events_follow(
    ctx: click.Context, from_start: bool, as_json: bool, interval: float, count: int | None
) -> None:
    """Print the events of the table's stream as they come, one line each.

    Reads every shard of the stream (DynamoDB Local or AWS) from now on, or from
    its oldest record with --from-start; Ctrl-C or SIGTERM stops it (exit 0). Says
    "following ARN" on stderr once it reads; a record that is not a chain's
    transition is reported on stderr ("warning: ...") and skipped.

    \b
    Example:
      xor-ack events follow --json --table my-chains
    """
    settings = _settings(ctx)
    client, arn = streams(settings)
    printed = 0
    with stop_on_signals() as stop:
        for _record, decoded in follow_stream(
            client,
            arn,
            from_start=from_start,
            interval=interval,
            stop=stop,
            partition_key=settings.partition_key,
            on_ready=lambda: click.echo(f"following {arn} (Ctrl-C or SIGTERM stops)", err=True),
        ):
            if isinstance(decoded, Exception):
                click.echo(f"warning: {decoded.code}: {_one_line(str(decoded))}", err=True)
                continue
            for event in decoded:
                click.echo(json.dumps(event.as_dict()) if as_json else event_line(event))
                printed += 1
                if count is not None and printed >= count:
                    return
