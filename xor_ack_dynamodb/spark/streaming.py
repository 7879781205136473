"""Structured Streaming: every micro-batch's new inputs tracked to completion (``foreachBatch``).

Each micro-batch is a tracked job of its own (:func:`track` over the batch's
rows, the inputs being the batch's distinct keys: with a file source, the files
that arrived), committed to ``OUTPUT/batch=N``.  A batch that Spark runs again
after a restart replaces that folder (ours, by its manifest), so each batch's
output is there once.  ``on_event`` gets each input's end as the library's typed
events (``events.Acked`` / ``events.Failed``, as :func:`track` tells them); a
batch with a failed input raises (:class:`BatchFailed`), which stops the query.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .errors import BatchFailed
from .job import EventSink
from .sink import Sink
from .stages import Process


def batch_path(output: str, batch_id: int) -> str:
    """Where micro-batch ``batch_id`` of a stream into ``output`` is committed."""
    return f"{output.rstrip('/')}/batch={batch_id:06d}"


def track_stream(
    stream: Any,
    process: Process,
    schema: str,
    sink: Sink,
    *,
    key: str,
    checkpoint: str,
    available_now: bool = False,
    on_event: EventSink | None = None,
    **options: Any,
) -> Any:
    """Start the query; ``options`` are :func:`track`'s (table, faults, partitions, ...).

    Returns the ``StreamingQuery``; ``available_now=True`` processes what is there
    and stops (``query.awaitTermination()``).
    """
    from .tracking import track

    if sink.path is None:
        raise ValueError(
            "track_stream commits each micro-batch to a folder of its own (OUTPUT/batch=N): "
            "give Sink(path=...); a table sink would take a batch that Spark runs again twice"
        )
    folder = sink.path

    def batch(frame: Any, batch_id: int) -> None:
        target = replace(sink, path=batch_path(folder, batch_id), overwrite=True)
        report = track(
            frame.sparkSession,
            process,
            schema,
            target,
            source=frame,
            key=key,
            on_event=on_event,
            **options,
        )
        if not report.ok:
            names = ", ".join(i.key for i in report.failed[:3])
            raise BatchFailed(
                f"micro-batch {batch_id}: {len(report.failed)} inputs failed ({names}); "
                f"its output {target.path} holds the acked ones only"
            )

    writer = stream.writeStream.foreachBatch(batch).option("checkpointLocation", checkpoint)
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()
