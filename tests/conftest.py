"""Shared fixtures: a moto server and a real DynamoDB Local, both on 127.0.0.1, one per session."""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from xor_ack_dynamodb.local import LocalDynamoDB
from xor_ack_dynamodb.table import TableSpec, create_table

# Local servers accept any credentials; never let a test reach a real account.
for _name, _value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}.items():
    os.environ[_name] = _value
os.environ.pop("AWS_PROFILE", None)
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.pop("AWS_ENDPOINT_URL_DYNAMODB", None)
logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto server: one line per request

#: The JVMs the tests start (Spark's, in this process and in the commands and servers they
#: start) each run seconds to minutes of tiny jobs: the JIT's first tier alone (no C2
#: compiles) takes about 40 % less CPU for a short Spark run (README's Spark example: 37 ->
#: 21 CPU-seconds, on 2 CPUs); the suite is bound by CPU.  Spark's launcher passes
#: SPARK_SUBMIT_OPTS to a driver (and a Connect server) and SPARK_DAEMON_JAVA_OPTS to a
#: standalone master and worker; ``spark/servers.submit`` gives the executors the same.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
for _name in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
    os.environ.setdefault(_name, TEST_JVM_OPTIONS)


def pytest_configure(config: pytest.Config) -> None:
    """Keep pytest's log capture as pytest formats it after a Spark error.

    A PySpark error with a query context logs through a ``PySparkLogger`` made
    non-propagating on the spot, and ``PySparkLogger.addHandler`` sets its JSON formatter
    on whatever handler it is given; pytest gives its capture handler to every
    non-propagating logger at each test, so from then on, in that worker, ``caplog.text``
    was JSON and ``caplog.records`` had no ``message``: a test reading them failed or
    passed by which files the worker had run before.  pytest's own handlers keep theirs."""
    try:
        from _pytest.logging import LogCaptureHandler
        from pyspark.logger import PySparkLogger
    except ImportError:  # pragma: no cover - no PySpark: nothing to keep apart
        return
    json_handler = PySparkLogger.addHandler

    def add_handler(self: PySparkLogger, handler: logging.Handler) -> None:
        if isinstance(handler, LogCaptureHandler):
            logging.Logger.addHandler(self, handler)
        else:
            json_handler(self, handler)

    PySparkLogger.addHandler = add_handler  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    with LocalDynamoDB(backend="moto") as server:
        yield server.endpoint_url


@pytest.fixture(scope="session")
def ddb_local_endpoint() -> Iterator[str]:
    """One DynamoDB Local per worker, answering some hundreds of thousands of requests over
    the suite: enough for the full JIT to repay its compiles (first tier only, the core
    tests took more time)."""
    with LocalDynamoDB(backend="dynamodb-local", full_jit=True) as server:
        yield server.endpoint_url


def boto3_client(endpoint_url: str, **kwargs: Any) -> Any:
    return boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1", **kwargs)


#: Tables with the chains' key name but another shape: (attribute types, key schema).
MISSHAPEN_KEYS = {
    "key-a-number": ({"tagID": "N"}, [("tagID", "HASH")]),
    "with-a-sort-key": ({"tagID": "S", "at": "N"}, [("tagID", "HASH"), ("at", "RANGE")]),
}


@contextlib.contextmanager
def misshapen_table(endpoint_url: str, shape: str) -> Iterator[str]:
    """The name of a table keyed as ``MISSHAPEN_KEYS[shape]`` says, deleted afterwards."""
    types, keys = MISSHAPEN_KEYS[shape]
    client = boto3_client(endpoint_url)
    name = f"misshapen-{uuid.uuid4().hex[:10]}"
    client.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": t} for a, t in types.items()],
        KeySchema=[{"AttributeName": a, "KeyType": k} for a, k in keys],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        yield name
    finally:
        client.delete_table(TableName=name)


def _table_factory(endpoint_url: str) -> Callable[..., TableSpec]:
    client = boto3_client(endpoint_url)

    def make(partition_key: str = "tagID") -> TableSpec:
        spec = TableSpec(name=f"t-{uuid.uuid4().hex[:12]}", partition_key=partition_key)
        create_table(client, spec)
        return spec

    return make


@pytest.fixture
def moto_table(moto_endpoint: str) -> TableSpec:
    """A fresh table on the moto server."""
    return _table_factory(moto_endpoint)()


@pytest.fixture
def ddb_table(ddb_local_endpoint: str) -> TableSpec:
    """A fresh table on DynamoDB Local."""
    return _table_factory(ddb_local_endpoint)()


@pytest.fixture(params=["moto", "ddblocal"])
def backend(request: pytest.FixtureRequest) -> tuple[str, TableSpec]:
    """(endpoint_url, fresh table) on each backend in turn."""
    endpoint = request.getfixturevalue(
        "moto_endpoint" if request.param == "moto" else "ddb_local_endpoint"
    )
    return endpoint, _table_factory(endpoint)()


@pytest.fixture
def tracker(ddb_local_endpoint: str, ddb_table: TableSpec) -> Any:
    """Where a Spark job's chains go: a fresh table on DynamoDB Local."""
    from xor_ack_dynamodb.spark.tracker import TrackerConfig

    return TrackerConfig(
        table=ddb_table.name,
        endpoint_url=ddb_local_endpoint,
        region="us-east-1",
        partition_key=ddb_table.partition_key,
        local_credentials=True,
    )
