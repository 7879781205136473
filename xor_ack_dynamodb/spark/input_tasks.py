"""How many tasks run the user's function in a round, when ``track(input_tasks=...)`` is not told.

Three per core of the session (Spark's tuning guide: 2-3 tasks per core, so that an
input slower than the others holds up its task's share of the inputs, not a core's),
never fewer than ``MIN_INPUT_TASKS`` (a session that starts small, e.g. under dynamic
allocation, may have more cores by the time the tasks run), and never more than the
round's inputs (``job.TrackedJob``).
"""

from __future__ import annotations

from typing import Any

from .files import is_connect

TASKS_PER_CORE = 3
MIN_INPUT_TASKS = 16


def default_input_tasks(spark: Any) -> int:
    """``TASKS_PER_CORE`` per core the session has, at least ``MIN_INPUT_TASKS``.

    The cores: the conf's ``spark.default.parallelism`` when it sets one, else (classic
    Spark) the SparkContext's default parallelism.  A Spark Connect client, or a session
    that keeps its SparkContext from Python, sees no cores: ``MIN_INPUT_TASKS``.
    """
    cores = spark.conf.get("spark.default.parallelism", None)
    if not cores and not is_connect(spark):
        try:
            cores = spark.sparkContext.defaultParallelism
        except Exception:  # e.g. a shared cluster's session: no SparkContext from Python
            cores = None
    return max(MIN_INPUT_TASKS, TASKS_PER_CORE * int(cores or 0))
