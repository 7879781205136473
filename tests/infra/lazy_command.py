"""A command registered lazily by test_cli (stands in for the pipeline's `wordcount`)."""

from __future__ import annotations

import click


@click.command()
@click.option("--name", default="world")
def hello(name: str) -> None:
    """Say hello."""
    click.echo(f"hello {name}")
