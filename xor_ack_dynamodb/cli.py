"""``xor-ack``: the table, a local DynamoDB and chains, from the command line.

::

    xor-ack local start            # DynamoDB Local on 127.0.0.1, detached
    eval "$(xor-ack local start)"  # ... and point this shell at it
    xor-ack table create           # the table the clients expect (TTL on expires_at)
    xor-ack chain create job-1     # a chain with a random stamp, printed
    xor-ack chain stamp job-1 HEX  # XOR a stamp in
    xor-ack chain get job-1

Every command takes ``--endpoint-url``, ``--region``, ``--table`` and
``--partition-key``, before or after the command (``xor-ack --table T chain get X``
is ``xor-ack chain get X --table T``); given in both places, the one after the
command wins.  Otherwise the standard AWS environment counts (``AWS_ENDPOINT_URL_DYNAMODB``,
``AWS_ENDPOINT_URL``, ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, ``AWS_PROFILE``, ...; the
order is in ``_aws``).  A usage error (an empty or invalid option or argument) prints one
``error: ...`` line on stderr and exits 2, before anything is created; a user mistake
(missing table, unreachable endpoint, ...) prints one such line and exits 1.  No command
prints a traceback (``XOR_ACK_DEBUG=1`` shows the one of an unexpected error).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import secrets
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import click
from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from . import _aws
from ._aws import is_loopback as is_loopback  # re-exported for the pipeline's CLI
from .errors import XorAckError
from .item import ChainState
from .local import Backend, ServerState, _answers, server_status, start_detached, stop_detached
from .stamps import DEFAULT_NBYTES, MIN_NBYTES
from .table import (
    DEFAULT_TABLE,
    TTL_ATTRIBUTE,
    InvalidTableSpec,
    TableSpec,
    create_table,
    delete_table,
)
from .table import describe_table as describe_table_info

#: Exit code of ``local status`` when no local DynamoDB runs (LSB "program is not running").
NOT_RUNNING = 3
#: The root group's options that every command also takes after its name.
CONNECTION_OPTIONS = ("endpoint_url", "region", "table", "partition_key")
_REGION = re.compile(r"[a-z0-9][a-z0-9-]*")

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
            return "no AWS region: pass --region or set AWS_REGION (or AWS_DEFAULT_REGION)"
        if type(exc).__name__ == "NoCredentialsError":
            return "no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID"
        return text
    return None


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
        """A boto3 DynamoDB client for these settings (made once; see ``_aws``).

        Fails fast by hand: three attempts, not the clients' ten.
        """
        if self._client is None:
            config = _aws.botocore_config(retries={"mode": "standard", "max_attempts": 3})
            self._client = _aws.sync_client(
                endpoint=self.endpoint_url, region_name=self.region, config=config
            )
        return self._client

    def chains(self) -> Any:
        from .sync import SyncXorAckDynamoDB

        return SyncXorAckDynamoDB(self.client(), table=self.table, partition_key=self.partition_key)


# -- the options every command takes, before or after its name ----------------------------


def _check_endpoint(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise click.BadParameter(f"{value!r} is not an http(s) URL, e.g. http://127.0.0.1:8000")
    return value


def _check_region(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not _REGION.fullmatch(value):
        raise click.BadParameter(f"{value!r} is not an AWS region, e.g. us-east-1")
    return value


def _check_spec(**field: str) -> None:
    try:
        TableSpec(**field)  # type: ignore[arg-type]
    except InvalidTableSpec as exc:
        raise click.BadParameter(str(exc)) from exc


def _check_table(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        _check_spec(name=value)
    return value


def _check_key(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        _check_spec(partition_key=value)
    return value


def _connection_options(*, root: bool) -> list[click.Option]:
    """The options of the root group (``root``: with defaults) or of every command (without).

    A command's own value, when given, replaces the root group's (see ``Verb``).
    """
    table: dict[str, Any] = {}
    key: dict[str, Any] = {}
    if root:
        table = {"envvar": "XOR_ACK_TABLE", "default": DEFAULT_TABLE, "show_default": True}
        key = {"envvar": "XOR_ACK_PARTITION_KEY", "default": TableSpec().partition_key}
        key["show_default"] = True
    return [
        click.Option(
            ["--endpoint-url"],
            metavar="URL",
            callback=_check_endpoint,
            help="DynamoDB endpoint, e.g. http://127.0.0.1:8000 "
            "[default: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, else AWS]",
        ),
        click.Option(
            ["--region"],
            metavar="REGION",
            callback=_check_region,
            help="AWS region [default: AWS_REGION, AWS_DEFAULT_REGION, the AWS profile's]",
        ),
        click.Option(
            ["--table"],
            metavar="NAME",
            callback=_check_table,
            help="Table of the chains [env: XOR_ACK_TABLE]"
            if root
            else f"Table of the chains [default: XOR_ACK_TABLE, else {DEFAULT_TABLE}]",
            **table,
        ),
        click.Option(
            ["--partition-key"],
            metavar="NAME",
            callback=_check_key,
            help="Partition key attribute (holds the tag) [env: XOR_ACK_PARTITION_KEY]"
            if root
            else "Partition key attribute (holds the tag) "
            f"[default: XOR_ACK_PARTITION_KEY, else {TableSpec().partition_key}]",
            **key,
        ),
    ]


_AFTER_THE_VERB = (
    "--endpoint-url, --region, --table and --partition-key may come before or after the "
    "command; given in both places, the one after the command wins."
)


class Verb(click.Command):
    """A command that also takes the root group's options after its name; those win."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.extend(_connection_options(root=False))

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        formatter.write_paragraph()
        formatter.write_text(_AFTER_THE_VERB)

    def invoke(self, ctx: click.Context) -> Any:
        settings = ctx.find_object(Settings)
        for name in CONNECTION_OPTIONS:
            value = ctx.params.pop(name, None)
            if value is not None and settings is not None:
                setattr(settings, name, value)
        return super().invoke(ctx)


class Verbs(click.Group):
    """A group of ``Verb`` commands (``table``, ``local``, ``chain``)."""

    command_class = Verb


def _stamp(ctx: click.Context, param: click.Parameter, value: str | None) -> bytes | None:
    """A stamp in hex (``0x`` allowed); empty or not hex is a usage error."""
    if value is None:
        return None
    text = value.strip()
    if text.lower().startswith("0x"):
        text = text[2:]
    try:
        data = bytes.fromhex(text)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not hexadecimal (e.g. 9f86d081884c7d65)") from None
    if not data:
        raise click.BadParameter("a stamp cannot be empty (e.g. 9f86d081884c7d65)")
    return data


def _check_tag(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not value:
        raise click.BadParameter("a tag cannot be empty")
    return value


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

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the CLI: every error one ``error: ...`` line (usage errors exit 2), no traceback."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            click.echo(f"error: {_one_line(exc.format_message())}{hint}", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        except Exception as exc:
            if os.environ.get("XOR_ACK_DEBUG"):
                raise
            click.echo(
                f"error: unexpected {type(exc).__name__}: {_one_line(str(exc))} (a bug: please "
                "report it; XOR_ACK_DEBUG=1 shows the traceback)",
                err=True,
            )
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

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


@click.group(
    cls=XorAckGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    params=_connection_options(root=True),
    epilog=_AFTER_THE_VERB,
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
    """XOR ack chains in DynamoDB: the table, a local DynamoDB, and chains by hand.

    \b
    Example:
      eval "$(xor-ack local start --create-table)"
      xor-ack chain create job-1
    """
    ctx.obj = Settings(endpoint_url, region, table, partition_key)


# -- table ---------------------------------------------------------------------------------


@cli.group(cls=Verbs)
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


# -- local ---------------------------------------------------------------------------------


@cli.group(cls=Verbs)
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
    boto3 and the AWS CLI) at it.  The rest goes to stderr.  A --port that
    is taken is refused (exit 1), and nothing is started.

    \b
    Example:
      eval "$(xor-ack local start --port 8000 --create-table)"
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
    """Say whether the local DynamoDB runs (exit 0) or not (exit 3).

    \b
    Example:
      xor-ack local status
    """
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
    """Stop the local DynamoDB started by `xor-ack local start`.

    \b
    Example:
      xor-ack local stop
    """
    state = stop_detached()
    if state is None:
        click.echo("no local DynamoDB running")
        return
    click.echo(f"stopped {_kind_name(state)} at {state.endpoint_url} (pid {state.pid})")


# -- chain ---------------------------------------------------------------------------------


@cli.group(cls=Verbs)
def chain() -> None:
    """Create, stamp, get, fail or delete chains by hand (hex stamps)."""


@chain.command("create")
@click.argument("tag", callback=_check_tag)
@click.argument("stamp", required=False, callback=_stamp)
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
    ctx: click.Context, tag: str, stamp: bytes | None, nbytes: int, ttl: float | None
) -> None:
    """Start chain TAG with STAMP (hex); a random stamp is made and printed if omitted.

    \b
    Example:
      xor-ack chain create job-1 --ttl 86400 --table my-chains
    """
    value = stamp if stamp is not None else secrets.token_bytes(nbytes)
    result = _settings(ctx).chains().create(tag, value, ttl=ttl)
    click.echo(f"{tag} created, state {result.hex()}")


@chain.command("stamp")
@click.argument("tag", callback=_check_tag)
@click.argument("stamp", callback=_stamp)
@click.option("--token", help="Idempotency token (1-16 bytes): a re-sent stamp applies once.")
@click.pass_context
def chain_stamp(ctx: click.Context, tag: str, stamp: bytes, token: str | None) -> None:
    """XOR STAMP (hex) into chain TAG and print the new state.

    \b
    Example:
      xor-ack chain stamp job-1 9f86d081884c7d659a2feaa0c55ad015 --token worker-1
    """
    result = _settings(ctx).chains().stamp(tag, stamp, token=token)
    click.echo(f"{tag} state {result.hex()} ({'acked' if result.acked else 'pending'})")


@chain.command("get")
@click.argument("tag", callback=_check_tag)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def chain_get(ctx: click.Context, tag: str, as_json: bool) -> None:
    """Show chain TAG: its state, version and times (exit 1 if it does not exist).

    \b
    Example:
      xor-ack chain get job-1 --table my-chains --json
    """
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
@click.argument("tag", callback=_check_tag)
@click.option("--reason", default="failed", show_default=True, help="Why it failed.")
@click.pass_context
def chain_fail(ctx: click.Context, tag: str, reason: str) -> None:
    """Close chain TAG as failed (an acked chain stays acked).

    \b
    Example:
      xor-ack chain fail job-1 --reason "worker lost"
    """
    state = _settings(ctx).chains().fail(tag, reason)
    click.echo(f"{tag} {_state_word(state)}" + (f" ({state.reason})" if state.reason else ""))


@chain.command("delete")
@click.argument("tag", callback=_check_tag)
@click.pass_context
def chain_delete(ctx: click.Context, tag: str) -> None:
    """Delete chain TAG's item.

    \b
    Example:
      xor-ack chain delete job-1
    """
    _settings(ctx).chains().delete(tag)
    click.echo(f"{tag} deleted")


def main() -> None:
    """The ``xor-ack`` console script."""
    cli.main(prog_name="xor-ack")
