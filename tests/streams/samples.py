"""Stream records in the Lambda event format, built as AWS documents them.

The layout of a record (keys, their nesting and types) is the one of the sample event on
https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html ("Example event"):
``eventID``, ``eventVersion``, ``dynamodb`` {``ApproximateCreationDateTime`` (epoch
seconds), ``Keys``, ``NewImage``, ``OldImage``, ``SequenceNumber`` (a string),
``SizeBytes``, ``StreamViewType``}, ``awsRegion``, ``eventName``, ``eventSourceARN``,
``eventSource`` ``"aws:dynamodb"``; binary attribute values are base64 strings (the event
is JSON). A TTL deletion also carries ``userIdentity`` {``type``: ``"Service"``,
``principalId``: ``"dynamodb.amazonaws.com"``}, as on
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/time-to-live-ttl-streams.html.

The images are chain items as ``item.py`` lays them out (attribute names fixed there).
"""

from __future__ import annotations

import base64
import itertools
from typing import Any

ARN = "arn:aws:dynamodb:us-east-1:111122223333:table/xor-ack-chains/stream/2026-11-23T00:00:00.000"
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
_sequence = itertools.count(100)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def chain_image(
    tag: str,
    *,
    chain_id: bytes = b"\x01" * 8,
    stamp: bytes = b"\x22" * 8,
    version: int = 1,
    created_at: str = "1700000000.5",
    updated_at: str | None = None,
    acked_at: str | None = None,
    failed_at: str | None = None,
    reason: str | None = None,
    expires_at: str | None = None,
) -> dict[str, Any]:
    """A chain item in the Lambda format (``B`` as base64, ``N`` as strings)."""
    image: dict[str, Any] = {
        "tagID": {"S": tag},
        "stamp": {"B": b64(stamp)},
        "chain_id": {"B": b64(chain_id)},
        "version": {"N": str(version)},
        "tokens": {"B": b64(bytes(range(8)) * version)},
        "created_at": {"N": created_at},
        "updated_at": {"N": updated_at or acked_at or failed_at or created_at},
    }
    for name, value in (
        ("acked_at", acked_at),
        ("failed_at", failed_at),
        ("expires_at", expires_at),
    ):
        if value is not None:
            image[name] = {"N": value}
    if reason is not None:
        image["reason"] = {"S": reason}
    return image


def acked(tag: str, **kw: Any) -> dict[str, Any]:
    kw.setdefault("acked_at", "1700000012.75")
    kw.setdefault("expires_at", "1700086412")
    return chain_image(tag, stamp=b"\x00" * 8, **kw)


def failed(tag: str, reason: str = "failed", **kw: Any) -> dict[str, Any]:
    kw.setdefault("failed_at", "1700000030")
    kw.setdefault("expires_at", "1700086430")
    return chain_image(tag, reason=reason, **kw)


def record(
    event_name: str,
    *,
    old: dict[str, Any] | None = None,
    new: dict[str, Any] | None = None,
    ttl: bool = False,
    approximate_time: float = 1700000100,
) -> dict[str, Any]:
    """One record in the documented layout (``userIdentity`` only on a TTL deletion)."""
    image = new if new is not None else old
    assert image is not None
    sequence = str(next(_sequence)) + "0" * 18
    body: dict[str, Any] = {
        "ApproximateCreationDateTime": approximate_time,
        "Keys": {k: v for k, v in image.items() if k == "tagID" or k == "pk"},
    }
    if new is not None:
        body["NewImage"] = new
    if old is not None:
        body["OldImage"] = old
    body.update(
        {"SequenceNumber": sequence, "SizeBytes": 200, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    )
    out: dict[str, Any] = {
        "eventID": f"e{sequence[:3]}",
        "eventVersion": "1.1",
        "dynamodb": body,
        "awsRegion": "us-east-1",
        "eventName": event_name,
        "eventSourceARN": ARN,
        "eventSource": "aws:dynamodb",
    }
    if ttl:
        out["userIdentity"] = dict(TTL_IDENTITY)
    return out


def life_of_chains() -> list[dict[str, Any]]:
    """A batch covering every transition: named so the tests can pick records."""
    live = chain_image("job-1")
    stamped = chain_image("job-1", stamp=b"\x33" * 8, version=2, updated_at="1700000005")
    done = acked("job-1", version=3)
    f_live = chain_image("job-2", chain_id=b"\x02" * 8)
    t_live = chain_image("job-3", chain_id=b"\x03" * 8)
    again = chain_image("job-1", chain_id=b"\x04" * 8, created_at="1700000200")
    lost = chain_image("job-5", chain_id=b"\x05" * 8, expires_at="1700000050")
    gone = chain_image("job-6", chain_id=b"\x06" * 8)
    return [
        record("INSERT", new=live),  # created
        record("MODIFY", old=live, new=stamped),  # intermediate stamp: nothing
        record("MODIFY", old=stamped, new=done),  # acked, latency 12.25
        record("INSERT", new=f_live),
        record("MODIFY", old=f_live, new=failed("job-2", "boom", chain_id=b"\x02" * 8)),
        record("INSERT", new=t_live),
        record("MODIFY", old=t_live, new=failed("job-3", "timeout", chain_id=b"\x03" * 8)),
        record("MODIFY", old=done, new=again),  # the tag re-created: created
        record("REMOVE", old=lost, ttl=True),  # a live chain expired: lost
        record("REMOVE", old=failed("job-2", "boom", chain_id=b"\x02" * 8), ttl=True),
        record("INSERT", new=gone),
        record("REMOVE", old=gone),  # delete()
    ]
