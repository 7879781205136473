"""``xor-ack submit``: start a fleet job: its chain, then its root message on the work queue."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import click

from ..errors import InvalidTag, InvalidTTL
from ..fleet.markers import check_job_tag
from .errors import ttl_refused
from .options import (
    Verb,
    _settings,
    check_tag,
    deadline_option,
    json_option,
    seconds_option,
    typed_option,
    url_option,
)
from .show import shown


def _job_tag(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """TAG: a tag, and one short enough for a fleet job's markers (``MAX_JOB_TAG_BYTES``)."""
    tag = check_tag(ctx, param, value)
    try:
        check_job_tag(tag)
    except InvalidTag as exc:
        raise click.BadParameter(str(exc)) from exc
    return tag


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON value (Python's json reads it, JSON has none)")


def _payload(ctx: click.Context, param: click.Parameter, value: str) -> Any:
    try:
        return json.loads(value, parse_constant=_no_constant)
    except ValueError as exc:
        raise click.BadParameter(f"PAYLOAD must be JSON, e.g. '[1, 2]': {exc}") from exc
    except RecursionError as exc:  # "[[[[...": json.loads recurses once per level
        raise click.BadParameter("PAYLOAD is nested too deep to read: flatten it") from exc


@click.command("submit", cls=Verb)
@click.argument("tag", callback=_job_tag)
@click.argument("payload", default="null", callback=_payload)
@url_option("--queue-url", "The work queue the workers read.", required=True)
@url_option(
    "--sqs-endpoint-url",
    "SQS endpoint, e.g. http://127.0.0.1:5000 [default: AWS_ENDPOINT_URL_SQS, else AWS]",
)
@deadline_option("--timeout", "Fail the job if it has not completed within SECONDS.")
@deadline_option("--idle-timeout", "Fail the job if SECONDS pass without a message finishing.")
@seconds_option("--ttl", "Delete the chain's item after SECONDS (longer than any deadline).")
@typed_option(
    "--token-window",
    click.IntRange(2, 400),
    "Tokens each chain item keeps: the workers' --token-window (they refuse other messages).",
    64,
)
@json_option("Print the root message as JSON (its envelope).")
@click.pass_context
def submit(
    ctx: click.Context,
    tag: str,
    payload: Any,
    queue_url: str,
    sqs_endpoint_url: str | None,
    timeout: float | None,
    idle_timeout: float | None,
    ttl: float | None,
    token_window: int,
    as_json: bool,
) -> None:
    """Start job TAG: create its chain, then send its root message (PAYLOAD, JSON).

    What `Fleet.submit` does, from a shell: run it again for a job whose root has
    not run yet and the root is sent again (a duplicate, applied once).  The queue
    is checked first: a queue that does not exist, or an SQS that cannot be reached,
    is one error line and no chain is created.

    \b
    Example:
      xor-ack submit job-1 '{"file": "s3://bucket/a.txt"}' --timeout 600 \\
        --queue-url https://sqs.us-east-1.amazonaws.com/123/work
    """
    settings = _settings(ctx)
    lifetime = {"timeout": timeout, "idle_timeout": idle_timeout, "ttl": ttl}
    try:
        root = asyncio.run(
            _submit(settings, tag, payload, queue_url, sqs_endpoint_url, token_window, lifetime)
        )
    except InvalidTTL as exc:  # before the queue is asked, and before the create
        raise ttl_refused(exc) from exc
    if as_json:
        click.echo(root.to_json())
    else:
        click.echo(f"{shown(tag)} submitted: root message {root.message_id} sent to {queue_url}")


def _handles_nothing(message: Any) -> list[Any]:
    """A submitter's fleet handles no message."""
    return []


async def _submit(
    settings: Any,
    tag: str,
    payload: Any,
    queue_url: str,
    sqs_endpoint_url: str | None,
    token_window: int,
    lifetime: dict[str, Any],
) -> Any:
    from ..dynamodb.aws import fail_fast_config
    from .queue_fleet import queue_fleet

    async with queue_fleet(
        settings,
        queue_url,
        sqs_endpoint_url,
        fail_fast_config(),  # a person waits: an SQS that is down is said in seconds
        handler=_handles_nothing,
        token_window=token_window,
    ) as (_, fleet):
        return await fleet.submit(tag, payload, **lifetime)
