"""``xor-ack worker``: run a fleet worker on an SQS queue until SIGTERM."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
from collections.abc import Callable
from typing import Any

import click

from .errors import RefusedUsage
from .options import F, Finite, Settings, Verb, _settings, typed_option, url_option


def _callable(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """``module:function``, imported; a usage error if it is not there or not callable."""
    if value is None:
        return None
    module_name, _, attribute = value.partition(":")
    if not module_name or not attribute:
        raise click.BadParameter(f"{value!r} is not module:function (e.g. myapp.jobs:handle)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise click.BadParameter(f"cannot import {module_name!r}: {exc}") from exc
    except Exception as exc:  # the module itself failed (its settings, a syntax error): the
        # user's to fix, said with its error, not an 'unexpected error' of xor-ack's
        raise click.BadParameter(
            f"cannot import {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    found = getattr(module, attribute, None)
    if not callable(found):
        raise click.BadParameter(f"{module_name} has no function {attribute!r}")
    return found


def function_option(name: str, help: str, *, required: bool = False) -> Callable[[F], F]:
    """An option naming a function as ``module:function`` (``_callable``)."""
    return click.option(
        name, required=required, metavar="MODULE:FUNCTION", callback=_callable, help=help
    )


@click.command("worker", cls=Verb)
@url_option("--queue-url", "The work queue.", required=True)
@function_option(
    "--handler",
    "The function each message's payload goes to; it returns the children's payloads.",
    required=True,
)
@function_option(
    "--continuation",
    "A function (async, or plain returning an awaitable or None) run once per acked chain"
    " with a fleet.Completed.",
)
@url_option(
    "--dead-letter-queue-url",
    "Also drain this queue, failing each message's chain with reason dead-letter.",
)
@url_option(
    "--sqs-endpoint-url",
    "SQS endpoint, e.g. http://127.0.0.1:5000 [default: AWS_ENDPOINT_URL_SQS, else AWS]",
)
@typed_option("--concurrency", click.IntRange(1, 10_000), "Messages handled at once.", 16)
@typed_option(
    "--wait-time",
    click.IntRange(0, 20),
    "Long-poll seconds of each receive (0: short polling, a second's pause when empty).",
    20,
)
@typed_option(
    "--visibility-timeout",
    click.IntRange(1, 43_200),
    "Seconds a received message stays hidden; extended every third of it while working.",
    60,
)
@typed_option(
    "--shutdown-grace",
    Finite(0, 3600),
    "On SIGTERM, seconds the messages in hand may take before they are released.",
    30.0,
)
@typed_option(
    "--token-window",
    click.IntRange(2, 400),
    "Tokens each chain item keeps; every client of the fleet's chains must use the same.",
    64,
)
@click.option("--log-level", type=click.Choice(["debug", "info", "warning"]), default="info")
@click.pass_context
def worker(
    ctx: click.Context,
    queue_url: str,
    handler: Callable[..., Any],
    continuation: Callable[..., Any] | None,
    dead_letter_queue_url: str | None,
    sqs_endpoint_url: str | None,
    concurrency: int,
    wait_time: int,
    visibility_timeout: int,
    shutdown_grace: float,
    token_window: int,
    log_level: str,
) -> None:
    """Run a fleet worker: handle messages of an SQS queue until SIGTERM or SIGINT.

    Each message's payload goes to the handler; the children it returns are sent
    to the same queue, and the message's stamp lands once (docs/fleet.md).  A queue or
    a chains table it cannot reach at start is one error line, exit 1.

    \b
    Example:
      xor-ack worker --queue-url https://sqs.us-east-1.amazonaws.com/123/work \\
        --handler myapp.jobs:handle --continuation myapp.jobs:done
    """
    if dead_letter_queue_url == queue_url:
        raise RefusedUsage("--dead-letter-queue-url must differ from --queue-url")
    settings = _settings(ctx)
    queues = {"--queue-url": queue_url, "--dead-letter-queue-url": dead_letter_queue_url}
    asyncio.run(_check_reachable(settings, sqs_endpoint_url, queues))
    logging.basicConfig(level=log_level.upper(), format="%(message)s")
    if log_level != "debug":  # botocore's own info lines ("Found credentials in ..."): noise
        for library in ("botocore", "aiobotocore"):
            logging.getLogger(library).setLevel(logging.WARNING)
    stats = asyncio.run(
        _run(
            settings,
            queue_url=queue_url,
            handler=handler,
            continuation=continuation,
            dead_letter_queue_url=dead_letter_queue_url,
            sqs_endpoint_url=sqs_endpoint_url,
            concurrency=concurrency,
            wait_time=wait_time,
            visibility_timeout=visibility_timeout,
            shutdown_grace=shutdown_grace,
            token_window=token_window,
        )
    )
    click.echo(json.dumps({"event": "stopped", **stats}, sort_keys=True))


#: The key the start-up check reads (one GetItem; whether a chain has it does not matter).
PROBE_TAG = "xor-ack-worker-start"


async def _check_reachable(
    settings: Settings, sqs_endpoint_url: str | None, queues: dict[str, str | None]
) -> None:
    """Before the first poll, each service the worker needs answers, or is said to be down.

    The worker's loops report and retry every error, so a queue or a table out of reach
    would otherwise be a warning a minute, forever.  Each queue: ``SqsSender.check``
    (GetQueueAttributes), its ``QueueUnavailable`` said with the option that named it;
    then the chains table: one GetItem, whose error ``explain`` says (DynamoDB's hints).
    A person waits: three attempts each, not the clients' eleven.
    """
    from ..dynamodb.aws import fail_fast_config
    from ..fleet import QueueUnavailable, SqsSender
    from ..fleet.sqs import sqs_client

    where = (
        f"--sqs-endpoint-url {sqs_endpoint_url}"
        if sqs_endpoint_url
        else ("AWS_ENDPOINT_URL_SQS, else AWS (--sqs-endpoint-url names another)")
    )
    config = fail_fast_config()
    async with sqs_client(
        endpoint=sqs_endpoint_url, region_name=settings.region, config=config
    ) as sqs:
        for option, url in queues.items():
            if url is None:
                continue
            try:
                await SqsSender(sqs, url).check()
            except QueueUnavailable as exc:
                raise QueueUnavailable(f"{exc} (the queue of {option}, through {where})") from exc
    settings.chains().get(PROBE_TAG)


async def _run(
    settings: Any, *, queue_url: str, sqs_endpoint_url: str | None, **options: Any
) -> Any:
    from ..fleet.process import DaemonThreads, install_signal_handlers
    from ..fleet.worker import Worker
    from .queue_fleet import queue_fleet

    # Past --shutdown-grace a plain handler still blocked in its thread must not keep
    # the process: its message was released, and SIGTERM means stop.
    asyncio.get_running_loop().set_default_executor(DaemonThreads())
    stop, now = asyncio.Event(), asyncio.Event()
    install_signal_handlers(stop, now)
    fleet_options = {
        name: options.pop(name) for name in ("handler", "continuation", "token_window")
    }
    async with queue_fleet(settings, queue_url, sqs_endpoint_url, **fleet_options) as (
        sqs,
        fleet,
    ):
        worker = Worker(fleet, sqs, queue_url, **options)
        stats = dict(await worker.run(stop, now))
        stats["dynamodb_writes"] = fleet.write_requests
        stats["marker_writes"] = fleet.markers.writes
        stats["refused_writes"] = fleet.once.conflicts
        stats["coalesced"] = fleet.once.coalesced
        stats["dynamodb_reads"] = fleet.ack.stats.requests["GetItem"] + fleet.markers.reads
        return stats
