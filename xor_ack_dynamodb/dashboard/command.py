"""``xor-ack dashboard``: serve the dashboard of one table with uvicorn, on 127.0.0.1.

The command binds its socket itself (so ``--port 0`` picks a free port and the link it
prints is right), checks that the table exists before it serves, prints the link with
the token on stdout (one line: scripts read it) and the rest on stderr, and stops on
Ctrl-C or SIGTERM, ending the live streams of open pages at once.  It imports Starlette,
uvicorn and Jinja2 only when it runs, so ``--help`` works without the extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import signal
import socket
import sys
import threading
import webbrowser
from collections.abc import Iterator
from typing import IO, Any

import click

from xor_ack_dynamodb.cli.options import (
    WAIT,
    check_key,
    check_region,
    check_table,
    refuse_empty_env,
    url_option,
)
from xor_ack_dynamodb.table import DEFAULT_TABLE, TableSpec

#: The environment variable of --token.
TOKEN_ENV = "XOR_ACK_DASHBOARD_TOKEN"
DEFAULT_PORT = 8321
_EXTRA = ("starlette", "uvicorn", "jinja2")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Refused(click.ClickException):
    """A dashboard that cannot start: one ``error: ...`` line on stderr, exit 1, as every
    ``xor-ack`` verb says it."""

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=file is None, file=file)


def _root(ctx: click.Context, name: str, given: Any, default: Any) -> Any:
    """The option as given after the verb, else as given to ``xor-ack`` itself."""
    if given is not None:
        return given
    found = getattr(ctx.find_root().obj, name, None)
    return default if found is None else found


@click.command("dashboard")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to serve on; any but loopback needs --token.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to serve on (0: a free one).",
)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    help=f"Access token, at least 16 characters [env: {TOKEN_ENV}; default: a random one, "
    "in the printed link].",
)
@click.option(
    "--public-url",
    metavar="URL",
    help="The address people open when a proxy serves the dashboard (it ends TLS): "
    "https://chains.example.com, or with the path the proxy serves it under "
    "(passed on without it).",
)
@click.option("--read-only", is_flag=True, help="Show the chains, offer no actions.")
@click.option("--open", "open_browser", is_flag=True, help="Open the link in a web browser.")
@click.option(
    "--count-every",
    type=WAIT,
    default=5.0,
    show_default=True,
    help="Least seconds between two counts of the indexes.",
)
@url_option(
    "--replay-queue-url",
    "The SQS queue of a fleet's messages: offers a failed fleet job's replay.",
)
@url_option("--sqs-endpoint-url", "SQS endpoint for --replay-queue-url.")
@url_option("--endpoint-url", "DynamoDB endpoint [default: xor-ack's].")
@click.option(
    "--region", metavar="REGION", callback=check_region, help="AWS region [default: xor-ack's]."
)
@click.option(
    "--table",
    metavar="NAME",
    callback=check_table,
    help=f"Table of the chains [default: {DEFAULT_TABLE}].",
)
@click.option(
    "--partition-key",
    metavar="NAME",
    callback=check_key,
    help="Partition key attribute (holds the tag).",
)
@click.pass_context
def dashboard(
    ctx: click.Context,
    host: str,
    port: int,
    token: str | None,
    public_url: str | None,
    read_only: bool,
    open_browser: bool,
    count_every: float,
    replay_queue_url: str | None,
    sqs_endpoint_url: str | None,
    endpoint_url: str | None,
    region: str | None,
    table: str | None,
    partition_key: str | None,
) -> None:
    """Serve a web dashboard of the table's chains (Ctrl-C stops it).

    The overview (open, overdue and failed chains; created, acked, failed, timed out
    and expired over 10 minutes, 3 hours and 24 hours; latency; acks per minute), the
    lists, each chain's page and history, and the actions fail, touch, sweep: live,
    from the table's indexes and its stream.  It prints the link to open, with the
    access token.

    \b
    Example:
      xor-ack dashboard --table xor-ack-chains --open
    """
    missing = [name for name in _EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise Refused(
            f"the dashboard needs {', '.join(missing)}: pip install 'xor-ack-dynamodb[dashboard]'"
        )
    from .config import ConfigError, DashboardConfig, bind_check

    refuse_empty_env(ctx, {"table": table, "partition_key": partition_key})
    spec = TableSpec(
        name=_root(ctx, "table", table, DEFAULT_TABLE),
        partition_key=_root(ctx, "partition_key", partition_key, TableSpec().partition_key),
    )
    endpoint_url = _root(ctx, "endpoint_url", endpoint_url, None)
    region = _root(ctx, "region", region, None)
    try:
        allowed = bind_check(host, token is not None)
        options: dict[str, Any] = {"token": token} if token is not None else {}
        config = DashboardConfig(
            table=spec.name,
            partition_key=spec.partition_key,
            endpoint_url=endpoint_url,
            region_name=region,
            read_only=read_only,
            allowed_hosts=allowed,
            count_every=count_every,
            replay_queue_url=replay_queue_url,
            sqs_endpoint_url=sqs_endpoint_url,
            public_url=public_url,
            **options,
        )
    except ConfigError as exc:
        raise click.UsageError(str(exc).replace("public_url", "--public-url", 1)) from exc
    asyncio.run(_check_table(config))
    if config.replays and config.replay_queue_url:
        asyncio.run(_check_replay_queue(config))
    sock = _bind(host, port)
    _serve(config, sock, open_browser)


async def _check_table(config: Any) -> None:
    """Refuse to serve a table that is not there, or whose key is not the partition key
    given (one line, before anything listens)."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

    from xor_ack_dynamodb import XorAckDynamoDB
    from xor_ack_dynamodb.cli.errors import explain
    from xor_ack_dynamodb.dynamodb.aws import fail_fast_config
    from xor_ack_dynamodb.table import TableMismatch, TableSpec

    where = _where(config)
    async with XorAckDynamoDB.connect(
        table=config.table,
        partition_key=config.partition_key,
        endpoint_url=config.endpoint_url,
        region_name=config.region_name,
        config=fail_fast_config(),  # a server that is down: said in seconds, not a minute
    ) as ack:
        try:
            described = await ack.client.describe_table(TableName=config.table)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ResourceNotFoundException":
                raise Refused(
                    f"table {config.table} does not exist at {where}: name the chains table "
                    f"(--table), or create it (xor-ack --table {config.table} table create)"
                ) from exc
            raise Refused(f"DynamoDB at {where} refused: {exc}") from exc
        except BotoCoreError as exc:
            if isinstance(exc, (NoCredentialsError, NoRegionError)):  # not the network's
                raise Refused(explain(exc) or str(exc)) from exc
            raise Refused(f"DynamoDB at {where} is unreachable: {exc}") from exc
    try:  # another key: every list and count would fail on the index entries it reads
        TableSpec(name=config.table, partition_key=config.partition_key).check(described["Table"])
    except TableMismatch as exc:
        raise Refused(str(exc)) from exc
    await asyncio.to_thread(_check_chains, config, described["Table"], where)


def _check_chains(config: Any, table: Any, where: str) -> None:
    """Refuse a table that holds no chains (a user's own table keyed as the chains are):
    its pages would tell to upgrade it, which ``table upgrade`` refuses.  A table with the
    inventory indexes is one (no request); another (an earlier release's) is sampled once,
    up to ``SAMPLE`` items, and refused only if it has items and none is a chain or a fleet's
    marker (``is_tracking_item``, the rule ``table upgrade`` uses on every item it samples);
    a sample it may not read is no refusal."""
    from botocore.exceptions import BotoCoreError, ClientError

    from xor_ack_dynamodb.dynamodb.aws import fail_fast_config, sync_client
    from xor_ack_dynamodb.dynamodb.ownership import (
        SAMPLE,
        inventory_indexes,
        is_tracking_item,
        partition_key_of,
    )

    if inventory_indexes(table):
        return
    client = sync_client(
        endpoint=config.endpoint_url, region_name=config.region_name, config=fail_fast_config()
    )
    try:
        items = client.scan(TableName=config.table, Limit=SAMPLE).get("Items", [])
    except (BotoCoreError, ClientError):  # no dynamodb:Scan, say: served as before
        return
    finally:
        client.close()
    key = partition_key_of(table)
    if items and not any(is_tracking_item(item, key) for item in items):
        raise Refused(
            f"table {config.table} at {where} holds no chains (none of its first "
            f"{len(items)} items is a chain or a fleet's marker): name the chains "
            "table (--table)"
        )


def _where(config: Any) -> str:
    """The endpoint the dashboard's clients send to, as a line says it (AWS's: "AWS")."""
    from xor_ack_dynamodb.dynamodb.aws import endpoint_url

    return endpoint_url(config.endpoint_url) or "AWS"


async def _check_replay_queue(config: Any) -> None:
    """Build the replays' SQS client and ask for its queue before the link is printed: a
    queue that is not there, or an SQS that is down, is one line (not a server's traceback)."""
    from botocore.exceptions import BotoCoreError, ClientError

    from xor_ack_dynamodb.dynamodb.aws import fail_fast_config
    from xor_ack_dynamodb.fleet import QueueUnavailable, SqsSender, sqs_client

    try:
        async with sqs_client(
            endpoint=config.sqs_endpoint_url,
            region_name=config.region_name,
            config=fail_fast_config(),
        ) as sqs:
            await SqsSender(sqs, config.replay_queue_url).check()
    except QueueUnavailable as exc:
        raise Refused(f"--replay-queue-url: {exc}") from exc
    except (ClientError, BotoCoreError, ValueError) as exc:
        raise Refused(f"--replay-queue-url {config.replay_queue_url}: SQS refused: {exc}") from exc


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise Refused(
            f"cannot serve on {host}:{port} ({exc.strerror}): pick another --port, or --port 0"
        ) from exc
    sock.listen(128)  # requests wait in the backlog until uvicorn accepts them
    return sock


def _has_display() -> bool:
    """A graphical browser can open here (not a text browser taking over the terminal)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _serve(config: Any, sock: socket.socket, open_browser: bool) -> None:
    import uvicorn

    from .service import Dashboard

    dashboard = Dashboard(config)

    stopped_by: list[int] = []

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            stopped_by.append(sig)
            dashboard.live.close()  # open pages' event streams end now, not at the timeout
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            """SIGINT / SIGTERM stop the server, and the command exits 0 (uvicorn's own
            would raise the signal again once stopped)."""
            saved = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
            try:
                yield
            finally:
                for sig, handler in saved.items():
                    signal.signal(sig, handler)

    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    public = config.public
    served = f"http://{shown}:{bound_port}"
    link = dashboard.login_url(served if public is None else str(public))
    where = _where(config)
    click.echo(
        f"xor-ack dashboard: table {config.table} at {where}"
        f"{' (read-only)' if config.read_only else ''}"
        f"{'' if public is None else f'; served on {served} for {public}'}; Ctrl-C stops it. Open:",
        err=True,
    )
    click.echo(link)
    if open_browser and _has_display():
        threading.Timer(0.5, webbrowser.open, args=(link,)).start()
    elif open_browser:
        click.echo("(no display here to open a browser on: open the link above)", err=True)
    server = Server(
        uvicorn.Config(
            dashboard.app,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
            lifespan="on",
            root_path="" if public is None else public.prefix,
        )
    )
    server.run(sockets=[sock])
    if stopped_by:
        click.echo(f"stopped by {signal.Signals(stopped_by[0]).name}", err=True)
