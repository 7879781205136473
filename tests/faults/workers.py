"""Worker processes that stamp a share of many chains with idempotency tokens.

A worker writes one line per outcome to its own file (``token kind``), so what it
learned survives its death, and at its end how many stamps it applied itself.
With ``hang_after``, after that many stamps it sends one more batch, marks it
sent, and hangs before it records the outcomes: a worker killed then had its
stamps land without ever hearing back.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import boto3

from xor_ack_dynamodb import SyncXorAckDynamoDB
from xor_ack_dynamodb.errors import StampManyFailed, XorAckError
from xor_ack_dynamodb.retry import RetryPolicy

#: One stamp of a worker's share: (tag, stamp, token).
Assignment = tuple[str, bytes, str]
PATIENT = RetryPolicy(max_attempts=500, base_delay=0.001, max_delay=0.02, max_elapsed=60)


def rounds(share: Sequence[Assignment]) -> list[dict[str, Assignment]]:
    """The share in batches of distinct chains, in order (one ``stamp_many`` each)."""
    batches: list[dict[str, Assignment]] = []
    for item in share:
        for batch in batches:
            if item[0] not in batch:
                batch[item[0]] = item
                break
        else:
            batches.append({item[0]: item})
    return batches


def _outcome(result: object) -> str:
    if isinstance(result, XorAckError):
        return f"error:{result.code}"
    if isinstance(result, BaseException):
        return f"error:{type(result).__name__}"
    assert isinstance(result, bytes)
    return "acked" if not any(result) else "stamped"


def work(
    endpoint: str, table: str, share: Sequence[Assignment], out: str, hang_after: int = -1
) -> None:
    raw = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    ack = SyncXorAckDynamoDB(raw, table=table, retry=PATIENT)
    done = 0
    with Path(out).open("a", buffering=1) as log:
        for batch in rounds(share):
            stamps = {tag: stamp for tag, (_, stamp, _) in batch.items()}
            tokens: Mapping[str, str] = {tag: token for tag, (_, _, token) in batch.items()}
            results: dict[str, object]
            try:
                results = dict(ack.stamp_many(stamps, tokens=tokens, concurrency=8))
            except StampManyFailed as failed:
                results = {**failed.results, **failed.errors}
            if 0 <= hang_after <= done:
                log.write("sent\n")
                time.sleep(60)  # killed here: the stamps landed, nobody recorded them
            for tag, result in results.items():
                log.write(f"{tokens[tag]} {_outcome(result)}\n")
            done += len(batch)
        log.write(f"#applied {ack.stats.stamps}\n")  # stamps this process put in
