"""Handlers to try a fleet with: ``--handler xor_ack_dynamodb.fleet.examples:countdown``.

``countdown``: a message whose payload is ``n`` starts two children of ``n - 1``
(a binary tree of ``2**(n+1) - 1`` messages); ``report``: a continuation that
prints one JSON line per acked chain.
"""

from __future__ import annotations

import json

from .completion import Completed
from .message import Message


def countdown(message: Message) -> list[int]:
    n = int(message.payload or 0)
    return [n - 1, n - 1] if n > 0 else []


async def report(done: Completed) -> None:
    print(json.dumps({"event": "completed", "tag": done.tag, "id": done.continuation_id}))
