"""The table layout: the public path of :mod:`xor_ack_dynamodb.dynamodb.table`."""

from __future__ import annotations

from .dynamodb import table as _table
from .dynamodb.table import *  # noqa: F403 - this path's names are the module's own __all__

__all__ = _table.__all__
