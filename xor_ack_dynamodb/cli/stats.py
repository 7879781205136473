"""``xor-ack chain stats``: counts and complete-latency percentiles from the table's stream."""

from __future__ import annotations

import json

import click

from ..events.follow import read
from ..events.stats import Summary
from .events import streams
from .options import Verb, _settings, json_option
from .show import _echo_pairs


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} s"


@click.command("stats", cls=Verb)
@json_option()
@click.pass_context
def chain_stats(ctx: click.Context, as_json: bool) -> None:
    """Count created, acked, failed, timed-out, expired and deleted chains, and give
    the complete latency (create to ack) p50/p90/p99, from the table's stream.

    The stream holds the last 24 hours of writes: the figures cover those.

    \b
    Example:
      xor-ack chain stats --json --table my-chains
    """
    settings = _settings(ctx)
    client, arn = streams(settings)
    summary = Summary()
    for _record, decoded in read(client, arn, partition_key=settings.partition_key):
        if isinstance(decoded, Exception):
            summary.corrupt += 1
        else:
            summary.extend(decoded)
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=2))
        return
    latency = summary.latency()
    pairs: list[tuple[str, object]] = [
        (name, value) for name, value in summary.as_dict().items() if isinstance(value, int)
    ]
    pairs += [(f"latency {name}", _seconds(value)) for name, value in latency.items()]
    _echo_pairs(pairs)
