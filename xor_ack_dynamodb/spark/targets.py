"""Which target a sink is: a folder (``commit.FolderTarget``) or a table (``table_sink``)."""

from __future__ import annotations

from typing import Any

from .commit import FolderTarget, Target
from .sink import Sink
from .table_sink import TableTarget


def target_for(spark: Any, sink: Sink, run_id: str, work_dir: str | None) -> Target:
    """Where ``sink``'s run stages its rows and commits its output."""
    if sink.table is not None:
        return TableTarget(spark, sink, run_id, work_dir)
    return FolderTarget(spark, sink, run_id, work_dir)
