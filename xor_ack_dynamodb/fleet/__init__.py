"""Fan-out / fan-in over queues, completing exactly once: see docs/fleet.md.

Layer: an integration. Imports ``events``, the DynamoDB tracker and the vocabulary.

- ``Envelope``: a message's chain, identity, parent and payload (``envelope.py``);
- ``Fleet``: jobs, the handler integration, continuations, dead letters, replay
  (``app.py``), its writes applied once per message identity (``once.py``);
- ``Worker``: an asyncio SQS worker (``worker.py``);
- ``sqs_batch_handler``: an SQS-triggered Lambda handler with partial batch
  responses (``lambda_sqs.py``).
"""

from __future__ import annotations

from .app import FLEET_TOKEN_WINDOW, Fleet
from .completion import Completed, QueueContinuation
from .envelope import Envelope, child_id, root_id, stamp_of
from .errors import (
    ContinuationCancelled,
    ContinuationExited,
    HandlerCancelled,
    HandlerExited,
    InvalidChildren,
    InvalidEnvelope,
    InvalidPayload,
    MarkerMissing,
    ReplayRefused,
    SettingMissing,
    TombstoneTooShort,
    UnsuitableClient,
    WindowMismatch,
)
from .lambda_entry import HandlerNotFound
from .lambda_sqs import SqsBatchHandler, StreamCompletionHandler, SweepHandler, from_environment
from .message import Handled, Message
from .once import Verdict
from .process import DaemonThreads, install_signal_handlers
from .sqs import MessageTooLarge, QueueUnavailable, SendFailed, SqsSender, sqs_client
from .worker import Worker

__all__ = [
    "FLEET_TOKEN_WINDOW",
    "Completed",
    "ContinuationCancelled",
    "ContinuationExited",
    "DaemonThreads",
    "Envelope",
    "Fleet",
    "Handled",
    "HandlerCancelled",
    "HandlerExited",
    "HandlerNotFound",
    "InvalidChildren",
    "InvalidEnvelope",
    "InvalidPayload",
    "MarkerMissing",
    "Message",
    "MessageTooLarge",
    "QueueContinuation",
    "QueueUnavailable",
    "ReplayRefused",
    "SendFailed",
    "SettingMissing",
    "SqsBatchHandler",
    "SqsSender",
    "StreamCompletionHandler",
    "SweepHandler",
    "TombstoneTooShort",
    "UnsuitableClient",
    "Verdict",
    "WindowMismatch",
    "Worker",
    "child_id",
    "from_environment",
    "install_signal_handlers",
    "root_id",
    "sqs_client",
    "stamp_of",
]
