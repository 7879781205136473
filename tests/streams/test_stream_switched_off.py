"""A table whose stream was turned off (``update_table(StreamEnabled=False)``) keeps its
``LatestStreamArn`` in ``DescribeTable``, without a ``StreamSpecification``: it has no stream.
``events.stream_arn`` took it for one, ``xor-ack chain stats`` printed the dead stream's old
figures (exit 0) and ``xor-ack events follow`` would have waited for ever.  And a handler
given an empty partition key is refused, as ``decode`` refuses it."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from click.testing import CliRunner

from xor_ack_dynamodb import SyncXorAckDynamoDB, events
from xor_ack_dynamodb.cli import cli
from xor_ack_dynamodb.errors import InvalidArgument, StreamNotEnabled
from xor_ack_dynamodb.table import TableSpec

from . import samples


def _switched_off(endpoint: str, table: str) -> Any:
    db = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    SyncXorAckDynamoDB(db, table=table).create("before", b"\x01" * 8)
    db.update_table(TableName=table, StreamSpecification={"StreamEnabled": False})
    return db


@pytest.mark.ddblocal
def test_stream_arn_refuses_a_table_whose_stream_was_turned_off(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    db = _switched_off(ddb_local_endpoint, ddb_table.name)
    assert "LatestStreamArn" in db.describe_table(TableName=ddb_table.name)["Table"]
    with pytest.raises(StreamNotEnabled):
        events.stream_arn(db, ddb_table.name)


@pytest.mark.ddblocal
def test_chain_stats_on_a_table_whose_stream_was_turned_off_says_so(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    _switched_off(ddb_local_endpoint, ddb_table.name)
    args = ["chain", "stats", "--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: StreamNotEnabled"), result.stderr


def test_a_handler_with_an_empty_partition_key_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        events.decode(samples.life_of_chains()[0], "")
    with pytest.raises(InvalidArgument, match=r"partition_key must be a non-empty str"):
        events.StreamHandler(partition_key="")  # it was taken as "tagID"
