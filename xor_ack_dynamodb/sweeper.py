"""The scheduled sweep's Lambda handler (``xor_ack_dynamodb.sweeper.handler``, as
infra/sweeper.yaml names it): the public path of :mod:`xor_ack_dynamodb.dynamodb.sweeper`."""

from __future__ import annotations

from .dynamodb import sweeper as _sweeper
from .dynamodb.sweeper import *  # noqa: F403 - this path's names are the module's own __all__

__all__ = _sweeper.__all__
