"""Each input's end told to the caller's ``on_event``, which cannot undo the run.

The events are told once, on the driver, while the run goes on: an ``on_event`` that
raises (a notification service down, a bug in it) must not throw away inputs that were
acked and rows already staged.  The error is logged once with its traceback on the
``xor_ack_dynamodb.spark`` logger, every such error is counted in the report
(``event_errors``, also in its summary line), and the run ends as its inputs say.  As
with Spark's own listeners, a raising callback is the callback's failure, not the run's.
"""

from __future__ import annotations

import logging

from ..lifecycle import Acked, Failed
from .job_spec import EventSink
from .report import TrackedReport

log = logging.getLogger("xor_ack_dynamodb.spark")


def tell(on_event: EventSink, event: Acked | Failed, report: TrackedReport) -> None:
    """Call ``on_event(event)``; an ``Exception`` from it is logged (the first) and counted."""
    try:
        on_event(event)
    except Exception:
        report.event_errors += 1
        if report.event_errors == 1:
            log.exception(
                "on_event raised on the %s event of %s; the run goes on, and the report's "
                "event_errors counts this and any later error",
                type(event).__name__,
                event.tag,
            )
