"""What the refusals added this stop must not take away: trailing spaces past a
``varchar(n)``/``char(n)`` are written as Spark writes them (dropped), a new table given its
own ``path`` is not refused for files where a managed one would go, a ``fail`` a server
error refused on a chain acked meanwhile returns the acked state, and ``local start
--create-table`` refuses an empty ``XOR_ACK_TABLE`` (it would make the default table)."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from pyspark import cloudpickle

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp
from xor_ack_dynamodb.spark import Sink, TrackerConfig, track
from xor_ack_dynamodb.table import TableSpec

pytestmark = [pytest.mark.ddblocal]


def padded(key: str, rows: Any) -> Any:
    """Strings whose trailing spaces run past the table's char(3)/varchar(3)."""
    import pyarrow as pa

    return pa.table({"k": [key], "v": ["ab   "], "c": ["cd    "]})


def plain(key: str, rows: Any) -> Any:
    import pyarrow as pa

    return pa.table({"k": [key], "v": ["x"]})


cloudpickle.register_pickle_by_value(sys.modules[__name__])


# -- spark/table_sink.py: _check_lengths refuses what Spark's insert takes ---------------------


@pytest.mark.spark
def test_trailing_spaces_past_a_varchar_or_char_length_are_written_as_spark_writes_them(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """Spark's own write-side check of char(n)/varchar(n) trims trailing spaces beyond n
    (CharVarcharCodegenUtils: EXCEED_LIMIT_LENGTH only if non-space characters remain):
    INSERT INTO t VALUES ('ab   ') into a varchar(3) works.  The new _check_lengths compares
    the raw F.length with n and refuses the commit, after every input acked."""
    db = f"vc_{uuid.uuid4().hex[:8]}"
    local_spark.sql(f"CREATE DATABASE {db} LOCATION '{tmp_path / 'db'}'")
    local_spark.sql(f"CREATE TABLE {db}.t (k string, v varchar(3), c char(3)) USING parquet")
    local_spark.sql(f"INSERT INTO {db}.t VALUES ('spark', 'ab   ', 'cd    ')")  # Spark takes it
    report = track(
        local_spark,
        padded,
        "k string, v string, c string",
        Sink(table=f"{db}.t"),
        keys=["x"],
        tracker=tracker,
    )
    assert report.ok and report.output_state == "complete"
    rows = sorted(tuple(r) for r in local_spark.table(f"{db}.t").collect())
    assert rows == [("spark", "ab ", "cd "), ("x", "ab ", "cd ")]


# -- spark/table_sink.py: _refuse_folder_left refuses an external table's creation -------------


@pytest.mark.spark
def test_a_new_table_given_its_own_path_is_not_refused_for_files_at_the_default_location(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """Sink(table=..., options={"path": ...}): saveAsTable makes an EXTERNAL table at that
    path; Spark's LOCATION_ALREADY_EXISTS check is for a managed table's own folder only.
    _refuse_folder_left looks at <database folder>/<name> whatever the options say, and
    refuses the run (OutputExists) because of files that Spark never touches."""
    db = f"ex_{uuid.uuid4().hex[:8]}"
    local_spark.sql(f"CREATE DATABASE {db} LOCATION '{tmp_path / 'db'}'")
    left = tmp_path / "db" / "rows"
    left.mkdir(parents=True)
    (left / "part-0.parquet").write_bytes(b"an old table's file")
    ext = tmp_path / "ext"
    report = track(
        local_spark,
        plain,
        "k string, v string",
        Sink(table=f"{db}.rows", options={"path": str(ext)}),
        keys=["x"],
        tracker=tracker,
    )
    assert report.ok and report.output_state == "complete"
    assert [tuple(r) for r in local_spark.table(f"{db}.rows").collect()] == [("x", "x")]


# -- dynamodb/_core/endings.py: a fail whose answer was lost raises even for a closed chain ----


def _server_error() -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "InternalServerError", "Message": "injected 500"},
            "ResponseMetadata": {"HTTPStatusCode": 500, "RetryAttempts": 0},
        },
        "UpdateItem",
    )


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_fail_answered_500_on_a_chain_acked_meanwhile_returns_the_acked_state(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """fail()'s docstring: "A chain that is already acked stays acked ... and is returned".
    The fail reads the chain live; a peer acks it; the fail's UpdateItem is answered 500
    (not landed: the item reads back acked).  Before 0a4ed74 the loop went on and the read
    state decided (acked: DONE, returned).  Now `if reply is UNKNOWN: raise exc` raises the
    500 whatever the item read back says (acked, failed by a sweep, deleted)."""
    from core.hooks import Trigger, hooked_client, raising

    root = new_stamp()
    client = boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1")
    peer = SyncXorAckDynamoDB(client, table=ddb_table.name)
    boom = raising(_server_error())

    def ack_then_500(params: dict[str, Any]) -> None:
        peer.stamp("f", root)  # the peer's stamp zeroes the chain: acked
        boom(params)

    outage = Trigger(ack_then_500, times=0)
    try:
        async with hooked_client(
            kind, ddb_local_endpoint, ddb_table.name, before={"update_item": outage}, cache_size=0
        ) as ack:
            await ack.create("f", root)
            outage.arm(1)
            state = await ack.fail("f", "bad input")
    finally:
        client.close()
    assert state.acked


# -- cli/local.py + options.py: XOR_ACK_TABLE="" no longer refused where local makes the table -


def test_empty_xor_ack_table_is_refused_by_local_start_create_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`local start --create-table` makes the table the connection options name: with
    XOR_ACK_TABLE="" (a "$T" not set) the root's default stands in and the default table is
    created, and exported to the shell: the very case _refuse_empty_env was written for.
    20e560a refused it (the root's callback, exit 2); 0a4ed74 moved the refusal into
    Verb.invoke and LocalVerb sets uses_table = False for every local command, this one
    included.  (The server start is replaced by a sentinel: nothing is started.)"""
    from click.testing import CliRunner

    from xor_ack_dynamodb.cli import cli
    from xor_ack_dynamodb.cli import local as local_verbs

    def started(**_: Any) -> Any:
        raise RuntimeError("sentinel: the server would be started, the default table made")

    monkeypatch.setattr(local_verbs, "start_detached", started)
    result = CliRunner().invoke(
        cli, ["local", "start", "--create-table"], env={"XOR_ACK_TABLE": ""}
    )
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "XOR_ACK_TABLE" in result.output
