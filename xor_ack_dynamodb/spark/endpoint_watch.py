"""The driver's look at DynamoDB while a run cannot see its requests: whether connections
to the chains' endpoint are refused.

While a round's Spark job runs, its tasks' stamps are the only requests, and each one
retries for about a minute before its task fails; Spark then runs the task again (on a
cluster, four attempts), each attempt in a new Python worker with its retries afresh.
DynamoDB gone in the middle of a run (DynamoDB Local stopped, a network cut) was told
after two minutes on ``local[2]``, after fourteen with task retries.  The driver instead
looks every ``WATCH_EVERY`` seconds (one ``GetItem`` of a key no chain has, one attempt)
and, once connections were refused for ``UNREACHABLE_AFTER`` seconds in a row, the round's
jobs are cancelled and the run stops with ``DynamoDBFailed``; a shorter cut is ridden
out by the tasks' own retries.  A run that stops with DynamoDB refusing connections asks
it once more before failing its chains one by one (each of those would retry a minute).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..dynamodb._attempts import never_sent
from .tracker import TrackerConfig

#: Seconds of refused connections, in a row, after which a running round stops.
UNREACHABLE_AFTER = 30.0
#: Seconds between two looks while a round's job runs.
WATCH_EVERY = 3.0
#: The key looked up: no chain's tag (a tag of the library's runs has a run id and a "/").
PROBE_KEY = "xor-ack:probe"


class EndpointWatch:
    """Looks at the chains' endpoint with one attempt per request (made on first use)."""

    def __init__(self, tracker: TrackerConfig, clock: Callable[[], float] = time.monotonic):
        self.tracker = tracker
        self.clock = clock
        self._client: Any = None
        self._refused_since: float | None = None

    def refused(self) -> BaseException | None:
        """One look: the error of a connection that could not be opened, else None (any
        answer, a refusal of DynamoDB's own included, is an endpoint that answers)."""
        if self._client is None:
            from ..dynamodb.aws import botocore_config

            config = botocore_config(
                connect_timeout=3, read_timeout=3, retries={"total_max_attempts": 1}
            )
            self._client = self.tracker.client(config)
        key = {self.tracker.partition_key: {"S": PROBE_KEY}}
        try:
            self._client.get_item(TableName=self.tracker.table, Key=key)
        except Exception as exc:
            if never_sent(exc):  # no connection opened (refused, no route, no name, ...)
                return exc
        return None

    def restart(self) -> None:
        """Count refused connections afresh (a new job: an earlier one's do not count)."""
        self._refused_since = None

    def still_refused(self) -> BaseException | None:
        """One look while a job runs: the error, once connections were refused for
        ``UNREACHABLE_AFTER`` seconds in a row (None before, and once one answers)."""
        error = self.refused()
        now = self.clock()
        if error is None:
            self._refused_since = None
            return None
        if self._refused_since is None:
            self._refused_since = now
        return error if now - self._refused_since >= UNREACHABLE_AFTER else None
