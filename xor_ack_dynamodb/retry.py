"""Retries of lost races: the public path of :mod:`xor_ack_dynamodb.dynamodb.retry`."""

from __future__ import annotations

from .dynamodb import retry as _retry
from .dynamodb.retry import *  # noqa: F403 - this path's names are the module's own __all__

__all__ = _retry.__all__
