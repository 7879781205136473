"""The table layout: the public path of :mod:`xor_ack_dynamodb.dynamodb.table` and of
:mod:`xor_ack_dynamodb.dynamodb.ownership` (creating, proving and deleting a chains table)."""

from __future__ import annotations

from .dynamodb import ownership as _ownership
from .dynamodb import table as _table
from .dynamodb.ownership import *  # noqa: F403 - this path's names are the modules' own __all__
from .dynamodb.table import *  # noqa: F403

__all__ = _table.__all__ + _ownership.__all__
