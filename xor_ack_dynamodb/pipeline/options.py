"""The word count command's option helper: an option whose default the help shows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def shown(name: str, kind: Any, default: Any, help: str | None = None) -> Callable[[F], F]:
    """A command-line option of type ``kind`` whose default the help shows."""
    return click.option(name, type=kind, default=default, show_default=True, help=help)
