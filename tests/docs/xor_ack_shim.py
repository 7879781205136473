"""``xor-ack`` for the docs' shell examples: the real CLI, ``local`` played by the tests' server.

The examples start DynamoDB Local with ``xor-ack local start``; the tests already run
one (the session's), so ``local start`` prints the line the real command prints for
it, ``local status`` and ``local stop`` say nothing, and every other command runs
for real.  Each command line is parsed by the real CLI first, so a wrong ``local``
line fails here too.
"""

from __future__ import annotations

import os
import sys

import click

from tests.docs.commands import parse_xor_ack
from xor_ack_dynamodb.cli import main


def run(args: list[str]) -> None:
    try:
        path, _ = parse_xor_ack(args)
    except click.ClickException as refused:
        refused.show()
        sys.exit(refused.exit_code)
    if path == "xor-ack local start":
        print(f"export AWS_ENDPOINT_URL_DYNAMODB={os.environ['XOR_ACK_DOCS_ENDPOINT']}")
    elif not path.startswith("xor-ack local "):
        sys.argv = ["xor-ack", *args]
        main()


if __name__ == "__main__":
    run(sys.argv[1:])
