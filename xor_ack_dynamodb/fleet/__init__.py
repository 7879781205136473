"""Fan-out / fan-in over queues, completing exactly once: see docs/fleet.md.

- ``Envelope``: a message's chain, identity, parent and payload (``envelope.py``);
- ``Fleet``: jobs, the handler integration, continuations, dead letters, replay
  (``app.py``), its writes applied once per message identity (``once.py``);
- ``Worker``: an asyncio SQS worker (``worker.py``);
- ``sqs_batch_handler``: an SQS-triggered Lambda handler with partial batch
  responses (``lambda_sqs.py``).
"""

from __future__ import annotations

from .app import FLEET_TOKEN_WINDOW, Fleet, Handled, Message
from .completion import Completed, QueueContinuation
from .envelope import Envelope, child_id, root_id, stamp_of
from .once import Verdict
from .sqs import SqsSender

__all__ = [
    "FLEET_TOKEN_WINDOW",
    "Completed",
    "Envelope",
    "Fleet",
    "Handled",
    "Message",
    "QueueContinuation",
    "SqsSender",
    "Verdict",
    "child_id",
    "root_id",
    "stamp_of",
]
