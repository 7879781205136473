"""Checks of the shell commands the docs show: `xor-ack` parsed by click, `make` targets."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from xor_ack_dynamodb.cli import cli

from .blocks import ROOT


def _leaves(group: click.Group) -> Iterator[click.Command]:
    for command in group.commands.values():
        if isinstance(command, click.Group):
            yield from _leaves(command)
        else:
            yield command


@contextmanager
def _callbacks_replaced(record: Callable[..., None], args: Sequence[str]) -> Iterator[None]:
    """Every leaf command's callback replaced by ``record``; lazy commands loaded if named."""
    ctx = click.Context(cli)
    lazy = [
        cli.get_command(ctx, name)
        for name in cli.list_commands(ctx)
        if name in args and name not in cli.commands
    ]
    leaves = [*_leaves(cli), *(command for command in lazy if command is not None)]
    saved = [(leaf, leaf.callback) for leaf in leaves]
    for leaf in leaves:
        leaf.callback = record
    try:
        yield
    finally:
        for leaf, callback in saved:
            leaf.callback = callback


def parse_xor_ack(args: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """Parse ``xor-ack ARGS`` as the console script does, without running the command.

    Returns the command path (``"xor-ack chain stamp"``) and its parameters; raises
    ``click.ClickException`` (a usage error: unknown verb or option, missing or bad
    argument) for a command line the CLI would refuse.
    """
    called: list[tuple[str, dict[str, Any]]] = []

    def record(**params: Any) -> None:
        called.append((click.get_current_context().command_path, params))

    with _callbacks_replaced(record, args):
        cli.main(list(args), prog_name="xor-ack", standalone_mode=False)
    if len(called) != 1:
        raise click.UsageError(f"`xor-ack {' '.join(args)}` names no command")
    return called[0]


_TARGET = re.compile(r"^(?P<names>[A-Za-z0-9_.-][A-Za-z0-9_. -]*)::?(?!=)", re.MULTILINE)


def make_targets(makefile: Path = ROOT / "Makefile") -> set[str]:
    """The targets the Makefile defines (rules and .PHONY names; no pattern rules)."""
    targets: set[str] = set()
    for match in _TARGET.finditer(makefile.read_text(encoding="utf-8")):
        targets.update(name for name in match["names"].split() if not name.startswith("."))
    return targets
