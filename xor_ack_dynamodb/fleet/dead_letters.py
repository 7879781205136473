"""One dead letter, the same on every path (the worker's drain, the Lambda function).

A message that exhausted its receives fails its chain with reason ``dead-letter``
(``Fleet.dead_letter``).  What is done with the message after is decided here once:

- its chain failed, or was already closed or of another generation: reported as
  ``dead-letter`` (``Fleet.dead_letter``); done with, deleted;
- its body is no fleet envelope (``InvalidEnvelope``: not JSON, a 3,000-byte tag,
  ...): ``invalid-envelope``; done with, deleted: it never can be settled;
- anything else (DynamoDB throttled or unreachable, a bug): ``dead-letter-failed``;
  kept, tried again once it is visible again.

Each failure is one log line and one ``xor_ack.item_failures`` count (``dynamodb.loops``);
the loop that called goes on to the next message either way.
"""

from __future__ import annotations

from typing import Any

from ..dynamodb.loops import item_failed
from .errors import InvalidEnvelope

#: The logger of the fleet's lines (``telemetry.log``).
LOGGER = "xor_ack_dynamodb.fleet"


async def settle_dead_letter(
    fleet: Any, body: Any, loop: str, message_id: str | None
) -> Exception | None:
    """Fail the chain of one dead letter.  None: the message is done with (delete it);
    else the error that keeps it (reported already: the caller only keeps it)."""
    try:
        await fleet.dead_letter(body)
    except InvalidEnvelope as exc:
        item_failed(loop, exc, logger=LOGGER, event="invalid-envelope", message_id=message_id)
        return None  # no chain to fail, now or ever: dropped
    except Exception as exc:
        item_failed(loop, exc, logger=LOGGER, event="dead-letter-failed", message_id=message_id)
        return exc
    return None
