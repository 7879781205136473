"""``--check-proxy``: does the delay proxy forward, and add its delay?  One GetItem at a time.

The same consistent GetItem, direct and through ``DelayProxy``, alternating, one request
at a time on a warm connection; the difference of the medians is what the proxy adds.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import boto3

from .common import CREDENTIALS, REGION, make_tables
from .delay_proxy import DelayProxy


def _client(endpoint: str) -> Any:
    return boto3.client("dynamodb", endpoint_url=endpoint, region_name=REGION, **CREDENTIALS)


def check_proxy(endpoint: str, delay_ms: float, requests: int = 40) -> dict[str, float]:
    """Median milliseconds of one GetItem direct and through the proxy, and what it added."""
    table = f"bench-proxy-{int(time.time())}"
    make_tables(endpoint, [table])
    key = {"tagID": {"S": "proxy-check"}}
    item = {**key, "stamp": {"B": b"\x01" * 16}}
    direct = _client(endpoint)
    direct.put_item(TableName=table, Item=item)
    with DelayProxy(endpoint, delay_ms) as proxy:
        proxied = _client(proxy.endpoint_url)
        times: dict[str, list[float]] = {"direct": [], "proxied": []}
        for i in range(requests + 2):
            for name, client in (("direct", direct), ("proxied", proxied)):
                t0 = time.perf_counter()
                got = client.get_item(TableName=table, Key=key, ConsistentRead=True)
                elapsed = time.perf_counter() - t0
                if got.get("Item") != item:
                    raise RuntimeError(f"{name}: GetItem answered {got.get('Item')!r}")
                if i >= 2:  # the first two open connections
                    times[name].append(1e3 * elapsed)
    direct_ms = statistics.median(times["direct"])
    proxied_ms = statistics.median(times["proxied"])
    return {
        "delay_ms": delay_ms,
        "requests": requests,
        "direct_ms_p50": round(direct_ms, 2),
        "proxied_ms_p50": round(proxied_ms, 2),
        "added_ms": round(proxied_ms - direct_ms, 2),
    }
