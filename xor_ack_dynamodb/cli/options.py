"""The options every command takes, before or after its name, and the settings they make."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, get_args

import click
from click.core import ParameterSource

from ..dynamodb import MAX_TIMEOUT, MIN_TIMEOUT, aws
from ..dynamodb.local.server import Backend
from ..dynamodb.table import DEFAULT_TABLE, InvalidTableSpec, TableSpec
from ..errors import InvalidTag

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ..dynamodb.sync import SyncXorAckDynamoDB

#: The root group's options that every command also takes after its name.
CONNECTION_OPTIONS = ("endpoint_url", "region", "table", "partition_key")
F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Settings:
    """The group's options, shared by every command."""

    endpoint_url: str | None
    region: str | None
    table: str
    partition_key: str
    _client: DynamoDBClient | None = field(default=None, init=False, repr=False)

    def spec(self, **options: Any) -> TableSpec:
        return TableSpec(name=self.table, partition_key=self.partition_key, **options)

    def client(self) -> DynamoDBClient:
        """A boto3 DynamoDB client for these settings (made once; see ``aws``).

        Fails fast by hand (``aws.fail_fast_config``): three attempts, not the clients' eleven.
        """
        if self._client is None:
            self._client = aws.sync_client(
                endpoint=self.endpoint_url, region_name=self.region, config=aws.fail_fast_config()
            )
        return self._client

    def chains(self) -> SyncXorAckDynamoDB:
        from ..dynamodb.sync import SyncXorAckDynamoDB

        return SyncXorAckDynamoDB(self.client(), table=self.table, partition_key=self.partition_key)


def backend_option(name: str, help: str) -> Callable[[F], F]:
    """The option that picks a local DynamoDB server: ``_local``'s ``Backend``, ``auto`` first."""
    return choice_option(name, sorted(get_args(Backend)), help, "auto")


def choice_option(
    name: str, choices: Sequence[str], help: str, default: str | None = None
) -> Callable[[F], F]:
    """An option of one of ``choices``; its default, if any, shown in --help."""
    return typed_option(name, click.Choice(choices), help, default)


class Finite(click.FloatRange):
    """A number in a range, never NaN nor an infinity: every float option of the commands.

    ``click.FloatRange`` lets ``nan`` through (each comparison with it is false) and ``inf``
    through a range without a maximum: a loop that waits ``nan`` seconds does not wait,
    one that waits ``inf`` overflows.  Refused here as any other bad value: exit 2.
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


#: The longest duration an option takes: a chain's ``--ttl`` (the library's limit too).
MAX_SECONDS = 100 * 365 * 86_400.0
#: The longest wait between two rounds of a loop (``sweep --watch``, ...): a day.
MAX_WAIT = 86_400.0

#: A number of seconds above 0 (``--timeout``, ``--ttl``, ...).
SECONDS = Finite(min=0, min_open=True, max=MAX_SECONDS)
#: Seconds between two rounds of a loop, above 0 and at most a day (``sweep --watch``, ...).
WAIT = Finite(min=0, min_open=True, max=MAX_WAIT)
#: The longest deadline of a chain (``--timeout``, ``--idle-timeout``): the library's
#: (a deadline is for work, not archives; ``--ttl`` goes to 100 years).
MAX_DEADLINE = MAX_TIMEOUT
#: A chain's deadline in seconds: above 0 and at most a year.
DEADLINE = Finite(min=MIN_TIMEOUT, max=MAX_DEADLINE)


def json_option(help: str = "Print JSON.") -> Callable[[F], F]:
    """``--json``: print JSON instead of text (the command's parameter is ``as_json``)."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def seconds_option(name: str, help: str, default: float | None = None) -> Callable[[F], F]:
    """An option of ``SECONDS``; its default, if it has one, is shown in --help."""
    return typed_option(name, SECONDS, help, default)


def deadline_option(name: str, help: str) -> Callable[[F], F]:
    """A chain's ``--timeout`` or ``--idle-timeout`` (``DEADLINE``): its range shown in --help."""
    return typed_option(name, DEADLINE, help)


def typed_option(
    name: str, kind: click.ParamType[Any], help: str, default: float | str | None = None
) -> Callable[[F], F]:
    """An option of type ``kind`` (a range, a choice); its default, if any, shown in --help."""
    return click.option(
        name, type=kind, default=default, show_default=default is not None, help=help
    )


def url_option(name: str, help: str, *, required: bool = False) -> Callable[[F], F]:
    """An http(s) URL option (``check_endpoint``)."""
    return click.option(name, metavar="URL", required=required, callback=check_endpoint, help=help)


def check_endpoint(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    if not aws.is_endpoint_url(value):
        raise click.BadParameter(f"{value!r} is not an http(s) URL, e.g. http://127.0.0.1:8000")
    return value


def check_region(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not aws.is_region(value):
        raise click.BadParameter(f"{value!r} is not an AWS region, e.g. us-east-1")
    return value


def _check_spec(ctx: click.Context, param: click.Parameter, **field: str) -> None:
    """A usage error unless ``field`` makes a table spec; one read from the environment
    (every command reads it, whether it uses it or not) is named as that variable."""
    try:
        TableSpec(**field)  # type: ignore[arg-type]
    except InvalidTableSpec as exc:
        envvar = getattr(param, "envvar", None)
        if param.name and ctx.get_parameter_source(param.name) is ParameterSource.ENVIRONMENT:
            raise click.BadParameter(
                f"{exc}; unset {envvar} or export a valid one",
                param_hint=f"{envvar} (from the environment)",
            ) from exc
        raise click.BadParameter(str(exc)) from exc


#: ``ctx.meta`` key: the root options whose default stood in for an empty variable.
_EMPTY_ENV = "xor_ack.empty_env"


def _refuse_empty_env(ctx: click.Context, param: click.Parameter) -> None:
    """Click takes a variable set to "" for one not set, and the default applies: an
    ``XOR_ACK_TABLE="$T"`` with ``T`` unset acted on the default table.  Noted here, and
    refused by :func:`refuse_empty_env` once the verb's own options are known (its own
    ``--table`` wins over the variable)."""
    envvar = getattr(param, "envvar", None)
    if (
        isinstance(envvar, str)
        and os.environ.get(envvar) == ""
        and param.name
        and ctx.get_parameter_source(param.name) is ParameterSource.DEFAULT
    ):
        ctx.meta.setdefault(_EMPTY_ENV, {})[param.name] = envvar


def refuse_empty_env(ctx: click.Context, given: dict[str, Any]) -> None:
    """A usage error for a table option the verb did not give (``given``: its own values)
    whose default stands in for an empty variable."""
    for name, envvar in ctx.meta.get(_EMPTY_ENV, {}).items():
        if given.get(name) is None:
            raise click.BadParameter(
                f"{envvar} is set but empty; unset it or export a value",
                param_hint=f"{envvar} (from the environment)",
            )


def check_table(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    _refuse_empty_env(ctx, param)
    if value is not None:
        _check_spec(ctx, param, name=value)
    return value


def check_tag(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A TAG argument: a usage error unless it is a tag (the library's rule: 1 to 2,048
    bytes of UTF-8), before anything is sent."""
    if not value:
        raise click.BadParameter("a tag cannot be empty")
    try:
        return InvalidTag.check(value)
    except InvalidTag as exc:
        raise click.BadParameter(str(exc)) from exc


def check_key(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    _refuse_empty_env(ctx, param)
    if value is not None:
        _check_spec(ctx, param, partition_key=value)
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
            callback=check_endpoint,
            help="DynamoDB endpoint, e.g. http://127.0.0.1:8000 "
            "[default: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, else AWS]",
        ),
        click.Option(
            ["--region"],
            metavar="REGION",
            callback=check_region,
            help="AWS region [default: AWS_REGION, AWS_DEFAULT_REGION, the AWS profile's]",
        ),
        click.Option(
            ["--table"],
            metavar="NAME",
            callback=check_table,
            help="Table of the chains [env: XOR_ACK_TABLE]"
            if root
            else f"Table of the chains [default: XOR_ACK_TABLE, else {DEFAULT_TABLE}]",
            **table,
        ),
        click.Option(
            ["--partition-key"],
            metavar="NAME",
            callback=check_key,
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

    #: Whether the table's options matter to it (``local``'s commands: no table of yours).
    uses_table = True

    def invoke(self, ctx: click.Context) -> Any:
        settings = ctx.find_object(Settings)
        if self.uses_table:
            refuse_empty_env(ctx, ctx.params)
        for name in CONNECTION_OPTIONS:
            value = ctx.params.pop(name, None)
            if value is not None and settings is not None:
                setattr(settings, name, value)
        return super().invoke(ctx)


class Verbs(click.Group):
    """A group of ``Verb`` commands (``table``, ``local``, ``chain``)."""

    command_class = Verb


def _settings(ctx: click.Context) -> Settings:
    settings = ctx.find_object(Settings)
    if settings is None:  # pragma: no cover - the root group always sets it
        raise RuntimeError("xor-ack settings missing")
    return settings
