"""The root group's machinery: lazily imported commands, and every error as one line."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from botocore.exceptions import BotoCoreError, ClientError

from ..errors import XorAckError
from .errors import UserError, _one_line, explain

# Commands that live in modules with heavy imports (PySpark): listed in the help
# with their summary, imported only when invoked.
_LAZY_COMMANDS: dict[str, tuple[str, str, str]] = {
    "wordcount": (
        "xor_ack_dynamodb.pipeline.cli",
        "wordcount",
        "Count words with PySpark, every file tracked by an XOR chain.",
    ),
    "worker": ("xor_ack_dynamodb.cli.worker", "worker", "Run a fleet worker on an SQS queue."),
    "submit": (
        "xor_ack_dynamodb.cli.submit",
        "submit",
        "Start a fleet job: its chain, then its root message on the work queue.",
    ),
    "dashboard": (
        "xor_ack_dynamodb.dashboard.command",
        "dashboard",
        "Serve a web dashboard of the chains.",
    ),
    "wordcount-sample": (
        "xor_ack_dynamodb.pipeline.cli",
        "wordcount_sample",
        "Write a deterministic sample corpus for `xor-ack wordcount`.",
    ),
}


class OneLineGroup(click.Group):
    """A group whose every error is one ``error: ...`` line: ``xor-ack``'s, the pipeline's."""

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
        except click.exceptions.NoArgsIsHelpError as exc:  # a group without its verb: its help
            click.echo(
                exc.ctx.get_help() if exc.ctx is not None else exc.format_message(), err=True
            )
            sys.exit(exc.exit_code)
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


class XorAckGroup(OneLineGroup):
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
