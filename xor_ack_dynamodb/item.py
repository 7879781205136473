"""The DynamoDB item that holds one chain: attribute names and decoding.

One item per tag::

    <partition_key>  S     the tag (attribute name configurable, default "tagID")
    stamp            B     the chain's XOR state; all zeros once acked
    chain_id         B     random per create: a re-created tag is another chain
    version          N     1 on create, +1 per write; stamps are conditioned on
                           (chain_id, version), so a stale cache can never write
    tokens           B     8-byte tokens of the most recent writes, concatenated, newest
                           last, at most the client's token window: proves whether a re-sent
                           write landed, and makes a stamp with an idempotency token land once
    created_at       N     epoch seconds of create
    updated_at       N     epoch seconds of the last write
    acked_at         N     epoch seconds of the write that made the state zero (tombstones only)
    failed_at        N     epoch seconds of fail() (tombstones only)
    reason           S     why it failed ("failed", "timeout", ...; tombstones only)
    expires_at       N     TTL attribute (epoch seconds): set on tombstones, and on live
                           chains created with a ttl; an item past it counts as absent

Other attributes a user adds survive every write: all writes are UpdateItem.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .stamps import Stamp

DEFAULT_PARTITION_KEY = "tagID"
STAMP = "stamp"
CHAIN_ID = "chain_id"
VERSION = "version"
TOKENS = "tokens"
CREATED_AT = "created_at"
UPDATED_AT = "updated_at"
ACKED_AT = "acked_at"
FAILED_AT = "failed_at"
REASON = "reason"
#: The TTL attribute; the CloudFormation template and ``table.py`` enable TTL on it.
EXPIRES_AT = "expires_at"


@dataclass(frozen=True)
class ChainState:
    """What ``get()`` returns: a snapshot of one chain."""

    tag: str
    stamp: Stamp
    chain_id: bytes
    version: int
    tokens: tuple[bytes, ...]
    created_at: float
    updated_at: float
    acked_at: float | None = None
    failed_at: float | None = None
    reason: str | None = None
    expires_at: float | None = None

    @property
    def acked(self) -> bool:
        """Every stamp of the chain landed: the state is all zeros."""
        return self.stamp.acked

    @property
    def failed(self) -> bool:
        return self.failed_at is not None

    @property
    def live(self) -> bool:
        """Neither acked nor failed: stamps may still land."""
        return not self.acked and not self.failed

    def expired(self, now: float | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (
            time.time() if now is None else now
        )


def _num(attr: dict[str, Any] | None) -> float | None:
    if attr is None:
        return None
    value = float(attr["N"])
    return int(value) if value.is_integer() else value


def _split_tokens(blob: bytes, size: int = 8) -> tuple[bytes, ...]:
    return tuple(blob[i : i + size] for i in range(0, len(blob), size))


def decode(item: dict[str, Any], partition_key: str) -> ChainState:
    """Decode a low-level DynamoDB item (``{"stamp": {"B": ...}, ...}``)."""
    return ChainState(
        tag=item[partition_key]["S"],
        stamp=Stamp(item[STAMP]["B"]),
        chain_id=bytes(item[CHAIN_ID]["B"]) if CHAIN_ID in item else b"",
        version=int(item[VERSION]["N"]),
        tokens=_split_tokens(bytes(item[TOKENS]["B"])) if TOKENS in item else (),
        created_at=_num(item.get(CREATED_AT)) or 0.0,
        updated_at=_num(item.get(UPDATED_AT)) or 0.0,
        acked_at=_num(item.get(ACKED_AT)),
        failed_at=_num(item.get(FAILED_AT)),
        reason=item[REASON]["S"] if REASON in item else None,
        expires_at=_num(item.get(EXPIRES_AT)),
    )
