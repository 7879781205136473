"""The table layout: the public path of :mod:`xor_ack_dynamodb.dynamodb.table`."""

from __future__ import annotations

from .dynamodb.table import (
    DEFAULT_TABLE,
    INDEXES,
    STREAM_VIEW,
    TTL_ATTRIBUTE,
    InvalidTableSpec,
    TableInfo,
    TableMismatch,
    TableSpec,
    create_table,
    delete_table,
    describe_table,
    enable_ttl,
    wait_active,
)

__all__ = [
    "DEFAULT_TABLE",
    "INDEXES",
    "STREAM_VIEW",
    "TTL_ATTRIBUTE",
    "InvalidTableSpec",
    "TableInfo",
    "TableMismatch",
    "TableSpec",
    "create_table",
    "delete_table",
    "describe_table",
    "enable_ttl",
    "wait_active",
]
