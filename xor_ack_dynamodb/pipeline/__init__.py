"""The tracked word count on PySpark: every file's processing proven complete by an XOR chain.

``run_wordcount(spark, WordCountOptions(...))`` runs it; ``xor-ack wordcount``
is the command line.  See ``docs/pipeline.md`` for the design.  PySpark is
imported on first use of the names below, not with this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .faults import FaultConfig
    from .job import Report, WordCountOptions, run_wordcount
    from .tracker import TrackerConfig

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
