"""The in-memory trackers: :class:`Ack` (the seed's verbs and events), Storm's acker, tuple trees.

Layer: a tracker. Imports the vocabulary (``errors``, ``stamps``, ``chain``) and
nothing else of the package; in particular never the DynamoDB tracker beside it
(``tuple_tree.py`` at the top of the package adds the DynamoDB sinks, above both).

- ``ack.py``: :class:`Ack`, its C fast path (``_ackcore*.c``, ``_ackcore.pyi``) and the
  pure-Python :class:`PyAck`; ``_ack_methods.py`` what both share; ``_ack_report.py``
  the counters; ``_ticker.py`` the asyncio task that ticks it; ``_listeners.py`` ``on()``
- ``_generations.py``: Storm's rotating buckets and the high-water mark, under both
- ``acker.py``: Storm's acker state machine (``_acker_messages.py``: its messages)
- ``tuple_tree.py``: spout and bolt helpers (``_tree_plan.py``: their sans-I/O plan)
"""

from __future__ import annotations

from .ack import Ack, AckStats, CAck, FailReason, PyAck, Ticker

__all__ = ["Ack", "AckStats", "CAck", "FailReason", "PyAck", "Ticker"]
