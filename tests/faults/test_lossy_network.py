"""Long chains through a proxy that throttles writes, or loses their responses.

A throttled write (400 ThrottlingException / ProvisionedThroughputExceededException)
did not land, whatever botocore's retries did after it; only attempts of unknown
outcome (a lost response) make a write ambiguous, and those are recognised by
their tokens.  Every stamp must land exactly once and every chain ack once.
"""

from __future__ import annotations

import pytest
from core.lossy_proxy import LossyProxy, at_random

from xor_ack_dynamodb.retry import botocore_config
from xor_ack_dynamodb.table import TableSpec

from .chains import FAST_BOTOCORE, assert_each_applied_once, direct_client, stamp_chains

pytestmark = pytest.mark.ddblocal
LENGTH = 1_000
#: Throttled writes back off (botocore's standard mode, up to seconds each): 1,000 stamps took
#: 45 s; 400 still meet dozens of throttles and races between the clients.
THROTTLED_LENGTH = 400
KINDS = ("async", "async", "sync")


async def test_chains_under_thirty_percent_throttling_all_ack_once(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    direct = direct_client(ddb_local_endpoint, ddb_table.name)
    with LossyProxy(ddb_local_endpoint, throttle=at_random(0.3, seed=7)) as proxy:
        run = await stamp_chains(
            proxy.endpoint_url, direct, KINDS, chains=2, length=THROTTLED_LENGTH
        )
    print(f"throttled {len(proxy.throttled)} of {len(proxy.throttled) + len(proxy.forwarded)}")
    print(f"{run.seconds:.1f} s; {run.stats}")
    assert len(proxy.throttled) > 50  # the proxy really refused writes (about 90 of 300)
    assert run.total("conflicts") > 0  # and the clients really raced
    assert_each_applied_once(run, direct, THROTTLED_LENGTH)


@pytest.mark.parametrize("mode", ["legacy", "standard"])
async def test_chains_under_ten_percent_lost_responses_all_ack_once(
    mode: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """Also in the clients' default ``standard`` mode, whose backoff (up to 1 s) would let
    more writes than the token window land before the re-send of a lost write."""
    direct = direct_client(ddb_local_endpoint, ddb_table.name)
    config = FAST_BOTOCORE if mode == "legacy" else botocore_config()
    with LossyProxy(ddb_local_endpoint, drop=at_random(0.1, seed=11)) as proxy:
        run = await stamp_chains(
            proxy.endpoint_url, direct, KINDS, chains=2, length=LENGTH, config=config
        )
    print(f"dropped {len(proxy.dropped)} of {len(proxy.dropped) + len(proxy.forwarded)}")
    print(f"{run.seconds:.1f} s; {run.stats}")
    assert len(proxy.dropped) > 20  # responses of writes that landed were really lost
    assert run.total("resent_writes_recognised") > 0
    assert_each_applied_once(run, direct, LENGTH)
