"""Where the chains live, resolved once on the driver (or the Spark Connect client).

Executors never read the client's environment (over Spark Connect they run on
the server and do not see it): the driver resolves a small picklable
:class:`~xor_ack_dynamodb.spark.tracker.TrackerConfig` and ships it inside
the stage functions.  Each setting comes from, in order: the argument, the
session's conf (``spark.xorack.table``, ``spark.xorack.endpoint``,
``spark.xorack.region``, ``spark.xorack.partitionKey``), the environment
(``XOR_ACK_TABLE``, ``AWS_ENDPOINT_URL_DYNAMODB`` / ``AWS_ENDPOINT_URL``,
``AWS_REGION`` / ``AWS_DEFAULT_REGION``).  Credentials are never shipped: each
executor uses its own default AWS credential chain (dummy ones only for a
loopback endpoint when its environment names none, ``aws``'s rule).
"""

from __future__ import annotations

import os
from typing import Any

from ..dynamodb.item import DEFAULT_PARTITION_KEY
from .errors import TrackingNotConfigured
from .tracker import TrackerConfig

CONF_PREFIX = "spark.xorack."


def _conf(spark: Any, name: str) -> str | None:
    try:
        value = spark.conf.get(CONF_PREFIX + name, None)
    except Exception:
        return None
    return str(value) if value else None


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def chains_config(
    spark: Any,
    *,
    table: str | None = None,
    endpoint_url: str | None = None,
    region: str | None = None,
    partition_key: str | None = None,
    token_window: int = 32,
) -> TrackerConfig:
    """The chains' table for this session's jobs (see the module docstring)."""
    table = table or _conf(spark, "table") or _env("XOR_ACK_TABLE")
    if not table:
        raise TrackingNotConfigured(
            "no chains table: pass table=..., set the session conf spark.xorack.table, "
            "or the environment variable XOR_ACK_TABLE"
        )
    endpoint = (
        endpoint_url
        or _conf(spark, "endpoint")
        or _env("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL")
    )
    return TrackerConfig(
        table=table,
        endpoint_url=endpoint,
        region=region or _conf(spark, "region") or _env("AWS_REGION", "AWS_DEFAULT_REGION"),
        partition_key=partition_key or _conf(spark, "partitionKey") or DEFAULT_PARTITION_KEY,
        token_window=token_window,
        # One request per chain: one write unit per stamp on AWS (a transaction costs two).
        transactions=False,
    )
