"""How the verbs print: aligned ``key: value`` lines, times in UTC."""

from __future__ import annotations

import time

import click


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _echo_pairs(pairs: list[tuple[str, object]]) -> None:
    width = max(len(key) for key, _ in pairs)
    for key, value in pairs:
        click.echo(f"{key + ':':<{width + 1}} {value}")
