"""``xor-ack local``: one detached DynamoDB Local (or moto server) on 127.0.0.1."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
from click.core import ParameterSource

from ..dynamodb.aws import is_loopback
from ..dynamodb.local import Backend, ServerState, server_status, start_detached, stop_detached
from ..dynamodb.local.server import _answers
from ..dynamodb.ownership import create_table
from ..dynamodb.table import TTL_ATTRIBUTE
from .options import WAIT, Settings, Verb, Verbs, _settings, backend_option, refuse_empty_env
from .show import _echo_pairs, _when, shown
from .table import say_existing

#: Exit code of ``local status`` when no local DynamoDB runs (LSB "program is not running").
NOT_RUNNING = 3


def _given(ctx: click.Context, name: str) -> str | None:
    """Option ``name``'s value if given on the command line, after the verb or before it."""
    for where in (ctx, ctx.find_root()):
        if where.get_parameter_source(name) is ParameterSource.COMMANDLINE:
            return str(where.params[name])
    return None


#: The connection options only ``local start --create-table`` uses (for its table).
_TABLE_OPTIONS = (
    ("table", "--table"),
    ("partition_key", "--partition-key"),
    ("region", "--region"),
)


class LocalVerb(Verb):
    """A ``local`` command: it talks to no DynamoDB of the user's, so an ``--endpoint-url``
    (before or after its name) is refused, not ignored, before anything starts or stops;
    its --help does not list it.  ``--table``, ``--partition-key`` and ``--region`` are
    refused the same way where no table is made (all but ``start --create-table``); their
    environment variables are not (a shell may set them for the other commands)."""

    uses_table = False  # its environment variables are not refused (above)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.name == "endpoint_url" and isinstance(param, click.Option):
                param.hidden = True

    def invoke(self, ctx: click.Context) -> Any:
        url = _given(ctx, "endpoint_url")
        if url is not None:
            where = f"--endpoint-url is not for `xor-ack local {self.name}`"
            if self.name == "start":
                port = urlsplit(url).port if is_loopback(url) else None
                raise click.UsageError(
                    f"{where}, which starts a server on 127.0.0.1 and prints its URL: "
                    f"pass --port {port or 'N'} to pick its port",
                    ctx,
                )
            raise click.UsageError(
                f"{where}, which acts on the server `xor-ack local start` started, wherever "
                "it listens: leave --endpoint-url out",
                ctx,
            )
        if not (self.name == "start" and ctx.params.get("with_table")):
            for name, flag in _TABLE_OPTIONS:
                if _given(ctx, name) is None:
                    continue
                if self.name == "start":
                    raise click.UsageError(
                        f"{flag} is for the table --create-table makes, and `xor-ack local "
                        f"start` was not given --create-table: add it, or leave {flag} out",
                        ctx,
                    )
                raise click.UsageError(
                    f"{flag} is not for `xor-ack local {self.name}`, which uses no table: "
                    f"leave {flag} out",
                    ctx,
                )
        else:  # the table it makes: not the default one for a variable set but empty
            refuse_empty_env(ctx, {name: _given(ctx, name) for name, _ in _TABLE_OPTIONS})
        return super().invoke(ctx)


class LocalVerbs(Verbs):
    """The ``local`` group: ``LocalVerb`` commands."""

    command_class = LocalVerb


@click.group(cls=LocalVerbs)
def local() -> None:
    """Run DynamoDB Local on 127.0.0.1 without Docker.

    Falls back to moto's server, and says so, where Java 17 or npm is missing.
    """


def _not_empty(value: str | None) -> Path | None:
    """``--data-dir ""`` (a ``"$DATA"`` not set) is refused: as a ``Path`` it is ".", and
    the tables went into the working directory."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("cannot be empty: name the directory that keeps the tables")
    return Path(value)


@local.command("start")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="[default: a free port]")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    callback=lambda _ctx, _param, value: _not_empty(value),
    help="Keep the tables in this directory across restarts.",
)
@click.option("--in-memory", is_flag=True, help="Keep the tables in memory (the default).")
@backend_option(
    "--backend", "auto: DynamoDB Local, or moto's server where Java 17 or npm is missing."
)
@click.option(
    "--create-table", "with_table", is_flag=True, help="Also create the table (see --table)."
)
@click.option("--timeout", type=WAIT, default=60.0, show_default=True, help="Startup timeout (s).")
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
    is taken is refused (exit 1), and nothing is started.  A table that
    --create-table cannot create (a --data-dir may keep one of another key)
    is refused too (exit 1), and the server started for it is stopped again.

    \b
    Example:
      eval "$(xor-ack local start --port 8000 --create-table)"
    """
    if in_memory and data_dir is not None:
        raise click.UsageError("--in-memory and --data-dir exclude each other")
    settings = _settings(ctx)
    spec = settings.spec() if with_table else None  # a bad one: refused before starting
    state = start_detached(backend=backend, port=port, data_dir=data_dir, startup_timeout=timeout)
    where = f"data in {shown(str(state.data_dir))}" if state.data_dir else "in memory"
    run_dir = os.environ.get("XOR_ACK_RUN_DIR")  # the stop must look in the same folder
    stop = (
        "xor-ack local stop"
        if not run_dir
        else f"XOR_ACK_RUN_DIR={shlex.quote(os.path.abspath(run_dir))} xor-ack local stop"
    )
    click.echo(
        f"{_kind_name(state)} running at {state.endpoint_url} (pid {state.pid}, {where}); "
        f"stop it with `{stop}`",
        err=True,
    )
    if spec is not None:
        at_local = Settings(state.endpoint_url, settings.region, spec.name, spec.partition_key)
        try:
            client = at_local.client()
            created = create_table(client, spec)
            if not created:  # kept in --data-dir: checked, and what it lacks is said
                say_existing(client, spec, err=True)  # stdout is for the export line
        except BaseException:
            # a refused table (kept in --data-dir) leaves no server running: the caller
            # gets no export line to point a shell at it, nor a reason to stop it
            stop_detached()
            click.echo(f"stopped the {_kind_name(state)}: the table step failed", err=True)
            raise
        if created:
            click.echo(
                f"table {spec.name} ready (key {shown(spec.partition_key)}, "
                f"TTL on {TTL_ATTRIBUTE})",
                err=True,
            )
    click.echo(f"export AWS_ENDPOINT_URL_DYNAMODB={state.endpoint_url}")


def _running(state: ServerState | None, hint: str = "", code: int = 0) -> ServerState:
    """The server ``state`` tells of; with none, say so (and ``hint``) and exit with ``code``."""
    if state is None:
        click.echo(f"no local DynamoDB running{hint}")
        sys.exit(code)
    return state


def _kind_name(state: ServerState) -> str:
    return "DynamoDB Local" if state.kind == "dynamodb-local" else "moto server (test double)"


@local.command("status")
def local_status() -> None:
    """Say whether the local DynamoDB runs (exit 0) or not (exit 3).

    \b
    Example:
      xor-ack local status
    """
    state = _running(server_status(), " (start one with `xor-ack local start`)", NOT_RUNNING)
    answering = _answers(state.endpoint_url)
    _echo_pairs(
        [
            ("server", _kind_name(state)),
            ("endpoint", state.endpoint_url),
            ("pid", state.pid),
            ("data", shown(str(state.data_dir)) if state.data_dir else "in memory"),
            ("up since", _when(state.started_at)),
            ("answering", "yes" if answering else "no"),
            ("log", shown(str(state.log_file))),
        ]
    )


@local.command("stop")
def local_stop() -> None:
    """Stop the local DynamoDB started by `xor-ack local start`.

    \b
    Example:
      xor-ack local stop
    """
    state = _running(stop_detached())
    click.echo(f"stopped {_kind_name(state)} at {state.endpoint_url} (pid {state.pid})")
