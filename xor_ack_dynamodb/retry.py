"""Retries of lost races: the public path of :mod:`xor_ack_dynamodb.dynamodb.retry`."""

from __future__ import annotations

from .dynamodb.retry import DEFAULT_RETRY, RetryPolicy, botocore_config

__all__ = ["DEFAULT_RETRY", "RetryPolicy", "botocore_config"]
