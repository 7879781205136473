"""Which target a sink is: a folder (``commit.FolderTarget``) or a table (``table_sink``)."""

from __future__ import annotations

from typing import Any

from .commit import FolderTarget, Target
from .job_spec import JobSpec
from .table_sink import TableTarget


def target_for(spark: Any, spec: JobSpec, run_id: str) -> Target:
    """Where the run of ``spec`` stages its rows and commits its output (its sink's)."""
    if spec.sink.table is not None:
        return TableTarget(spark, spec.sink, run_id, spec.work_dir, report=spec.report_path)
    return FolderTarget(spark, spec.sink, run_id, spec.work_dir)  # the report checked by spec
