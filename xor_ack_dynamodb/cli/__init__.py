"""``xor-ack``: the table, a local DynamoDB and chains, from the command line.

Layer: an app. Imports the public modules of the parts below it (the trackers, events,
fleet) and the vocabulary; the word count's verbs are named by module path and loaded
when they run.

::

    xor-ack local start            # DynamoDB Local on 127.0.0.1, detached
    eval "$(xor-ack local start)"  # ... and point this shell at it
    xor-ack table create           # the table the clients expect (TTL on expires_at)
    xor-ack chain create job-1     # a chain with a random stamp, printed
    xor-ack chain stamp job-1 HEX  # XOR a stamp in
    xor-ack chain get job-1
    xor-ack events follow          # the chains' events, from the table's stream
    xor-ack chain list --status overdue
    xor-ack sweep --watch 60       # fail overdue chains, every minute

Every command takes ``--endpoint-url``, ``--region``, ``--table`` and
``--partition-key``, before or after the command (``xor-ack --table T chain get X``
is ``xor-ack chain get X --table T``); given in both places, the one after the
command wins (``local start|status|stop`` refuse ``--endpoint-url``: they act on the server
``local start`` runs, whose port is ``--port``).  Otherwise the standard AWS environment
counts (``AWS_ENDPOINT_URL_DYNAMODB``, ``AWS_ENDPOINT_URL``, ``AWS_REGION`` /
``AWS_DEFAULT_REGION``, ``AWS_PROFILE``, ...; the order is in ``aws``).  A usage error
(an empty or invalid option or argument) prints one ``error: ...`` line on stderr and
exits 2, before anything is created; a user mistake (missing table, unreachable endpoint,
...) prints one such line and exits 1.  No command prints a traceback (``XOR_ACK_DEBUG=1``
shows the one of an unexpected error).
"""

from __future__ import annotations

import click

from ..dynamodb.aws import is_loopback as is_loopback  # re-exported for the pipeline's CLI

# The verbs' modules by module (``xor_ack_dynamodb.cli.local`` stays the module, which tests
# and users patch), never by their command objects of the same names.
from . import chain as chain_verbs
from . import events as events_verbs
from . import local as local_verbs
from . import stats as stats_verbs
from . import sweep as sweep_verbs
from . import table as table_verbs
from .chain import chain_create
from .errors import UserError, explain
from .group import _LAZY_COMMANDS, XorAckGroup
from .local import NOT_RUNNING
from .options import _AFTER_THE_VERB, CONNECTION_OPTIONS, Settings, _connection_options

__all__ = [
    "CONNECTION_OPTIONS",
    "NOT_RUNNING",
    "_LAZY_COMMANDS",
    "Settings",
    "UserError",
    "XorAckGroup",
    "chain_create",
    "cli",
    "explain",
    "is_loopback",
    "main",
]


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


cli.add_command(table_verbs.table)
cli.add_command(local_verbs.local)
cli.add_command(chain_verbs.chain)
chain_verbs.chain.add_command(stats_verbs.chain_stats)  # its own module: reads the stream
cli.add_command(events_verbs.events)
cli.add_command(sweep_verbs.sweep)


def main() -> None:
    """The ``xor-ack`` console script."""
    cli.main(prog_name="xor-ack")
