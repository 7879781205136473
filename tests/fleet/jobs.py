"""Handlers the worker processes of the tests import (``tests.fleet.jobs:...``)."""

from __future__ import annotations

from typing import Any

from xor_ack_dynamodb.fleet import Message


def leaf(message: Message) -> list[Any]:
    """A job of one message."""
    return []
