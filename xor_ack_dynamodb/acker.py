"""Storm's acker: the public path of :mod:`xor_ack_dynamodb.memory.acker`."""

from __future__ import annotations

from .memory import acker as _acker
from .memory.acker import *  # noqa: F403 - this path's names are the module's own __all__

__all__ = _acker.__all__
