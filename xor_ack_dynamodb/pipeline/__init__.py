"""The tracked word count on PySpark: every file's processing proven complete by an XOR chain.

Layer: an app. Imports the public API of ``spark`` and of the parts below it, and the
command line's shared options and errors (``cli``).

``run_wordcount(spark, WordCountOptions(...))`` runs it; ``xor-ack wordcount``
is the command line.  See ``docs/pipeline.md`` for the design.  PySpark is
imported on first use of the names below, not with this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..spark.faults import FaultConfig
    from ..spark.tracker import TrackerConfig
    from .job import Report, WordCountOptions, run_wordcount

__all__ = ["FaultConfig", "Report", "TrackerConfig", "WordCountOptions", "run_wordcount"]

_WHERE = {
    "FaultConfig": "faults",
    "Report": "job",
    "TrackerConfig": "tracker",
    "WordCountOptions": "job",
    "run_wordcount": "job",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
