"""Storm's acker: the public path of :mod:`xor_ack_dynamodb.memory.acker`."""

from __future__ import annotations

from .memory.acker import (
    INT64_MAX,
    INT64_MIN,
    Acked,
    Acker,
    AckerMsg,
    AckerStats,
    Anchor,
    Fail,
    IdGenerator,
    Nacked,
    Ok,
    Pending,
    ResetTimeout,
    Track,
    acker_for,
    acker_index,
    check_id,
)

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "Acked",
    "Acker",
    "AckerMsg",
    "AckerStats",
    "Anchor",
    "Fail",
    "IdGenerator",
    "Nacked",
    "Ok",
    "Pending",
    "ResetTimeout",
    "Track",
    "acker_for",
    "acker_index",
    "check_id",
]
