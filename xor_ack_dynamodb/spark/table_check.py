"""Before a tracked run's first Spark job: is the chains' table there, and does DynamoDB answer?

One ``DescribeTable`` on the driver, with few attempts (``aws.fail_fast_config``): a table
that does not exist is :class:`ChainsTableMissing`, a DynamoDB that does not answer is
:class:`DynamoDBFailed` (phase ``"create"``, round 1, none of the run's chains made), both
before the source's keys are listed or the sink is tried, in seconds rather than after
botocore's retries of every chain's create.  A policy without ``dynamodb:DescribeTable``
skips the check: the creates say what is wrong then.
"""

from __future__ import annotations

from typing import Any

from .errors import ChainsTableMissing, DynamoDBFailed
from .output import said
from .tracker import TrackerConfig, kept_client


def _client(tracker: TrackerConfig) -> Any:
    """The driver's fail-fast client for the check (kept: a run in a long-lived driver
    does not make a new one each time)."""
    from ..dynamodb.aws import fail_fast_config

    return kept_client("check", tracker, lambda: tracker.client(fail_fast_config()))


def check_table(tracker: TrackerConfig, run_id: str) -> None:
    """Refuse the run if ``tracker``'s table is missing or DynamoDB does not answer."""
    from botocore.exceptions import BotoCoreError, ClientError

    client = _client(tracker)
    try:
        client.describe_table(TableName=tracker.table)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException":
            where = tracker.endpoint_url or f"AWS ({client.meta.region_name})"
            raise ChainsTableMissing(
                f"the chains' table table={tracker.table!r} does not exist at {where}: "
                f"create it (`xor-ack --table {tracker.table} table create`), or name the "
                "table that holds the chains with table=... / TrackerConfig(table=...)"
            ) from exc
        if code == "AccessDeniedException":
            return  # no dynamodb:DescribeTable: the creates will tell
        raise _failed(exc, run_id) from exc
    except BotoCoreError as exc:
        raise _failed(exc, run_id) from exc


def _failed(exc: Exception, run_id: str) -> DynamoDBFailed:
    return DynamoDBFailed("create", said(exc), run_id=run_id, round_=1, none_made=True)
