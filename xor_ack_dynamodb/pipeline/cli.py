"""``xor-ack wordcount`` and ``xor-ack wordcount-sample``.

Also ``python -m xor_ack_dynamodb.pipeline wordcount ...``.

PySpark is imported only when ``wordcount`` runs.
"""

from __future__ import annotations

import sys

import click

from ..cli.group import OneLineGroup
from .sample_command import wordcount_sample
from .wordcount_command import wordcount

__all__ = ["main", "wordcount", "wordcount_sample"]


@click.group(cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """The tracked word count on PySpark (``python -m xor_ack_dynamodb.pipeline``).

    Its errors are one ``error: ...`` line, as ``xor-ack``'s (the same group class).
    """


main.add_command(wordcount)
main.add_command(wordcount_sample)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
