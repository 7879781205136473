"""``xor-ack``: the table, a local DynamoDB and chains, from the command line.

::

    xor-ack local start            # DynamoDB Local on 127.0.0.1, detached
    eval "$(xor-ack local start)"  # ... and point this shell at it
    xor-ack table create           # the table the clients expect (TTL on expires_at)
    xor-ack chain create job-1     # a chain with a random stamp, printed
    xor-ack chain stamp job-1 HEX  # XOR a stamp in
    xor-ack chain get job-1

Every command that talks to DynamoDB takes ``--endpoint-url``, ``--region``,
``--table`` and ``--partition-key`` (before the command) and otherwise follows
the standard AWS environment (``AWS_ENDPOINT_URL_DYNAMODB``, ``AWS_ENDPOINT_URL``,
``AWS_REGION`` / ``AWS_DEFAULT_REGION``, ``AWS_PROFILE``, ...).  A user mistake
(missing table, bad stamp, unreachable endpoint, ...) prints one ``error: ...``
line on stderr and exits 1; usage errors exit 2.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import click
from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from .errors import XorAckError
from .item import ChainState
from .local import Backend, ServerState, _answers, server_status, start_detached, stop_detached
from .stamps import DEFAULT_NBYTES, MIN_NBYTES
from .table import DEFAULT_TABLE, TTL_ATTRIBUTE, TableSpec, create_table, delete_table
from .table import describe_table as describe_table_info

#: Exit code of ``local status`` when no local DynamoDB runs (LSB "program is not running").
NOT_RUNNING = 3
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")

# Commands that live in modules with heavy imports (PySpark): listed in the help
# with their summary, imported only when invoked.
_LAZY_COMMANDS: dict[str, tuple[str, str, str]] = {
    "wordcount": (
        "xor_ack_dynamodb.pipeline.cli",
        "wordcount",
        "Count words with PySpark, every file tracked by an XOR chain.",
    ),
    "wordcount-sample": (
        "xor_ack_dynamodb.pipeline.cli",
        "wordcount_sample",
        "Write a deterministic sample corpus for `xor-ack wordcount`.",
    ),
}


class UserError(click.ClickException):
    """A mistake the user can fix: one ``error: ...`` line on stderr, exit 1."""

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=file is None, file=file)


def _one_line(text: str) -> str:
    return "; ".join(part.strip() for part in text.strip().splitlines() if part.strip())


def explain(exc: BaseException) -> str | None:
    """The one-line message for an error a user can act on, or None for a bug."""
    if isinstance(exc, XorAckError):
        return f"{exc.code}: {_one_line(str(exc))}"
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "ClientError"))
        message = _one_line(str(error.get("Message", "")) or str(exc))
        hint = ""
        if code == "ResourceNotFoundException":
            hint = " (create the table with `xor-ack table create`, or pass --table)"
        elif code in ("UnrecognizedClientException", "InvalidSignatureException"):
            hint = " (check the AWS credentials)"
        return f"{code}: {message}{hint}"
    if isinstance(exc, ParamValidationError):
        return _one_line(str(exc))
    if isinstance(exc, BotoCoreError):
        text = _one_line(str(exc))
        if "Could not connect to the endpoint URL" in text:
            return f"{text} (is it running? `xor-ack local start` starts one)"
        if type(exc).__name__ == "NoRegionError":
            return "no AWS region: pass --region or set AWS_REGION"
        if type(exc).__name__ == "NoCredentialsError":
            return "no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID"
        return text
    return None


def _effective_endpoint(endpoint_url: str | None) -> str | None:
    return (
        endpoint_url
        or os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")
        or os.environ.get("AWS_ENDPOINT_URL")
        or None
    )


def is_loopback(endpoint_url: str | None) -> bool:
    if not endpoint_url:
        return False
    return (urlsplit(endpoint_url).hostname or "") in _LOOPBACK


@dataclass
class Settings:
    """The group's options, shared by every command."""

    endpoint_url: str | None
    region: str | None
    table: str
    partition_key: str
    _client: Any = field(default=None, init=False, repr=False)

    def spec(self, **options: Any) -> TableSpec:
        return TableSpec(name=self.table, partition_key=self.partition_key, **options)

    def client(self) -> Any:
        """A boto3 DynamoDB client for these settings (made once).

        A loopback endpoint (DynamoDB Local, moto) accepts any credentials and
        region: when the environment names none, dummy ones are used so that
        ``xor-ack local start`` followed by ``xor-ack table create`` just works.
        """
        if self._client is None:
            import boto3

            from .retry import botocore_config

            endpoint = _effective_endpoint(self.endpoint_url)
            session = boto3.session.Session(region_name=self.region)
            options: dict[str, Any] = {}
            if is_loopback(endpoint):
                if session.region_name is None:
                    options["region_name"] = "us-east-1"
                if not os.environ.get("AWS_ACCESS_KEY_ID") and not os.environ.get("AWS_PROFILE"):
                    options["aws_access_key_id"] = "local"
                    options["aws_secret_access_key"] = "local"
            # Fail fast by hand: three attempts, not the clients' ten.
            config = botocore_config(retries={"mode": "standard", "max_attempts": 3})
            self._client = session.client(
                "dynamodb", endpoint_url=self.endpoint_url, config=config, **options
            )
        return self._client

    def chains(self) -> Any:
        from .sync import SyncXorAckDynamoDB

        return SyncXorAckDynamoDB(self.client(), table=self.table, partition_key=self.partition_key)


class XorAckGroup(click.Group):
    """The root group: lazy commands, and user errors as one line."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        lazy = [name for name, (module, _, _) in _LAZY_COMMANDS.items() if _module_exists(module)]
        return sorted([*super().list_commands(ctx), *lazy])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in _LAZY_COMMANDS:
            return command
        module_name, attribute, _ = _LAZY_COMMANDS[cmd_name]
        if not _module_exists(module_name):
            return None
        loaded = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(loaded, click.Command):
            raise TypeError(f"{module_name}.{attribute} is not a click command")
        return loaded

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows: list[tuple[str, str]] = []
        limit = formatter.width - 6 - max((len(n) for n in self.list_commands(ctx)), default=0)
        for name in self.list_commands(ctx):
            if name in _LAZY_COMMANDS and name not in self.commands:
                rows.append((name, _LAZY_COMMANDS[name][2]))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (XorAckError, ClientError, BotoCoreError) as exc:
            message = explain(exc)
            if message is None:  # pragma: no cover - every branch of explain returns
                raise
            raise UserError(message) from exc


def _module_exists(name: str) -> bool:
    """True if ``name`` can be imported, without importing it or its package."""
    package, _, leaf = name.rpartition(".")
    try:
        spec = importlib.util.find_spec(package.rpartition(".")[0] or package)
        parent = importlib.util.find_spec(package) if spec is not None else None
    except (ImportError, ValueError):
        return False
    if parent is None or not parent.submodule_search_locations:
        return False
    return any(
        (Path(location) / f"{leaf}.py").is_file() or (Path(location) / leaf).is_dir()
        for location in parent.submodule_search_locations
    )


def _settings(ctx: click.Context) -> Settings:
    settings = ctx.find_object(Settings)
    if settings is None:  # pragma: no cover - the root group always sets it
        raise RuntimeError("xor-ack settings missing")
    return settings


def _parse_hex(value: str, what: str) -> bytes:
    text = value.strip()
    if text.lower().startswith("0x"):
        text = text[2:]
    try:
        data = bytes.fromhex(text)
    except ValueError as exc:
        raise UserError(f"{what} {value!r} is not hexadecimal (e.g. 9f86d081884c7d65)") from exc
    if not data:
        raise UserError(f"{what} is empty")
    return data


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _state_word(state: ChainState) -> str:
    if state.acked:
        return "acked"
    if state.failed:
        return "failed"
    return "pending"


def _state_dict(state: ChainState) -> dict[str, Any]:
    return {
        "tag": state.tag,
        "stamp": state.stamp.hex(),
        "state": _state_word(state),
        "acked": state.acked,
        "failed": state.failed,
        "reason": state.reason,
        "chain_id": state.chain_id.hex(),
        "version": state.version,
        "tokens": len(state.tokens),
        "created_at": state.created_at,
        "updated_at": state.updated_at,
        "acked_at": state.acked_at,
        "failed_at": state.failed_at,
        "expires_at": state.expires_at,
    }


def _echo_pairs(pairs: list[tuple[str, object]]) -> None:
    width = max(len(key) for key, _ in pairs)
    for key, value in pairs:
        click.echo(f"{key + ':':<{width + 1}} {value}")


# -- the root group ------------------------------------------------------------------------


@click.group(cls=XorAckGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--endpoint-url",
    metavar="URL",
    help="DynamoDB endpoint, e.g. http://127.0.0.1:8000 "
    "[default: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, else AWS]",
)
@click.option(
    "--region", metavar="REGION", help="AWS region [default: AWS_REGION / AWS_DEFAULT_REGION]"
)
@click.option(
    "--table",
    envvar="XOR_ACK_TABLE",
    default=DEFAULT_TABLE,
    show_default=True,
    help="Table of the chains [env: XOR_ACK_TABLE]",
)
@click.option(
    "--partition-key",
    envvar="XOR_ACK_PARTITION_KEY",
    default=TableSpec().partition_key,
    show_default=True,
    help="Partition key attribute (holds the tag) [env: XOR_ACK_PARTITION_KEY]",
)
@click.version_option(package_name="xor-ack-dynamodb", prog_name="xor-ack")
@click.pass_context
def cli(
    ctx: click.Context,
    endpoint_url: str | None,
    region: str | None,
    table: str,
    partition_key: str,
) -> None:
    """XOR ack chains in DynamoDB: the table, a local DynamoDB, and chains by hand."""
    ctx.obj = Settings(endpoint_url, region, table, partition_key)


# -- table ---------------------------------------------------------------------------------


@cli.group()
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
    """Show the table's key, status, capacity, TTL and size."""
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
    """Delete the table and every chain in it."""
    settings = _settings(ctx)
    if not yes:
        click.confirm(f"Delete table {settings.table} and every chain in it?", abort=True)
    delete_table(settings.client(), settings.table, wait=wait)
    click.echo(f"table {settings.table} deleted")


# -- local ---------------------------------------------------------------------------------


@cli.group()
def local() -> None:
    """Run DynamoDB Local on 127.0.0.1 without Docker.

    Falls back to moto's server, and says so, where Java 17 or npm is missing.
    """


@local.command("start")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="[default: a free port]")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the tables in this directory across restarts.",
)
@click.option("--in-memory", is_flag=True, help="Keep the tables in memory (the default).")
@click.option(
    "--backend",
    type=click.Choice(["auto", "dynamodb-local", "moto"]),
    default="auto",
    show_default=True,
    help="auto: DynamoDB Local, or moto's server where Java 17 or npm is missing.",
)
@click.option(
    "--create-table", "with_table", is_flag=True, help="Also create the table (see --table)."
)
@click.option("--timeout", type=float, default=60.0, show_default=True, help="Startup timeout (s).")
@click.pass_context
def local_start(
    ctx: click.Context,
    port: int,
    data_dir: Path | None,
    in_memory: bool,
    backend: Backend,
    with_table: bool,
    timeout: float,
) -> None:
    """Start a local DynamoDB in the background and print its endpoint.

    Stdout is one line, `export AWS_ENDPOINT_URL_DYNAMODB=...`, so that
    `eval "$(xor-ack local start)"` points this shell (and the clients,
    boto3 and the AWS CLI) at it.  The rest goes to stderr.
    """
    if in_memory and data_dir is not None:
        raise click.UsageError("--in-memory and --data-dir exclude each other")
    state = start_detached(backend=backend, port=port, data_dir=data_dir, startup_timeout=timeout)
    where = f"data in {state.data_dir}" if state.data_dir else "in memory"
    click.echo(
        f"{_kind_name(state)} running at {state.endpoint_url} (pid {state.pid}, {where}); "
        "stop it with `xor-ack local stop`",
        err=True,
    )
    if with_table:
        settings = _settings(ctx)
        spec = settings.spec()
        at_local = Settings(state.endpoint_url, settings.region, spec.name, spec.partition_key)
        create_table(at_local.client(), spec)
        click.echo(
            f"table {spec.name} ready (key {spec.partition_key}, TTL on {TTL_ATTRIBUTE})", err=True
        )
    click.echo(f"export AWS_ENDPOINT_URL_DYNAMODB={state.endpoint_url}")


def _kind_name(state: ServerState) -> str:
    return "DynamoDB Local" if state.kind == "dynamodb-local" else "moto server (test double)"


@local.command("status")
def local_status() -> None:
    """Say whether the local DynamoDB runs (exit 0) or not (exit 3)."""
    state = server_status()
    if state is None:
        click.echo("no local DynamoDB running (start one with `xor-ack local start`)")
        sys.exit(NOT_RUNNING)
    answering = _answers(state.endpoint_url)
    _echo_pairs(
        [
            ("server", _kind_name(state)),
            ("endpoint", state.endpoint_url),
            ("pid", state.pid),
            ("data", state.data_dir or "in memory"),
            ("up since", _when(state.started_at)),
            ("answering", "yes" if answering else "no"),
            ("log", state.log_file),
        ]
    )


@local.command("stop")
def local_stop() -> None:
    """Stop the local DynamoDB started by `xor-ack local start`."""
    state = stop_detached()
    if state is None:
        click.echo("no local DynamoDB running")
        return
    click.echo(f"stopped {_kind_name(state)} at {state.endpoint_url} (pid {state.pid})")


# -- chain ---------------------------------------------------------------------------------


@cli.group()
def chain() -> None:
    """Create, stamp, get, fail or delete chains by hand (hex stamps)."""


@chain.command("create")
@click.argument("tag")
@click.argument("stamp", required=False)
@click.option(
    "--bytes",
    "nbytes",
    type=click.IntRange(min=MIN_NBYTES),
    default=DEFAULT_NBYTES,
    show_default=True,
    help="Size of the random stamp made when STAMP is omitted.",
)
@click.option("--ttl", type=click.FloatRange(min=0, min_open=True), help="Expire after SECONDS.")
@click.pass_context
def chain_create(
    ctx: click.Context, tag: str, stamp: str | None, nbytes: int, ttl: float | None
) -> None:
    """Start chain TAG with STAMP (hex); a random stamp is made and printed if omitted."""
    value = _parse_hex(stamp, "stamp") if stamp is not None else secrets.token_bytes(nbytes)
    result = _settings(ctx).chains().create(tag, value, ttl=ttl)
    click.echo(f"{tag} created, state {result.hex()}")


@chain.command("stamp")
@click.argument("tag")
@click.argument("stamp")
@click.option("--token", help="Idempotency token (1-16 bytes): a re-sent stamp applies once.")
@click.pass_context
def chain_stamp(ctx: click.Context, tag: str, stamp: str, token: str | None) -> None:
    """XOR STAMP (hex) into chain TAG and print the new state."""
    result = _settings(ctx).chains().stamp(tag, _parse_hex(stamp, "stamp"), token=token)
    click.echo(f"{tag} state {result.hex()} ({'acked' if result.acked else 'pending'})")


@chain.command("get")
@click.argument("tag")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def chain_get(ctx: click.Context, tag: str, as_json: bool) -> None:
    """Show chain TAG: its state, version and times (exit 1 if it does not exist)."""
    state = _settings(ctx).chains().get(tag)
    if state is None:
        raise UserError(f'"{tag}" does not exist (never created, deleted or expired)')
    if as_json:
        click.echo(json.dumps(_state_dict(state), indent=2))
        return
    pairs: list[tuple[str, object]] = [
        ("tag", state.tag),
        ("state", _state_word(state) + (f" ({state.reason})" if state.reason else "")),
        ("stamp", state.stamp.hex()),
        ("version", state.version),
        ("created", _when(state.created_at)),
        ("updated", _when(state.updated_at)),
    ]
    if state.acked_at is not None:
        pairs.append(("acked", _when(state.acked_at)))
    if state.failed_at is not None:
        pairs.append(("failed", _when(state.failed_at)))
    pairs.append(("expires", _when(state.expires_at)))
    _echo_pairs(pairs)


@chain.command("fail")
@click.argument("tag")
@click.option("--reason", default="failed", show_default=True, help="Why it failed.")
@click.pass_context
def chain_fail(ctx: click.Context, tag: str, reason: str) -> None:
    """Close chain TAG as failed (an acked chain stays acked)."""
    state = _settings(ctx).chains().fail(tag, reason)
    click.echo(f"{tag} {_state_word(state)}" + (f" ({state.reason})" if state.reason else ""))


@chain.command("delete")
@click.argument("tag")
@click.pass_context
def chain_delete(ctx: click.Context, tag: str) -> None:
    """Delete chain TAG's item."""
    _settings(ctx).chains().delete(tag)
    click.echo(f"{tag} deleted")


def main() -> None:
    """The ``xor-ack`` console script."""
    cli.main(prog_name="xor-ack")
